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
