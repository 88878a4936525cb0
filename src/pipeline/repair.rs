//! Stage 5, repair, and the assembly of the request and the report.
//!
//! Exclusions come first: what they leave out is not live here, and calls
//! whose results they left out are not looked for (their message was
//! counted without them when the working copy was made).
//!
//! A tool call and its result are one unit: a result is sent only in the
//! run of `tool` messages right after the assistant message holding its
//! call, and a call only with its result. Results whose call is gone are
//! dropped, calls whose result is gone are removed from their message (an
//! assistant message left with no text and no calls is dropped); no stub
//! results are made up. Then consecutive messages of one role are merged
//! (never tool results), imported system messages join the system prompt
//! when the provider takes only one, and a note opens the request when it
//! would not start with a user message.
//!
//! Tokens are kept incrementally: a merged message costs its own count less
//! its framing (`3 + role`), plus the separator; messages that lost calls
//! are counted again (rare: interrupted replies and imports).

use super::limit::OMITTED_NOTE;
use super::work::{Fate, Work, result_run};
use super::{Action, PrepareInput, Prepared, ReportEntry};
use crate::domain::{ChatRequest, Message, RequestMessage, RequestSystem, Role, ToolCall};
use crate::tokens::{TOKENS_PER_MESSAGE, TokenCounter, message_tokens, request_overhead};

/// Joins merged texts.
const SEPARATOR: &str = "\n\n";

/// The note when nothing before the first message was left out.
const CONTINUED_NOTE: &str = include_str!("../../assets/prompts/continued_note.md");

/// Framing tokens of one message of `role`.
fn framing(counter: &dyn TokenCounter, role: Role) -> u32 {
    TOKENS_PER_MESSAGE + counter.count(role.as_str()) as u32
}

/// Framing tokens per role, counted once per preparation (a tokenizer call
/// per message would cost more than everything else here).
struct Framing([u32; 4]);

impl Framing {
    fn new(counter: &dyn TokenCounter) -> Self {
        Self([Role::System, Role::User, Role::Assistant, Role::Tool].map(|r| framing(counter, r)))
    }

    fn of(&self, role: Role) -> u32 {
        self.0[match role {
            Role::System => 0,
            Role::User => 1,
            Role::Assistant => 2,
            Role::Tool => 3,
        }]
    }
}

/// Pairs calls and results. Returns, per message, the calls it keeps when
/// some are not sent (`None`: all sent) and whether repair removed any (as
/// opposed to the exclusions alone), and drops unpaired messages. Calls the
/// exclusions left out (`calls_out`) are not looked for; a message left
/// with no call and no text by repair is dropped.
fn pair(work: &mut Work<'_>, counter: &dyn TokenCounter) -> (Vec<Option<Vec<bool>>>, Vec<bool>) {
    let msgs = work.msgs;
    let n = msgs.len();
    let mut claimed = vec![false; n];
    let mut kept: Vec<Option<Vec<bool>>> = vec![None; n];
    let mut repaired = vec![false; n];
    for i in 0..n {
        let m = &msgs[i];
        if !work.live(i) || m.role != Role::Assistant || m.tool_calls.is_empty() {
            continue;
        }
        let run = result_run(msgs, i);
        let excluded = work.calls_out[i].take();
        let mut mask = Vec::with_capacity(m.tool_calls.len());
        for (k, call) in m.tool_calls.iter().enumerate() {
            if excluded.as_ref().is_some_and(|e| !e[k]) {
                mask.push(false);
                continue;
            }
            let found = run.clone().find(|&r| {
                work.live(r) && !claimed[r] && msgs[r].tool_call_id.as_deref() == Some(call.id.as_str())
            });
            if let Some(r) = found {
                claimed[r] = true;
            }
            mask.push(found.is_some());
        }
        let by_exclusion = excluded.as_ref() == Some(&mask);
        work.calls_out[i] = excluded;
        if mask.iter().all(|&k| k) {
            continue;
        }
        if by_exclusion {
            // Counted without those calls when the copy was made.
            kept[i] = Some(mask);
            continue;
        }
        let calls: Vec<ToolCall> = kept_calls(m, Some(&mask));
        if calls.is_empty() && work.text(i).is_empty() {
            work.fate[i] = Fate::Dropped;
            continue;
        }
        let copy = Message {
            content: work.text(i).to_owned(),
            tool_calls: calls,
            ..m.clone()
        };
        work.tokens[i] = message_tokens(counter, &copy);
        kept[i] = Some(mask);
        repaired[i] = true;
    }
    for i in 0..n {
        let empty_reply =
            msgs[i].role == Role::Assistant && msgs[i].tool_calls.is_empty() && work.text(i).is_empty();
        let orphan = msgs[i].role == Role::Tool && !claimed[i];
        if work.live(i) && (orphan || empty_reply) {
            work.fate[i] = Fate::Dropped;
        }
    }
    (kept, repaired)
}

/// The calls of `m` that `mask` keeps (all when `None`).
fn kept_calls(m: &Message, mask: Option<&Vec<bool>>) -> Vec<ToolCall> {
    match mask {
        None => m.tool_calls.clone(),
        Some(mask) => m
            .tool_calls
            .iter()
            .zip(mask)
            .filter(|(_, k)| **k)
            .map(|(c, _)| c.clone())
            .collect(),
    }
}

/// Appends `text` to `into` with the separator when both are non-empty;
/// returns the separator's tokens when one was added.
fn join(into: &mut String, text: &str, sep_tokens: u32) -> u32 {
    let mut cost = 0;
    if !into.is_empty() && !text.is_empty() {
        into.push_str(SEPARATOR);
        cost = sep_tokens;
    }
    into.push_str(text);
    cost
}

/// Runs repair and builds the request and the report from the working copy.
/// With `report_only`, message contents are not copied into the request
/// (each holds a one-byte stand-in when it has text, so merges and their
/// separators are decided and counted as for the real request): the report
/// and token figures are the real request's, the request is not to be sent.
pub(crate) fn assemble(work: &mut Work<'_>, input: &PrepareInput<'_>, report_only: bool) -> Prepared {
    let copy = |text: &str| -> String {
        match (report_only, text.is_empty()) {
            (false, _) => text.to_owned(),
            (true, true) => String::new(),
            (true, false) => "x".to_owned(),
        }
    };
    let counter = input.counter;
    let (kept, repaired) = pair(work, counter);
    let msgs = work.msgs;
    let n = msgs.len();
    let sep_tokens = counter.count(SEPARATOR) as u32;
    let framing = Framing::new(counter);
    let mut system_text = input.system.text.clone();
    let mut system_tokens = u64::from(input.system_tokens);
    let mut out: Vec<RequestMessage> = Vec::new();
    let mut sources: Vec<std::ops::Range<usize>> = Vec::new();
    let mut message_total = 0u64;
    let mut after = vec![0u32; n];
    let mut merged = vec![false; n];
    let mut first_sent = None;
    for i in (0..n).filter(|&i| work.live(i)) {
        let m = &msgs[i];
        let text = work.text(i);
        let body = work.tokens[i].saturating_sub(framing.of(m.role));
        if m.role == Role::System && input.single_system {
            after[i] = body + join(&mut system_text, text, sep_tokens);
            system_tokens += u64::from(after[i]);
            merged[i] = true;
            continue;
        }
        if first_sent.is_none() && m.role != Role::System {
            first_sent = Some(i);
        }
        match out.last_mut() {
            Some(prev) if prev.role == m.role && m.role != Role::Tool && prev.tool_calls.is_empty() => {
                after[i] = body + join(&mut prev.content, &copy(text), sep_tokens);
                prev.tool_calls = kept_calls(m, kept[i].as_ref());
                merged[i] = true;
                if let Some(last) = sources.last_mut() {
                    last.end = i + 1;
                }
            }
            _ => {
                after[i] = work.tokens[i];
                // Tool output as the model reads it: colours stripped,
                // other escapes visible (counted as stored: the two differ
                // by a few characters a sequence).
                let content = if m.role == Role::Tool {
                    copy(&crate::text::for_model(text))
                } else {
                    copy(text)
                };
                out.push(RequestMessage {
                    role: m.role,
                    content,
                    tool_calls: kept_calls(m, kept[i].as_ref()),
                    tool_call_id: m.tool_call_id.clone(),
                });
                sources.push(i..i + 1);
            }
        }
        message_total += u64::from(after[i]);
    }
    let (note_tokens, note_at) = opening_note(&mut out, work, first_sent, counter);
    if let Some(at) = note_at {
        sources.insert(at, 0..0);
    }
    message_total += note_tokens;
    let report = (0..n)
        .map(|i| ReportEntry {
            message_id: msgs[i].id,
            action: action(work, &repaired, &merged, i),
            tokens_before: work.before[i],
            tokens_after: if work.live(i) { after[i] } else { 0 },
        })
        .collect();
    let has_system = !system_text.is_empty();
    Prepared {
        request: ChatRequest {
            model: input.model.to_owned(),
            system: RequestSystem {
                text: system_text,
                boundary_offset: input.system.boundary_offset,
            },
            messages: out,
            max_tokens: input.max_tokens,
            tools: input.tools.to_vec(),
            temperature: input.temperature,
        },
        report,
        sources,
        prepared_tokens: system_tokens + message_total + u64::from(request_overhead(has_system)),
        prelimit_tokens: u64::from(input.system_tokens)
            + work.prelimit.iter().map(|&t| u64::from(t)).sum::<u64>()
            + u64::from(request_overhead(true)),
        prelimit_counts: std::mem::take(&mut work.prelimit),
    }
}

/// Inserts the omitted-messages note before the first non-system message
/// when that is not a user message (or there is none); returns its tokens
/// and where it went. The count is the number of stored messages before the
/// first one sent.
fn opening_note(
    out: &mut Vec<RequestMessage>,
    work: &Work<'_>,
    first_sent: Option<usize>,
    counter: &dyn TokenCounter,
) -> (u64, Option<usize>) {
    let at = out.iter().position(|m| m.role != Role::System);
    if at.is_some_and(|k| out[k].role == Role::User) {
        return (0, None);
    }
    let omitted = (0..first_sent.unwrap_or(work.msgs.len()))
        .filter(|&i| !work.live(i))
        .count();
    let text = if omitted == 0 {
        CONTINUED_NOTE.trim_end().to_owned()
    } else {
        OMITTED_NOTE.trim_end().replace("{count}", &omitted.to_string())
    };
    let tokens = framing(counter, Role::User) + counter.count(&text) as u32;
    let at = at.unwrap_or(out.len());
    out.insert(
        at,
        RequestMessage {
            role: Role::User,
            content: text,
            tool_calls: Vec::new(),
            tool_call_id: None,
        },
    );
    (u64::from(tokens), Some(at))
}

/// The most significant action for message `i`.
fn action(work: &Work<'_>, repaired: &[bool], merged: &[bool], i: usize) -> Action {
    match work.fate[i] {
        Fate::Excluded => Action::Excluded,
        Fate::Dropped => Action::Dropped,
        Fate::Pruned => Action::Pruned,
        Fate::Live if repaired[i] => Action::Repaired,
        Fate::Live if work.truncated[i] => Action::Truncated,
        Fate::Live if merged[i] => Action::Merged,
        Fate::Live => Action::Kept,
    }
}
