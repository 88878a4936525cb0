//! The chat pane: messages with their badges, collapsed summaries, tool
//! calls as blocks under their message (laid out by `tool_block`; a call's
//! result message fills its block and is not shown on its own), the reply
//! streaming in (laid out by `streaming`), scrolling. Rendering is
//! virtualised: blocks are laid out from the newest message backwards only
//! until the visible rows (plus the scroll offset) are covered, and each
//! message's wrapped lines are cached per width, so a frame costs what is
//! on screen, not the whole transcript; the streaming reply keeps the lines
//! of its completed blocks and lays out only its growing end. Tool blocks
//! are blocks of their own in that walk, cached per call.
//!
//! The caches are the only state touched while drawing, with what the
//! frame learned of the pane (its size, for scrolling a selected tool block
//! into view, and the largest useful scroll); the caches are memos of pure
//! functions of (message or call, width, expansion), so drawing stays
//! observably side-effect free. Message text goes through
//! [`message_lines`] alone.
//!
//! Assistant replies and summaries are Markdown; their fenced code is
//! highlighted by the pane's [`Highlighter`] (a thread of its own), asked
//! once per completed message in [`ChatPane::set`], never while a reply
//! streams. A cached block remembers which highlights it drew plain; when
//! they arrive ([`ChatPane::highlights_arrived`]) only those blocks are laid
//! out again. Without a highlighter (tests) code stays plain.

use super::paste::{Fold, fold_for_display};
use super::tool_block::{Inputs, ToolBlocks};
use super::{fmt, theme};
use crate::domain::{Message, MessageId, MessageKind, MessageStatus, Role};
use crate::pipeline::{Action, ReportEntry};
use crate::render::{
    HighlightKey, HighlightLookup, Highlighter, NoHighlights, Rendered, plain_lines, render_markdown,
};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

mod selection;

pub use super::streaming::Streaming;

/// Whether a message's text is rendered as Markdown: assistant replies and
/// summaries; user, tool and system text is shown as written.
#[must_use]
pub fn is_markdown(msg: &Message) -> bool {
    msg.role == Role::Assistant || msg.kind == MessageKind::Summary
}

/// The body of one message as display lines of at most `width` cells:
/// Markdown (see [`is_markdown`]) with code highlighted as far as
/// `highlights` knows it, or the text word-wrapped as written (the tool
/// calls are blocks of their own, see `tool_block`). `pending` lists the
/// code blocks drawn plain while their highlight is on its way.
#[must_use]
pub fn message_lines(msg: &Message, width: u16, highlights: &dyn HighlightLookup) -> Rendered {
    let mut out = if is_markdown(msg) {
        render_markdown(&msg.content, width, highlights)
    } else {
        Rendered {
            lines: plain_lines(&msg.content, width, Style::default()),
            pending: Vec::new(),
        }
    };
    if msg.content.is_empty() && !msg.tool_calls.is_empty() {
        out.lines.clear();
    }
    out
}

/// The index `step` places from `at` (negative: back), kept within
/// `0..=last`; `last` when nothing is selected (`at` is `None`).
pub(super) fn stepped(at: Option<usize>, step: i64, last: usize) -> usize {
    match at {
        Some(at) => usize::try_from(
            i64::try_from(at)
                .unwrap_or(0)
                .saturating_add(step)
                .clamp(0, i64::try_from(last).unwrap_or(0)),
        )
        .unwrap_or(0),
        None => last,
    }
}

/// The badges of a message: from the pipeline report (`truncated 8.1k→1.2k`,
/// `pruned`, `dropped`, `repaired`, `merged`) and its own state (`pinned`,
/// `excluded −1.2k` with the tokens it no longer costs, `summary`,
/// `interrupted`, `error`, `archived`). An excluded message shows no report
/// badge: it is not sent at all.
#[must_use]
pub fn badges(msg: &Message, report: Option<&ReportEntry>) -> Vec<String> {
    let mut out = Vec::new();
    if msg.archived_by.is_some() {
        out.push("archived".to_owned());
    }
    if msg.kind == MessageKind::Summary {
        out.push("summary".to_owned());
    }
    if msg.pinned {
        out.push("pinned".to_owned());
    }
    if msg.excluded {
        out.push(excluded_badge(msg));
    }
    out.extend(msg.status_words().map(str::to_owned));
    if !msg.excluded {
        out.extend(report.and_then(report_badge));
    }
    out
}

/// `excluded −1.2k`: the badge of an excluded message, with its cached
/// count (`excluded` alone when it was never counted).
#[must_use]
pub fn excluded_badge(msg: &Message) -> String {
    match &msg.tokens {
        Some(t) => format!("excluded −{}", fmt::tokens(u64::from(t.tokens))),
        None => "excluded".to_owned(),
    }
}

/// The badge of what the pipeline did to a message (`truncated 8.1k→1.2k`,
/// `pruned`, `dropped`, `repaired`, `merged`; none when it was kept).
#[must_use]
pub fn report_badge(r: &ReportEntry) -> Option<String> {
    Some(match r.action {
        Action::Kept => return None,
        Action::Truncated => format!(
            "truncated {}→{}",
            fmt::tokens(u64::from(r.tokens_before)),
            fmt::tokens(u64::from(r.tokens_after))
        ),
        Action::Excluded => format!("excluded −{}", fmt::tokens(u64::from(r.tokens_before))),
        Action::Pruned => "pruned".to_owned(),
        Action::Dropped => "dropped".to_owned(),
        Action::Repaired => "repaired".to_owned(),
        Action::Merged => "merged".to_owned(),
    })
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct CacheKey {
    id: MessageId,
    width: u16,
    collapsed: bool,
    /// Pastes shown folded (user messages), with how many are known.
    folded: Option<usize>,
    len: usize,
    status: MessageStatus,
    badges: Vec<String>,
    calls: usize,
    /// The header's token count.
    tokens: Option<u64>,
    /// Bytes of what a failed reply failed with.
    error: Option<usize>,
}

/// A block of the pane, as drawn by `render`.
enum Block<'a> {
    /// A message's header and body (and its closing blank line when it
    /// made no tool calls).
    Message(&'a Message),
    /// Tool call `.1` of the message.
    Tool(&'a Message, usize),
    /// The blank line after a message's tool blocks.
    Gap,
    /// The user's message waiting to be stored.
    Pending,
    /// The reply streaming in.
    Streaming,
}

/// Chat pane state.
#[derive(Debug, Default)]
pub struct ChatPane {
    /// Messages, oldest first, archived ones included.
    pub messages: Vec<Message>,
    /// Pipeline report by message.
    pub report: HashMap<MessageId, ReportEntry>,
    /// Summaries and long pastes shown whole (otherwise one line and a
    /// label).
    pub summaries_expanded: bool,
    /// The pastes sent in this run, oldest first: user messages show them
    /// as their labels (see `paste`).
    pub pastes: Vec<Fold>,
    /// Archived originals shown.
    pub show_archived: bool,
    /// Rows scrolled up from the newest line (0 follows new output).
    pub scroll: usize,
    /// The reply arriving now.
    pub streaming: Option<Streaming>,
    /// The user's message waiting to be stored (shown until the refresh).
    pub pending_user: Option<String>,
    /// The key that expands summaries, as shown on a collapsed one.
    pub expand_key: String,
    /// The largest useful scroll, learned by the last frame that reached
    /// the oldest message (`None`: the top was not reached, no limit known).
    max_scroll: Cell<Option<usize>>,
    /// Wrapped blocks per message and width (see the module doc), with
    /// the highlights each drew plain.
    cache: RefCell<HashMap<MessageId, Cached>>,
    /// Highlights fenced code off the UI task (`None`: code stays plain).
    highlighter: Option<Highlighter>,
    /// Messages whose code was handed to the highlighter.
    requested: HashSet<MessageId>,
    /// The tool blocks' state and layouts.
    pub tools: ToolBlocks,
    /// The message selected (see `selection`): its rows are marked.
    pub selected: Option<MessageId>,
    /// Call id → index in `messages` of the latest message that made a
    /// call of that id (servers may use the same ids in every turn).
    calls: HashMap<String, usize>,
    /// (The calling message, call id) → index in `messages` of its result.
    results: HashMap<(MessageId, String), usize>,
    /// A result's message → index in `messages` of the message whose call
    /// it answers: the nearest one before it with that call id.
    callers: HashMap<MessageId, usize>,
    /// Width and height of the pane at the last frame.
    size: Cell<(u16, u16)>,
    /// Output tokens of replies as the provider counted them: a reply's
    /// header shows these rather than strata's estimate.
    completions: HashMap<MessageId, u64>,
}

#[derive(Debug)]
struct Cached {
    key: CacheKey,
    lines: Vec<Line<'static>>,
    waiting: Vec<HighlightKey>,
}

impl ChatPane {
    /// Replaces the messages and report (drops cached layouts of messages
    /// that are gone).
    pub fn set(&mut self, messages: Vec<Message>, report: Vec<ReportEntry>) {
        self.report = report.into_iter().map(|r| (r.message_id, r)).collect();
        let ids: std::collections::HashSet<MessageId> = messages.iter().map(|m| m.id).collect();
        self.cache.get_mut().retain(|id, _| ids.contains(id));
        self.requested.retain(|id| ids.contains(id));
        self.messages = messages;
        self.reindex();
        self.tools.retain(&self.calls);
        if self
            .selected
            .is_some_and(|id| !self.messages.iter().any(|m| m.id == id && self.shows(m)))
        {
            self.selected = None;
        }
        self.request_highlights();
    }

    /// Pairs every result with its call again, oldest first.
    fn reindex(&mut self) {
        self.calls.clear();
        self.results.clear();
        self.callers.clear();
        for i in 0..self.messages.len() {
            self.index(i);
        }
    }

    /// Records the calls or the result of message `i`, which comes after
    /// every message indexed so far: a result answers the latest call of
    /// its id.
    fn index(&mut self, i: usize) {
        let Some(m) = self.messages.get(i) else {
            return;
        };
        for call in &m.tool_calls {
            self.calls.insert(call.id.clone(), i);
        }
        if m.role == Role::Tool
            && let Some(id) = &m.tool_call_id
            && let Some(&caller) = self.calls.get(id)
            && let Some(calling) = self.messages.get(caller)
        {
            self.results.insert((calling.id, id.clone()), i);
            self.callers.insert(m.id, caller);
        }
    }

    /// Replaces the message with `message`'s id, or appends it (the
    /// service's delta for a stored or finished message).
    pub fn upsert(&mut self, message: Message) {
        let id = message.id;
        match self.messages.iter().rposition(|m| m.id == id) {
            Some(i) => {
                self.messages[i] = message;
                // An earlier message changed: pair every result again.
                if i + 1 < self.messages.len() {
                    self.reindex();
                } else {
                    self.index(i);
                }
            }
            None => {
                self.messages.push(message);
                self.index(self.messages.len() - 1);
            }
        }
        if let (Some(h), Some(m)) = (
            self.highlighter.as_mut(),
            self.messages.iter().rev().find(|m| m.id == id),
        ) && m.status != MessageStatus::Streaming
            && is_markdown(m)
            && self.requested.insert(id)
        {
            h.request_markdown(&m.content);
        }
    }

    /// Records replies' output tokens as the provider counted them (from
    /// the session's usage rows); headers follow at the next frame.
    pub fn set_completions(&mut self, completions: impl IntoIterator<Item = (MessageId, u64)>) {
        self.completions.extend(completions);
    }

    /// The tokens a message's header shows: a reply's output tokens as the
    /// provider counted them, else strata's count of the message.
    fn header_tokens(&self, msg: &Message) -> Option<u64> {
        let counted = || msg.tokens.as_ref().map(|t| u64::from(t.tokens));
        match msg.role {
            Role::Assistant => self.completions.get(&msg.id).copied().or_else(counted),
            _ => counted(),
        }
    }

    /// Sets the token counts of the messages they name (the service's
    /// delta after counting); headers follow at the next frame.
    pub fn set_tokens(&mut self, counts: Vec<(MessageId, crate::domain::TokenCount)>) {
        for (id, count) in counts {
            if let Some(m) = self.messages.iter_mut().rev().find(|m| m.id == id) {
                m.tokens = Some(count);
            }
        }
    }

    /// Replaces the pipeline report (badges follow at the next frame).
    pub fn set_report(&mut self, report: Vec<ReportEntry>) {
        self.report = report.into_iter().map(|r| (r.message_id, r)).collect();
    }

    /// Gives the pane a highlighter and asks it for the code of the
    /// messages already shown.
    pub fn set_highlighter(&mut self, highlighter: Highlighter) {
        self.highlighter = Some(highlighter);
        self.requested.clear();
        self.cache.get_mut().clear();
        self.request_highlights();
    }

    /// Hands the code of completed Markdown messages not asked for yet to
    /// the highlighter (a channel send each; the work is on its thread).
    fn request_highlights(&mut self) {
        let Some(h) = self.highlighter.as_mut() else {
            return;
        };
        for m in &self.messages {
            if m.status != MessageStatus::Streaming && is_markdown(m) && self.requested.insert(m.id) {
                h.request_markdown(&m.content);
            }
        }
    }

    /// Moves finished highlights in and drops the cached blocks that drew
    /// them plain. Returns how many blocks will be laid out again.
    pub fn highlights_arrived(&mut self) -> usize {
        let Some(h) = self.highlighter.as_mut() else {
            return 0;
        };
        let keys = h.drain();
        if keys.is_empty() {
            return 0;
        }
        let cache = self.cache.get_mut();
        let before = cache.len();
        cache.retain(|_, c| !c.waiting.iter().any(|k| keys.contains(k)));
        before - cache.len()
    }

    fn lookup(&self) -> &dyn HighlightLookup {
        match &self.highlighter {
            Some(h) => h,
            None => &NoHighlights,
        }
    }

    /// Whether `m` is shown under the archived filter.
    fn shows(&self, m: &Message) -> bool {
        self.show_archived || m.archived_by.is_none()
    }

    /// Whether `m` is a result shown in its call's block.
    fn in_block(&self, m: &Message) -> bool {
        m.role == Role::Tool
            && self
                .callers
                .get(&m.id)
                .and_then(|&i| self.messages.get(i))
                .is_some_and(|caller| self.shows(caller))
    }

    /// The messages shown as blocks, oldest first.
    fn visible(&self) -> impl DoubleEndedIterator<Item = &Message> {
        self.messages
            .iter()
            .filter(|m| self.shows(m) && !self.in_block(m))
    }

    /// The blocks of the visible messages, newest first (a message's tool
    /// blocks and their closing gap come before it).
    fn blocks(&self) -> impl Iterator<Item = Block<'_>> {
        self.visible().rev().flat_map(|msg| {
            let n = msg.tool_calls.len();
            (n > 0)
                .then_some(Block::Gap)
                .into_iter()
                .chain((0..n).rev().map(move |i| Block::Tool(msg, i)))
                .chain(std::iter::once(Block::Message(msg)))
        })
    }

    /// The result of call `id` of message `caller`, once stored.
    fn result_of(&self, caller: &Message, id: &str) -> Option<&Message> {
        self.results
            .get(&(caller.id, id.to_owned()))
            .and_then(|&i| self.messages.get(i))
    }

    /// Lays out `block` at `width` unless cached; returns its height.
    fn height(&self, block: &Block<'_>, width: u16) -> usize {
        match block {
            Block::Message(m) => self.ensure(m, width),
            Block::Tool(m, i) => {
                let Some(call) = m.tool_calls.get(*i) else {
                    return 0;
                };
                let result = self.result_of(m, &call.id);
                let report = result.and_then(|r| {
                    if r.excluded || m.excluded {
                        Some(excluded_badge(r))
                    } else {
                        self.report.get(&r.id).and_then(report_badge)
                    }
                });
                self.tools.ensure(
                    &Inputs {
                        caller: m.id,
                        call,
                        result,
                        report,
                    },
                    width,
                )
            }
            Block::Gap => 1,
            Block::Pending | Block::Streaming => 0,
        }
    }

    /// The block of one message: a header line with role and badges, the
    /// body (or one line for a collapsed summary), a blank line.
    /// Lays out `msg` at `width` unless the cache already holds it; returns
    /// its height in rows.
    fn ensure(&self, msg: &Message, width: u16) -> usize {
        let collapsed = msg.kind == MessageKind::Summary && !self.summaries_expanded;
        // A summary merged into a user's message shows that message too.
        let folds = msg.role == Role::User && !self.summaries_expanded;
        let badges = badges(msg, self.report.get(&msg.id));
        let key = CacheKey {
            id: msg.id,
            width,
            collapsed,
            folded: folds.then_some(self.pastes.len()),
            len: msg.content.len(),
            status: msg.status,
            badges,
            calls: msg.tool_calls.len(),
            tokens: self.header_tokens(msg),
            error: msg.error.as_ref().map(String::len),
        };
        if let Some(c) = self.cache.borrow().get(&msg.id)
            && c.key == key
        {
            return c.lines.len();
        }
        let shown = self.folded(msg, folds);
        let Rendered { lines, pending } = layout_block(
            shown.as_ref().unwrap_or(msg),
            &key.badges,
            collapsed.then_some(self.expand_key.as_str()),
            key.tokens,
            width,
            self.lookup(),
        );
        let height = lines.len();
        self.cache.borrow_mut().insert(
            msg.id,
            Cached {
                key,
                lines,
                waiting: pending,
            },
        );
        height
    }

    /// `msg` with its pastes folded, when `folds` and it has some.
    fn folded(&self, msg: &Message, folds: bool) -> Option<Message> {
        if !folds {
            return None;
        }
        let content = fold_for_display(&msg.content, &self.pastes, &self.expand_key)?;
        Some(Message {
            content: content.into_owned(),
            ..msg.clone()
        })
    }

    /// Draws the pane into `area`: block heights are summed from the newest
    /// message back until the window is covered; only the rows of blocks
    /// that overlap the window are copied to the screen. The reply
    /// streaming in lays out only its still-growing end (see `streaming`).
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        self.size.set((area.width, area.height));
        let rows = usize::from(area.height);
        let want = rows + self.scroll;
        let pending = self.pending_lines(area.width);
        let stream = self.streaming.as_ref().map(|s| s.rows(area.width));
        // Newest first: (block, height).
        let mut items: Vec<(Block<'_>, usize)> = Vec::new();
        if let Some(s) = &stream {
            items.push((Block::Streaming, s.len()));
        }
        if let Some(p) = &pending {
            items.push((Block::Pending, p.len()));
        }
        let mut have: usize = items.iter().map(|(_, h)| h).sum();
        let mut reached_top = true;
        for block in self.blocks() {
            if have >= want {
                reached_top = false;
                break;
            }
            let h = self.height(&block, area.width);
            have += h;
            items.push((block, h));
        }
        self.max_scroll
            .set(reached_top.then(|| have.saturating_sub(rows)));
        if have == 0 {
            let hint = Line::styled("No messages yet. Type below and press Enter.", theme::dim());
            buf.set_line(area.x, area.y, &hint, area.width);
            return;
        }
        let scroll = self.scroll.min(have.saturating_sub(rows));
        let shown = rows.min(have - scroll);
        let top = have - scroll - shown;
        let cache = self.cache.borrow();
        let tools = self.tools.laid_out();
        let blank = Line::default();
        let mut start = 0;
        for (block, h) in items.iter().rev() {
            let end = start + h;
            for at in start.max(top)..end.min(top + shown) {
                let k = at - start;
                let line = match block {
                    Block::Message(m) => cache.get(&m.id).and_then(|c| c.lines.get(k)),
                    Block::Tool(m, i) => m.tool_calls.get(*i).and_then(|c| tools.row(m.id, &c.id, k)),
                    Block::Gap => Some(&blank),
                    Block::Pending => pending.as_ref().and_then(|p| p.get(k)),
                    Block::Streaming => stream.as_ref().and_then(|s| s.get(k)),
                };
                if let Some(line) = line {
                    let y = area.y + u16::try_from(at - top).unwrap_or(u16::MAX);
                    buf.set_line(area.x, y, line, area.width);
                    if let Block::Message(m) | Block::Tool(m, _) = block
                        && self.selected == Some(m.id)
                    {
                        selection::mark(matches!(block, Block::Message(_)) && k == 0, area, y, buf);
                    }
                }
            }
            start = end;
        }
    }

    /// The block of the user's message waiting to be stored.
    fn pending_lines(&self, width: u16) -> Option<Vec<Line<'static>>> {
        self.pending_user.as_ref().map(|text| {
            let m = Message::new(crate::domain::SessionId::default(), Role::User, text.clone(), 0);
            let shown = self.folded(&m, !self.summaries_expanded);
            let tokens = self.header_tokens(&m);
            layout_block(
                shown.as_ref().unwrap_or(&m),
                &[],
                None,
                tokens,
                width,
                &NoHighlights,
            )
            .lines
        })
    }

    /// Moves the tool selection by `step` blocks (negative: towards older
    /// ones, stopping at the ends); with none selected, selects the newest
    /// block. The view scrolls to show it. Returns false when no message
    /// shown made a tool call.
    pub fn select_tool(&mut self, step: i64) -> bool {
        let next = {
            let calls: Vec<&str> = self
                .visible()
                .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
                .collect();
            let at = self
                .tools
                .selected
                .as_deref()
                .and_then(|s| calls.iter().position(|c| *c == s));
            let Some(last) = calls.len().checked_sub(1) else {
                return false;
            };
            let to = stepped(at, step, last);
            calls[to].to_owned()
        };
        self.reveal(&next);
        self.tools.selected = Some(next);
        true
    }

    /// Expands or collapses the selected tool block, keeping it in view.
    pub fn toggle_selected(&mut self) {
        if let Some(id) = self.tools.selected.clone() {
            self.tools.toggle(&id);
            self.reveal(&id);
        }
    }

    /// Scrolls so the block of call `id` is on screen at the size of the
    /// last frame (its header on top when it is taller than the pane).
    fn reveal(&mut self, id: &str) {
        let scroll = self.scroll_showing(
            |b| matches!(b, Block::Tool(m, i) if m.tool_calls.get(*i).is_some_and(|c| c.id == id)),
        );
        if let Some(scroll) = scroll {
            self.scroll = scroll;
        }
    }

    /// The scroll that shows the first block `is` picks (from the newest)
    /// at the size of the last frame: unchanged when it is on screen,
    /// otherwise just enough (its top row on top when it is taller than
    /// the pane). `None` before a frame or when no block matches.
    fn scroll_showing(&self, is: impl Fn(&Block<'_>) -> bool) -> Option<usize> {
        let (width, rows) = self.size.get();
        if width == 0 || rows == 0 {
            return None;
        }
        let rows = usize::from(rows);
        let mut below = self.streaming.as_ref().map_or(0, |s| s.rows(width).len())
            + self.pending_lines(width).map_or(0, |p| p.len());
        for block in self.blocks() {
            let h = self.height(&block, width);
            if is(&block) {
                let shown = self.scroll..self.scroll + rows;
                return Some(if h >= rows || below + h > shown.end {
                    (below + h).saturating_sub(rows)
                } else if below < shown.start {
                    below
                } else {
                    self.scroll
                });
            }
            below += h;
        }
        None
    }

    /// Scrolls by `delta` rows (positive: towards older messages), never
    /// past the oldest line once a frame has shown where it is.
    pub fn scroll_by(&mut self, delta: i64) {
        let next = i64::try_from(self.scroll)
            .unwrap_or(i64::MAX)
            .saturating_add(delta);
        let next = usize::try_from(next.max(0)).unwrap_or(0);
        self.scroll = match self.max_scroll.get() {
            Some(max) => next.min(max),
            None => next,
        };
    }
}

/// Lays out one message block (uncached); `collapsed` holds the key that
/// expands a collapsed summary. `pending` lists the highlights drawn plain.
pub(super) fn layout_block(
    msg: &Message,
    badges: &[String],
    collapsed: Option<&str>,
    tokens: Option<u64>,
    width: u16,
    highlights: &dyn HighlightLookup,
) -> Rendered {
    let mut lines = vec![block_header(msg, badges, tokens)];
    let mut pending = Vec::new();
    let body_width = width.saturating_sub(2).max(1);
    if let Some(expand_key) = collapsed {
        let first = msg.content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let shown = fmt::cut(first, usize::from(body_width).saturating_sub(16));
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(format!("▸ {shown}"), theme::dim()),
            Span::styled(format!("  ({expand_key} expands)"), theme::dim()),
        ]));
        // Merged into a message: that message stays visible under it.
        if let Some(own) = crate::compress::split_summary(&msg.content).1 {
            lines.extend(
                plain_lines(own, body_width, Style::default())
                    .into_iter()
                    .map(indent),
            );
        }
    } else {
        let body = message_lines(msg, body_width, highlights);
        pending = body.pending;
        lines.extend(body.lines.into_iter().map(indent));
    }
    if let Some(error) = &msg.error {
        // What a failed reply failed with, under what it said.
        let text = format!("✗ {}", crate::render::defuse(error));
        lines.extend(
            plain_lines(&text, body_width, theme::error())
                .into_iter()
                .map(indent),
        );
    }
    if msg.tool_calls.is_empty() {
        lines.push(Line::default());
    }
    Rendered { lines, pending }
}

/// The first line of a block: role, badges and `tokens`.
pub(super) fn block_header(msg: &Message, badges: &[String], tokens: Option<u64>) -> Line<'static> {
    let label = match msg.role {
        Role::User => "you",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::System => "system",
    };
    let mut header = vec![Span::styled(label, theme::role(msg.role))];
    for b in badges {
        header.push(Span::raw(" "));
        header.push(Span::styled(format!(" {b} "), theme::badge()));
    }
    if let Some(t) = tokens {
        header.push(Span::styled(format!("  {} tok", fmt::tokens(t)), theme::dim()));
    }
    Line::from(header)
}

/// A body line indented under its block's header.
pub(super) fn indent(l: Line<'static>) -> Line<'static> {
    let mut spans = vec![Span::raw("  ")];
    spans.extend(l.spans);
    let mut line = Line::from(spans);
    line.style = l.style;
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Interruption, Role, SessionId};

    #[test]
    fn an_interrupted_reply_says_who_stopped_it() {
        let mut m = Message::new(SessionId::default(), Role::Assistant, "half a", 0);
        m.status = MessageStatus::Interrupted;
        for (why, badge) in [
            (None, "interrupted"),
            (Some(Interruption::Cancelled), "interrupted"),
            (Some(Interruption::CutOff), "cut off by the server"),
            (Some(Interruption::Failed), "failed mid-reply"),
        ] {
            m.interruption = why;
            assert_eq!(badges(&m, None), vec![badge.to_owned()], "{why:?}");
        }
    }
}
