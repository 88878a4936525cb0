//! Markdown that grows at its end (a reply streaming in), laid out
//! incrementally: the text is cut at the start of a top-level block that
//! more text can no longer change, the part before the cut is laid out once
//! ("settled"), and each step lays out only the text after it (the last,
//! still-growing blocks).
//!
//! Why a cut is safe: Markdown decides a line's block from the lines up to
//! the one after it, so once a top-level block starts after a blank line
//! and its first line and the one after it are complete, nothing appended
//! can reopen what came before; at such a point no block is open, so the
//! text after it parses on its own exactly as it does inside the whole
//! text, and the walker lays it out as it would there when told that lines
//! came before. (Without the blank line, lazy continuation lines and tables
//! inside quotes can be decided later.) Link reference definitions are the
//! exception (they act on the whole text), so a text that has one is laid
//! out whole at every step.
//!
//! Invariant: settled lines followed by the tail equal [`super::render_markdown`]
//! of the whole text with [`NoHighlights`] (code is drawn plain, as a chat
//! pane does while a reply streams).

use super::highlight::NoHighlights;
use super::markdown::{self, options};
use super::style::MarkdownTheme;
use pulldown_cmark::{Event, Parser};
use ratatui::text::Line;

/// How many bytes before the cut are kept to notice a text that is not an
/// extension of the previous step's.
const SEAL: usize = 64;

/// The incremental layout state of one growing text (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct MarkdownStream {
    width: u16,
    /// Bytes of the text laid out in settled lines.
    cut: usize,
    /// The last bytes before `cut` (up to [`SEAL`]).
    seal: Vec<u8>,
    /// Whether any settled line was emitted (what follows then owes the
    /// blank line that separates blocks).
    settled_any: bool,
    /// The text has a link reference definition: no cut is safe.
    whole: bool,
    /// Length of the text at the last step.
    seen: usize,
}

/// What one [`MarkdownStream::step`] produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamStep {
    /// The settled lines of earlier steps are void (the width changed, the
    /// text is not an extension of the last one, or it must now be laid out
    /// whole): drop them before appending `settled`.
    pub reset: bool,
    /// Lines settled by this step, to append after the earlier ones.
    pub settled: Vec<Line<'static>>,
    /// The lines of the text after the cut, laid out now.
    pub tail: Vec<Line<'static>>,
}

impl MarkdownStream {
    /// A stream with nothing laid out yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of the text settled so far.
    #[must_use]
    pub fn settled_bytes(&self) -> usize {
        self.cut
    }

    /// Lays out `text` at `width` columns. `text` should extend the text of
    /// the previous step; one that does not (shorter, or other bytes before
    /// the cut) is laid out from the start and `reset` is set. Costs the
    /// text after the cut, plus what this step settles.
    pub fn step(&mut self, text: &str, width: u16) -> StreamStep {
        let mut out = StreamStep::default();
        if width != self.width || !self.extends(text) {
            out.reset = self.cut > 0 || self.settled_any;
            *self = Self {
                width,
                ..Self::default()
            };
        }
        self.seen = text.len();
        if !self.whole {
            let rest = text.get(self.cut..).unwrap_or("");
            match next_cut(rest) {
                Cut::Whole => {
                    self.whole = true;
                    out.reset |= self.cut > 0 || self.settled_any;
                    self.cut = 0;
                    self.settled_any = false;
                }
                Cut::At(n) => {
                    out.settled = lay_out(&rest[..n], width, self.settled_any);
                    self.settled_any |= !out.settled.is_empty();
                    self.cut += n;
                    self.seal = text.as_bytes()[self.cut.saturating_sub(SEAL)..self.cut].to_vec();
                }
                Cut::None => {}
            }
        }
        out.tail = lay_out(text.get(self.cut..).unwrap_or(""), width, self.settled_any);
        out
    }

    fn extends(&self, text: &str) -> bool {
        text.len() >= self.seen
            && text.len() >= self.cut
            && text.is_char_boundary(self.cut)
            && text.as_bytes()[self.cut.saturating_sub(SEAL)..self.cut] == self.seal[..]
    }
}

/// The lines of `text` after settled lines (`after`: there were some).
fn lay_out(text: &str, width: u16, after: bool) -> Vec<Line<'static>> {
    markdown::render_after(
        text,
        usize::from(width),
        &NoHighlights,
        &MarkdownTheme::default(),
        after,
    )
    .0
}

enum Cut {
    /// No safe cut after the start.
    None,
    /// Cut `n` bytes in (at a line start).
    At(usize),
    /// A reference definition: lay the text out whole.
    Whole,
}

/// The last safe cut in `text` (see the module doc): the start of a line
/// where a top-level block starts after a blank line (see
/// [`safe_line_start`]).
fn next_cut(text: &str) -> Cut {
    let parser = Parser::new_ext(text, options());
    if parser.reference_definitions().iter().next().is_some() {
        return Cut::Whole;
    }
    let mut depth = 0usize;
    let mut best = None;
    for (event, range) in parser.into_offset_iter() {
        let starts_block = match event {
            Event::Start(_) => {
                depth += 1;
                depth == 1
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                false
            }
            Event::Rule => depth == 0,
            _ => false,
        };
        if starts_block && let Some(at) = safe_line_start(text, range.start) {
            best = Some(at);
        }
    }
    best.map_or(Cut::None, Cut::At)
}

/// The start of the line holding byte `at`, when only blanks precede `at`
/// on it, the line before it is blank (a blank line ends paragraphs and
/// quotes, so no lazy continuation reaches across it), and it and the next
/// line end with a newline.
fn safe_line_start(text: &str, at: usize) -> Option<usize> {
    let head = text.get(..at)?;
    let line = head.rfind('\n').map_or(0, |i| i + 1);
    let before = head.get(..line.checked_sub(1)?)?;
    let blank_before = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || b == b'\r');
    let indent_only = head[line..].bytes().all(|b| b == b' ' || b == b'\t');
    let complete = text[line..].bytes().filter(|b| *b == b'\n').nth(1).is_some();
    (blank_before && indent_only && complete).then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::render_markdown;

    fn streamed(text: &str, width: u16, chunk: usize) -> Vec<Line<'static>> {
        let mut s = MarkdownStream::new();
        let mut settled = Vec::new();
        let mut tail = Vec::new();
        let mut end = 0;
        while end < text.len() {
            end = (end + chunk).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let step = s.step(&text[..end], width);
            if step.reset {
                settled.clear();
            }
            settled.extend(step.settled);
            tail = step.tail;
        }
        settled.extend(tail);
        settled
    }

    #[test]
    fn settled_and_tail_equal_the_whole_layout() {
        let text = "# Title\n\nA paragraph that wraps across\nseveral lines.\n\n- one\n- two\n\n  more of two\n\n\
                    ```rust\nfn main() {}\n\n```\n\n> quote\n> more\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n\
                    ---\n1. x\n\n3. y\n\nlast words";
        for chunk in [1, 3, 7, 40] {
            assert_eq!(
                streamed(text, 30, chunk),
                render_markdown(text, 30, &NoHighlights).lines,
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn lazy_lines_and_tables_in_quotes_are_not_cut() {
        let text =
            "\n\n===\n# # <!--\n> ===\n| a | b |\n> |---|---|\n| a | b |\n> | a | b |\n| a | b |\n\n\n";
        assert_eq!(
            streamed(text, 1, 27),
            render_markdown(text, 1, &NoHighlights).lines
        );
    }

    #[test]
    fn a_long_text_settles_all_but_its_last_block() {
        let text: String = (0..200)
            .map(|i| format!("Paragraph {i} of the reply.\n\n"))
            .collect();
        let mut s = MarkdownStream::new();
        s.step(&text, 40);
        let last = text.rfind("Paragraph 199").unwrap();
        assert!(
            s.settled_bytes() >= text.rfind("Paragraph 198").unwrap(),
            "{}",
            s.settled_bytes()
        );
        assert!(s.settled_bytes() <= last);
    }

    #[test]
    fn a_reference_definition_lays_the_text_out_whole() {
        let text = "See [the docs][d].\n\nMore text here.\n\nAnd more.\n\n[d]: https://example.com\n";
        assert_eq!(
            streamed(text, 40, 5),
            render_markdown(text, 40, &NoHighlights).lines
        );
    }

    #[test]
    fn a_text_that_is_not_an_extension_starts_over() {
        let mut s = MarkdownStream::new();
        s.step("one\n\ntwo\n\nthree\n\nfour\n", 20);
        assert!(s.settled_bytes() > 0);
        let other = "other\n\ntext\n\nhere\n\n";
        let step = s.step(other, 20);
        assert!(step.reset);
        assert_eq!(
            step.settled,
            render_markdown("other\n\ntext", 20, &NoHighlights).lines
        );
        let step = s.step(other, 25);
        assert!(step.reset, "a new width lays out again");
    }
}
