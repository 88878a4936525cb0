//! The composer's input history: Up and Down recall earlier inputs
//! (messages and commands, their folded pastes expanded), this run's and,
//! once the session has loaded them, the workspace's from earlier runs
//! (see [`crate::runtime::input_history`]). Each input entered is asked to
//! be kept with [`Effect::Op(Op::RememberInput)`]. Part of [`App`]'s update; no
//! I/O.

use super::App;
use crate::runtime::Op;
use crate::runtime::input_history::HISTORY_CAP;
use crate::tui::event::Effect;

impl App {
    /// The inputs Up recalls, oldest first: the workspace's from earlier
    /// runs (once loaded), then this run's.
    #[must_use]
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Moves through earlier inputs: -1 older, +1 newer (past the newest
    /// clears the composer). A long one comes back folded.
    pub(super) fn recall(&mut self, step: i64) {
        if self.history.is_empty() {
            return;
        }
        let last = self.history.len() - 1;
        let next = match (self.history_at, step < 0) {
            (None, true) => Some(last),
            (None, false) => None,
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i < last => Some(i + 1),
            (Some(_), false) => None,
        };
        self.history_at = next;
        let text = next.map(|i| self.history[i].clone()).unwrap_or_default();
        self.put_draft(&text);
    }

    /// Clears the composer after `text` was entered and keeps it in the
    /// history (unless it repeats the newest input); returns the effect
    /// that keeps it across runs.
    pub(super) fn take_draft(&mut self, text: &str) -> Vec<Effect> {
        self.set_draft("");
        self.folds.clear();
        self.question = None;
        self.history_at = None;
        self.draft_tokens = 0;
        self.draft_ticket = self.ticket();
        if self.history.last().map(String::as_str) == Some(text) {
            return Vec::new();
        }
        self.history.push(text.to_owned());
        let over = self.history.len().saturating_sub(HISTORY_CAP);
        self.history.drain(..over);
        vec![Effect::Op(Op::RememberInput(text.to_owned()))]
    }

    /// The workspace's inputs of earlier runs arrived: they go before this
    /// run's.
    pub(super) fn history_loaded(&mut self, mut earlier: Vec<String>) {
        if earlier.last() == self.history.first() {
            earlier.pop();
        }
        earlier.append(&mut self.history);
        let over = earlier.len().saturating_sub(HISTORY_CAP);
        earlier.drain(..over);
        self.history = earlier;
        self.history_at = None;
    }
}
