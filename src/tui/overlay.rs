//! Overlays drawn over the main screen: the session picker, the prompt
//! inspector, the request inspector, help, the tools list, the approval
//! of a tool call (see `approval`), the context list (`context_list`), the
//! compression preview (`preview`) and one message read whole. Each holds only its own view
//! state (query, selection, scroll and the text overlays' layout cache, see
//! `pager`); data comes from background results. The text overlays are
//! documents of logical lines laid out lazily, so a request of megabytes
//! scrolls at the cost of one screen.

mod approval;
mod choices;
mod context_list;
mod picker;
mod preview;

pub use approval::ApprovalPrompt;
pub use choices::{Choices, Picked};
pub use context_list::ContextList;
pub use preview::{Accept, Preview};

use super::event::{ContextSnapshot, RequestView};
use super::keymap::KeyMap;
use super::pager::{Item, Pager, key_of};
use super::slash;
use super::{fmt, theme};
use crate::domain::{SessionSummary, SystemPrompt};
use crate::runtime::service::Listing;
use picker::picker_lines;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

/// The session picker's state.
#[derive(Clone, Debug, Default)]
pub struct Picker {
    /// What the user typed (searched with FTS).
    pub query: String,
    /// Matching sessions, newest first.
    pub rows: Vec<SessionSummary>,
    /// Selected row.
    pub selected: usize,
    /// Ticket of the latest search; older answers are dropped.
    pub ticket: u64,
    /// Whether an answer arrived for the current ticket.
    pub loaded: bool,
    /// Every workspace's sessions (Tab), not only the current one's.
    pub all: bool,
}

/// Which list [`Overlay::Tools`] shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// The session's tools and their schema tokens (`/tools`).
    Tools,
    /// The MCP servers and their tools (`/mcp`).
    Mcp,
    /// The notices log.
    Notices,
}

/// The open overlay.
#[derive(Clone, Debug)]
pub enum Overlay {
    /// Session picker.
    Picker(Picker),
    /// The frozen prompt with layer borders.
    Prompt {
        /// Scroll position and layout.
        pager: Pager,
    },
    /// The prepared request (`None` while it is being prepared; set it
    /// with [`Overlay::set_request`] so the layout follows).
    Request {
        /// The request.
        view: Option<Box<RequestView>>,
        /// Scroll position and layout.
        pager: Pager,
    },
    /// Keys and commands, with the context pane's legend; or the legend
    /// alone.
    Help {
        /// Scroll position and layout.
        pager: Pager,
        /// Only the context pane's legend (`?` on an empty composer).
        legend: bool,
    },
    /// A list: the session's tools (`/tools`), its MCP servers (`/mcp`)
    /// or the notices log.
    Tools {
        /// Which list.
        kind: ListKind,
        /// What the list is about (`tools (schema tokens)`, `tools are off`).
        head: String,
        /// Its items, one a line.
        lines: String,
        /// Scroll position and layout.
        pager: Pager,
    },
    /// A tool call waiting for the user's answer.
    Approval(Box<ApprovalPrompt>),
    /// Every message with its state in the next request and its tokens.
    ContextList(Box<ContextList>),
    /// A picker of models (`/model`) or skills (`/skill`).
    Choices(Box<Choices>),
    /// What a compression would store, before it is stored.
    Preview(Box<Preview>),
    /// One message read whole.
    Message {
        /// `message 4 · you · 1.2k tok`.
        head: String,
        /// Its text.
        text: String,
        /// Scroll position and layout.
        pager: Pager,
        /// The overlay it was opened from (the context list), shown again
        /// when it closes.
        back: Option<Box<Overlay>>,
    },
}

impl Overlay {
    /// The prompt inspector, at the top.
    #[must_use]
    pub fn prompt() -> Self {
        Self::Prompt {
            pager: Pager::default(),
        }
    }

    /// The request inspector waiting for the prepared request.
    #[must_use]
    pub fn request() -> Self {
        Self::Request {
            view: None,
            pager: Pager::default(),
        }
    }

    /// Help, at the top.
    #[must_use]
    pub fn help() -> Self {
        Self::Help {
            pager: Pager::default(),
            legend: false,
        }
    }

    /// What each row and figure of the context pane means.
    #[must_use]
    pub fn legend() -> Self {
        Self::Help {
            pager: Pager::default(),
            legend: true,
        }
    }

    /// The service's answer to `/tools` or `/mcp`: its head, then a row a
    /// line.
    #[must_use]
    pub fn listing(kind: ListKind, listing: &Listing) -> Self {
        Self::Tools {
            kind,
            head: listing.head.clone(),
            lines: listing.rows.join("\n"),
            pager: Pager::default(),
        }
    }

    /// The notices log: every notice, warning and error of the session,
    /// newest first, each whole (`entries`: the text and when, unix ms,
    /// oldest first).
    #[must_use]
    pub fn notices(entries: &[(String, i64)]) -> Self {
        let lines = if entries.is_empty() {
            "nothing was said yet".to_owned()
        } else {
            entries
                .iter()
                .rev()
                .map(|(text, at)| format!("{}  {text}", clock(*at)))
                .collect::<Vec<_>>()
                .join("\n")
        };
        Self::Tools {
            kind: ListKind::Notices,
            head: NOTICES_HEAD.to_owned(),
            lines,
            pager: Pager::default(),
        }
    }

    /// The approval overlay of `request`.
    #[must_use]
    pub fn approval(request: crate::runtime::service::ApprovalRequest) -> Self {
        Self::Approval(Box::new(ApprovalPrompt::new(request)))
    }

    /// The context list, waiting for its rows.
    #[must_use]
    pub fn context_list() -> Self {
        Self::ContextList(Box::default())
    }

    /// Message `msg` read whole, at position `pos` (`None`: archived),
    /// going back to `back` when closed.
    #[must_use]
    pub fn message(msg: &crate::domain::Message, pos: Option<usize>, back: Option<Overlay>) -> Self {
        let role = match msg.role {
            crate::domain::Role::User => "you",
            crate::domain::Role::Assistant => "assistant",
            crate::domain::Role::Tool => "tool",
            crate::domain::Role::System => "system",
        };
        let mut head = match pos {
            Some(p) => format!("message {p} · {role}"),
            None => format!("archived message · {role}"),
        };
        if let Some(t) = &msg.tokens {
            head.push_str(&format!(" · {} tok", fmt::tokens(u64::from(t.tokens))));
        }
        let mut text = msg.content.clone();
        for call in &msg.tool_calls {
            text.push_str(&format!("\n→ {} {}", call.name, call.arguments));
        }
        Self::Message {
            head,
            text,
            pager: Pager::default(),
            back: back.map(Box::new),
        }
    }

    /// Shows `view` in the request inspector (other overlays ignore it).
    pub fn set_request(&mut self, view: Box<RequestView>) {
        if let Self::Request { view: v, pager } = self {
            *v = Some(view);
            pager.invalidate();
        }
    }

    /// Scrolls by `delta` rows (the picker moves its selection instead).
    pub fn scroll(&mut self, delta: i32) {
        match self {
            Self::Picker(p) => {
                let n = p.rows.len();
                if n > 0 {
                    let at = i64::try_from(p.selected).unwrap_or(0) + i64::from(delta);
                    p.selected = usize::try_from(at.clamp(0, i64::try_from(n - 1).unwrap_or(0))).unwrap_or(0);
                }
            }
            Self::Prompt { pager }
            | Self::Request { pager, .. }
            | Self::Help { pager, .. }
            | Self::Tools { pager, .. }
            | Self::Message { pager, .. } => {
                pager.scroll_by(i64::from(delta));
            }
            Self::Approval(a) => a.pager.scroll_by(i64::from(delta)),
            Self::ContextList(l) => l.step(i64::from(delta)),
            Self::Preview(p) => p.scroll(i64::from(delta)),
            Self::Choices(c) => {
                let code = if delta > 0 {
                    crossterm::event::KeyCode::Up
                } else {
                    crossterm::event::KeyCode::Down
                };
                c.key(code);
            }
        }
    }

    /// Goes to the first row (the picker: its first session).
    pub fn home(&mut self) {
        match self {
            Self::Picker(p) => p.selected = 0,
            Self::Prompt { pager }
            | Self::Request { pager, .. }
            | Self::Help { pager, .. }
            | Self::Tools { pager, .. }
            | Self::Message { pager, .. } => {
                pager.to_top();
            }
            Self::Approval(a) => a.pager.to_top(),
            Self::ContextList(l) => l.home(),
            Self::Preview(p) => p.home(),
            Self::Choices(_) => {}
        }
    }

    /// Goes to the last page (the picker: its last session).
    pub fn end(&mut self) {
        match self {
            Self::Picker(p) => p.selected = p.rows.len().saturating_sub(1),
            Self::Prompt { pager }
            | Self::Request { pager, .. }
            | Self::Help { pager, .. }
            | Self::Tools { pager, .. }
            | Self::Message { pager, .. } => {
                pager.to_end();
            }
            Self::Approval(a) => a.pager.to_end(),
            Self::ContextList(l) => l.end(),
            Self::Preview(p) => p.end(),
            Self::Choices(_) => {}
        }
    }
}

/// The area of an overlay: the screen less a margin.
fn popup(area: Rect) -> Rect {
    let mx = if area.width > 60 { area.width / 12 } else { 0 };
    let my = if area.height > 16 { area.height / 12 } else { 0 };
    Rect {
        x: area.x + mx,
        y: area.y + my,
        width: area.width - 2 * mx,
        height: area.height - 2 * my,
    }
}

/// The overlay's frame on a screen of `area`, and the area inside its
/// border (`None` when the screen is too small to draw one).
fn frame(area: Rect) -> Option<(Rect, Rect)> {
    let outer = popup(area);
    if outer.width < 3 || outer.height < 3 {
        return None;
    }
    let inner = Rect {
        x: outer.x + 1,
        y: outer.y + 1,
        width: outer.width - 2,
        height: outer.height - 2,
    };
    Some((outer, inner))
}

/// Whether the approval overlay of `prompt` shows at least one line of the
/// call's detail (with a `↓ more` hint when there is more) on a screen of
/// `area`; when it cannot, it says to enlarge the terminal, and the call
/// must not be allowed.
#[must_use]
pub fn approval_shows_detail(prompt: &ApprovalPrompt, area: Rect) -> bool {
    frame(area).is_some_and(|(_, inner)| approval::shows_detail(prompt, inner.width, inner.height))
}

/// Draws the overlay.
pub fn render(
    overlay: &Overlay,
    context: Option<&ContextSnapshot>,
    keymap: &KeyMap,
    area: Rect,
    buf: &mut Buffer,
) {
    let Some((area, inner)) = frame(area) else {
        return;
    };
    Clear.render(area, buf);
    let title = match overlay {
        Overlay::Picker(_) => " Sessions ".to_owned(),
        Overlay::Prompt { .. } => " Prompt inspector ".to_owned(),
        Overlay::Request { .. } => " Request inspector ".to_owned(),
        Overlay::Help { legend: true, .. } => " Context pane ".to_owned(),
        Overlay::Help { .. } => " Help ".to_owned(),
        Overlay::Tools { kind, .. } => match kind {
            ListKind::Tools => " Tools ",
            ListKind::Mcp => " MCP ",
            ListKind::Notices => " Notices ",
        }
        .to_owned(),
        Overlay::Approval(a) => format!(" Allow {}? ", a.request.call.name),
        Overlay::ContextList(_) => " Context list ".to_owned(),
        Overlay::Choices(c) => c.title().to_owned(),
        Overlay::Preview(p) if p.editing() => " Compression preview · editing ".to_owned(),
        Overlay::Preview(_) => " Compression preview ".to_owned(),
        Overlay::Message { .. } => " Message ".to_owned(),
    };
    let bottom = match overlay {
        Overlay::Approval(a) if a.reason.is_none() => " Esc denies ",
        Overlay::Approval(_) => " Enter denies ",
        Overlay::Preview(p) if p.editing() => " Esc ends editing ",
        Overlay::Preview(_) => " Esc cancels ",
        Overlay::Message { back: Some(_), .. } => " Esc goes back ",
        _ => " Esc closes ",
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, theme::title()))
        .title_bottom(Span::styled(bottom, theme::dim()));
    block.render(area, buf);
    match overlay {
        Overlay::Picker(p) => Paragraph::new(picker_lines(p, inner.width, inner.height)).render(inner, buf),
        Overlay::Prompt { pager } => match context {
            Some(c) => pager.render(
                prompt_key(&c.prompt),
                &c.prompt.text,
                || prompt_doc(&c.prompt),
                inner,
                buf,
            ),
            None => pager.render(
                0,
                "",
                || vec![Item::line(Line::styled("loading…", theme::dim()))],
                inner,
                buf,
            ),
        },
        Overlay::Request { view, pager } => match view {
            Some(v) => pager.render(
                key_of((v.json.len(), v.prepared_tokens, v.report.len())),
                &v.json,
                || request_doc(v),
                inner,
                buf,
            ),
            None => pager.render(
                1,
                "",
                || vec![Item::line(Line::styled("preparing the request…", theme::dim()))],
                inner,
                buf,
            ),
        },
        Overlay::Help { pager, legend } => {
            let text = super::legend::text();
            if *legend {
                pager.render(3, &text, || legend_doc(&text), inner, buf);
            } else {
                pager.render(2, &text, || help_doc(keymap, &text), inner, buf);
            }
        }
        Overlay::Tools {
            kind,
            head,
            lines,
            pager,
        } => pager.render(
            key_of((head, lines)),
            lines,
            || tools_doc(*kind, head, lines),
            inner,
            buf,
        ),
        Overlay::Approval(a) => approval::render(a, inner, buf),
        Overlay::ContextList(l) => l.render(inner, buf),
        Overlay::Choices(c) => c.render(inner, buf),
        Overlay::Preview(p) => p.render(inner, buf),
        Overlay::Message {
            head, text, pager, ..
        } => pager.render(key_of((head, text)), text, || message_doc(head, text), inner, buf),
    }
}

fn message_doc(head: &str, text: &str) -> Vec<Item> {
    let mut out = vec![Item::line(Line::styled(head.to_owned(), theme::title()))];
    Item::lines_of(text, 0, text.len(), &mut out);
    out
}

/// The head of the notices log.
const NOTICES_HEAD: &str = "Notices, warnings and errors of this session, newest first";

/// `HH:MM:SS` of `ms` (unix milliseconds) in the local time zone.
fn clock(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(
        |_| "--:--:--".to_owned(),
        |t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%H:%M:%S")
                .to_string()
        },
    )
}

fn tools_doc(kind: ListKind, head: &str, lines: &str) -> Vec<Item> {
    let mut out = vec![Item::line(Line::styled(head.to_owned(), theme::title()))];
    Item::lines_of(lines, 0, lines.len(), &mut out);
    if kind == ListKind::Notices {
        return out;
    }
    out.push(Item::line(Line::default()));
    let hints = if kind == ListKind::Mcp {
        [
            "/mcp off SERVER switches a server off for this session,",
            "/mcp on SERVER back on; /mcp accept answers a .mcp.json.",
        ]
    } else {
        [
            "/tools off NAME switches one off for this session,",
            "/tools on NAME back on; the system prompt stays as it is.",
        ]
    };
    for hint in hints {
        out.push(Item::line(Line::styled(hint, theme::dim())));
    }
    out
}

/// What the prompt inspector's document depends on (not its text, which
/// its sha256 stands for).
fn prompt_key(prompt: &SystemPrompt) -> u64 {
    let layers: Vec<_> = prompt
        .layers
        .iter()
        .map(|l| (l.name.as_str(), l.tier.as_str(), l.tokens, l.start, l.end))
        .collect();
    key_of((
        prompt.id,
        prompt.version,
        &prompt.sha256,
        prompt.boundary_offset,
        layers,
    ))
}

fn prompt_doc(prompt: &SystemPrompt) -> Vec<Item> {
    let mut out = vec![Item::line(Line::styled(
        format!(
            "version {} · {} bytes · sha256 {}…",
            prompt.version,
            prompt.text.len(),
            prompt.sha256.chars().take(12).collect::<String>()
        ),
        theme::dim(),
    ))];
    for layer in &prompt.layers {
        let is_boundary = prompt
            .boundary_offset
            .is_some_and(|b| b >= layer.start && b < layer.end);
        let head = format!(
            "── {} ({}) {} tok ",
            layer.name.as_str(),
            layer.tier.as_str(),
            fmt::tokens(layer.tokens as u64)
        );
        let style = if is_boundary {
            theme::boundary()
        } else {
            theme::title()
        };
        out.push(Item::Rule(Box::new((head, style))));
        if is_boundary {
            out.push(Item::line(Line::styled(
                "▲ cached prefix ends here ▲",
                theme::boundary(),
            )));
        }
        let body = prompt.text.get(layer.start..layer.end).unwrap_or("");
        let end = layer.start + body.trim_end_matches('\n').len();
        if end == layer.start {
            // An empty layer still shows one (empty) row.
            out.push(Item::Text(layer.start, layer.start));
        } else {
            Item::lines_of(&prompt.text, layer.start, end, &mut out);
        }
    }
    out
}

fn request_doc(v: &RequestView) -> Vec<Item> {
    let mut out = vec![Item::line(Line::styled(
        format!("estimated input {} tokens", fmt::tokens(v.prepared_tokens)),
        theme::title(),
    ))];
    let mut counts = std::collections::BTreeMap::new();
    for r in &v.report {
        *counts
            .entry(format!("{:?}", r.action).to_lowercase())
            .or_insert(0u32) += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    out.push(Item::line(Line::styled(
        format!("report: {}", summary.join(", ")),
        theme::dim(),
    )));
    Item::lines_of(&v.json, 0, v.json.len(), &mut out);
    out
}

/// The context pane's legend over its `text` ([`super::legend::text`]).
fn legend_doc(text: &str) -> Vec<Item> {
    let mut out = vec![Item::line(super::legend::heading())];
    Item::lines_of(text, 0, text.len(), &mut out);
    out
}

/// Help: keys, the composer, the overlays, the context pane's legend
/// (over its `legend` text) and the commands.
fn help_doc(keymap: &KeyMap, legend: &str) -> Vec<Item> {
    let mut out: Vec<Item> = key_lines(keymap).into_iter().map(Item::line).collect();
    out.push(Item::line(Line::default()));
    out.extend(legend_doc(legend));
    out.push(Item::line(Line::default()));
    out.extend(command_lines().into_iter().map(Item::line));
    out
}

/// Help's keys: the key map, the composer's and each overlay's.
fn key_lines(keymap: &KeyMap) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled("Keys", theme::title())];
    for (label, action) in keymap.bindings() {
        out.push(Line::raw(format!("  {label:<12} {}", action.description())));
    }
    out.push(Line::default());
    out.push(Line::styled("Composer", theme::title()));
    for (keys, what) in super::readline::HELP {
        out.push(Line::raw(format!("  {keys:<16} {what}")));
    }
    let key = |a| keymap.label_for(a).map(|k| format!(" ({k})")).unwrap_or_default();
    let sections: [(String, &[(&str, &str)]); 3] = [
        (
            format!("Selecting messages{}", key(super::keymap::Action::SelectMessages)),
            &super::app::SELECT_HELP,
        ),
        (
            format!(
                "Context list{}, /context",
                key(super::keymap::Action::ContextList)
            ),
            &super::app::LIST_HELP,
        ),
        (
            "Compression preview (/compress)".to_owned(),
            &super::app::PREVIEW_HELP,
        ),
    ];
    for (head, keys) in sections {
        out.push(Line::default());
        out.push(Line::styled(head, theme::title()));
        for (keys, what) in keys {
            out.push(Line::raw(format!("  {keys:<16} {what}")));
        }
    }
    out
}

/// Help's slash commands.
fn command_lines() -> Vec<Line<'static>> {
    let mut out = vec![Line::styled("Commands", theme::title())];
    for c in slash::ALL {
        let name = format!("/{} {}", c.name(), c.args());
        out.push(Line::raw(format!("  {name:<24} {}", c.description())));
    }
    out
}
