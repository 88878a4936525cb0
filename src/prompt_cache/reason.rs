//! Where and why a request's cached prefix broke ([`reason`]).

use super::Prediction;
use crate::domain::{
    BlockKind, BreakAt, BreakReason, CacheBreak, Message, MessageId, MessageKind, PrefixSnapshot,
};
use crate::pipeline::{Action, ReportEntry};

/// What the session holds now, to explain a change.
pub struct Changes<'a> {
    /// The session's active messages (the pipeline's input).
    pub messages: &'a [Message],
    /// The pipeline's report for the request, one entry per message.
    pub report: &'a [ReportEntry],
}

/// The break `prediction` found between `prev` and `cur`, named: the
/// first block that differs and what changed it. `None` when the prefix
/// held (the request only added blocks) or there is no previous request.
///
/// Reasons, in the order they are tried: another model; the tools array;
/// a system layer (a compaction when the request carries a summary the
/// previous one did not, `/reload` otherwise); for a message, the same
/// message sent differently (the pipeline's cut moved), the previous
/// message now excluded or left out by the pipeline, or gone (replaced by
/// a summary: a compaction; by an older message: an undone compaction when
/// a summary left, an undone edit otherwise; by a newer one: an edit), or an older message back in the request (an
/// inclusion). Message ids are time-ordered (UUIDv7), which is what tells
/// an older message from a newer one.
#[must_use]
pub fn reason(
    prediction: &Prediction,
    prev: Option<&PrefixSnapshot>,
    cur: &PrefixSnapshot,
    changes: &Changes<'_>,
) -> Option<CacheBreak> {
    let prev = prev?;
    let i = prediction.first_change?;
    let at_block = |s: &PrefixSnapshot| s.blocks.get(i).map(|b| b.kind);
    let cur_kind = at_block(cur);
    if prediction.model_changed {
        return Some(CacheBreak {
            at: cur_kind.map_or(BreakAt::Tools, |k| at_of(k, changes)),
            reason: BreakReason::Model,
        });
    }
    let cur_kind = cur_kind?;
    let prev_kind = at_block(prev);
    let mut at = at_of(cur_kind, changes);
    let reason = match (prev_kind, cur_kind) {
        (_, BlockKind::Tools) | (Some(BlockKind::Tools), _) => BreakReason::ToolSet,
        (_, BlockKind::Layer { .. } | BlockKind::SystemExtra) => {
            if carries_new_summary(prev, cur, changes) {
                BreakReason::Compaction
            } else {
                BreakReason::Reload
            }
        }
        (
            Some(prev_kind @ BlockKind::Message { message_id: p, .. }),
            BlockKind::Message { message_id: c, .. },
        ) => {
            let next = cur.blocks.get(i + 1).and_then(|b| match b.kind {
                BlockKind::Message { message_id, .. } => message_id,
                _ => None,
            });
            let prev_next = prev.blocks.get(i + 1).and_then(|b| match b.kind {
                BlockKind::Message { message_id, .. } => message_id,
                _ => None,
            });
            let was_summary = matches!(prev_kind, BlockKind::Message { summary: true, .. });
            let (reason, left) = message_reason((p, was_summary), c, (prev_next, next), changes);
            // A message that left the request is where it broke.
            if let Some(id) = left {
                at = message_at(id, changes);
            } else if matches!(reason, BreakReason::Exclusion | BreakReason::Truncation)
                && p != c
                && p.is_some()
            {
                at = at_of(prev_kind, changes);
            }
            reason
        }
        (Some(BlockKind::Layer { .. } | BlockKind::SystemExtra), BlockKind::Message { .. }) => {
            BreakReason::Reload
        }
        (None, BlockKind::Message { .. }) => BreakReason::Changed,
    };
    Some(CacheBreak { at, reason })
}

/// Why the message block that started with `prev` now starts with `cur`
/// (`next`: the first message of the block after it), and the message
/// that left the request when that is what broke it.
fn message_reason(
    (prev, was_summary): (Option<MessageId>, bool),
    cur: Option<MessageId>,
    (prev_next, next): (Option<MessageId>, Option<MessageId>),
    changes: &Changes<'_>,
) -> (BreakReason, Option<MessageId>) {
    let (Some(p), Some(c)) = (prev, cur) else {
        // strata's note on omitted messages came or went: the pipeline
        // left out a different set.
        return (BreakReason::Truncation, None);
    };
    let find = |id: MessageId| changes.messages.iter().position(|m| m.id == id);
    let action = |k: usize| changes.report.get(k).map(|e| e.action);
    if p == c {
        // The same message sent differently: cut differently, or merged
        // with a message after it because the one between left.
        let Some(k) = find(c) else {
            return (BreakReason::Changed, None);
        };
        // An older message now follows it than did before: one came back
        // (it had been excluded), so this block no longer absorbs the next.
        if let (Some(was), Some(now)) = (prev_next, next)
            && now < was
        {
            return (BreakReason::Inclusion, Some(now));
        }
        let end = next.and_then(find).unwrap_or(changes.messages.len());
        for j in k + 1..end {
            match action(j) {
                Some(Action::Excluded) => return (BreakReason::Exclusion, Some(changes.messages[j].id)),
                Some(Action::Dropped | Action::Pruned) => {
                    return (BreakReason::Truncation, Some(changes.messages[j].id));
                }
                _ => {}
            }
        }
        return (BreakReason::Truncation, None);
    }
    if let Some(k) = find(p) {
        let reason = match action(k) {
            Some(Action::Excluded) => BreakReason::Exclusion,
            Some(Action::Dropped | Action::Pruned | Action::Merged) => BreakReason::Truncation,
            _ if c < p => BreakReason::Inclusion,
            _ => BreakReason::Changed,
        };
        return (reason, None);
    }
    let reason = match find(c).map(|k| changes.messages[k].kind) {
        Some(MessageKind::Summary) => BreakReason::Compaction,
        _ if c < p && was_summary => BreakReason::UndoCompaction,
        _ if c < p => BreakReason::UndoEdit,
        Some(_) => BreakReason::Edit,
        None => BreakReason::Changed,
    };
    (reason, None)
}

fn message_at(id: MessageId, changes: &Changes<'_>) -> BreakAt {
    BreakAt::Message {
        pos: changes.messages.iter().position(|m| m.id == id).map(|k| k + 1),
        message_id: Some(id),
    }
}

/// Whether `cur` carries a summary message `prev` did not.
fn carries_new_summary(prev: &PrefixSnapshot, cur: &PrefixSnapshot, changes: &Changes<'_>) -> bool {
    let ids = |s: &PrefixSnapshot| -> Vec<MessageId> {
        s.blocks
            .iter()
            .filter_map(|b| match b.kind {
                BlockKind::Message { message_id, .. } => message_id,
                _ => None,
            })
            .collect()
    };
    let before = ids(prev);
    ids(cur).iter().any(|id| {
        !before.contains(id)
            && changes
                .messages
                .iter()
                .any(|m| m.id == *id && m.kind == MessageKind::Summary)
    })
}

fn at_of(kind: BlockKind, changes: &Changes<'_>) -> BreakAt {
    match kind {
        BlockKind::Tools => BreakAt::Tools,
        BlockKind::Layer { layer } => BreakAt::System { layer: Some(layer) },
        BlockKind::SystemExtra => BreakAt::System { layer: None },
        BlockKind::Message { message_id, .. } => BreakAt::Message {
            pos: message_id.and_then(|id| changes.messages.iter().position(|m| m.id == id).map(|k| k + 1)),
            message_id,
        },
    }
}
