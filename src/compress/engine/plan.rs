//! Phases 4 and 5 of a compression: the summary message in place of the
//! summarised range, the messages that stay, and the numbers of the plan.

use super::super::assemble::{clean_body, summary_message};
use super::super::notices::CompressWarning;
use super::super::redact::redact;
use super::super::{CompressionPlan, tokens_of};
use super::Pending;
use crate::domain::{MessageId, Summarizer};
use crate::tokens::{TokenCounter, count_by_lines, message_tokens_with};
use std::collections::HashMap;

/// A model's summary as it is stored: control characters other than line
/// breaks and tabs removed, secrets redacted (a model may repeat one it was
/// never shown, or one a rule missed), the notice and end marker taken out;
/// `None` when no letter or digit is left.
pub(super) fn usable_summary(text: &str) -> Option<String> {
    let visible = crate::text::strip_terminal_controls(text, true);
    let body = clean_body(&redact(&visible));
    body.chars().any(char::is_alphanumeric).then_some(body)
}

/// How many times the asked-for size a model's summary may take before it
/// is refused (a summary is kept in every later request).
pub(super) const SUMMARY_OVER_TARGET: u64 = 2;

/// The plan for `body` in place of the summarised messages. The summary's
/// count takes the lines in `line_tokens` as counted ([`count_by_lines`]).
pub(super) fn assemble_plan(
    p: &Pending,
    body: &str,
    summarizer: Summarizer,
    warnings: Vec<CompressWarning>,
    counter: &dyn TokenCounter,
    line_tokens: Option<&HashMap<String, usize>>,
    now_ms: i64,
) -> CompressionPlan {
    let n = p.view.len();
    let is_summarised = {
        let mut v = vec![false; n];
        for &i in &p.summarised {
            v[i] = true;
        }
        v
    };
    let first = p.summarised[0];
    // The summary's neighbours are the messages sent next to it: excluded
    // ones are not; a message of an excluded unit is never merged into (it
    // stays as it is), so the summary then stands alone.
    let sent = |i: usize| !is_summarised[i] && !p.left_out[i];
    let prev = (0..first)
        .rev()
        .find(|&i| sent(i))
        .and_then(|i| p.view[i].as_ref());
    let next_index = (first + 1..n).find(|&i| sent(i)).filter(|&i| !p.held[i]);
    let next = next_index.and_then(|i| p.view[i].as_ref());
    let (summary, merged) = summary_message(body, prev, next, p.first_seq, now_ms, p.session_id);
    let merged_index = merged.and(next_index);
    let mut messages = Vec::with_capacity(n - p.summarised.len() + 1);
    let mut archived: Vec<MessageId> = p.summarised.iter().map(|&i| p.originals[i]).collect();
    let mut rewritten = Vec::new();
    let mut tokens_after = p.fixed_tokens;
    for (i, &summarised) in is_summarised.iter().enumerate() {
        if i == first && merged_index.is_none() {
            messages.push(summary.clone());
        }
        if summarised {
            continue;
        }
        if Some(i) == merged_index {
            archived.push(p.originals[i]);
            messages.push(summary.clone());
            continue;
        }
        let Some(kept) = &p.view[i] else {
            continue;
        };
        if p.rewritten[i] {
            archived.push(p.originals[i]);
            rewritten.push((p.originals[i], kept.clone()));
        }
        tokens_after += u64::from(p.tokens[i]);
        messages.push(kept.clone());
    }
    let summary_tokens = u64::from(match line_tokens {
        Some(lines) => {
            let content = count_by_lines(counter, &summary.content, &|line| lines.get(line).copied());
            message_tokens_with(counter, &summary, content)
        }
        None => tokens_of(counter, &summary),
    });
    tokens_after += summary_tokens;
    CompressionPlan {
        trigger: p.trigger.compaction_trigger(),
        archived,
        merged_into: merged,
        rewritten,
        messages_before: n,
        messages_after: messages.len(),
        messages,
        summary,
        summary_tokens,
        tokens_before: p.tokens_before,
        tokens_after,
        summarizer,
        topic: p.topic.clone(),
        exact: counter.exact(),
        warnings,
    }
}
