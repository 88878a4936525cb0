//! Long pastes folded to one label: in the composer a paste of more than
//! [`FOLD_LINES`] lines (or [`FOLD_CHARS`] characters) is the label
//! `[pasted 3,001 lines · 105k tokens]` (the tokens once the draft counter
//! has counted it), and the chat shows the sent message the same way until
//! the expand key. The label is only what is drawn: the full text is what
//! is sent, counted and kept in the input history ([`expand`]).
//!
//! A label is unique within a draft (a second paste of as many lines is
//! `[pasted 25 lines #2]`), so expanding replaces each label's first
//! occurrence. A label the user edited no longer matches: its paste is
//! dropped from the draft, as text deleted would be.

use super::fmt;
use crate::text::group_digits;
use std::borrow::Cow;

/// A paste of more lines than this is folded.
pub const FOLD_LINES: usize = 20;

/// A paste of more characters than this is folded, whatever its lines.
pub const FOLD_CHARS: usize = 4_000;

/// Lines of a message shown above the fold when the chat cannot tell its
/// pastes (a message sent in an earlier run).
const SHOWN_LINES: usize = 3;

/// One folded paste.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// The pasted text, line breaks as `\n`.
    pub text: String,
    /// Its lines.
    pub lines: usize,
    /// Its tokens, once counted.
    pub tokens: Option<u64>,
    /// 1 for the first paste of this many lines in the draft, 2, 3, ...
    /// after it (shown as `#2`).
    pub nth: usize,
    /// The ticket of the count asked for it, while one is on its way.
    pub ticket: Option<u64>,
}

impl Fold {
    /// The fold of `text`, numbered `nth` (see [`next_nth`]).
    #[must_use]
    pub fn new(text: String, nth: usize) -> Self {
        Self {
            lines: line_count(&text),
            text,
            tokens: None,
            nth,
            ticket: None,
        }
    }

    /// `[pasted 3,001 lines · 105k tokens]`, `[pasted 25 lines #2]`.
    #[must_use]
    pub fn label(&self) -> String {
        let unit = if self.lines == 1 { "line" } else { "lines" };
        let mut s = format!("[pasted {} {unit}", group_digits(self.lines as u64));
        if self.nth > 1 {
            s.push_str(&format!(" #{}", self.nth));
        }
        if let Some(t) = self.tokens {
            s.push_str(&format!(" · {} tokens", fmt::tokens(t)));
        }
        s.push(']');
        s
    }
}

/// Whether a paste of `text` is folded.
#[must_use]
pub fn is_long(text: &str) -> bool {
    line_count(text) > FOLD_LINES || text.chars().nth(FOLD_CHARS).is_some()
}

/// Lines of `text` (a final line break ends the last line, it does not
/// start another); at least 1.
#[must_use]
pub fn line_count(text: &str) -> usize {
    text.lines().count().max(1)
}

/// The number a new fold of `lines` lines takes beside `folds`.
#[must_use]
pub fn next_nth(folds: &[Fold], lines: usize) -> usize {
    folds
        .iter()
        .filter(|f| f.lines == lines)
        .map(|f| f.nth)
        .max()
        .unwrap_or(0)
        + 1
}

/// `draft` with each fold's label (its first occurrence) replaced by the
/// fold's text.
#[must_use]
pub fn expand(draft: &str, folds: &[Fold]) -> String {
    let mut out = draft.to_owned();
    for f in folds {
        let label = f.label();
        if let Some(at) = out.find(&label) {
            out.replace_range(at..at + label.len(), &f.text);
        }
    }
    out
}

/// What the chat shows of a user message folded: each paste in `sent`
/// found in `content` as its label, with `(KEY expands)`; failing that, a
/// long message (see [`is_long`]) as its first lines and a count of the
/// rest. `None` when nothing is folded.
#[must_use]
pub fn fold_for_display<'a>(content: &'a str, sent: &[Fold], expand_key: &str) -> Option<Cow<'a, str>> {
    let mut out: Cow<'a, str> = Cow::Borrowed(content);
    for f in sent {
        if let Some(at) = out.find(&f.text) {
            let end = if f.text.ends_with('\n') { "\n" } else { "" };
            let label = format!("{} ({expand_key} expands){end}", f.label());
            out.to_mut().replace_range(at..at + f.text.len(), &label);
        }
    }
    if matches!(out, Cow::Owned(_)) {
        return Some(out);
    }
    if !is_long(content) {
        return None;
    }
    let lines = line_count(content);
    let mut shown: Vec<String> = content
        .lines()
        .take(SHOWN_LINES.min(lines.saturating_sub(1)).max(1))
        .map(|l| fmt::cut(l, 200))
        .collect();
    let rest = lines - shown.len();
    if rest > 0 {
        shown.push(format!(
            "[+{} lines ({expand_key} expands)]",
            group_digits(rest as u64)
        ));
    } else {
        shown.push(format!("[… ({expand_key} expands)]"));
    }
    Some(Cow::Owned(shown.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> String {
        (0..n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn labels_group_digits_and_number_repeats() {
        let mut f = Fold::new(lines(3_001), 1);
        assert_eq!(f.label(), "[pasted 3,001 lines]");
        f.tokens = Some(105_000);
        assert_eq!(f.label(), "[pasted 3,001 lines · 105k tokens]");
        let second = Fold::new(lines(3_001), next_nth(&[f], 3_001));
        assert_eq!(second.label(), "[pasted 3,001 lines #2]");
    }

    #[test]
    fn only_long_pastes_fold() {
        assert!(!is_long(&lines(FOLD_LINES)));
        assert!(is_long(&lines(FOLD_LINES + 1)));
        assert!(is_long(&"x".repeat(FOLD_CHARS + 1)));
    }

    #[test]
    fn expanding_puts_each_text_back_once() {
        let a = Fold::new(lines(25), 1);
        let b = Fold::new(lines(25), 2);
        let draft = format!("see {} and {} and [pasted nothing]", a.label(), b.label());
        let full = expand(&draft, &[a.clone(), b.clone()]);
        assert_eq!(
            full,
            format!("see {} and {} and [pasted nothing]", a.text, b.text)
        );
    }

    #[test]
    fn the_chat_folds_known_pastes_and_long_messages() {
        let f = Fold::new(lines(30), 1);
        let content = format!("look:\n{}why?", f.text);
        let shown = fold_for_display(&content, std::slice::from_ref(&f), "F4").unwrap();
        assert_eq!(shown, "look:\n[pasted 30 lines] (F4 expands)\nwhy?");
        let shown = fold_for_display(&content, &[], "F4").unwrap();
        assert_eq!(shown, "look:\nline 0\nline 1\n[+29 lines (F4 expands)]");
        assert_eq!(fold_for_display("short", &[f], "F4"), None);
    }
}
