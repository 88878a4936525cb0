//! Shared helpers for the pipeline tests: a cheap deterministic counter, a
//! history builder with synthetic or real per-message counts, and the
//! default input for a history.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use strata::domain::{Message, MessageKind, RequestSystem, Role, SessionId, ToolCall};
use strata::pipeline::PrepareInput;
use strata::tokens::{TokenCounter, message_tokens};

/// One token per four bytes, rounded up: fast, deterministic, and close
/// enough to real text for the pipeline's arithmetic.
pub struct Quarter;

impl TokenCounter for Quarter {
    fn id(&self) -> &str {
        "quarter"
    }
    fn exact(&self) -> bool {
        true
    }
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

/// A history under construction with the count of each message.
#[derive(Clone, Debug, Default)]
pub struct Hist {
    pub msgs: Vec<Message>,
    pub counts: Vec<u32>,
    session: SessionId,
}

impl Hist {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `m` with `tokens` as its count (`None`: its real count under
    /// [`Quarter`]); returns its index.
    pub fn push(&mut self, mut m: Message, tokens: Option<u32>) -> usize {
        m.session_id = self.session;
        m.seq = self.msgs.len() as i64 + 1;
        let n = tokens.unwrap_or_else(|| message_tokens(&Quarter, &m));
        self.msgs.push(m);
        self.counts.push(n);
        self.msgs.len() - 1
    }

    fn msg(&self, role: Role, text: &str) -> Message {
        Message::new(self.session, role, text, 0)
    }

    pub fn user(&mut self, text: &str, tokens: Option<u32>) -> usize {
        self.push(self.msg(Role::User, text), tokens)
    }

    pub fn system(&mut self, text: &str, tokens: Option<u32>) -> usize {
        self.push(self.msg(Role::System, text), tokens)
    }

    pub fn assistant(&mut self, text: &str, tokens: Option<u32>) -> usize {
        self.push(self.msg(Role::Assistant, text), tokens)
    }

    /// A reminder: a synthetic user message living one assistant turn.
    pub fn reminder(&mut self, text: &str) -> usize {
        let mut m = self.msg(Role::User, text);
        m.kind = MessageKind::Synthetic;
        m.ephemeral_ttl = Some(1);
        self.push(m, None)
    }

    pub fn calls(&mut self, text: &str, ids: &[&str], tokens: Option<u32>) -> usize {
        let mut m = self.msg(Role::Assistant, text);
        m.tool_calls = ids
            .iter()
            .map(|id| ToolCall {
                id: (*id).to_owned(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"src/{id}.rs"}}"#),
            })
            .collect();
        self.push(m, tokens)
    }

    pub fn result(&mut self, id: &str, text: &str, tokens: Option<u32>) -> usize {
        let mut m = self.msg(Role::Tool, text);
        m.tool_call_id = Some(id.to_owned());
        self.push(m, tokens)
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().map(|&n| u64::from(n)).sum()
    }
}

/// A system prompt of `text` (its tokens under [`Quarter`] go in `system_tokens`).
pub fn system(text: &str) -> RequestSystem {
    RequestSystem {
        text: text.to_owned(),
        boundary_offset: None,
    }
}

/// Default input: exact counter, no tools, reserve 1,000, no cap, several
/// system messages allowed.
pub fn input<'a>(h: &'a Hist, system: &'a RequestSystem, window: u64) -> PrepareInput<'a> {
    PrepareInput {
        system,
        system_tokens: Quarter.count(&system.text) as u32,
        messages: &h.msgs,
        counts: &h.counts,
        counter: &Quarter,
        tools: &[],
        tool_tokens: 0,
        window,
        reserved_output: 1_000,
        exact: true,
        max_messages: None,
        single_system: false,
        model: "test-model",
        max_tokens: 1_000,
        temperature: None,
    }
}
