//! Keys while an overlay without keys of its own is open (the inspectors,
//! help, the lists, the session picker), and the picker's searches.

use super::App;
use crate::runtime::Op;
use crate::runtime::service::Command;
use crate::tui::event::Effect;
use crate::tui::keymap::Action;
use crate::tui::overlay::{Overlay, Picker};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl App {
    pub(super) fn overlay_key(&mut self, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
        if matches!(action, Some(Action::Close)) {
            self.overlay = None;
            return Vec::new();
        }
        // Ctrl-C closes it and counts as the first of the two that quit
        // (a turn running is cancelled as ever; a draft is left alone).
        if matches!(action, Some(Action::Interrupt)) {
            self.overlay = None;
            return self.interrupted_overlay(Vec::new());
        }
        let Some(overlay) = self.overlay.as_mut() else {
            return Vec::new();
        };
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match (overlay, key.code) {
            (o, KeyCode::Up) => o.scroll(-1),
            (o, KeyCode::Down) => o.scroll(1),
            (o, KeyCode::PageUp) => o.scroll(-10),
            (o, KeyCode::PageDown) => o.scroll(10),
            (o, KeyCode::Home) => o.home(),
            (o, KeyCode::End) => o.end(),
            (Overlay::Picker(p), KeyCode::Enter) => {
                let chosen = p.rows.get(p.selected).map(|r| r.id.to_string());
                if let Some(id) = chosen {
                    self.overlay = None;
                    if self.busy {
                        self.notify(
                            "a reply is streaming; wait for it or press Ctrl-C, then resume",
                            true,
                        );
                        return Vec::new();
                    }
                    return vec![Effect::Op(Op::Run(Command::Resume(id)))];
                }
            }
            (Overlay::Picker(p), KeyCode::Tab | KeyCode::BackTab) => {
                p.all = !p.all;
                p.selected = 0;
                return self.search();
            }
            (Overlay::Picker(p), KeyCode::Backspace) => {
                p.query.pop();
                return self.search();
            }
            (Overlay::Picker(p), KeyCode::Char(c)) if plain => {
                p.query.push(c);
                return self.search();
            }
            _ => {}
        }
        Vec::new()
    }

    pub(in crate::tui) fn open_picker(&mut self) -> Vec<Effect> {
        self.overlay = Some(Overlay::Picker(Picker::default()));
        self.search()
    }

    pub(super) fn search(&mut self) -> Vec<Effect> {
        let ticket = self.ticket();
        let Some(Overlay::Picker(p)) = &mut self.overlay else {
            return Vec::new();
        };
        p.ticket = ticket;
        p.loaded = false;
        vec![Effect::Op(Op::ListSessions {
            ticket,
            search: p.query.clone(),
            all: p.all,
        })]
    }
}
