//! The chat pane: messages with their badges, collapsed summaries, the reply
//! streaming in, scrolling. Rendering is virtualised: blocks are laid out
//! from the newest message backwards only until the visible rows (plus the
//! scroll offset) are covered, and each message's wrapped lines are cached
//! per width, so a frame costs what is on screen, not the whole transcript.
//!
//! The cache is the only state touched while drawing; it is a memo of pure
//! functions of (message, width, expansion), so drawing stays observably
//! side-effect free. Message text goes through [`message_lines`] alone, the
//! single place a richer (Markdown) renderer plugs in.

use super::{fmt, theme};
use crate::domain::{Message, MessageId, MessageKind, MessageStatus, Role};
use crate::pipeline::{Action, ReportEntry};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// The body of one message as display lines of at most `width` cells
/// (plain wrapped text; the Markdown renderer replaces this function).
#[must_use]
pub fn message_lines(msg: &Message, width: u16) -> Vec<Line<'static>> {
    let mut text = msg.content.clone();
    for call in &msg.tool_calls {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("→ {}({})", call.name, call.arguments));
    }
    fmt::wrap(&text, usize::from(width))
        .into_iter()
        .map(Line::from)
        .collect()
}

/// The badges of a message: from the pipeline report (`truncated 8.1k→1.2k`,
/// `pruned`, `dropped`, `repaired`, `merged`) and its own state (`pinned`,
/// `summary`, `interrupted`, `error`, `archived`).
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
    match msg.status {
        MessageStatus::Interrupted => out.push("interrupted".to_owned()),
        MessageStatus::Error => out.push("error".to_owned()),
        MessageStatus::Streaming => out.push("streaming".to_owned()),
        MessageStatus::Complete => {}
    }
    if let Some(r) = report {
        match r.action {
            Action::Kept => {}
            Action::Truncated => out.push(format!(
                "truncated {}→{}",
                fmt::tokens(u64::from(r.tokens_before)),
                fmt::tokens(u64::from(r.tokens_after))
            )),
            Action::Pruned => out.push("pruned".to_owned()),
            Action::Dropped => out.push("dropped".to_owned()),
            Action::Repaired => out.push("repaired".to_owned()),
            Action::Merged => out.push("merged".to_owned()),
        }
    }
    out
}

/// The reply arriving now.
#[derive(Clone, Debug, Default)]
pub struct Streaming {
    /// Text so far.
    pub text: String,
    /// When the request started, unix ms.
    pub started_ms: i64,
    /// When the first text arrived, unix ms.
    pub first_ms: Option<i64>,
    /// When the latest text arrived, unix ms.
    pub last_ms: i64,
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct CacheKey {
    id: MessageId,
    width: u16,
    collapsed: bool,
    len: usize,
    status: MessageStatus,
    badges: Vec<String>,
}

/// Chat pane state.
#[derive(Debug, Default)]
pub struct ChatPane {
    /// Messages, oldest first, archived ones included.
    pub messages: Vec<Message>,
    /// Pipeline report by message.
    pub report: HashMap<MessageId, ReportEntry>,
    /// Summaries shown whole (otherwise one line).
    pub summaries_expanded: bool,
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
    /// Wrapped blocks per message and width (see the module doc).
    cache: RefCell<HashMap<MessageId, (CacheKey, Vec<Line<'static>>)>>,
}

impl ChatPane {
    /// Replaces the messages and report (drops cached layouts of messages
    /// that are gone).
    pub fn set(&mut self, messages: Vec<Message>, report: Vec<ReportEntry>) {
        self.report = report.into_iter().map(|r| (r.message_id, r)).collect();
        let ids: std::collections::HashSet<MessageId> = messages.iter().map(|m| m.id).collect();
        self.cache.get_mut().retain(|id, _| ids.contains(id));
        self.messages = messages;
    }

    fn visible(&self) -> impl DoubleEndedIterator<Item = &Message> {
        self.messages
            .iter()
            .filter(|m| self.show_archived || m.archived_by.is_none())
    }

    /// The block of one message: a header line with role and badges, the
    /// body (or one line for a collapsed summary), a blank line.
    /// Lays out `msg` at `width` unless the cache already holds it; returns
    /// its height in rows.
    fn ensure(&self, msg: &Message, width: u16) -> usize {
        let collapsed = msg.kind == MessageKind::Summary && !self.summaries_expanded;
        let badges = badges(msg, self.report.get(&msg.id));
        let key = CacheKey {
            id: msg.id,
            width,
            collapsed,
            len: msg.content.len(),
            status: msg.status,
            badges,
        };
        if let Some((k, lines)) = self.cache.borrow().get(&msg.id)
            && *k == key
        {
            return lines.len();
        }
        let lines = layout_block(
            msg,
            &key.badges,
            collapsed.then_some(self.expand_key.as_str()),
            width,
        );
        let height = lines.len();
        self.cache.borrow_mut().insert(msg.id, (key, lines));
        height
    }

    /// Draws the pane into `area`: block heights are summed from the newest
    /// message back until the window is covered; only blocks that overlap
    /// the window have their lines copied to the screen.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let rows = usize::from(area.height);
        let want = rows + self.scroll;
        let mut tail: Vec<Vec<Line<'static>>> = Vec::new();
        if let Some(text) = &self.pending_user {
            let m = Message::new(crate::domain::SessionId::default(), Role::User, text.clone(), 0);
            tail.push(layout_block(&m, &[], None, area.width));
        }
        if let Some(s) = &self.streaming {
            let mut m = Message::new(
                crate::domain::SessionId::default(),
                Role::Assistant,
                s.text.clone(),
                0,
            );
            m.status = MessageStatus::Streaming;
            let b = badges(&m, None);
            tail.push(layout_block(&m, &b, None, area.width));
        }
        // Newest first: (message or tail block, height).
        let mut items: Vec<(Option<&Message>, usize, usize)> = Vec::new();
        let mut have = 0;
        for (i, t) in tail.iter().enumerate().rev() {
            have += t.len();
            items.push((None, i, t.len()));
        }
        let mut reached_top = true;
        for msg in self.visible().rev() {
            if have >= want {
                reached_top = false;
                break;
            }
            let h = self.ensure(msg, area.width);
            have += h;
            items.push((Some(msg), 0, h));
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
        let mut start = 0;
        for (msg, tail_index, h) in items.iter().rev() {
            let end = start + h;
            if end > top && start < top + shown {
                let lines: &[Line<'static>] = match msg {
                    Some(m) => cache.get(&m.id).map_or(&[], |(_, l)| l.as_slice()),
                    None => tail[*tail_index].as_slice(),
                };
                for (k, line) in lines.iter().enumerate() {
                    let at = start + k;
                    if at >= top && at < top + shown {
                        let y = area.y + u16::try_from(at - top).unwrap_or(u16::MAX);
                        buf.set_line(area.x, y, line, area.width);
                    }
                }
            }
            start = end;
        }
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
/// expands a collapsed summary.
fn layout_block(msg: &Message, badges: &[String], collapsed: Option<&str>, width: u16) -> Vec<Line<'static>> {
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
    if let Some(t) = &msg.tokens {
        header.push(Span::styled(
            format!("  {} tok", fmt::tokens(u64::from(t.tokens))),
            theme::dim(),
        ));
    }
    let mut lines = vec![Line::from(header)];
    let body_width = width.saturating_sub(2).max(1);
    if let Some(expand_key) = collapsed {
        let first = msg.content.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let shown = fmt::cut(first, usize::from(body_width).saturating_sub(16));
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(format!("▸ {shown}"), theme::dim()),
            Span::styled(format!("  ({expand_key} expands)"), theme::dim()),
        ]));
    } else {
        for l in message_lines(msg, body_width) {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(l.spans);
            lines.push(Line::from(spans));
        }
    }
    lines.push(Line::default());
    lines
}
