//! Scrolling text for the overlays (the prompt and request inspectors,
//! help), laid out lazily so a key and its frame cost what is on screen
//! even when the text is megabytes (a 2M-token request body).
//!
//! A [`Pager`] holds where the window starts, as a logical line and a row
//! inside it (so a resize keeps the same line on top), and a cache: the
//! document (a list of [`Item`]s over its own copy of the text, built once
//! per content) and, per width, the rows of each item counted so far and
//! the wrapped rows of the items drawn lately. Moving the window counts
//! only the items it passes; the end is found backwards from the last
//! item; a frame wraps only the items on screen. A new width counts
//! again; new content (another key) rebuilds the document. It also counts
//! a document's rows at a width and what lies above and below the window
//! (the approval overlay sizes its detail and its scroll hint by them).
//! Drawing only fills this memo of pure functions of (content, width) and
//! learns the window's height, so it stays observably side-effect free, as
//! in the chat pane.

use super::fmt;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// Wrapped items kept per layout before they are dropped.
const KEPT_ITEMS: usize = 2_048;

/// One logical line of a pager's document.
#[derive(Clone, Debug)]
pub(crate) enum Item {
    /// A line drawn as given (one row, cut at the width).
    Line(Box<Line<'static>>),
    /// A heading rule: its text, then `─` to the width, in its style.
    Rule(Box<(String, Style)>),
    /// Bytes `start..end` of the source text: one logical line (no `\n`),
    /// word-wrapped to the width by [`fmt::wrap`].
    Text(usize, usize),
    /// A [`Item::Text`] drawn in a style (a diff's added or removed line).
    Styled(usize, usize, Style),
}

impl Item {
    /// A one-row line.
    #[must_use]
    pub fn line(line: Line<'static>) -> Self {
        Self::Line(Box::new(line))
    }

    /// The logical lines of `source[start..end]` as text items (what
    /// `str::lines` gives: no item after a final newline, `\r` dropped when
    /// drawn).
    pub fn lines_of(source: &str, start: usize, end: usize, out: &mut Vec<Self>) {
        let Some(text) = source.get(start..end) else {
            return;
        };
        let mut at = start;
        for piece in text.split_inclusive('\n') {
            let body = piece.strip_suffix('\n').unwrap_or(piece);
            out.push(Self::Text(at, at + body.len()));
            at += piece.len();
        }
    }
}

/// A 64-bit fingerprint of `value`, for [`Pager::render`]'s content key.
#[must_use]
pub(crate) fn key_of(value: impl Hash) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

/// A position in the document: row `row` of item `item`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pos {
    item: usize,
    row: usize,
}

/// A move asked for before a frame showed the layout it needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Pending {
    #[default]
    None,
    /// Rows down (negative: up).
    Rows(i64),
    /// The last page.
    End,
}

/// Scroll state and layout cache of one scrolling overlay.
#[derive(Debug, Default)]
pub struct Pager {
    /// The first row shown (at the width last drawn).
    top: Pos,
    /// A move to apply to `top` once a layout is known.
    pending: Pending,
    cache: RefCell<Option<Layout>>,
}

impl Clone for Pager {
    /// The position; the copy lays out again when drawn.
    fn clone(&self) -> Self {
        Self {
            top: self.top,
            pending: self.pending,
            cache: RefCell::new(None),
        }
    }
}

#[derive(Debug)]
struct Layout {
    key: u64,
    /// The text that [`Item::Text`] ranges point into.
    text: String,
    items: Vec<Item>,
    width: u16,
    /// Rows of the window at the last frame.
    window: usize,
    /// Rows of each item at `width` (0: not counted yet).
    heights: Vec<u32>,
    /// Wrapped rows of text items drawn lately, by item index.
    rows: HashMap<usize, Vec<String>>,
    /// Where a frame resolved a pending move: (top, move, result). Later
    /// frames start from the same line even at another width.
    resolved: Option<(Pos, Pending, Pos)>,
}

impl Layout {
    fn new(key: u64, text: &str, items: Vec<Item>) -> Self {
        Self {
            key,
            text: text.to_owned(),
            heights: vec![0; items.len()],
            items,
            width: 0,
            window: 1,
            rows: HashMap::new(),
            resolved: None,
        }
    }

    /// Sets the width (forgetting counts and rows when it changes) and the
    /// window's height.
    fn fit(&mut self, width: u16, window: usize) {
        if self.width != width {
            self.width = width;
            self.heights.iter_mut().for_each(|h| *h = 0);
            self.rows.clear();
        }
        self.window = window.max(1);
    }

    /// Rows of item `i` (counted once per width).
    fn height(&mut self, i: usize) -> usize {
        if self.heights[i] == 0 {
            let n = match &self.items[i] {
                Item::Line(_) | Item::Rule(_) => 1,
                Item::Text(s, e) | Item::Styled(s, e, _) => {
                    fmt::wrapped_rows(self.text.get(*s..*e).unwrap_or(""), usize::from(self.width))
                }
            };
            self.heights[i] = u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        }
        self.heights[i] as usize
    }

    /// `pos` inside the document.
    fn clamp(&mut self, pos: Pos) -> Pos {
        if self.items.is_empty() {
            return Pos::default();
        }
        let item = pos.item.min(self.items.len() - 1);
        let row = pos.row.min(self.height(item) - 1);
        Pos { item, row }
    }

    /// The top of the last page (the document's start when it is shorter
    /// than the window).
    fn end(&mut self) -> Pos {
        let mut left = self.window;
        for i in (0..self.items.len()).rev() {
            let h = self.height(i);
            if h >= left {
                return Pos {
                    item: i,
                    row: h - left,
                };
            }
            left -= h;
        }
        Pos::default()
    }

    /// `pos`, or the top of the last page when less than a window of rows
    /// follows it.
    fn not_past_end(&mut self, pos: Pos) -> Pos {
        let mut have = 0;
        for i in pos.item..self.items.len() {
            have += self.height(i) - if i == pos.item { pos.row } else { 0 };
            if have >= self.window {
                return pos;
            }
        }
        self.end()
    }

    /// `pos` moved `delta` rows (positive: down), kept between the first
    /// row and the last page.
    fn moved(&mut self, pos: Pos, delta: i64) -> Pos {
        let mut p = self.clamp(pos);
        let mut left = usize::try_from(delta.unsigned_abs()).unwrap_or(usize::MAX);
        if delta < 0 {
            while left > 0 {
                if p.row >= left {
                    p.row -= left;
                    break;
                }
                if p.item == 0 {
                    p.row = 0;
                    break;
                }
                left -= p.row + 1;
                p.item -= 1;
                p.row = self.height(p.item) - 1;
            }
            return p;
        }
        while left > 0 && !self.items.is_empty() {
            let h = self.height(p.item);
            if p.row + left < h {
                p.row += left;
                break;
            }
            if p.item + 1 >= self.items.len() {
                p.row = h - 1;
                break;
            }
            left -= h - p.row;
            p.item += 1;
            p.row = 0;
        }
        self.not_past_end(p)
    }

    /// Where the window starts: `top` with `pending` applied.
    fn resolve(&mut self, top: Pos, pending: Pending) -> Pos {
        if let Some((t, m, at)) = self.resolved
            && (t, m) == (top, pending)
        {
            let p = self.clamp(at);
            return self.not_past_end(p);
        }
        match pending {
            Pending::None => {
                let p = self.clamp(top);
                self.not_past_end(p)
            }
            Pending::Rows(d) => self.moved(top, d),
            Pending::End => self.end(),
        }
    }

    /// Draws row `skip` onwards of item `i` from row `y` of `area`; returns
    /// the next free row.
    fn draw_item(&mut self, i: usize, skip: usize, area: Rect, mut y: u16, buf: &mut Buffer) -> u16 {
        let bottom = area.y + area.height;
        match &self.items[i] {
            Item::Line(line) => {
                buf.set_line(area.x, y, line, area.width);
                y + 1
            }
            Item::Rule(rule) => {
                let (head, style) = rule.as_ref();
                let fill = usize::from(area.width).saturating_sub(fmt::width(head));
                let line = Line::styled(format!("{head}{}", "─".repeat(fill)), *style);
                buf.set_line(area.x, y, &line, area.width);
                y + 1
            }
            Item::Text(s, e) | Item::Styled(s, e, _) => {
                let style = match &self.items[i] {
                    Item::Styled(_, _, style) => *style,
                    _ => Style::new(),
                };
                if !self.rows.contains_key(&i) {
                    if self.rows.len() >= KEPT_ITEMS {
                        self.rows.clear();
                    }
                    let text = self.text.get(*s..*e).unwrap_or("");
                    self.rows.insert(i, fmt::wrap(text, usize::from(self.width)));
                }
                for row in self.rows.get(&i).into_iter().flatten().skip(skip) {
                    if y >= bottom {
                        break;
                    }
                    buf.set_line(area.x, y, &Line::styled(row.as_str(), style), area.width);
                    y += 1;
                }
                y
            }
        }
    }
}

impl Pager {
    /// Scrolls by `delta` rows (positive: down, towards the end), never
    /// before the first row nor past the last page. Counts only the rows
    /// passed, at the width last drawn (before any frame, the move waits
    /// for it).
    pub fn scroll_by(&mut self, delta: i64) {
        self.settle();
        self.pending = match self.pending {
            Pending::None => Pending::Rows(delta),
            Pending::Rows(d) => Pending::Rows(d.saturating_add(delta)),
            // Before any frame the end is not known; stay there.
            Pending::End => Pending::End,
        };
        self.settle();
    }

    /// Scrolls to the first row.
    pub fn to_top(&mut self) {
        self.top = Pos::default();
        self.pending = Pending::None;
    }

    /// Scrolls to the last page.
    pub fn to_end(&mut self) {
        self.pending = Pending::End;
        self.settle();
    }

    /// Applies the pending move when a layout is known.
    fn settle(&mut self) {
        if let Some(layout) = self.cache.get_mut() {
            self.top = layout.resolve(self.top, self.pending);
            self.pending = Pending::None;
        }
    }

    /// Forgets the laid out content and goes back to the top (call when
    /// the content changes under the same key).
    pub(crate) fn invalidate(&mut self) {
        *self.cache.get_mut() = None;
        self.to_top();
    }

    /// Draws the window of the document into `area`. `key` fingerprints
    /// the content (with `source`, the text that [`Item::Text`] ranges
    /// point into): while both are unchanged the cached document is used,
    /// otherwise `build` makes a new one (and `source` is copied). Only
    /// the items on screen are wrapped.
    pub(crate) fn render(
        &self,
        key: u64,
        source: &str,
        build: impl FnOnce() -> Vec<Item>,
        area: Rect,
        buf: &mut Buffer,
    ) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let mut cache = self.layout(key, source, build);
        let Some(layout) = cache.as_mut() else {
            return;
        };
        layout.fit(area.width, usize::from(area.height));
        if layout.items.is_empty() {
            return;
        }
        let top = layout.resolve(self.top, self.pending);
        if self.pending != Pending::None {
            layout.resolved = Some((self.top, self.pending, top));
        }
        let mut skip = top.row;
        let mut y = area.y;
        for i in top.item..layout.items.len() {
            if y >= area.y + area.height {
                break;
            }
            y = layout.draw_item(i, skip, area, y, buf);
            skip = 0;
        }
    }

    /// The cached layout of the content of `key` and `source` (built by
    /// `build` when it changed; see [`Pager::render`]).
    fn layout(
        &self,
        key: u64,
        source: &str,
        build: impl FnOnce() -> Vec<Item>,
    ) -> std::cell::RefMut<'_, Option<Layout>> {
        let mut cache = self.cache.borrow_mut();
        if cache
            .as_ref()
            .is_none_or(|l| l.key != key || l.text.len() != source.len())
        {
            *cache = Some(Layout::new(key, source, build()));
        }
        cache
    }

    /// Rows of the whole document at `width` (the content as for
    /// [`Pager::render`]), to size a window before drawing it. Counts each
    /// item once per width.
    pub(crate) fn rows(
        &self,
        key: u64,
        source: &str,
        build: impl FnOnce() -> Vec<Item>,
        width: u16,
    ) -> usize {
        let mut cache = self.layout(key, source, build);
        let Some(layout) = cache.as_mut() else {
            return 0;
        };
        if layout.width != width {
            let window = layout.window;
            layout.fit(width, window);
        }
        (0..layout.items.len()).map(|i| layout.height(i)).sum()
    }

    /// Rows of the document above the window and below it, as the last
    /// frame drew it (`(0, 0)` before any frame).
    pub(crate) fn around(&self) -> (usize, usize) {
        let mut cache = self.cache.borrow_mut();
        let Some(layout) = cache.as_mut() else {
            return (0, 0);
        };
        if layout.items.is_empty() || layout.width == 0 {
            return (0, 0);
        }
        let top = layout.resolve(self.top, self.pending);
        let above = (0..top.item).map(|i| layout.height(i)).sum::<usize>() + top.row;
        let total: usize = (0..layout.items.len()).map(|i| layout.height(i)).sum();
        (above, total.saturating_sub(above + layout.window))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(buf: &Buffer) -> Vec<String> {
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect()
    }

    fn draw(p: &Pager, source: &str, w: u16, h: u16) -> Vec<String> {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        p.render(
            key_of(source.len()),
            source,
            || {
                let mut items = vec![
                    Item::line(Line::raw("head")),
                    Item::Rule(Box::new(("── x ".into(), Style::new()))),
                ];
                Item::lines_of(source, 0, source.len(), &mut items);
                items
            },
            area,
            &mut buf,
        );
        screen(&buf)
    }

    fn counted(p: &Pager) -> usize {
        p.cache
            .borrow()
            .as_ref()
            .map_or(0, |l| l.heights.iter().filter(|h| **h > 0).count())
    }

    #[test]
    fn the_window_moves_by_rows_and_stops_at_both_ends() {
        let source: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let mut p = Pager::default();
        assert_eq!(draw(&p, &source, 10, 3), ["head", "── x ─────", "line 0"]);
        p.scroll_by(5);
        assert_eq!(draw(&p, &source, 10, 3), ["line 3", "line 4", "line 5"]);
        p.to_end();
        assert_eq!(draw(&p, &source, 10, 3), ["line 97", "line 98", "line 99"]);
        p.scroll_by(-1);
        assert_eq!(draw(&p, &source, 10, 3), ["line 96", "line 97", "line 98"]);
        p.scroll_by(50);
        assert_eq!(draw(&p, &source, 10, 3), ["line 97", "line 98", "line 99"]);
        p.scroll_by(-1_000);
        assert_eq!(draw(&p, &source, 10, 3)[0], "head");
        p.to_end();
        p.to_top();
        assert_eq!(draw(&p, &source, 10, 3)[0], "head");
    }

    #[test]
    fn moves_before_the_first_frame_wait_for_it() {
        let source: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let mut p = Pager::default();
        p.scroll_by(4);
        p.scroll_by(3);
        assert_eq!(draw(&p, &source, 10, 2), ["line 5", "line 6"]);
        // At another width the window starts in the same line.
        assert_eq!(draw(&p, &source, 4, 2), ["line", "5"]);
        let mut p = Pager::default();
        p.to_end();
        assert_eq!(draw(&p, &source, 10, 2), ["line 98", "line 99"]);
    }

    #[test]
    fn long_lines_wrap_and_a_new_width_keeps_the_line_on_top() {
        let source = "alpha beta gamma delta\nshort\nlast\n";
        let mut p = Pager::default();
        assert_eq!(
            draw(&p, source, 11, 6),
            [
                "head",
                "── x ──────",
                "alpha beta",
                "gamma delta",
                "short",
                "last"
            ]
        );
        assert_eq!(
            draw(&p, source, 6, 8),
            [
                "head",
                "── x ─",
                "alpha",
                "beta",
                "gamma",
                "delta",
                "short",
                "last"
            ]
        );
        draw(&p, source, 6, 2);
        p.scroll_by(4);
        assert_eq!(draw(&p, source, 6, 2), ["gamma", "delta"]);
        // Wider, the top stays in the same line (its last row).
        assert_eq!(draw(&p, source, 11, 2), ["gamma delta", "short"]);
    }

    #[test]
    fn rows_and_what_is_around_the_window() {
        let source: String = (0..10).map(|i| format!("line {i}\n")).collect();
        let mut p = Pager::default();
        let build = || {
            let mut items = Vec::new();
            Item::lines_of(&source, 0, source.len(), &mut items);
            items
        };
        assert_eq!(p.around(), (0, 0));
        assert_eq!(p.rows(1, &source, build, 10), 10);
        // At 4 cells each line is two rows.
        assert_eq!(p.rows(1, &source, build, 4), 20);
        let area = Rect::new(0, 0, 10, 3);
        let mut buf = Buffer::empty(area);
        p.render(1, &source, build, area, &mut buf);
        assert_eq!(p.around(), (0, 7));
        p.scroll_by(2);
        assert_eq!(p.around(), (2, 5));
        p.to_end();
        assert_eq!(p.around(), (7, 0));
    }

    #[test]
    fn the_end_and_a_page_count_only_what_they_pass() {
        let source: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let mut p = Pager::default();
        draw(&p, &source, 20, 10);
        p.to_end();
        assert_eq!(draw(&p, &source, 20, 10)[9], "line 9999");
        assert!(counted(&p) < 40, "{}", counted(&p));
        p.to_top();
        p.scroll_by(100);
        assert_eq!(draw(&p, &source, 20, 10)[0], "line 98");
        assert!(counted(&p) < 200, "{}", counted(&p));
    }
}
