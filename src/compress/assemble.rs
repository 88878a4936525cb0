//! The summary message (DESIGN §7 phase 4): the reference-only notice, the
//! summary body and the end marker (texts in `assets/prompts/`), with a role
//! that keeps user/assistant alternation, merged into the first message after
//! it when no role can.
//!
//! Invariants: a summary holds exactly one notice and one end marker, even
//! when its body came from a model that echoed them or from an earlier
//! summary; a merged summary keeps the original message's text verbatim after
//! the end marker. Pure.

use crate::domain::{Message, MessageId, MessageKind, Role};

/// The opening notice of every summary (`assets/prompts/summary_notice.md`).
pub const NOTICE: &str = include_str!("../../assets/prompts/summary_notice.md");
/// The closing marker of every summary (`assets/prompts/summary_end.md`).
pub const END_MARKER: &str = include_str!("../../assets/prompts/summary_end.md");

/// Splits a summary message's content into its body (between notice and end
/// marker, trimmed) and, when a message was merged after the end marker, that
/// message's text.
#[must_use]
pub fn split_summary(content: &str) -> (&str, Option<&str>) {
    let notice = NOTICE.trim();
    let end = END_MARKER.trim();
    let start = content.find(notice).map_or(0, |i| i + notice.len());
    let rest = &content[start..];
    match rest.find(end) {
        Some(i) => {
            let after = rest[i + end.len()..].trim_start_matches(['\n', '\r']);
            (rest[..i].trim(), (!after.is_empty()).then_some(after))
        }
        None => (rest.trim(), None),
    }
}

/// A body with any copies of the notice or the end marker removed, so a
/// summary never nests another one's framing.
#[must_use]
pub fn clean_body(body: &str) -> String {
    body.replace(NOTICE.trim(), "")
        .replace(END_MARKER.trim(), "")
        .trim()
        .to_owned()
}

/// The content of a summary message: notice, body, end marker.
#[must_use]
pub fn summary_block(body: &str) -> String {
    format!(
        "{}\n\n{}\n\n{}",
        NOTICE.trim(),
        clean_body(body),
        END_MARKER.trim()
    )
}

/// The role a standalone summary takes between `prev` and `next` (the
/// neighbours it will have; system messages count as none), or `None` when
/// it must be merged into `next`: no role can sit between a user message
/// and an assistant reply, and the first non-system message must be a user's.
#[must_use]
pub fn standalone_role(prev: Option<Role>, next: Option<Role>) -> Option<Role> {
    let prev = prev.filter(|r| *r != Role::System);
    match next {
        Some(Role::User) => (prev == Some(Role::User)).then_some(Role::Assistant),
        Some(Role::Assistant | Role::Tool) => (prev != Some(Role::User)).then_some(Role::User),
        Some(Role::System) | None => Some(if prev == Some(Role::User) {
            Role::Assistant
        } else {
            Role::User
        }),
    }
}

/// The summary message for `body` placed between `prev` and `next`: a new
/// `Summary` message with the role of [`standalone_role`], or `next`
/// rewritten (new id, kind `Summary`, the block before its own text) when
/// no role fits; the second value is then `next`'s id. A pinned `next` is
/// never merged into (the summary would become pinned), nor one longer than
/// the summary (it would be summarised with it ever after, however large);
/// the summary then stands alone and the pipeline's repair merges the
/// same-role neighbours of the request.
#[must_use]
pub fn summary_message(
    body: &str,
    prev: Option<&Message>,
    next: Option<&Message>,
    seq: i64,
    created_at: i64,
    session_id: crate::domain::SessionId,
) -> (Message, Option<MessageId>) {
    let block = summary_block(body);
    match (standalone_role(prev.map(|m| m.role), next.map(|m| m.role)), next) {
        // Never into a message larger than the summary: that message
        // would then ride with every summary after it.
        (None, Some(next)) if !next.pinned && next.content.len() <= block.len() => {
            let mut merged = next.clone();
            merged.id = MessageId::new();
            merged.kind = MessageKind::Summary;
            merged.tokens = None;
            merged.content = format!("{block}\n\n{}", next.content);
            (merged, Some(next.id))
        }
        (role, _) => {
            let fallback = if prev.map(|m| m.role) == Some(Role::User) {
                Role::Assistant
            } else {
                Role::User
            };
            let mut m = Message::new(session_id, role.unwrap_or(fallback), block, created_at);
            m.kind = MessageKind::Summary;
            m.seq = seq;
            (m, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_keep_alternation() {
        use Role::{Assistant as A, System as S, User as U};
        assert_eq!(standalone_role(Some(A), Some(A)), Some(U));
        assert_eq!(standalone_role(Some(U), Some(U)), Some(A));
        assert_eq!(standalone_role(Some(S), Some(A)), Some(U));
        assert_eq!(standalone_role(None, Some(U)), None);
        assert_eq!(standalone_role(Some(A), Some(U)), None);
        assert_eq!(standalone_role(Some(U), Some(A)), None);
    }

    #[test]
    fn framing_is_never_nested() {
        let once = summary_block("facts");
        let twice = summary_block(&once);
        assert_eq!(once, twice);
        assert_eq!(split_summary(&once), ("facts", None));
        let merged = format!("{once}\n\nplease continue");
        assert_eq!(split_summary(&merged), ("facts", Some("please continue")));
    }
}
