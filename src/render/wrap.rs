//! Wrapping styled text to a width in terminal columns, and defusing the
//! characters a terminal would act on.
//!
//! Widths are measured per grapheme cluster with `unicode-width`, the way
//! ratatui measures and draws them, so a wrapped line never takes more
//! columns than asked for: CJK and emoji take two, combining marks none. A
//! cluster wider than the whole width (a CJK character at width 1) is shown
//! as `…`. Prose breaks at spaces and around wide characters (CJK text has no
//! spaces); code breaks anywhere and keeps every space.

use ratatui::style::Style;
use ratatui::text::Span;
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// A run of text in one style: the unit the Markdown walker produces.
pub(crate) type Seg = (Style, String);

/// Spaces a tab becomes (its column cannot be known before wrapping).
const TAB: &str = "    ";

/// `text` made visible instead of acted on ([`crate::text::visible`]: ESC
/// as `^[`, a lone CR as `^M`, bidi overrides as `\u{202e}`), tabs as four
/// spaces. Newlines are not expected here (callers split lines first) and
/// are shown as `^J`; a CR at the end is dropped (what splitting a CRLF
/// line ending at its LF leaves; it hides nothing after it).
#[must_use]
pub fn defuse(text: &str) -> std::borrow::Cow<'_, str> {
    let shown = crate::text::visible(text.strip_suffix('\r').unwrap_or(text));
    if !shown.contains(['\t', '\n']) {
        return shown;
    }
    std::borrow::Cow::Owned(shown.replace('\t', TAB).replace('\n', "^J"))
}

/// Display width of `text` in columns, as ratatui counts it.
pub(crate) fn width_of(text: &str) -> usize {
    if text.is_ascii() && !text.bytes().any(|b| b.is_ascii_control()) {
        return text.len();
    }
    text.graphemes(true).map(UnicodeWidthStr::width).sum()
}

/// Builds one output line from graphemes, merging runs of one style.
#[derive(Default)]
struct LineBuf {
    spans: Vec<Seg>,
    width: usize,
}

impl LineBuf {
    fn push(&mut self, style: Style, g: &str, w: usize) {
        match self.spans.last_mut() {
            Some((s, text)) if *s == style => text.push_str(g),
            _ => self.spans.push((style, g.to_owned())),
        }
        self.width += w;
    }

    fn take(&mut self) -> Vec<Seg> {
        self.width = 0;
        std::mem::take(&mut self.spans)
    }
}

/// One grapheme with its style and width; a cluster wider than `max` is
/// replaced by `…`.
fn clusters(segs: &[Seg], max: usize) -> Vec<(Style, &str, usize)> {
    let mut out = Vec::new();
    for (style, text) in segs {
        if text.is_ascii() && !text.bytes().any(|b| b.is_ascii_control()) {
            // Fast path: every byte is one cluster one column wide.
            out.extend((0..text.len()).map(|i| (*style, &text[i..=i], 1)));
            continue;
        }
        for g in text.graphemes(true) {
            let w = g.width();
            if w > max {
                out.push((*style, "…", 1));
            } else {
                out.push((*style, g, w));
            }
        }
    }
    out
}

fn is_space(g: &str) -> bool {
    g == " "
}

/// Wraps prose to `width` columns (at least 1): greedy, breaking at spaces
/// and around wide characters, splitting a word only when it is longer than
/// a line. Spaces at a break are dropped. Always returns at least one line.
pub(crate) fn wrap_words(segs: &[Seg], width: usize) -> Vec<Vec<Seg>> {
    let width = width.max(1);
    let gs = clusters(segs, width);
    let mut lines = Vec::new();
    let mut cur = LineBuf::default();
    let mut i = 0;
    while i < gs.len() {
        // Spaces before the next word.
        let space_start = i;
        while i < gs.len() && is_space(gs[i].1) {
            i += 1;
        }
        let spaces = &gs[space_start..i];
        // The word: a run of narrow non-space clusters, or one wide cluster.
        let word_start = i;
        if i < gs.len() && gs[i].2 >= 2 {
            i += 1;
        } else {
            while i < gs.len() && !is_space(gs[i].1) && gs[i].2 < 2 {
                i += 1;
            }
        }
        let word = &gs[word_start..i];
        if word.is_empty() {
            break; // trailing spaces
        }
        let sw: usize = spaces.iter().map(|g| g.2).sum();
        let ww: usize = word.iter().map(|g| g.2).sum();
        let at_start = cur.width == 0 && cur.spans.is_empty();
        let keep_spaces = !at_start || lines.is_empty();
        let sw = if keep_spaces { sw } else { 0 };
        if cur.width + sw + ww <= width {
            if keep_spaces {
                for &(s, g, w) in spaces {
                    cur.push(s, g, w);
                }
            }
        } else if ww <= width {
            if !cur.spans.is_empty() {
                lines.push(cur.take());
            }
        } else if cur.width + sw < width {
            if keep_spaces {
                for &(s, g, w) in spaces {
                    cur.push(s, g, w);
                }
            }
        } else {
            lines.push(cur.take());
        }
        for &(s, g, w) in word {
            if cur.width + w > width {
                lines.push(cur.take());
            }
            cur.push(s, g, w);
        }
    }
    if !cur.spans.is_empty() || lines.is_empty() {
        lines.push(cur.take());
    }
    lines
}

/// Wraps code to `width` columns (at least 1), breaking between any two
/// clusters and keeping all spaces. Always returns at least one line.
pub(crate) fn wrap_chars(segs: &[Seg], width: usize) -> Vec<Vec<Seg>> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut cur = LineBuf::default();
    for (s, g, w) in clusters(segs, width) {
        if cur.width + w > width {
            lines.push(cur.take());
        }
        cur.push(s, g, w);
    }
    if !cur.spans.is_empty() || lines.is_empty() {
        lines.push(cur.take());
    }
    lines
}

/// Segments as ratatui spans.
pub(crate) fn spans(segs: Vec<Seg>) -> Vec<Span<'static>> {
    segs.into_iter()
        .map(|(style, text)| Span::styled(text, style))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Vec<Seg>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|(_, t)| t.as_str()).collect())
            .collect()
    }

    fn seg(t: &str) -> Vec<Seg> {
        vec![(Style::default(), t.to_owned())]
    }

    #[test]
    fn prose_breaks_at_spaces_and_drops_them() {
        let lines = wrap_words(&seg("the quick brown fox jumps"), 10);
        assert_eq!(plain(&lines), ["the quick", "brown fox", "jumps"]);
    }

    #[test]
    fn a_long_word_is_split_where_it_must() {
        let lines = wrap_words(&seg("ab abcdefghijkl"), 5);
        assert_eq!(plain(&lines), ["ab ab", "cdefg", "hijkl"]);
    }

    #[test]
    fn cjk_breaks_between_characters_at_an_odd_width() {
        let lines = wrap_words(&seg("日本語のテキスト"), 5);
        assert_eq!(plain(&lines), ["日本", "語の", "テキ", "スト"]);
        assert!(
            lines
                .iter()
                .all(|l| width_of(&plain(std::slice::from_ref(l))[0]) <= 5)
        );
    }

    #[test]
    fn a_wide_cluster_wider_than_the_line_becomes_an_ellipsis() {
        assert_eq!(plain(&wrap_words(&seg("日a"), 1)), ["…", "a"]);
        assert_eq!(plain(&wrap_chars(&seg("👨‍👩‍👧x"), 1)), ["…", "x"]);
    }

    #[test]
    fn code_keeps_spaces_and_breaks_anywhere() {
        let lines = wrap_chars(&seg("  let x = 1;"), 5);
        assert_eq!(plain(&lines), ["  let", " x = ", "1;"]);
    }

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        assert_eq!(defuse("a\u{1b}[31mred\u{7}\tb\r"), "a^[[31mred^G    b");
        assert_eq!(defuse("ok\rrm -rf ~"), "ok^Mrm -rf ~");
        assert_eq!(defuse("\u{9b}x\u{7f}"), "\\u{9b}x^?");
        assert_eq!(defuse("plain"), "plain");
    }
}
