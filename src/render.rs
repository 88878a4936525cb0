//! UI building block: a chat message's Markdown as ratatui lines for a given
//! width, with fenced code highlighted off the UI task, and a cache of the
//! wrapped lines per (message, width) for virtualised drawing.
//!
//! Owns: Markdown layout ([`markdown_lines`], [`render_markdown`]), the
//! incremental layout of a reply still streaming in ([`MarkdownStream`]),
//! plain text wrapping ([`plain_lines`]), the
//! highlighting service ([`Highlighter`]), the wrap cache ([`WrapCache`]) and
//! the Markdown styles ([`MarkdownTheme`]).
//!
//! Invariants:
//! - rendering never blocks and never fails: it reads finished highlights
//!   through a [`HighlightLookup`] and draws a code block plain until its
//!   highlight arrives (its key is then listed in [`Rendered::pending`]);
//! - no emitted line is wider than the width asked for, measured per
//!   grapheme cluster as ratatui draws it (CJK and emoji take two columns);
//! - text never reaches the terminal as control characters: escape
//!   sequences and other controls are shown as `^[`, `\u{9b}` and the like;
//! - code over [`MAX_HIGHLIGHT_LINES`] lines or [`MAX_HIGHLIGHT_BYTES`] bytes
//!   is never highlighted.
//!
//! Typical use by the chat pane (on the UI task):
//!
//! ```no_run
//! use strata::render::{Highlighter, WrapCache, content_hash, render_markdown};
//! let mut highlighter = Highlighter::spawn();
//! let mut cache = WrapCache::new(200_000);
//! let text = "Some **Markdown**\n\n```rust\nfn main() {}\n```\n";
//! highlighter.request_markdown(text); // once, when the message is complete
//! // each frame, for each visible message:
//! let lines = cache.get_or_render(content_hash(text), 80, |w| render_markdown(text, w, &highlighter));
//! // when woken by the highlighter (or on a tick):
//! let arrived = highlighter.drain();
//! cache.highlights_arrived(&arrived);
//! # drop(lines);
//! ```
//!
//! Callers: the TUI (`tui`), tests and benches. Uses no adapter and no
//! runtime module.

mod cache;
mod highlight;
mod markdown;
mod stream;
mod style;
mod table;
mod wrap;

pub use cache::{CachedLines, WrapCache};
pub use highlight::{
    DEFAULT_THEME, Highlight, HighlightKey, HighlightLookup, HighlightedCode, Highlighter,
    HighlighterOptions, MAX_HIGHLIGHT_BYTES, MAX_HIGHLIGHT_LINES, NoHighlights, fence_language,
    highlightable,
};
pub use stream::{MarkdownStream, StreamStep};
pub use style::MarkdownTheme;
pub use wrap::defuse;

use ratatui::style::Style;
use ratatui::text::Line;
use std::hash::{Hash, Hasher};

/// A rendered message: its lines, and the code blocks drawn plain because
/// their highlight has not arrived yet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rendered {
    /// Lines of at most the requested width (none for width 0).
    pub lines: Vec<Line<'static>>,
    /// Keys of code blocks whose highlight is [`Highlight::Pending`].
    pub pending: Vec<HighlightKey>,
}

/// Renders Markdown `text` at `width` columns with the default theme.
/// Headings keep their `#` markers; lists get `•`/`1.` markers with hanging
/// indents; quotes a `│ ` bar; code blocks their fences; links show their
/// destination in parentheses when it differs from their text; tables are
/// laid out in columns when they fit.
#[must_use]
pub fn render_markdown(text: &str, width: u16, highlights: &dyn HighlightLookup) -> Rendered {
    render_markdown_with(text, width, highlights, &MarkdownTheme::default())
}

/// [`render_markdown`] with the caller's styles.
#[must_use]
pub fn render_markdown_with(
    text: &str,
    width: u16,
    highlights: &dyn HighlightLookup,
    theme: &MarkdownTheme,
) -> Rendered {
    let (lines, pending) = markdown::render(text, usize::from(width), highlights, theme);
    Rendered { lines, pending }
}

/// Just the lines of [`render_markdown`].
#[must_use]
pub fn markdown_lines(text: &str, width: u16, highlights: &dyn HighlightLookup) -> Vec<Line<'static>> {
    render_markdown(text, width, highlights).lines
}

/// `text` as-is (no Markdown), each of its lines word-wrapped to `width`
/// columns in `style`, controls defused: for user messages, tool output and
/// notices. An empty text gives one empty line; width 0 gives none.
#[must_use]
pub fn plain_lines(text: &str, width: u16, style: Style) -> Vec<Line<'static>> {
    if width == 0 {
        return Vec::new();
    }
    text.split('\n')
        .flat_map(|line| wrap::wrap_words(&[(style, wrap::defuse(line).into_owned())], usize::from(width)))
        .map(|segs| Line::from(wrap::spans(segs)))
        .collect()
}

/// A 64-bit hash of `text`, for [`WrapCache`] keys of text that changes.
/// Stable within one build of strata (never store it).
#[must_use]
pub fn content_hash(text: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}
