//! The Markdown walker: turns pulldown-cmark events into wrapped, styled
//! lines. Block containers (quotes, list items) become line prefixes (`│ `,
//! `• `, `1. ` and hanging indents); paragraphs and headings are
//! word-wrapped inside them; code blocks are fenced, highlighted when the
//! lookup has a result, and broken at the width like a terminal would.
//!
//! Invariant: every line it emits is at most `width` columns wide (prefixes
//! are dropped when they would leave no room for text).

use super::highlight::{Highlight, HighlightKey, HighlightLookup, fence_language, highlightable};
use super::style::MarkdownTheme;
use super::table::{self, Table};
use super::wrap::{Seg, defuse, spans, width_of, wrap_chars, wrap_words};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::Style;
use ratatui::text::Line;

/// The Markdown extensions strata renders.
pub(super) fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// The fenced code blocks of `text` as `(language token, code)`, in order.
pub(crate) fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                current = Some((fence_language(&info).to_owned(), String::new()));
            }
            Event::Text(t) => {
                if let Some((_, code)) = current.as_mut() {
                    code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    blocks
}

/// A block container: it prefixes every line of what it holds.
enum Container {
    Quote,
    Item {
        marker: String,
        width: usize,
        used: bool,
    },
}

struct CodeBuf {
    lang: String,
    text: String,
}

/// Walks the events of one message. Built and consumed by [`render`].
struct Writer<'a> {
    width: usize,
    theme: &'a MarkdownTheme,
    lookup: &'a dyn HighlightLookup,
    lines: Vec<Line<'static>>,
    pending: Vec<HighlightKey>,
    containers: Vec<Container>,
    /// Logical lines (split by hard breaks) of the paragraph being built.
    inline: Vec<Vec<Seg>>,
    styles: Vec<Style>,
    /// A blank line is owed before the next block.
    gap: bool,
    /// Lines came before this text (see [`render_after`]).
    lines_before: bool,
    /// Next number of each open list (`None` for bullets).
    lists: Vec<Option<u64>>,
    code: Option<CodeBuf>,
    table: Option<Table>,
    /// Open links: destination and the text seen so far.
    links: Vec<(String, String)>,
}

/// Renders `text` to lines of at most `width` columns and the keys of code
/// blocks that were drawn plain while their highlighting is pending.
pub(crate) fn render(
    text: &str,
    width: usize,
    lookup: &dyn HighlightLookup,
    theme: &MarkdownTheme,
) -> (Vec<Line<'static>>, Vec<HighlightKey>) {
    render_after(text, width, lookup, theme, false)
}

/// [`render`] of `text` as it continues a text that ended with a complete
/// top-level block (no block open) and produced lines (`lines_before`):
/// its lines are the ones the whole text would have after those, the
/// blank line owed to the earlier block included.
pub(super) fn render_after(
    text: &str,
    width: usize,
    lookup: &dyn HighlightLookup,
    theme: &MarkdownTheme,
    lines_before: bool,
) -> (Vec<Line<'static>>, Vec<HighlightKey>) {
    if width == 0 {
        return (Vec::new(), Vec::new());
    }
    let mut w = Writer {
        width,
        theme,
        lookup,
        lines: Vec::new(),
        pending: Vec::new(),
        containers: Vec::new(),
        inline: Vec::new(),
        styles: Vec::new(),
        gap: lines_before,
        lines_before,
        lists: Vec::new(),
        code: None,
        table: None,
        links: Vec::new(),
    };
    for event in Parser::new_ext(text, options()) {
        w.event(event);
    }
    w.flush_inline();
    if let Some(code) = w.code.take() {
        w.code_block(code);
    }
    (w.lines, w.pending)
}

impl Writer<'_> {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::default(), |acc, s| acc.patch(*s))
    }

    /// Appends text in the current style to the paragraph being built.
    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        for (_, seen) in &mut self.links {
            seen.push_str(text);
        }
        let text = defuse(text).into_owned();
        if self.inline.is_empty() {
            self.inline.push(Vec::new());
        }
        if let Some(line) = self.inline.last_mut() {
            match line.last_mut() {
                Some((s, t)) if *s == style => t.push_str(&text),
                _ => line.push((style, text)),
            }
        }
    }

    fn push_text(&mut self, text: &str) {
        let style = self.style();
        self.push(text, style);
    }

    /// The first-line and continuation prefixes, and their width; empty
    /// when they would leave less than one column.
    fn prefixes(&self) -> (Vec<Seg>, Vec<Seg>, usize) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        let mut width = 0;
        for c in &self.containers {
            match c {
                Container::Quote => {
                    first.push((self.theme.quote_bar, "│ ".to_owned()));
                    rest.push((self.theme.quote_bar, "│ ".to_owned()));
                    width += 2;
                }
                Container::Item {
                    marker,
                    width: w,
                    used,
                } => {
                    let pad = " ".repeat(*w);
                    if *used {
                        first.push((Style::default(), pad.clone()));
                    } else {
                        first.push((self.theme.list_marker, marker.clone()));
                    }
                    rest.push((Style::default(), pad));
                    width += w;
                }
            }
        }
        if width >= self.width {
            return (Vec::new(), Vec::new(), 0);
        }
        (first, rest, width)
    }

    /// Emits logical lines inside the current containers, wrapped as prose
    /// or as code.
    fn emit(&mut self, logical: Vec<Vec<Seg>>, code: bool) {
        self.flush_gap();
        let (first, rest, pw) = self.prefixes();
        let avail = self.width - pw;
        let mut is_first = true;
        for line in logical {
            let wrapped = if code {
                wrap_chars(&line, avail)
            } else {
                wrap_words(&line, avail)
            };
            for body in wrapped {
                let mut segs = if is_first { first.clone() } else { rest.clone() };
                is_first = false;
                segs.extend(body);
                self.lines.push(Line::from(spans(segs)));
            }
        }
        for c in &mut self.containers {
            if let Container::Item { used, .. } = c {
                *used = true;
            }
        }
    }

    fn flush_inline(&mut self) {
        let logical = std::mem::take(&mut self.inline);
        if logical.iter().any(|l| l.iter().any(|(_, t)| !t.is_empty())) {
            self.emit(logical, false);
        }
    }

    /// Writes the owed blank line (with the quote bars around it).
    fn flush_gap(&mut self) {
        if !self.gap {
            return;
        }
        self.gap = false;
        if self.lines.is_empty() && !self.lines_before {
            return;
        }
        let (_, rest, _) = self.prefixes();
        let bars: Vec<Seg> = rest.into_iter().filter(|(_, t)| !t.trim().is_empty()).collect();
        self.lines.push(Line::from(spans(bars)));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => match self.code.as_mut() {
                Some(code) => code.text.push_str(&t),
                None => self.push_text(&t),
            },
            Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                let style = self.style().patch(self.theme.code_inline);
                self.push(&t, style);
            }
            Event::Html(t) => {
                let style = self.style().patch(self.theme.html);
                // Block HTML comes a line at a time: each on its own row.
                for line in t.lines() {
                    if self.inline.last().is_some_and(|l| !l.is_empty()) {
                        self.inline.push(Vec::new());
                    }
                    self.push(line, style);
                }
            }
            Event::InlineHtml(t) => {
                let style = self.style().patch(self.theme.html);
                self.push(&t, style);
            }
            Event::FootnoteReference(t) => self.push_text(&format!("[^{t}]")),
            Event::SoftBreak => self.push_text(" "),
            Event::HardBreak => self.inline.push(Vec::new()),
            Event::Rule => {
                self.flush_inline();
                let (_, _, pw) = self.prefixes();
                let rule = "─".repeat(self.width - pw);
                self.emit(vec![vec![(self.theme.rule, rule)]], true);
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.push(mark, self.theme.list_marker);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush_inline(),
            Tag::Heading { level, .. } => {
                self.flush_inline();
                let depth = level as usize;
                let style = if depth == 1 {
                    self.theme.heading1
                } else {
                    self.theme.heading
                };
                self.styles.push(style);
                self.push_text(&format!("{} ", "#".repeat(depth)));
            }
            Tag::BlockQuote(_) => {
                self.flush_inline();
                self.flush_gap();
                self.containers.push(Container::Quote);
                self.styles.push(self.theme.quote_text);
            }
            Tag::CodeBlock(kind) => {
                self.flush_inline();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => fence_language(&info).to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(CodeBuf {
                    lang,
                    text: String::new(),
                });
            }
            Tag::HtmlBlock => {
                self.flush_inline();
                self.styles.push(self.theme.html);
            }
            Tag::List(start) => {
                self.flush_inline();
                if self.lists.is_empty() {
                    self.flush_gap();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush_inline();
                self.flush_gap();
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => match depth {
                        0 | 1 => "• ".to_owned(),
                        2 => "◦ ".to_owned(),
                        _ => "▪ ".to_owned(),
                    },
                };
                let width = width_of(&marker);
                self.containers.push(Container::Item {
                    marker,
                    width,
                    used: false,
                });
            }
            Tag::Table(aligns) => {
                self.flush_inline();
                self.table = Some(Table::new(aligns));
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = self.table.as_mut() {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.styles.push(self.theme.emphasis),
            Tag::Strong => self.styles.push(self.theme.strong),
            Tag::Strikethrough => self.styles.push(self.theme.strikethrough),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::default()),
            Tag::Link { dest_url, .. } => {
                self.styles.push(self.theme.link);
                self.links.push((dest_url.to_string(), String::new()));
            }
            Tag::Image { .. } => self.push("[image: ", self.theme.link_url),
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.flush_inline(),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::HtmlBlock => {
                self.flush_inline();
                if !matches!(tag, TagEnd::Paragraph) {
                    self.styles.pop();
                }
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.styles.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    self.code_block(code);
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.gap = true;
                }
            }
            TagEnd::Item => {
                self.flush_inline();
                if let Some(Container::Item { used: false, .. }) = self.containers.last() {
                    self.emit(vec![Vec::new()], false);
                }
                self.containers.pop();
            }
            TagEnd::TableCell => {
                let cell: Vec<Seg> = std::mem::take(&mut self.inline).into_iter().flatten().collect();
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = self.table.as_mut() {
                    t.head_rows = t.rows.len();
                }
            }
            TagEnd::TableRow => {}
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_block(&t);
                }
                self.gap = true;
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, text)) = self.links.pop() {
                    let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                    if !url.is_empty() && bare != text {
                        self.push(&format!(" ({url})"), self.theme.link_url);
                    }
                }
            }
            TagEnd::Image => self.push("]", self.theme.link_url),
            TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush_inline();
                self.gap = true;
            }
        }
    }

    fn code_block(&mut self, code: CodeBuf) {
        let CodeBuf { lang, text } = code;
        let mut highlighted = None;
        if !lang.is_empty() && highlightable(&text) {
            let key = HighlightKey::of(&text, &lang);
            match self.lookup.lookup(key) {
                Highlight::Styled(h) => highlighted = Some(h),
                Highlight::Pending => self.pending.push(key),
                Highlight::Plain => {}
            }
        }
        let fence = self.theme.code_fence;
        self.emit(vec![vec![(fence, format!("```{lang}"))]], true);
        let body: Vec<Vec<Seg>> = match highlighted {
            Some(h) => h.lines.clone(),
            None => text
                .lines()
                .map(|l| vec![(self.theme.code_block, defuse(l).into_owned())])
                .collect(),
        };
        if !body.is_empty() {
            self.emit(body, true);
        }
        self.emit(vec![vec![(fence, "```".to_owned())]], true);
    }

    fn table_block(&mut self, t: &Table) {
        let (_, _, pw) = self.prefixes();
        match table::layout(t, self.width - pw, self.theme) {
            Some(lines) => self.emit(lines, true),
            None => {
                // Too narrow for columns: one `header: value` line per cell.
                for paragraph in table::as_records(t, self.theme) {
                    self.emit(paragraph, false);
                    self.gap = true;
                }
            }
        }
    }
}
