//! The `/` menu: while the draft is a `/` and the start of a command name,
//! the matching commands with their one-line descriptions (from `slash`)
//! are listed above the composer, one selected. Up and Down move the
//! selection, Tab completes the selected name, Enter runs it (or completes
//! it when it needs an argument), Esc hides the menu until the draft
//! changes. This module holds the menu's state and draws it; the app
//! routes the keys.

use super::slash::{self, SlashCommand};
use super::{fmt, theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

/// Commands shown at once (the list scrolls to keep the selection in view).
pub const ROWS: usize = 8;

/// The menu's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Menu {
    /// The selected command, an index into [`matches`].
    pub selected: usize,
    /// Hidden by Esc (or by recalling an input) until the draft changes.
    pub hidden: bool,
}

/// The commands the menu lists for `draft`: those whose name starts with
/// what follows `/` on a single line with no space yet (none for `//`,
/// which sends a message starting with `/`).
#[must_use]
pub fn matches(draft: &str) -> Vec<SlashCommand> {
    if draft.starts_with("//") {
        return Vec::new();
    }
    slash::candidates(draft)
}

impl Menu {
    /// Moves the selection by `delta` among `n` commands, stopping at the
    /// ends.
    pub fn step(&mut self, n: usize, delta: i64) {
        let last = i64::try_from(n.saturating_sub(1)).unwrap_or(0);
        let at = i64::try_from(self.selected).unwrap_or(0).saturating_add(delta);
        self.selected = usize::try_from(at.clamp(0, last)).unwrap_or(0);
    }
}

/// Rows the menu of `n` commands takes: a title row and up to [`ROWS`]
/// commands.
#[must_use]
pub fn height(n: usize) -> u16 {
    if n == 0 {
        0
    } else {
        u16::try_from(n.min(ROWS) + 1).unwrap_or(u16::MAX)
    }
}

/// Draws the menu of `commands` with `selected` into `area` (its bottom
/// rows when `area` is taller than the menu; as many commands as fit when
/// it is shorter).
pub fn render(commands: &[SlashCommand], selected: usize, area: Rect, buf: &mut Buffer) {
    let rows = usize::from(area.height.min(height(commands.len())));
    if rows < 2 || area.width < 8 {
        return;
    }
    let area = Rect {
        y: area.y + area.height - u16::try_from(rows).unwrap_or(0),
        height: u16::try_from(rows).unwrap_or(0),
        ..area
    };
    Clear.render(area, buf);
    let width = usize::from(area.width);
    let title = fmt::cut(
        &format!(
            "── commands {} · ↑↓ pick · Tab completes · Enter runs · Esc hides ",
            commands.len()
        ),
        width,
    );
    let pad = "─".repeat(width.saturating_sub(fmt::width(&title)));
    buf.set_line(
        area.x,
        area.y,
        &Line::styled(format!("{title}{pad}"), theme::dim()),
        area.width,
    );
    let shown = rows - 1;
    let first = selected
        .saturating_sub(shown - 1)
        .min(commands.len().saturating_sub(shown));
    let names: Vec<String> = commands
        .iter()
        .map(|c| format!("/{} {}", c.name(), c.args()).trim_end().to_owned())
        .collect();
    let column = names
        .iter()
        .skip(first)
        .take(shown)
        .map(|n| fmt::width(n))
        .max()
        .unwrap_or(0)
        .min(32);
    for (row, i) in (first..commands.len()).take(shown).enumerate() {
        let name = fmt::cut(&names[i], column);
        let gap = " ".repeat(column - fmt::width(&name) + 2);
        let text = fmt::cut(&format!(" {name}{gap}{}", commands[i].description()), width);
        let style = if i == selected {
            theme::selected()
        } else {
            ratatui::style::Style::new()
        };
        let fill = " ".repeat(width.saturating_sub(fmt::width(&text)));
        let line = Line::from(vec![Span::styled(text, style), Span::styled(fill, style)]);
        let y = area.y + 1 + u16::try_from(row).unwrap_or(0);
        buf.set_line(area.x, y, &line, area.width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_menu_matches_names_not_messages() {
        assert_eq!(matches("/").len(), slash::ALL.len());
        assert_eq!(matches("/re").len(), 3);
        assert!(matches("//re").is_empty());
        assert!(matches("/compress now").is_empty());
        assert!(matches("hello").is_empty());
    }

    #[test]
    fn the_selection_stops_at_the_ends() {
        let mut m = Menu::default();
        m.step(3, -1);
        assert_eq!(m.selected, 0);
        m.step(3, 5);
        assert_eq!(m.selected, 2);
    }
}
