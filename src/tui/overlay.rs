//! Overlays drawn over the main screen: the session picker, the prompt
//! inspector, the request inspector and help. Each holds only its own view
//! state (query, selection, scroll); data comes from background results.

use super::event::{ContextSnapshot, RequestView, short_id};
use super::keymap::KeyMap;
use super::slash;
use super::{fmt, theme};
use crate::domain::{SessionSummary, SystemPrompt};
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
}

/// The open overlay.
#[derive(Clone, Debug)]
pub enum Overlay {
    /// Session picker.
    Picker(Picker),
    /// The frozen prompt with layer borders.
    Prompt {
        /// Rows scrolled.
        scroll: u16,
    },
    /// The prepared request (`None` while it is being prepared).
    Request {
        /// The request.
        view: Option<Box<RequestView>>,
        /// Rows scrolled.
        scroll: u16,
    },
    /// Keys and commands.
    Help {
        /// Rows scrolled.
        scroll: u16,
    },
}

impl Overlay {
    /// Scrolls by `delta` rows (the picker moves its selection instead).
    pub fn scroll(&mut self, delta: i32) {
        match self {
            Self::Picker(p) => {
                let n = p.rows.len();
                if n > 0 {
                    let at = i64::try_from(p.selected).unwrap_or(0) + i64::from(delta.signum());
                    p.selected = usize::try_from(at.clamp(0, i64::try_from(n - 1).unwrap_or(0))).unwrap_or(0);
                }
            }
            Self::Prompt { scroll } | Self::Request { scroll, .. } | Self::Help { scroll } => {
                *scroll = u16::try_from((i32::from(*scroll) + delta).max(0)).unwrap_or(u16::MAX);
            }
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

/// Draws the overlay.
pub fn render(
    overlay: &Overlay,
    context: Option<&ContextSnapshot>,
    keymap: &KeyMap,
    area: Rect,
    buf: &mut Buffer,
) {
    let area = popup(area);
    if area.width < 3 || area.height < 3 {
        return;
    }
    Clear.render(area, buf);
    let (title, lines, scroll) = match overlay {
        Overlay::Picker(p) => (" Sessions ", picker_lines(p, area.width.saturating_sub(2)), 0),
        Overlay::Prompt { scroll } => (
            " Prompt inspector ",
            match context {
                Some(c) => prompt_lines(&c.prompt, area.width.saturating_sub(2)),
                None => vec![Line::styled("loading…", theme::dim())],
            },
            *scroll,
        ),
        Overlay::Request { view, scroll } => (
            " Request inspector ",
            match view {
                Some(v) => request_lines(v, area.width.saturating_sub(2)),
                None => vec![Line::styled("preparing the request…", theme::dim())],
            },
            *scroll,
        ),
        Overlay::Help { scroll } => (" Help ", help_lines(keymap), *scroll),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, theme::title()))
        .title_bottom(Span::styled(" Esc closes ", theme::dim()));
    let inner = block.inner(area);
    block.render(area, buf);
    Paragraph::new(lines).scroll((scroll, 0)).render(inner, buf);
}

fn date(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map_or_else(|_| "?".to_owned(), |t| t.strftime("%Y-%m-%d %H:%M").to_string())
}

fn picker_lines(p: &Picker, width: u16) -> Vec<Line<'static>> {
    let mut out = vec![
        Line::from(vec![
            Span::styled("search: ", theme::dim()),
            Span::raw(p.query.clone()),
            Span::styled("▏", theme::dim()),
        ]),
        Line::styled(
            fmt::cut(
                "title                          workspace            msgs  tokens  model            updated",
                usize::from(width),
            ),
            theme::dim(),
        ),
    ];
    if p.rows.is_empty() {
        out.push(Line::styled(
            if p.loaded {
                "no sessions match"
            } else {
                "searching…"
            },
            theme::dim(),
        ));
    }
    for (i, r) in p.rows.iter().enumerate() {
        let ws = std::path::Path::new(&r.workspace)
            .file_name()
            .map_or_else(|| r.workspace.clone(), |n| n.to_string_lossy().into_owned());
        let title = if r.title.is_empty() {
            format!("({})", short_id(r.id))
        } else {
            r.title.clone()
        };
        let text = format!(
            "{:<30} {:<20} {:>4}  {:>6}  {:<16} {}",
            fmt::cut(&title, 30),
            fmt::cut(&ws, 20),
            r.messages,
            fmt::tokens(r.tokens),
            fmt::cut(&r.model, 16),
            date(r.updated_at)
        );
        let style = if i == p.selected {
            theme::selected()
        } else {
            ratatui::style::Style::new()
        };
        out.push(Line::styled(fmt::cut(&text, usize::from(width)), style));
    }
    out
}

fn prompt_lines(prompt: &SystemPrompt, width: u16) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled(
        format!(
            "version {} · {} bytes · sha256 {}…",
            prompt.version,
            prompt.text.len(),
            prompt.sha256.chars().take(12).collect::<String>()
        ),
        theme::dim(),
    )];
    for layer in &prompt.layers {
        let text = prompt.text.get(layer.start..layer.end).unwrap_or("");
        let is_boundary = prompt
            .boundary_offset
            .is_some_and(|b| b >= layer.start && b < layer.end);
        let head = format!(
            "── {} ({}) {} tok ",
            layer.name.as_str(),
            layer.tier.as_str(),
            fmt::tokens(layer.tokens as u64)
        );
        let fill = usize::from(width).saturating_sub(fmt::width(&head));
        let style = if is_boundary {
            theme::boundary()
        } else {
            theme::title()
        };
        out.push(Line::styled(format!("{head}{}", "─".repeat(fill)), style));
        if is_boundary {
            out.push(Line::styled("▲ cached prefix ends here ▲", theme::boundary()));
        }
        for l in fmt::wrap(text.trim_end_matches('\n'), usize::from(width)) {
            out.push(Line::raw(l));
        }
    }
    out
}

fn request_lines(v: &RequestView, width: u16) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled(
        format!("estimated input {} tokens", fmt::tokens(v.prepared_tokens)),
        theme::title(),
    )];
    let mut counts = std::collections::BTreeMap::new();
    for r in &v.report {
        *counts
            .entry(format!("{:?}", r.action).to_lowercase())
            .or_insert(0u32) += 1;
    }
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    out.push(Line::styled(
        format!("report: {}", summary.join(", ")),
        theme::dim(),
    ));
    for l in v.json.lines() {
        for w in fmt::wrap(l, usize::from(width)) {
            out.push(Line::raw(w));
        }
    }
    out
}

fn help_lines(keymap: &KeyMap) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled("Keys", theme::title())];
    for (label, action) in keymap.bindings() {
        out.push(Line::raw(format!("  {label:<12} {}", action.description())));
    }
    out.push(Line::default());
    out.push(Line::styled("Commands", theme::title()));
    for c in slash::ALL {
        let name = format!("/{} {}", c.name(), c.args());
        out.push(Line::raw(format!("  {name:<24} {}", c.description())));
    }
    out
}
