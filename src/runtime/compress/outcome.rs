//! What a compression did, would do (`--dry-run`) or would store
//! (`--preview`), as `strata compress --json` prints it and the app's
//! preview shows it; and what an undo restored.

use super::{CompressRequest, Snapshot};
use crate::compress::{self, CompressionPlan};
use crate::domain::{CompactionId, Message, MessageId, Role, Summarizer};
use crate::runtime::Runtime;
use serde::Serialize;
use std::collections::HashSet;

/// `strata compress --json`: what a compression did (or would do).
#[derive(Clone, Debug, Serialize)]
pub struct CompressOutcome {
    /// Nothing was compressed (`reason` says why).
    pub noop: bool,
    /// Active messages before.
    pub messages_before: usize,
    /// Active messages after.
    pub messages_after: usize,
    /// Request input estimate before, tokens.
    pub tokens_before: u64,
    /// Request input estimate after, tokens.
    pub tokens_after: u64,
    /// Who wrote the summary (JSON: the model's name, `extractive` or
    /// `fallback`); `None` for a no-op.
    pub summarizer: Option<Summarizer>,
    /// The focus given.
    pub topic: Option<String>,
    /// The stored compaction; `None` for a no-op, a dry run or a preview.
    pub compaction_id: Option<CompactionId>,
    /// The summary message's text (the summary block alone when it was
    /// merged into the next message). For a preview, the body alone,
    /// without the opening notice and the end marker: the text to edit
    /// and give back (`--summary-file`, the app's accept), which is then
    /// stored exactly (redacted, framed by the same notice and marker).
    pub summary: Option<String>,
    /// Problems that did not stop it (a fallback summary, a dry-run
    /// stand-in, a cut moved to a turn boundary), worded for the runtime's
    /// client.
    pub warnings: Vec<String>,
    /// Why nothing was compressed, for a no-op (worded for the client).
    pub reason: Option<String>,
    /// Whether the token numbers are exact for the model.
    pub exact: bool,
    /// The line of DESIGN §7 for people.
    pub feedback: String,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// Whether this was a preview: the summariser ran, nothing was stored.
    pub preview: bool,
    /// Whether the summary was given by the user and changed by them
    /// (stored as the compaction row's `edited`).
    pub edited: bool,
    /// The active messages that stay as they are, in order: the protected
    /// head, the turns kept for a pinned message, and the tail (a message
    /// rewritten by free pruning or merged into the summary is not listed).
    /// Empty for a no-op.
    pub kept_verbatim: Vec<KeptMessage>,
    /// Position (from 1, among the active messages before) of the first
    /// message of the verbatim tail, where the summarised range ends;
    /// `None` for a no-op.
    pub tail_from: Option<usize>,
    /// Tokens of the next request after the compression that the
    /// provider will not read from its cache: everything from the first
    /// summarised message on, by the blocks of the session's last request
    /// (all of it before any request). `None` for a no-op.
    pub uncached_tokens_next_request: Option<u64>,
}

/// One active message a compression leaves as it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeptMessage {
    /// The message.
    pub id: MessageId,
    /// Position among the active messages before the compression, from 1.
    pub pos: usize,
    /// Its role.
    pub role: Role,
    /// Its count under the session's counter, tokens.
    pub tokens: u32,
    /// For an assistant message its tool calls' names; for a `tool` result
    /// the tool it answers.
    pub tools: Vec<String>,
    /// The first line of its text, at most [`PREVIEW_CHARS`] characters,
    /// control characters removed.
    pub preview: String,
}

/// Longest [`KeptMessage::preview`], characters.
pub const PREVIEW_CHARS: usize = 80;

/// What `strata undo-compress` restored.
#[derive(Clone, Debug, Serialize)]
pub struct UndoOutcome {
    /// The compaction undone.
    pub compaction_id: CompactionId,
    /// Active messages now.
    pub messages: usize,
    /// Version of the prompt now current.
    pub prompt_version: u32,
}

/// A no-op outcome: the snapshot's figures on both sides and `reason`.
pub(super) fn noop(
    snapshot: &Snapshot,
    req: &CompressRequest<'_>,
    topic: Option<String>,
    reason: String,
) -> CompressOutcome {
    let tokens = snapshot.input_tokens();
    CompressOutcome {
        noop: true,
        uncached_tokens_next_request: None,
        messages_before: snapshot.messages.len(),
        messages_after: snapshot.messages.len(),
        tokens_before: tokens,
        tokens_after: tokens,
        summarizer: None,
        topic,
        compaction_id: None,
        summary: None,
        warnings: Vec::new(),
        feedback: reason.clone(),
        reason: Some(reason),
        exact: snapshot.counter.exact(),
        dry_run: req.dry_run,
        preview: req.preview,
        edited: false,
        kept_verbatim: Vec::new(),
        tail_from: None,
    }
}

/// The active messages of `snapshot` after the summary that `plan` leaves
/// as they are (not archived, or merged under the summary with their text
/// whole; a reply still streaming is not part of the compression; the
/// protected start, before the summary, is not listed).
pub(super) fn kept_verbatim(snapshot: &Snapshot, plan: &CompressionPlan) -> Vec<KeptMessage> {
    let archived: HashSet<MessageId> = plan.archived.iter().copied().collect();
    let summary_at = snapshot
        .messages
        .iter()
        .position(|m| archived.contains(&m.id))
        .unwrap_or(0);
    let tokens = snapshot.sent_tokens.as_ref().unwrap_or(&snapshot.history_tokens);
    snapshot
        .messages
        .iter()
        .zip(tokens)
        .enumerate()
        .filter(|(i, (m, _))| {
            // The message the summary is merged into keeps its own text
            // after the summary: it is kept too.
            let kept = !archived.contains(&m.id) || plan.merged_into == Some(m.id);
            *i > summary_at && kept && m.status != crate::domain::MessageStatus::Streaming
        })
        .map(|(i, (m, tokens))| KeptMessage {
            id: m.id,
            pos: i + 1,
            role: m.role,
            tokens: *tokens,
            tools: tool_names(m),
            preview: preview_line(&m.content),
        })
        .collect()
}

fn tool_names(m: &Message) -> Vec<String> {
    match (m.role, &m.tool) {
        (Role::Tool, Some(meta)) => vec![meta.name.clone()],
        _ => m.tool_calls.iter().map(|c| c.name.clone()).collect(),
    }
}

/// The first non-blank line of `text`, at most [`PREVIEW_CHARS`]
/// characters (an ellipsis marks a cut), control characters removed.
fn preview_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let clean = crate::text::strip_terminal_controls(line, false);
    if clean.chars().count() <= PREVIEW_CHARS {
        return clean;
    }
    let cut: String = clean.chars().take(PREVIEW_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// How an outcome came about, for [`Runtime::outcome_of`].
pub(super) struct Made {
    /// The stored compaction, `None` when nothing was stored.
    pub compaction_id: Option<CompactionId>,
    /// The messages left as they are.
    pub kept_verbatim: Vec<KeptMessage>,
    /// Position of the first tail message, from 1.
    pub tail_from: usize,
}

impl Runtime {
    /// What `plan` did (or would do, for a dry run or a preview of `req`),
    /// its warnings worded for the runtime's client.
    pub(super) fn outcome_of(
        &self,
        plan: &CompressionPlan,
        req: &CompressRequest<'_>,
        made: Made,
    ) -> CompressOutcome {
        let (body, _) = compress::split_summary(&plan.summary.content);
        let summary = if req.preview {
            body.to_owned()
        } else if plan.merged_into.is_some() {
            // A summary merged into the next message: the summary's part only.
            compress::assemble::summary_block(body)
        } else {
            plan.summary.content.clone()
        };
        let line = compress::feedback_line(plan);
        CompressOutcome {
            noop: false,
            messages_before: plan.messages_before,
            messages_after: plan.messages_after,
            tokens_before: plan.tokens_before,
            tokens_after: plan.tokens_after,
            summarizer: Some(plan.summarizer.clone()),
            topic: plan.topic.clone(),
            compaction_id: made.compaction_id,
            summary: Some(summary),
            warnings: plan
                .warnings
                .iter()
                .map(|w| self.client().compress_warning(w))
                .collect(),
            reason: None,
            exact: plan.exact,
            // A dry run or a preview says what would happen, not what did.
            feedback: if req.dry_run || req.preview {
                line.replacen("Compressed", "Would compress", 1)
            } else {
                line
            },
            dry_run: req.dry_run,
            preview: req.preview,
            edited: req.summary.is_some() && req.summary_edited,
            kept_verbatim: made.kept_verbatim,
            tail_from: Some(made.tail_from),
            uncached_tokens_next_request: Some(self.uncached_after_compression(plan)),
        }
    }

    /// [`CompressOutcome::uncached_tokens_next_request`] of `plan`.
    fn uncached_after_compression(&self, plan: &CompressionPlan) -> u64 {
        let last = self.store.cache_prefix(plan.summary.session_id).ok().flatten();
        let archived: HashSet<MessageId> = plan.archived.iter().copied().collect();
        crate::prompt_cache::uncached_after(plan.tokens_after, last.as_ref(), |id| {
            archived.contains(&id)
                || plan.merged_into == Some(id)
                || plan.rewritten.iter().any(|(r, _)| *r == id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_line_is_the_first_text_line_cut_with_an_ellipsis() {
        assert_eq!(preview_line("\n\n  fix the parser\nthen more"), "fix the parser");
        let long = "word ".repeat(40);
        let line = preview_line(&long);
        assert_eq!(line.chars().count(), PREVIEW_CHARS);
        assert!(line.ends_with('…'), "{line}");
        assert_eq!(preview_line("a\u{1b}[2Jb"), "a[2Jb");
    }
}
