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

/// `s` cut to at most `max` cells from the left, with `…` first when
/// something was cut (for paths, whose end says the most).
#[must_use]
pub fn cut_left(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut kept = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        kept.push(c);
        used += w;
    }
    let mut out = String::from("…");
    out.extend(kept.into_iter().rev());
    out
}

/// A duration in milliseconds as `850ms`, `1.2s`, `12s`, `2m05s`.
#[must_use]
pub fn duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..10_000 => format!("{:.1}s", ms as f64 / 1_000.0),
        10_000..60_000 => format!("{}s", ms / 1_000),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1_000) % 60),
    }
}

/// Wraps `text` to lines of at most `max` cells: at spaces where it can,
/// inside a word where it must; newlines are kept; tabs become four spaces.
/// Always at least one line; a width of 0 is treated as 1.
#[must_use]
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split('\n') {
        rows(&expand(raw), max, |row| out.push(row.to_owned()));
    }
    out
}

/// How many lines [`wrap`] makes of `line` (one logical line, no `\n`),
/// without building them: a line of at most `max` bytes is one row, as no
/// character is wider than its UTF-8 encoding.
#[must_use]
pub fn wrapped_rows(line: &str, max: usize) -> usize {
    if line.len() <= max.max(1) && !has_tab_or_cr(line) {
        return 1;
    }
    let mut n = 0;
    rows(&expand(line), max, |_| n += 1);
    n
}

/// Whether [`expand`] changes `line`: a tab, a control character or an
/// invisible one.
fn has_tab_or_cr(line: &str) -> bool {
    let bytes = line.as_bytes();
    if bytes.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return false;
    }
    memchr::memchr(b'\t', bytes).is_some() || line.chars().any(crate::text::needs_showing)
}

/// `line` made visible ([`crate::text::visible`]: ESC as `^[`, a lone CR
/// as `^M`) with tabs as four spaces.
fn expand(line: &str) -> std::borrow::Cow<'_, str> {
    crate::render::defuse(line)
}

/// Hands each row of one logical line (tabs expanded, no `\n`) to `emit`,
/// wrapped as [`wrap`] documents. Printable ASCII (one cell a byte, the
/// bulk of a JSON body) is walked by bytes, anything else by characters
/// and their cell widths; [`split`] is the one place the rule lives.
fn rows<'a>(line: &'a str, max: usize, mut emit: impl FnMut(&'a str)) {
    let max = max.max(1);
    if line.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        if line.len() <= max {
            emit(line);
        } else {
            split(
                line,
                max,
                line.bytes().enumerate().map(|(i, b)| (i, char::from(b), 1)),
                emit,
            );
        }
    } else if line.len() <= max || width(line) <= max {
        emit(line);
    } else {
        split(line, max, by_chars(line), emit);
    }
}

/// `line`'s characters with their byte index and cells.
fn by_chars(line: &str) -> impl Iterator<Item = (usize, char, usize)> + '_ {
    line.char_indices().map(|(i, c)| (i, c, c.width().unwrap_or(0)))
}

/// Breaks `line` into rows of at most `max` cells from its characters as
/// (byte index, character, cells): at the last space where it can (a row
/// ends before it, trailing blanks trimmed), inside a word where it must; a
/// space that overflows ends the row and is dropped.
fn split<'a>(
    line: &'a str,
    max: usize,
    cells: impl Iterator<Item = (usize, char, usize)>,
    mut emit: impl FnMut(&'a str),
) {
    let mut start = 0;
    let mut used = 0;
    // Index just after the last space of the row, and the row's width up
    // to and including it.
    let mut last_space: Option<(usize, usize)> = None;
    for (i, c, w) in cells {
        if used + w > max && c == ' ' {
            emit(&line[start..i]);
            start = i + 1;
            used = 0;
            last_space = None;
            continue;
        }
        if used + w > max {
            match last_space {
                Some((at, before)) if at < i => {
                    emit(line[start..at].trim_end());
                    start = at;
                    used -= before;
                }
                _ => {
                    emit(&line[start..i]);
                    start = i;
                    used = 0;
                }
            }
            last_space = None;
        }
        used += w;
        if c == ' ' {
            last_space = Some((i + 1, used));
        }
    }
    emit(&line[start..]);
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
    fn printable_ascii_wraps_by_bytes_as_by_characters() {
        let line = "  \"content\": \"a long JSON   string value, that-wraps-across rows\",  ";
        for max in 1..40 {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            rows(line, max, |r| fast.push(r));
            split(line, max, by_chars(line), |r| slow.push(r));
            assert_eq!(fast, slow, "at {max}");
        }
    }

    #[test]
    fn wrapped_rows_counts_what_wrap_makes() {
        let lines = [
            "",
            "short",
            "hello big world",
            "abcdefgh",
            "ab  cd  ef   gh",
            "日本語のテキスト mixed with words 🙂 and more",
            "tab\tinside\tthe\tline and a carriage return\r",
            "    \"content\": \"a long JSON string value that wraps across rows\",",
        ];
        for line in lines {
            for max in 0..24 {
                assert_eq!(
                    wrapped_rows(line, max),
                    wrap(line, max).len(),
                    "{line:?} at {max}"
                );
            }
        }
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(1_240), "1.2s");
        assert_eq!(duration(12_900), "12s");
        assert_eq!(duration(125_000), "2m05s");
    }

    #[test]
    fn cut_left_keeps_the_end() {
        assert_eq!(cut_left("spill/abc/call_1.txt", 11), "…call_1.txt");
        assert_eq!(cut_left("short", 9), "short");
        assert_eq!(cut_left("日本語", 4), "…語");
    }

    #[test]
    fn cut_adds_an_ellipsis() {
        assert_eq!(cut("hello world", 6), "hello…");
        assert_eq!(cut("hi", 6), "hi");
        assert_eq!(cut("日本語", 4), "日…");
    }
}
