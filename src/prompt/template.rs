//! A tiny, deterministic template filler for the prompt assets, plus number
//! formatting shared by the layers.
//!
//! Syntax: `{name}` is replaced by a value. A template line holding a
//! placeholder whose value is `None` is removed, together with one blank line
//! right after it, so optional lines leave no gap. Values are inserted
//! verbatim and never re-scanned, so file text containing braces is safe.
//! Text between braces that is not a known name is kept as it is.

/// Fills `template` with `values` (name, value) pairs; see the module doc.
/// The result has no trailing whitespace.
#[must_use]
pub(crate) fn fill(template: &str, values: &[(&str, Option<&str>)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut skip_blank = false;
    for line in template.lines() {
        if skip_blank {
            skip_blank = false;
            if line.trim().is_empty() {
                continue;
            }
        }
        match fill_line(line, values) {
            Some(filled) => {
                out.push_str(&filled);
                out.push('\n');
            }
            None => skip_blank = true,
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// One line: `None` when a placeholder in it has no value.
fn fill_line(line: &str, values: &[(&str, Option<&str>)]) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return Some(out);
        };
        let name = &after[..close];
        match values.iter().find(|(key, _)| *key == name) {
            Some((_, Some(value))) => out.push_str(value),
            Some((_, None)) => return None,
            None => out.push_str(&rest[open..=open + 1 + close]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

pub(crate) use crate::text::{fence_for, group_digits};

/// The first `n` characters of `s`.
#[must_use]
pub(crate) fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The last `n` characters of `s`.
#[must_use]
pub(crate) fn last_chars(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().nth_back(n - 1) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

/// `s` cut to `max` characters: `max - 3` characters and `...` when longer.
#[must_use]
pub(crate) fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out = first_chars(s, max.saturating_sub(3)).to_owned();
    out.push_str("...");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_values_and_drops_lines_without_one() {
        let t = "# {title}\n{opt}\n\nbody: {body}\n";
        assert_eq!(
            fill(
                t,
                &[("title", Some("T")), ("opt", None), ("body", Some("{title}"))]
            ),
            "# T\nbody: {title}"
        );
        assert_eq!(
            fill(
                t,
                &[("title", Some("T")), ("opt", Some("o")), ("body", Some("b"))]
            ),
            "# T\no\n\nbody: b"
        );
    }

    #[test]
    fn unknown_and_unclosed_braces_are_kept() {
        assert_eq!(fill("a {x} {y", &[]), "a {x} {y");
    }

    #[test]
    fn char_slicing_respects_boundaries() {
        assert_eq!(first_chars("héllo", 2), "hé");
        assert_eq!(last_chars("héllo", 4), "éllo");
        assert_eq!(last_chars("hé", 9), "hé");
        assert_eq!(last_chars("hé", 0), "");
        assert_eq!(ellipsize(&"x".repeat(80), 60).chars().count(), 60);
        assert!(ellipsize(&"x".repeat(80), 60).ends_with("..."));
        assert_eq!(ellipsize("short", 60), "short");
    }
}
