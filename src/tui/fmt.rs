//! Small text helpers shared by the panes: compact token figures and
//! width-aware wrapping and cutting (CJK and emoji take two cells).

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// `950`, `8.1k`, `81k`, `1.2M`: a token count in at most five cells.
#[must_use]
pub fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..100_000 => trim_zero(format!("{:.1}k", n as f64 / 1_000.0)),
        100_000..1_000_000 => format!("{}k", n / 1_000),
        _ => trim_zero(format!("{:.1}M", n as f64 / 1_000_000.0)),
    }
}

/// `8.0k` → `8k`.
fn trim_zero(s: String) -> String {
    s.replace(".0k", "k").replace(".0M", "M")
}

/// Display width of `s` in terminal cells.
#[must_use]
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// `s` cut to at most `max` cells, with `…` when something was cut.
#[must_use]
pub fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Wraps `text` to lines of at most `max` cells: at spaces where it can,
/// inside a word where it must; newlines are kept; tabs become four spaces.
/// Always at least one line; a width of 0 is treated as 1.
#[must_use]
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut out = Vec::new();
    for raw in text.split('\n') {
        let line = raw.replace('\t', "    ").replace('\r', "");
        if width(&line) <= max {
            out.push(line);
            continue;
        }
        let mut current = String::new();
        let mut used = 0;
        // Index in `current` just after the last space, and the width before it.
        let mut last_space: Option<(usize, usize)> = None;
        for c in line.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > max && c == ' ' {
                out.push(std::mem::take(&mut current));
                used = 0;
                last_space = None;
                continue;
            }
            if used + w > max {
                match last_space {
                    Some((at, before)) if at < current.len() => {
                        let rest = current.split_off(at);
                        out.push(current.trim_end().to_owned());
                        current = rest;
                        used -= before;
                    }
                    _ => {
                        out.push(std::mem::take(&mut current));
                        used = 0;
                    }
                }
                last_space = None;
            }
            current.push(c);
            used += w;
            if c == ' ' {
                last_space = Some((current.len(), used));
            }
        }
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_figures_are_compact() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(8_123), "8.1k");
        assert_eq!(tokens(8_000), "8k");
        assert_eq!(tokens(128_000), "128k");
        assert_eq!(tokens(1_250_000), "1.2M");
    }

    #[test]
    fn wrap_respects_cell_width_of_wide_characters() {
        let lines = wrap("日本語のテキスト", 6);
        assert!(lines.iter().all(|l| width(l) <= 6), "{lines:?}");
        assert_eq!(lines.concat(), "日本語のテキスト");
    }

    #[test]
    fn wrap_breaks_at_spaces() {
        assert_eq!(wrap("hello big world", 9), vec!["hello big", "world"]);
        assert_eq!(wrap("a\n\nb", 5), vec!["a", "", "b"]);
        assert_eq!(wrap("abcdefgh", 3), vec!["abc", "def", "gh"]);
    }

    #[test]
    fn cut_adds_an_ellipsis() {
        assert_eq!(cut("hello world", 6), "hello…");
        assert_eq!(cut("hi", 6), "hi");
        assert_eq!(cut("日本語", 4), "日…");
    }
}
