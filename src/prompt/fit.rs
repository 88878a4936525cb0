//! Fitting one source file into its character cap: frontmatter stripping,
//! head 70 % / tail 20 % truncation with a marker, and the warnings and layer
//! table entry that describe what happened (DESIGN §4 "Caps").

use super::assets;
use super::inputs::{SourceBody, SourceText};
use super::settings::head_tail;
use super::template::{fill, first_chars, group_digits, last_chars};
use crate::domain::{SourceInfo, SourceStatus};

/// Splits a leading YAML frontmatter block (`---` … `---` or `...`) from
/// `text`: `Some((yaml, body))`, or `None` when there is no complete block.
#[must_use]
pub fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end();
        if bare == "---" || bare == "..." {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            return Some((yaml, body));
        }
        offset += line.len();
    }
    None
}

/// `text` without its frontmatter block, if it has one.
#[must_use]
pub fn strip_frontmatter(text: &str) -> &str {
    split_frontmatter(text).map_or(text, |(_, body)| body)
}

/// One source after fitting: the text to include (with the cut marker when
/// truncated), its layer-table entry and what it cost.
#[derive(Debug)]
pub(crate) struct Fitted {
    /// The text to include, trimmed; `None` when there is nothing to include.
    pub body: Option<String>,
    /// The layer-table entry.
    pub info: SourceInfo,
    /// Characters of the file kept (the marker not counted).
    pub kept: usize,
}

/// Why a source was cut: its own cap, or what was left of the total cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CapKind {
    /// The per-file cap.
    PerFile,
    /// What remained of the 150,000-character total for instruction files.
    TotalLeft,
}

/// Fits `source` into `cap` characters; pushes warnings for skips, blocks,
/// lossy decoding and truncation. With `strip_fm`, YAML frontmatter is
/// removed before measuring.
pub(crate) fn fit(
    source: &SourceText,
    cap: usize,
    cap_kind: CapKind,
    strip_fm: bool,
    warnings: &mut Vec<String>,
) -> Fitted {
    let path = &source.path;
    let note = source.note.as_deref().unwrap_or("it could not be read");
    match source.status {
        SourceStatus::Missing => return nothing(source, SourceStatus::Missing),
        SourceStatus::Skipped | SourceStatus::Truncated => {
            warnings.push(format!("{path} was skipped: {note}."));
            return nothing(source, SourceStatus::Skipped);
        }
        SourceStatus::Blocked => {
            warnings.push(format!("{path} was not read: {note}."));
            return nothing(source, SourceStatus::Blocked);
        }
        SourceStatus::Found => {}
    }
    if source.lossy {
        warnings.push(format!(
            "{path} is not valid UTF-8; the invalid bytes were replaced with U+FFFD."
        ));
    }
    let strip = |s: &'_ str| -> String { if strip_fm { strip_frontmatter(s) } else { s }.to_owned() };
    let (head, tail, total, unit, whole) = match &source.body {
        SourceBody::Empty => return nothing(source, SourceStatus::Found),
        SourceBody::Whole { text } => {
            let total = text.chars().count() as u64;
            let body = strip(text);
            if body.trim().chars().count() <= cap {
                return found(source, body.trim(), total);
            }
            // Cut exactly: the head and tail are the file's own characters.
            let (h, t) = head_tail(cap);
            let head = first_chars(&body, h).to_owned();
            let tail = last_chars(&body, t).to_owned();
            (head, tail, total, "characters", true)
        }
        SourceBody::Excerpt {
            head,
            tail,
            original_bytes,
        } => {
            let (h, t) = head_tail(cap);
            let head = first_chars(&strip(head), h).to_owned();
            let tail = last_chars(tail, t).to_owned();
            (head, tail, *original_bytes, "bytes", false)
        }
    };
    let (head_n, tail_n) = (head.chars().count(), tail.chars().count());
    let marker = fill(
        assets::TRUNCATION_MARKER,
        &[
            ("head", Some(&group_digits(head_n as u64))),
            ("tail", Some(&group_digits(tail_n as u64))),
            ("total", Some(&group_digits(total))),
            ("unit", Some(unit)),
            ("path", Some(path)),
        ],
    );
    let over = match cap_kind {
        CapKind::PerFile => format!("over its cap of {} characters", group_digits(cap as u64)),
        CapKind::TotalLeft => format!(
            "over the {} characters left of the {}-character total for instruction files",
            group_digits(cap as u64),
            group_digits(super::TOTAL_INSTRUCTION_CAP as u64)
        ),
    };
    let size = if whole {
        format!("{} characters", group_digits(total))
    } else {
        format!("{} bytes", group_digits(total))
    };
    warnings.push(format!(
        "{path} has {size}, {over}; the prompt keeps its first {} and last {} characters.",
        group_digits(head_n as u64),
        group_digits(tail_n as u64)
    ));
    let kept = head_n + tail_n;
    Fitted {
        body: Some(format!("{head}\n{marker}\n{tail}")),
        info: SourceInfo {
            path: path.clone(),
            status: SourceStatus::Truncated,
            original_chars: total,
            kept_chars: kept as u64,
        },
        kept,
    }
}

fn nothing(source: &SourceText, status: SourceStatus) -> Fitted {
    Fitted {
        body: None,
        info: SourceInfo {
            path: source.path.clone(),
            status,
            original_chars: 0,
            kept_chars: 0,
        },
        kept: 0,
    }
}

fn found(source: &SourceText, body: &str, total: u64) -> Fitted {
    let kept = body.chars().count();
    Fitted {
        body: (!body.is_empty()).then(|| body.to_owned()),
        info: SourceInfo {
            path: source.path.clone(),
            status: SourceStatus::Found,
            original_chars: total,
            kept_chars: kept as u64,
        },
        kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_is_split_only_when_complete() {
        assert_eq!(
            split_frontmatter("---\nname: x\n---\nbody\n"),
            Some(("name: x\n", "body\n"))
        );
        assert_eq!(
            split_frontmatter("---\r\na: 1\r\n...\r\nb"),
            Some(("a: 1\r\n", "b"))
        );
        assert_eq!(split_frontmatter("---\nnever closed\n"), None);
        assert_eq!(
            strip_frontmatter("# no frontmatter\n---\n"),
            "# no frontmatter\n---\n"
        );
    }

    #[test]
    fn a_file_within_its_cap_is_kept_whole() {
        let mut w = Vec::new();
        let f = fit(
            &SourceText::whole("/p/A.md", "  hello  \n"),
            10,
            CapKind::PerFile,
            true,
            &mut w,
        );
        assert_eq!(f.body.as_deref(), Some("hello"));
        assert_eq!(f.info.status, SourceStatus::Found);
        assert_eq!((f.info.original_chars, f.info.kept_chars), (10, 5));
        assert!(w.is_empty());
    }

    #[test]
    fn a_file_over_its_cap_keeps_head_and_tail_with_a_marker() {
        let text: String = ('a'..='z').cycle().take(100).collect();
        let mut w = Vec::new();
        let f = fit(
            &SourceText::whole("/p/A.md", text.clone()),
            50,
            CapKind::PerFile,
            false,
            &mut w,
        );
        let body = f.body.unwrap();
        assert!(body.starts_with(&format!("{}\n[", &text[..35])));
        assert!(body.ends_with(&format!("]\n{}", &text[90..])));
        assert!(body.contains("kept the first 35 and the last 10 of 100 characters; read /p/A.md"));
        assert_eq!(f.info.status, SourceStatus::Truncated);
        assert_eq!(f.kept, 45);
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("/p/A.md has 100 characters, over its cap of 50"));
    }

    #[test]
    fn skipped_blocked_and_lossy_sources_warn() {
        let mut w = Vec::new();
        let skipped = SourceText::skipped("/p/A.md", "it is a directory");
        assert!(fit(&skipped, 9, CapKind::PerFile, true, &mut w).body.is_none());
        let blocked = SourceText::blocked("/p/B.md", "it resolves outside the workspace");
        assert_eq!(
            fit(&blocked, 9, CapKind::PerFile, true, &mut w).info.status,
            SourceStatus::Blocked
        );
        let mut lossy = SourceText::whole("/p/C.md", "x\u{FFFD}");
        lossy.lossy = true;
        fit(&lossy, 9, CapKind::PerFile, true, &mut w);
        assert_eq!(
            w,
            vec![
                "/p/A.md was skipped: it is a directory.",
                "/p/B.md was not read: it resolves outside the workspace.",
                "/p/C.md is not valid UTF-8; the invalid bytes were replaced with U+FFFD.",
            ]
        );
    }
}
