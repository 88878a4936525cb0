//! The `/` menu's keys (see `menu`): while it is shown, Up and Down move
//! its selection (instead of recalling inputs), Tab completes the selected
//! command, Enter runs it (or completes it when it needs an argument) and
//! Esc hides the menu. Part of [`App`]'s update; no I/O.

use super::App;
use crate::tui::event::Effect;
use crate::tui::keymap::Action;
use crate::tui::menu;
use crate::tui::slash::SlashCommand;

impl App {
    /// The commands the `/` menu shows now and the selected one's index;
    /// `None` while it is not shown.
    #[must_use]
    pub fn slash_menu(&self) -> Option<(Vec<SlashCommand>, usize)> {
        if self.menu.hidden || self.overlay.is_some() || self.question.is_some() {
            return None;
        }
        // Drawn every frame: a long draft is never joined for it.
        let [line] = self.composer.lines() else {
            return None;
        };
        let commands = menu::matches(line);
        if commands.is_empty() {
            return None;
        }
        let selected = self.menu.selected.min(commands.len() - 1);
        Some((commands, selected))
    }

    /// A key while the menu is shown: `Some` when the menu took it.
    pub(super) fn menu_key(&mut self, action: Option<Action>) -> Option<Vec<Effect>> {
        let (commands, selected) = self.slash_menu()?;
        let chosen = commands[selected];
        match action? {
            Action::HistoryPrev => self.menu.step(commands.len(), -1),
            Action::HistoryNext => self.menu.step(commands.len(), 1),
            Action::Complete => {
                self.set_draft(&format!("/{} ", chosen.name()));
                return Some(self.draft_changed());
            }
            Action::Send => {
                let typed = self.draft();
                if commands.iter().any(|c| typed == format!("/{}", c.name())) {
                    return None;
                }
                if chosen.needs_arg() {
                    self.set_draft(&format!("/{} ", chosen.name()));
                    return Some(self.draft_changed());
                }
                self.set_draft(&format!("/{}", chosen.name()));
                return Some(self.submit());
            }
            Action::Close => self.menu.hidden = true,
            _ => return None,
        }
        Some(Vec::new())
    }
}
