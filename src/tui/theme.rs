//! Every colour and text style of the full-screen app, chosen in one place.
//! Widgets ask for a role (`badge`, `header`, ...) and never pick colours
//! themselves.

use ratatui::style::{Color, Modifier, Style};

/// The header bar.
#[must_use]
pub fn header() -> Style {
    Style::new().fg(Color::Black).bg(Color::Cyan)
}

/// The status bar.
#[must_use]
pub fn status() -> Style {
    Style::new().fg(Color::White).bg(Color::DarkGray)
}

/// Role label of a message (`you`, `assistant`, `tool`, `system`).
#[must_use]
pub fn role(role: crate::domain::Role) -> Style {
    use crate::domain::Role;
    let color = match role {
        Role::User => Color::Green,
        Role::Assistant => Color::Cyan,
        Role::Tool => Color::Yellow,
        Role::System => Color::Magenta,
    };
    Style::new().fg(color).add_modifier(Modifier::BOLD)
}

/// A badge such as `truncated 8.1k→1.2k` or `pinned`.
#[must_use]
pub fn badge() -> Style {
    Style::new().fg(Color::Black).bg(Color::Yellow)
}

/// Secondary text: hints, estimates, timestamps.
#[must_use]
pub fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// Problems shown to the user.
#[must_use]
pub fn error() -> Style {
    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
}

/// Titles of panes and overlays.
#[must_use]
pub fn title() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// The selected row of a list.
#[must_use]
pub fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

/// The bar in the first column of the selected message's rows.
#[must_use]
pub fn selection_bar() -> Style {
    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
}

/// The cache boundary marker.
#[must_use]
pub fn boundary() -> Style {
    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD)
}

/// A stale layer marker.
#[must_use]
pub fn stale() -> Style {
    Style::new().fg(Color::LightRed)
}

/// A tool's name in its block and in the approval overlay.
#[must_use]
pub fn tool_name() -> Style {
    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
}

/// How a tool call went: ok, a failure, something that needs a look
/// (denied, interrupted, waiting for approval), running, or nothing yet.
#[must_use]
pub fn tool_state(kind: ToolTone) -> Style {
    match kind {
        ToolTone::Ok => Style::new().fg(Color::Green),
        ToolTone::Failed => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        ToolTone::Attention => Style::new().fg(Color::Yellow),
        ToolTone::Running => Style::new().fg(Color::Cyan),
        ToolTone::Quiet => dim(),
    }
}

/// The tones of [`tool_state`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolTone {
    /// It worked.
    Ok,
    /// It failed.
    Failed,
    /// Denied, interrupted, or waiting for the user.
    Attention,
    /// Running now.
    Running,
    /// Queued, not run, no result.
    Quiet,
}

/// A line a diff adds.
#[must_use]
pub fn diff_added() -> Style {
    Style::new().fg(Color::Green)
}

/// A line a diff removes.
#[must_use]
pub fn diff_removed() -> Style {
    Style::new().fg(Color::Red)
}

/// A diff's hunk and file headers.
#[must_use]
pub fn diff_header() -> Style {
    Style::new().fg(Color::Cyan)
}

/// A plain warning the user should read before answering.
#[must_use]
pub fn warning() -> Style {
    Style::new().fg(Color::LightRed).add_modifier(Modifier::BOLD)
}

/// The colour of a budget category in the stacked bar, by index
/// (stable, context, volatile, tools, history, reserved output, free).
#[must_use]
pub fn category(index: usize) -> Style {
    const COLORS: [Color; 7] = [
        Color::Blue,
        Color::Cyan,
        Color::Magenta,
        Color::Yellow,
        Color::Green,
        Color::Red,
        Color::DarkGray,
    ];
    Style::new().fg(COLORS[index % COLORS.len()])
}
