//! The question before sending a message that names files the
//! confinement withholds (DESIGN §19 "Reads"): the service sent nothing
//! and gave the text back; a box names each mention with the path it
//! resolves to and why it was withheld ("@~/.ssh/id_ed25519:
//! /home/ada/.ssh/id_ed25519 is outside the workspace"). `y` sends the
//! message with them attached this once, `n` sends it without them (each
//! marked not attached), Esc goes back to the draft. Part of [`App`]'s
//! update; no I/O.

use super::App;
use crate::runtime::service::AttachQuestion;
use crate::runtime::{AttachConsent, Op};
use crate::tui::event::Effect;
use crate::tui::keymap::Action;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The keys the question's box shows.
pub const ATTACH_KEYS: &str = "y attaches once · n sends without · Esc edits";

impl App {
    /// The service held a message back: the question opens over the
    /// draft, which holds the text again ([`crate::tui::AppEvent::Unsent`]
    /// follows).
    pub(super) fn attach_asked(&mut self, question: AttachQuestion) {
        self.question = None;
        self.attach = Some(question);
        self.question_appeared();
    }

    /// A key while the question is open: `y` sends with the files, `n`
    /// without, Esc or Ctrl-C closes it (the draft stays); other keys do
    /// nothing. `None` when no question is open.
    pub(super) fn attach_key(&mut self, key: KeyEvent, action: Option<Action>) -> Option<Vec<Effect>> {
        self.attach.as_ref()?;
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let allowed = match key.code {
            KeyCode::Char(c) if plain && c.eq_ignore_ascii_case(&'y') => true,
            KeyCode::Char(c) if plain && c.eq_ignore_ascii_case(&'n') => false,
            _ if matches!(action, Some(Action::Close | Action::Interrupt)) => {
                self.attach = None;
                self.notify("nothing was sent; the message is back in the composer", false);
                return Some(Vec::new());
            }
            _ => return Some(Vec::new()),
        };
        if allowed && !self.attach_fits() {
            // `y` allows what the box lists: only when it shows all of it.
            self.notify(
                "the terminal is too small to show every file asked about; enlarge it to allow them, or press n to send without them",
                false,
            );
            return Some(Vec::new());
        }
        let question = self.attach.take()?;
        let allowed = if allowed {
            question.withheld.iter().map(|w| w.path.clone()).collect()
        } else {
            Vec::new()
        };
        let text = question.text;
        let effect = Effect::Op(Op::Send {
            text: text.clone(),
            consent: AttachConsent {
                allowed,
                answered: true,
            },
        });
        Some(self.start_turn(text, effect))
    }

    /// Whether the open question's box shows every mention and its keys
    /// at the terminal's size.
    fn attach_fits(&self) -> bool {
        let area = ratatui::layout::Rect::new(0, 0, self.width, self.height);
        self.attach_question()
            .is_some_and(|lines| crate::tui::view::confirm_fits(&lines, ATTACH_KEYS, area))
    }

    /// The open question's lines, for the view: a heading, then one line
    /// per withheld mention.
    #[must_use]
    pub fn attach_question(&self) -> Option<Vec<String>> {
        let q = self.attach.as_ref()?;
        let one = q.withheld.len() == 1;
        let mut lines = vec![if one {
            "This file is not attached unless you allow it once:".to_owned()
        } else {
            "These files are not attached unless you allow them once:".to_owned()
        }];
        lines.extend(
            q.withheld
                .iter()
                .map(|w| format!("@{}: {}", w.reference, w.clause())),
        );
        Some(lines)
    }
}
