//! A picker of names: the models of `/model`, the skills of `/skill`
//! (typed without a name). A search line filters the items as the user
//! types (case-insensitive, on the name and its detail); Up and Down move,
//! Enter picks. Only the visible rows are laid out.

use crate::runtime::service::{Choice, ChoiceKind};
use crate::tui::{fmt, theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

/// The picker's state.
#[derive(Clone, Debug)]
pub struct Choices {
    /// Models or skills.
    pub kind: ChoiceKind,
    /// Every item, as the session sent them (`None` while they load).
    items: Option<Vec<Choice>>,
    /// What the user typed.
    query: String,
    /// Selected index into the filtered items.
    selected: usize,
}

/// What a key did in the picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Picked {
    /// Nothing to do outside the picker.
    Stay,
    /// The user picked this name.
    Name(String),
}

impl Choices {
    /// An empty picker of `kind`, waiting for its items.
    #[must_use]
    pub fn new(kind: ChoiceKind) -> Self {
        Self {
            kind,
            items: None,
            query: String::new(),
            selected: 0,
        }
    }

    /// The session's items arrived.
    pub fn set_items(&mut self, items: Vec<Choice>) {
        self.items = Some(items);
        self.selected = 0;
    }

    /// The title of the overlay.
    #[must_use]
    pub fn title(&self) -> &'static str {
        match self.kind {
            ChoiceKind::Model => " Models ",
            ChoiceKind::Skill => " Skills ",
        }
    }

    fn visible(&self) -> Vec<&Choice> {
        let q = self.query.to_lowercase();
        self.items
            .iter()
            .flatten()
            .filter(|c| {
                q.is_empty() || c.name.to_lowercase().contains(&q) || c.detail.to_lowercase().contains(&q)
            })
            .collect()
    }

    /// A typed character (filters), Backspace, Up, Down or Enter.
    pub fn key(&mut self, code: crossterm::event::KeyCode) -> Picked {
        use crossterm::event::KeyCode;
        let shown = self.visible().len();
        match code {
            KeyCode::Char(c) => {
                self.query.push(c);
                self.selected = 0;
            }
            KeyCode::Backspace => {
                self.query.pop();
                self.selected = 0;
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(shown.saturating_sub(1)),
            KeyCode::Enter => {
                if let Some(c) = self.visible().get(self.selected) {
                    return Picked::Name(c.name.clone());
                }
            }
            _ => {}
        }
        Picked::Stay
    }

    /// Draws the search line and the visible items.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let width = usize::from(area.width);
        let mut lines = vec![Line::from(vec![
            Span::styled("search: ", theme::dim()),
            Span::raw(self.query.clone()),
        ])];
        let visible = self.visible();
        match &self.items {
            None => lines.push(Line::styled("loading…", theme::dim())),
            Some(_) if visible.is_empty() => lines.push(Line::styled(
                match self.kind {
                    ChoiceKind::Model => "no model matches; type /model NAME to use any name",
                    ChoiceKind::Skill => "no skill matches; skills are SKILL.md files (see the README)",
                },
                theme::dim(),
            )),
            Some(_) => {
                let rows = usize::from(area.height.saturating_sub(1)).max(1);
                let first = self.selected.saturating_sub(rows - 1);
                for (i, c) in visible.iter().enumerate().skip(first).take(rows) {
                    let mark = if i == self.selected { "› " } else { "  " };
                    let name = fmt::cut(&c.name, width.saturating_sub(4));
                    let room = width.saturating_sub(4 + fmt::width(&name) + 2);
                    let mut spans = vec![Span::raw(format!("{mark}{name}"))];
                    if !c.detail.is_empty() && room > 3 {
                        spans.push(Span::styled(
                            format!("  {}", fmt::cut(&c.detail, room)),
                            theme::dim(),
                        ));
                    }
                    let line = Line::from(spans);
                    lines.push(if i == self.selected {
                        line.style(theme::selected())
                    } else {
                        line
                    });
                }
            }
        }
        Paragraph::new(lines).render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyCode;

    fn picker() -> Choices {
        let mut p = Choices::new(ChoiceKind::Model);
        p.set_items(
            ["gpt-4o", "gpt-4o-mini", "o3"]
                .iter()
                .map(|n| Choice {
                    name: (*n).to_owned(),
                    detail: String::new(),
                })
                .collect(),
        );
        p
    }

    #[test]
    fn typing_filters_and_enter_picks_the_selected_name() {
        let mut p = picker();
        assert_eq!(p.key(KeyCode::Down), Picked::Stay);
        assert_eq!(p.key(KeyCode::Enter), Picked::Name("gpt-4o-mini".into()));
        for c in "mini".chars() {
            p.key(KeyCode::Char(c));
        }
        assert_eq!(p.visible().len(), 1);
        assert_eq!(p.key(KeyCode::Enter), Picked::Name("gpt-4o-mini".into()));
        for c in "zz".chars() {
            p.key(KeyCode::Char(c));
        }
        assert_eq!(p.key(KeyCode::Enter), Picked::Stay, "nothing matches");
    }
}
