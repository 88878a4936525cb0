//! Shared helpers of the compression tests: a cheap deterministic token
//! counter and builders for histories.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use strata::compress::{DefaultEngine, EngineConfig, SummarizerChoice};
use strata::domain::{Message, Role, SessionId, ToolCall};
use strata::tokens::{Threshold, TokenCounter};

/// One token per four bytes, rounded up: cheap, deterministic and
/// monotonic, so tests can size messages in tokens.
pub struct QuarterCounter;

impl TokenCounter for QuarterCounter {
    fn id(&self) -> &str {
        "quarter"
    }
    fn exact(&self) -> bool {
        false
    }
    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(4)
    }
}

/// Day 2026-11-29 00:00 UTC in unix milliseconds.
pub const DAY: i64 = 1_795_910_400_000;

pub struct Builder {
    pub session: SessionId,
    pub messages: Vec<Message>,
    calls: usize,
}

impl Builder {
    pub fn new() -> Self {
        Self {
            session: SessionId::new(),
            messages: Vec::new(),
            calls: 0,
        }
    }

    pub fn push(&mut self, role: Role, content: impl Into<String>) -> &mut Message {
        let seq = self.messages.len() as i64 + 1;
        let mut m = Message::new(self.session, role, content, DAY + seq * 60_000);
        m.seq = seq;
        self.messages.push(m);
        self.messages.last_mut().unwrap()
    }

    pub fn user(&mut self, text: impl Into<String>) -> &mut Self {
        self.push(Role::User, text);
        self
    }

    pub fn assistant(&mut self, text: impl Into<String>) -> &mut Self {
        self.push(Role::Assistant, text);
        self
    }

    /// An assistant message calling `name(arguments)` followed by its result.
    pub fn tool(&mut self, name: &str, arguments: &str, result: impl Into<String>) -> &mut Self {
        self.calls += 1;
        let id = format!("call_{}", self.calls);
        let a = self.push(Role::Assistant, "");
        a.tool_calls.push(ToolCall {
            id: id.clone(),
            name: name.into(),
            arguments: arguments.into(),
        });
        let t = self.push(Role::Tool, result);
        t.tool_call_id = Some(id);
        self
    }

    pub fn build(&self) -> Vec<Message> {
        self.messages.clone()
    }
}

/// `n` tokens of filler text for [`QuarterCounter`] (4n bytes).
pub fn tokens(n: usize) -> String {
    let line = "the quick brown fox jumps over the lazy dog, ";
    line.repeat(n * 4 / line.len() + 1)[..n * 4].to_owned()
}

pub fn engine(window: u64, reserved: u64, ratio: f64) -> DefaultEngine {
    DefaultEngine::new(EngineConfig {
        window,
        reserved_output: reserved,
        threshold: Threshold::compute(window, reserved, ratio, 256_000),
        protect_last_n: 4,
        summarizer: SummarizerChoice::Extractive,
        enabled: true,
    })
}
