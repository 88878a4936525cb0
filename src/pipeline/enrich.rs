//! Stage 1, enrich (DESIGN §6): the parts a turn adds to the user's message
//! before it is sent: files named as `@path` and the per-turn
//! `<system-reminder>` (DESIGN §4).
//!
//! Reading is the runtime's job; this file finds the references and formats
//! what was read. The parts are stored as synthetic `user` messages right
//! after the user's own message, so repair merges them into it (the report
//! says `merged`) and the bytes sent stay the same on every later turn, which
//! keeps the provider's prompt cache valid. A reminder carries
//! `ephemeral_ttl = 1` and is pruned from the next turn on; an attachment is
//! kept. A file already attached with the same content is not embedded
//! twice: a one-line note points back to the earlier copy.
//!
//! Pure: no I/O. Who may call it: the runtime and the app, before a submit.

use crate::domain::Message;
use crate::text::fence_for;
use sha2::{Digest, Sha256};

/// Characters of an attached file embedded at most (the head and the tail
/// are kept around a marker beyond that).
pub const ATTACHMENT_MAX_CHARS: usize = 100_000;

/// The `@path` references in `text`, in order, without duplicates: an `@`
/// at the start or after whitespace, followed by a path that holds a `/` or
/// a `.` (so `@alice` is a mention, not a file). Trailing punctuation
/// (`.,;:!?)]}'"`) is not part of the path; an e-mail address is never a
/// reference.
#[must_use]
pub fn attachment_refs(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut prev_ws = true;
    for (i, c) in text.char_indices() {
        if c == '@' && prev_ws {
            let rest = &text[i + 1..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let path = rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"']);
            if !path.is_empty()
                && (path.contains('/') || path.contains('.'))
                && !out.iter().any(|p| p == path)
            {
                out.push(path.to_owned());
            }
        }
        prev_ws = c.is_whitespace();
    }
    out
}

/// Hex sha256 of `content`, as written in the attachment header.
#[must_use]
pub fn content_sha256(content: &str) -> String {
    hex::encode(Sha256::digest(content.as_bytes()))
}

fn header(path: &str, sha: &str) -> String {
    format!(
        "<attachment path=\"{}\" sha256=\"{}\"",
        path.replace('"', "'"),
        &sha[..16.min(sha.len())]
    )
}

/// The part embedding `content` of the file `path`, or, when `history`
/// already holds the same file with the same content, a one-line note
/// saying so. Content beyond [`ATTACHMENT_MAX_CHARS`] keeps its head and
/// tail around a marker.
#[must_use]
pub fn attachment_part(path: &str, content: &str, history: &[Message]) -> String {
    let sha = content_sha256(content);
    let head = header(path, &sha);
    if history.iter().any(|m| m.content.contains(&head)) {
        return format!(
            "{head} unchanged=\"true\"/> (the same content is attached earlier in this conversation)"
        );
    }
    let body = shorten(content);
    let fence = fence_for(&body);
    format!("{head}>\n{fence}\n{body}\n{fence}\n</attachment>")
}

/// The part for a file that could not be embedded, with why (one clause).
#[must_use]
pub fn attachment_note(path: &str, why: &str) -> String {
    format!(
        "<attachment path=\"{}\" embedded=\"false\"/> ({why})",
        path.replace('"', "'")
    )
}

/// The per-turn reminder part holding `output` (the output of
/// `prompt.turn_reminder_cmd`); `None` when the output is blank.
#[must_use]
pub fn reminder_part(output: &str) -> Option<String> {
    let output = output.trim();
    (!output.is_empty()).then(|| format!("<system-reminder>\n{output}\n</system-reminder>"))
}

fn shorten(content: &str) -> String {
    let count = content.chars().count();
    if count <= ATTACHMENT_MAX_CHARS {
        return content.to_owned();
    }
    let keep_head = ATTACHMENT_MAX_CHARS * 7 / 10;
    let keep_tail = ATTACHMENT_MAX_CHARS * 2 / 10;
    let head: String = content.chars().take(keep_head).collect();
    let tail: String = content.chars().skip(count - keep_tail).collect();
    format!(
        "{head}\n[... {} characters of this {count}-character file left out ...]\n{tail}",
        count - keep_head - keep_tail
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Role, SessionId};

    #[test]
    fn references_need_a_path_shape_and_a_leading_space() {
        let refs = attachment_refs(
            "look at @src/lib.rs, @AGENTS.md and ask @alice; mail me@example.com (@docs/a.md)",
        );
        assert_eq!(refs, vec!["src/lib.rs", "AGENTS.md"]);
        assert_eq!(attachment_refs("@README.md @README.md"), vec!["README.md"]);
        assert!(attachment_refs("no refs here @ all").is_empty());
    }

    #[test]
    fn the_same_content_is_not_embedded_twice() {
        let first = attachment_part("src/lib.rs", "fn main() {}\n", &[]);
        assert!(first.contains("```\nfn main() {}\n\n```") || first.contains("fn main() {}"));
        let history = vec![Message::new(SessionId::new(), Role::User, first.clone(), 0)];
        let again = attachment_part("src/lib.rs", "fn main() {}\n", &history);
        assert!(again.contains("unchanged=\"true\""), "{again}");
        assert!(!again.contains("fn main"));
        let changed = attachment_part("src/lib.rs", "fn main() { run() }\n", &history);
        assert!(changed.contains("fn main() { run() }"));
    }

    #[test]
    fn long_files_keep_head_and_tail() {
        let text = format!("HEAD{}TAIL", "x".repeat(ATTACHMENT_MAX_CHARS * 2));
        let part = attachment_part("big.txt", &text, &[]);
        assert!(part.contains("HEAD") && part.contains("TAIL") && part.contains("left out"));
        assert!(part.chars().count() < ATTACHMENT_MAX_CHARS + 500);
    }

    #[test]
    fn a_blank_reminder_is_no_part() {
        assert_eq!(reminder_part("  \n"), None);
        assert_eq!(
            reminder_part("M src/lib.rs\n").as_deref(),
            Some("<system-reminder>\nM src/lib.rs\n</system-reminder>")
        );
    }
}
