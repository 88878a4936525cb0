//! The context list (issue "context control"): one row per message of a
//! session, archived ones included, saying what the next request does with
//! it and what it costs. The app's context list overlay and
//! `strata context ID --list` show the same rows.
//!
//! Pure: rows are made from the stored messages, the pipeline's report of
//! the next request and the session's compaction records
//! ([`context_rows`]); [`sort_by_position`], [`sort_by_cost`] and
//! [`keep_tool_outputs`] order and filter them. One pass over the messages
//! with a few hash lookups: 10,000 messages take a few milliseconds.
//!
//! JSON of a row (`strata context ID --list --json` prints an array of
//! them): `{pos, seq, message_id, role, kind, state, [from, to |
//! summary | by], tokens, tokens_sent, pinned, excluded, tools, preview}`;
//! `state` is one of `kept`, `truncated` (with `from`, `to`), `pruned`,
//! `dropped`, `excluded`, `pinned`, `summarised` (with `summary`, the
//! active summary's id or null) and `archived` (with `by`, the record's
//! id).

use super::{Action, ReportEntry};
use crate::domain::{Compaction, CompactionId, CompactionKind, Message, MessageId, MessageKind, Role};
use serde::Serialize;
use std::collections::HashMap;

/// Characters of a row's preview.
pub const PREVIEW_CHARS: usize = 80;

/// What the next request does with one message. Serialises as
/// `{"state": "truncated", "from": 1200, "to": 300}` and the like
/// (`snake_case` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RowState {
    /// Sent as stored (also: merged into the message before it, or sent
    /// without tool calls whose results are gone).
    Kept,
    /// Sent cut, from `from` to `to` tokens.
    Truncated {
        /// Stored count, tokens.
        from: u32,
        /// What the request carries, tokens.
        to: u32,
    },
    /// Not sent: its `ephemeral_ttl` expired.
    Pruned,
    /// Not sent: outside the window or the message cap, or unpaired.
    Dropped,
    /// Not sent: the user excluded it (or its tool call unit).
    Excluded,
    /// Sent, and kept verbatim by the pipeline and by compression.
    Pinned,
    /// Archived by a compression; `summary` is the active summary message
    /// that stands for it (`None` when that summary is itself gone, e.g.
    /// folded into a later one that was undone).
    Summarised {
        /// The summary message standing for it.
        summary: Option<MessageId>,
    },
    /// Archived by an edit and resend (or the undo of one): not part of the
    /// active history.
    Archived {
        /// The record that archived it.
        by: CompactionId,
    },
}

/// One row of the context list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ContextRow {
    /// Position among the active messages, counting from 1 (the `pos` of
    /// `strata show`); `None` for archived messages.
    pub pos: Option<usize>,
    /// The message's `seq` (an archived message shares it with what took
    /// its place): the order of "by position".
    pub seq: i64,
    /// The stored message.
    pub message_id: MessageId,
    /// `user`, `assistant`, `tool` or `system`.
    pub role: Role,
    /// Normal, summary or synthetic.
    pub kind: MessageKind,
    /// What the next request does with it.
    #[serde(flatten)]
    pub state: RowState,
    /// The stored count (framing included), tokens.
    pub tokens: u32,
    /// What it adds to the next request, tokens (0 when not sent).
    pub tokens_sent: u32,
    /// Whether it is pinned (a pinned message cannot be excluded: it is
    /// unpinned first).
    pub pinned: bool,
    /// Whether the user excluded it (its flag; the rows of the rest of its
    /// tool call unit say `excluded` as their state without it).
    pub excluded: bool,
    /// For an assistant message, the names of its tool calls; for a `tool`
    /// result, the name of the tool it answers.
    pub tools: Vec<String>,
    /// The first non-blank line of the content, at most
    /// [`PREVIEW_CHARS`] characters (cut with `…`), control characters
    /// removed; for a call message without text, its first call as
    /// `name(arguments)`.
    pub preview: String,
    /// Tokens of the next request the provider would not read from its
    /// cache after excluding this message (including it, when excluded):
    /// filled by the runtime from the last request's blocks; `None` when
    /// not known or not applicable.
    pub uncached_if_toggled: Option<u64>,
}

impl ContextRow {
    /// Whether the row is a tool output (a `tool` message): what the
    /// list's tool filter keeps.
    #[must_use]
    pub fn is_tool_output(&self) -> bool {
        self.role == Role::Tool
    }
}

/// The rows of a session: one per message of `messages` (every message,
/// archived ones included, in `seq` order as the store reads them), with
/// the state `report` (the pipeline's report of the next request over the
/// active messages, in their order) gives it, and for an archived message
/// what `compactions` (the session's records) say archived it. An active
/// message the report does not cover (the request cannot be prepared) is
/// `excluded` when its exclusions leave it out, else `pinned` or `kept`,
/// with nothing sent.
#[must_use]
pub fn context_rows(
    messages: &[Message],
    report: &[ReportEntry],
    compactions: &[Compaction],
) -> Vec<ContextRow> {
    let active: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i].archived_by.is_none())
        .collect();
    let covered = report.len() == active.len()
        && active
            .iter()
            .zip(report)
            .all(|(&i, e)| messages[i].id == e.message_id);
    let uncovered_out = if covered {
        Vec::new()
    } else {
        let msgs: Vec<Message> = active.iter().map(|&i| messages[i].clone()).collect();
        super::exclusions(&msgs).out
    };
    let by_report: HashMap<MessageId, &ReportEntry> = if covered {
        HashMap::new()
    } else {
        report.iter().map(|e| (e.message_id, e)).collect()
    };
    let archived = Archived::new(messages, compactions);
    let names = call_names(messages);
    let mut rows = Vec::with_capacity(messages.len());
    let mut pos = 0;
    for m in messages {
        let stored = m.tokens.as_ref().map_or(0, |t| t.tokens);
        let (pos_here, state, tokens, sent) = match m.archived_by {
            Some(by) => (None, archived.state(by), stored, 0),
            None => {
                let k = pos;
                pos += 1;
                let entry = if covered {
                    Some(&report[k])
                } else {
                    by_report.get(&m.id).copied()
                };
                match entry {
                    Some(e) => (
                        Some(k + 1),
                        state_of(e, m.pinned),
                        e.tokens_before,
                        e.tokens_after,
                    ),
                    None => {
                        let state = if uncovered_out.get(k).copied().unwrap_or(m.excluded) {
                            RowState::Excluded
                        } else if m.pinned {
                            RowState::Pinned
                        } else {
                            RowState::Kept
                        };
                        (Some(k + 1), state, stored, 0)
                    }
                }
            }
        };
        rows.push(ContextRow {
            pos: pos_here,
            seq: m.seq,
            message_id: m.id,
            role: m.role,
            kind: m.kind,
            state,
            tokens,
            tokens_sent: sent,
            pinned: m.pinned,
            excluded: m.excluded,
            tools: tools_of(m, &names),
            preview: preview(m),
            uncached_if_toggled: None,
        });
    }
    rows
}

/// The row state of a report entry.
fn state_of(e: &ReportEntry, pinned: bool) -> RowState {
    match e.action {
        Action::Excluded => RowState::Excluded,
        Action::Dropped => RowState::Dropped,
        Action::Pruned => RowState::Pruned,
        Action::Truncated => RowState::Truncated {
            from: e.tokens_before,
            to: e.tokens_after,
        },
        Action::Kept | Action::Merged | Action::Repaired if pinned => RowState::Pinned,
        Action::Kept | Action::Merged | Action::Repaired => RowState::Kept,
    }
}

/// What archived messages are behind: the records by id, and the summary
/// messages by id (to follow a summary folded into a later one).
struct Archived<'a> {
    records: HashMap<CompactionId, &'a Compaction>,
    summaries: HashMap<MessageId, &'a Message>,
}

impl<'a> Archived<'a> {
    fn new(messages: &'a [Message], compactions: &'a [Compaction]) -> Self {
        let any = messages.iter().any(|m| m.archived_by.is_some());
        Self {
            records: if any {
                compactions.iter().map(|c| (c.id, c)).collect()
            } else {
                HashMap::new()
            },
            summaries: if any {
                messages
                    .iter()
                    .filter(|m| m.kind == MessageKind::Summary)
                    .map(|m| (m.id, m))
                    .collect()
            } else {
                HashMap::new()
            },
        }
    }

    /// The state of a message archived by `by`.
    fn state(&self, by: CompactionId) -> RowState {
        match self.records.get(&by) {
            Some(&c) if c.kind == CompactionKind::Summary => RowState::Summarised {
                summary: self.active_summary(c),
            },
            _ => RowState::Archived { by },
        }
    }

    /// The active summary standing for what `c` archived: its own summary,
    /// or the one a later compression folded it into.
    fn active_summary(&self, mut c: &'a Compaction) -> Option<MessageId> {
        for _ in 0..self.records.len() + 1 {
            let id = c.summary_message_id?;
            let summary = self.summaries.get(&id)?;
            match summary.archived_by {
                None => return Some(id),
                Some(by) => {
                    c = self
                        .records
                        .get(&by)
                        .copied()
                        .filter(|n| n.kind == CompactionKind::Summary)?
                }
            }
        }
        None
    }
}

/// Tool call id → tool name, over every message.
fn call_names(messages: &[Message]) -> HashMap<&str, &str> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect()
}

/// The tool names of a row (see [`ContextRow::tools`]).
fn tools_of(m: &Message, names: &HashMap<&str, &str>) -> Vec<String> {
    match m.role {
        Role::Assistant => m.tool_calls.iter().map(|c| c.name.clone()).collect(),
        Role::Tool => m
            .tool
            .as_ref()
            .map(|t| t.name.as_str())
            .or_else(|| m.tool_call_id.as_deref().and_then(|id| names.get(id).copied()))
            .map(|n| vec![n.to_owned()])
            .unwrap_or_default(),
        Role::User | Role::System => Vec::new(),
    }
}

/// The preview of a row (see [`ContextRow::preview`]).
fn preview(m: &Message) -> String {
    let line = m.content.lines().map(str::trim).find(|l| !l.is_empty());
    let call;
    let line = match (line, m.tool_calls.first()) {
        (Some(line), _) => line,
        (None, Some(c)) => {
            call = format!("{}({})", c.name, c.arguments);
            call.as_str()
        }
        (None, None) => "",
    };
    let mut out = String::with_capacity(line.len().min(PREVIEW_CHARS * 4));
    let mut chars = line.chars().filter(|&c| !crate::text::is_terminal_control(c));
    for _ in 0..PREVIEW_CHARS {
        match chars.next() {
            Some(c) => out.push(c),
            None => return out,
        }
    }
    if chars.next().is_some() {
        out.pop();
        out.push('…');
    }
    out
}

/// Orders rows by position: `seq`, then id (ids are time-ordered, so an
/// archived message comes before the summary or copy that took its place,
/// as the store reads them).
pub fn sort_by_position(rows: &mut [ContextRow]) {
    rows.sort_by_key(|r| (r.seq, r.message_id));
}

/// Orders rows by cost: `tokens`, largest first, stable (ties keep their
/// order).
pub fn sort_by_cost(rows: &mut [ContextRow]) {
    rows.sort_by_key(|r| std::cmp::Reverse(r.tokens));
}

/// Keeps only the tool outputs (`tool` messages), in their order.
pub fn keep_tool_outputs(rows: &mut Vec<ContextRow>) {
    rows.retain(ContextRow::is_tool_output);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{CompactionTrigger, SessionId, Summarizer, TokenCount, ToolCall};

    fn msg(role: Role, text: &str, seq: i64, tokens: u32) -> Message {
        let mut m = Message::new(SessionId::new(), role, text, 0);
        m.seq = seq;
        m.tokens = Some(TokenCount {
            tokenizer: "t".into(),
            tokens,
        });
        m
    }

    fn record(kind: CompactionKind, summary: Option<MessageId>) -> Compaction {
        Compaction {
            id: CompactionId::new(),
            session_id: SessionId::new(),
            trigger: CompactionTrigger::Manual,
            topic: None,
            first_message_id: None,
            last_message_id: None,
            summary_message_id: summary,
            summarizer: Summarizer::Extractive,
            tokens_before: 0,
            tokens_after: 0,
            messages_before: 0,
            messages_after: 0,
            prompt_before_id: None,
            prompt_after_id: None,
            undone_at: None,
            created_at: 0,
            kind,
            edited: false,
        }
    }

    fn entry(m: &Message, action: Action, after: u32) -> ReportEntry {
        ReportEntry {
            message_id: m.id,
            action,
            tokens_before: m.tokens.as_ref().map_or(0, |t| t.tokens),
            tokens_after: after,
        }
    }

    #[test]
    fn rows_say_what_the_next_request_does_and_what_archived_the_rest() {
        // Two compressions: the first summary was folded into the second.
        let old = msg(Role::User, "old request", 1, 40);
        let mut first_summary = msg(Role::User, "summary one", 1, 30);
        first_summary.kind = MessageKind::Summary;
        let mut second_summary = msg(Role::User, "summary two", 1, 35);
        second_summary.kind = MessageKind::Summary;
        let c1 = record(CompactionKind::Summary, Some(first_summary.id));
        let c2 = record(CompactionKind::Summary, Some(second_summary.id));
        let edit = record(CompactionKind::Edit, None);
        let mut old = old;
        old.archived_by = Some(c1.id);
        first_summary.archived_by = Some(c2.id);
        let mut edited = msg(Role::User, "typo", 2, 5);
        edited.archived_by = Some(edit.id);
        let mut call = msg(Role::Assistant, "", 2, 20);
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        });
        call.pinned = true;
        let mut out = msg(Role::Tool, "\u{1b}[31mfn main() {}\nmore", 3, 900);
        out.tool_call_id = Some("c1".into());
        let mut big = msg(Role::Assistant, &"word ".repeat(40), 4, 500);
        big.excluded = true;
        let last = msg(Role::User, "go on", 5, 6);
        let messages = vec![
            old,
            first_summary,
            second_summary.clone(),
            edited,
            call.clone(),
            out.clone(),
            big.clone(),
            last.clone(),
        ];
        let report = vec![
            entry(&second_summary, Action::Kept, 35),
            entry(&call, Action::Kept, 20),
            entry(&out, Action::Truncated, 300),
            entry(&big, Action::Excluded, 0),
            entry(&last, Action::Merged, 4),
        ];
        let rows = context_rows(&messages, &report, &[c1.clone(), c2, edit.clone()]);
        let states: Vec<RowState> = rows.iter().map(|r| r.state).collect();
        assert_eq!(
            states,
            [
                RowState::Summarised {
                    summary: Some(second_summary.id)
                },
                RowState::Summarised {
                    summary: Some(second_summary.id)
                },
                RowState::Kept,
                RowState::Archived { by: edit.id },
                RowState::Pinned,
                RowState::Truncated { from: 900, to: 300 },
                RowState::Excluded,
                RowState::Kept,
            ]
        );
        let pos: Vec<Option<usize>> = rows.iter().map(|r| r.pos).collect();
        assert_eq!(
            pos,
            [None, None, Some(1), None, Some(2), Some(3), Some(4), Some(5)]
        );
        assert_eq!(rows[4].tools, ["read_file"]);
        assert_eq!(rows[4].preview, r#"read_file({"path":"a.rs"})"#);
        assert_eq!(rows[5].tools, ["read_file"]);
        assert_eq!(rows[5].preview, "[31mfn main() {}");
        assert_eq!(rows[6].preview.chars().count(), PREVIEW_CHARS);
        assert!(rows[6].preview.ends_with('…'));
        assert_eq!((rows[7].tokens, rows[7].tokens_sent), (6, 4));
        let json = serde_json::to_value(&rows[5]).unwrap_or_default();
        assert_eq!(json["state"], "truncated");
        assert_eq!(
            (json["from"].as_u64(), json["to"].as_u64()),
            (Some(900), Some(300))
        );
        assert_eq!(json["pos"], 3);

        // Sorted by cost, ties stable; tool outputs only; back by position.
        let mut sorted = rows.clone();
        sort_by_cost(&mut sorted);
        let tokens: Vec<u32> = sorted.iter().map(|r| r.tokens).collect();
        assert_eq!(tokens, [900, 500, 40, 35, 30, 20, 6, 5]);
        sort_by_position(&mut sorted);
        assert_eq!(sorted, rows);
        keep_tool_outputs(&mut sorted);
        assert_eq!(sorted.len(), 1);
        assert_eq!(sorted[0].message_id, out.id);
    }

    #[test]
    fn without_a_report_the_flags_decide() {
        let mut call = msg(Role::Assistant, "", 1, 10);
        call.tool_calls.push(ToolCall {
            id: "c".into(),
            name: "grep".into(),
            arguments: "{}".into(),
        });
        call.excluded = true;
        let mut result = msg(Role::Tool, "hits", 2, 50);
        result.tool_call_id = Some("c".into());
        let mut pinned = msg(Role::User, "spec", 3, 7);
        pinned.pinned = true;
        let rows = context_rows(&[call, result, pinned], &[], &[]);
        let states: Vec<RowState> = rows.iter().map(|r| r.state).collect();
        assert_eq!(states, [RowState::Excluded, RowState::Excluded, RowState::Pinned]);
        assert!(rows.iter().all(|r| r.tokens_sent == 0));
        assert_eq!(
            (rows[1].excluded, rows[1].tools.as_slice()),
            (false, &["grep".to_owned()][..])
        );
    }
}
