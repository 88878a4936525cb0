//! Small output helpers: number formatting, tables, and error sentences.

use std::io;

/// True when the error is a closed stdout (e.g. `strata sessions | head`),
/// which is not a failure.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>().map(io::Error::kind) == Some(io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(io::ErrorKind::BrokenPipe)
    })
}

/// The error as one sentence: strata's own errors already are; a cause is
/// appended after a colon when the top message does not contain it.
pub fn sentence(e: &anyhow::Error) -> String {
    let top = e.to_string();
    match e.source() {
        Some(cause) => {
            let cause = cause.to_string();
            if top.contains(&cause) {
                top
            } else {
                format!("{top}: {cause}")
            }
        }
        None => top,
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    strata::text::group_digits(n)
}

/// Display width of `text` in terminal cells (CJK and most emoji take two).
pub fn width(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// `text` followed by spaces up to `cells` terminal cells (by display
/// width, not characters); longer text is returned whole.
pub fn pad(text: &str, cells: usize) -> String {
    let mut out = text.to_owned();
    out.extend(std::iter::repeat_n(' ', cells.saturating_sub(width(text))));
    out
}

/// A unix-millisecond time as `YYYY-MM-DD HH:MM` in `zone` (the local
/// one is `jiff::tz::TimeZone::system()`; look it up once for a list).
pub fn local_time(ms: i64, zone: &jiff::tz::TimeZone) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_zoned(zone.clone()).strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// `text` safe to print on a terminal ([`strata::text::visible`]): escape
/// sequences that could recolour the terminal, set its title or clear it
/// show as `^[`, bidi overrides and zero-width characters as `\u{..}`.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    strata::text::visible(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_counts_cells() {
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(pad("日本", 6), "日本  ");
        assert_eq!(pad("toolong", 3), "toolong");
    }

    #[test]
    fn escape_sequences_are_defused() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(printable("a\u{1b}[31mred\u{7}"), "a^[[31mred^G");
        assert_eq!(printable("\u{9b}x"), "\\u{9b}x");
    }
}
