//! The reply arriving now and its block in the chat pane, laid out
//! incrementally: the text only grows, so the lines of its completed
//! blocks are kept (per width) and each frame lays out only the last,
//! still-growing ones (see [`MarkdownStream`] for where it is cut and why
//! the result equals a layout of the whole text).
//!
//! The cache is the only state touched while drawing; like the chat pane's,
//! it is a memo of a pure function of (text, width).

use super::chat::{badges, block_header, indent};
use crate::domain::{Message, MessageStatus, Role, SessionId};
use crate::render::MarkdownStream;
use ratatui::text::Line;
use std::cell::{Ref, RefCell};

/// The reply arriving now.
#[derive(Clone, Debug, Default)]
pub struct Streaming {
    /// Text so far (it only grows while the reply streams; the layout
    /// keeps what it laid out of it).
    pub text: String,
    /// When the request started, unix ms.
    pub started_ms: i64,
    /// When the first text arrived, unix ms.
    pub first_ms: Option<i64>,
    /// When the latest text arrived, unix ms.
    pub last_ms: i64,
    /// The block laid out so far (see the module doc).
    pub(super) layout: RefCell<Layout>,
}

/// The block's lines at one width.
#[derive(Clone, Debug, Default)]
pub(super) struct Layout {
    md: MarkdownStream,
    width: u16,
    /// Length of the text laid out (`None`: nothing yet).
    len: Option<usize>,
    /// The header and the settled body lines, indented.
    settled: Vec<Line<'static>>,
    /// The rest of the body, indented, and the closing blank line.
    tail: Vec<Line<'static>>,
}

/// The rows of the streaming block, borrowed from its layout.
pub(super) struct Rows<'a>(Ref<'a, Layout>);

impl Rows<'_> {
    /// Height of the block in rows.
    pub(super) fn len(&self) -> usize {
        self.0.settled.len() + self.0.tail.len()
    }

    /// Row `i` of the block.
    pub(super) fn get(&self, i: usize) -> Option<&Line<'static>> {
        let settled = &self.0.settled;
        settled.get(i).or_else(|| self.0.tail.get(i - settled.len()))
    }
}

impl Streaming {
    /// Estimated completion tokens so far (4 characters a token).
    #[must_use]
    pub fn tokens(&self) -> u64 {
        (self.text.chars().count() as u64).div_ceil(4)
    }

    /// Tokens per second since the first text, when measurable.
    #[must_use]
    pub fn rate(&self, now_ms: i64) -> Option<f64> {
        let first = self.first_ms?;
        let span = (now_ms.max(self.last_ms) - first) as f64 / 1_000.0;
        (span > 0.2).then(|| self.tokens() as f64 / span)
    }

    /// The reply's block at `width` columns, as the chat pane draws a
    /// message: a header with the `streaming` badge, the Markdown body
    /// indented by two (code plain; it is highlighted once stored), a blank
    /// line. Lays out only what changed since the last call.
    pub(super) fn rows(&self, width: u16) -> Rows<'_> {
        {
            let mut l = self.layout.borrow_mut();
            if l.width != width || l.len != Some(self.text.len()) {
                l.update(&self.text, width);
            }
        }
        Rows(self.layout.borrow())
    }
}

impl Layout {
    fn update(&mut self, text: &str, width: u16) {
        let step = self.md.step(text, width.saturating_sub(2).max(1));
        if step.reset || self.settled.is_empty() {
            self.settled = vec![header()];
        }
        self.settled.extend(step.settled.into_iter().map(indent));
        self.tail = step.tail.into_iter().map(indent).collect();
        self.tail.push(Line::default());
        self.width = width;
        self.len = Some(text.len());
    }
}

/// The header of the streaming block.
fn header() -> Line<'static> {
    let mut m = Message::new(SessionId::default(), Role::Assistant, String::new(), 0);
    m.status = MessageStatus::Streaming;
    block_header(&m, &badges(&m, None), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::NoHighlights;

    /// The block as the pane lays out a whole message (no cache).
    fn whole(text: &str, width: u16) -> Vec<Line<'static>> {
        let mut m = Message::new(SessionId::default(), Role::Assistant, text, 0);
        m.status = MessageStatus::Streaming;
        let b = badges(&m, None);
        super::super::chat::layout_block(&m, &b, None, None, width, &NoHighlights).lines
    }

    fn lines(s: &Streaming, width: u16) -> Vec<Line<'static>> {
        let rows = s.rows(width);
        (0..rows.len()).filter_map(|i| rows.get(i).cloned()).collect()
    }

    fn reply() -> String {
        let mut t = String::new();
        for i in 0..60 {
            t.push_str(&format!("## Part {i}\n\nSome prose about step {i} that wraps across the pane, with `code` and **bold**.\n\n"));
            match i % 4 {
                0 => t.push_str("```rust\nfn main() {\n\n    println!(\"hi\");\n}\n```\n\n"),
                1 => t.push_str("- one\n- two\n\n  still two\n\n"),
                2 => t.push_str("| a | b |\n|---|---|\n| 中文 | 🙂 |\n\n"),
                _ => t.push_str("> quoted\nlazy line\n\n---\n"),
            }
        }
        t
    }

    #[test]
    fn after_many_deltas_the_block_equals_a_layout_of_the_whole_text() {
        let text = reply();
        let mut s = Streaming::default();
        let mut at = 0;
        let mut n = 0;
        while at < text.len() {
            let mut end = (at + 1 + n % 13).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            s.text.push_str(&text[at..end]);
            at = end;
            n += 1;
            if n.is_multiple_of(17) {
                assert_eq!(lines(&s, 50), whole(&s.text, 50), "after {} bytes", s.text.len());
            }
        }
        assert_eq!(lines(&s, 50), whole(&text, 50));
        assert!(
            s.layout.borrow().md.settled_bytes() > text.len() / 2,
            "the completed part is kept"
        );
        assert_eq!(lines(&s, 33), whole(&text, 33), "a new width lays out again");
    }

    #[test]
    fn an_empty_reply_is_a_header_and_a_blank_line() {
        let s = Streaming::default();
        assert_eq!(lines(&s, 40), whole("", 40));
        assert_eq!(lines(&s, 40).len(), 2);
    }
}
