//! Ctrl-C and Esc against what runs: a turn is cancelled, a command that
//! can be stopped (a compression, a model switch) is stopped, a draft is
//! cleared, and the Ctrl-C after any of them quits. Also the command in
//! progress as the status bar shows it.

use super::{App, CANCELLING};
use crate::runtime::Op;
use crate::tui::event::Effect;

/// A command in progress, as the status bar shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::tui) struct Working {
    /// `compressing`, `switching to gpt-4o`, `reloading the prompt`.
    pub label: String,
    /// When it was asked for, unix ms.
    pub since: i64,
    /// Esc or Ctrl-C stops it.
    pub cancellable: bool,
}

impl App {
    /// Stops the command in progress when it can be stopped (Esc or
    /// Ctrl-C); `None` when none runs or it cannot be.
    pub(super) fn stop_working(&mut self) -> Option<Vec<Effect>> {
        let working = self.working.as_ref().filter(|w| w.cancellable && !self.busy)?;
        let line = format!("stopping: {}…", working.label);
        self.notify(&line, false);
        Some(vec![Effect::Op(Op::Cancel)])
    }

    /// Ctrl-C closed an overlay (its own `effects` already made): what runs
    /// is stopped as a Ctrl-C would stop it, and otherwise this Ctrl-C is
    /// the first of the two that quit (a draft is left alone).
    pub(super) fn interrupted_overlay(&mut self, mut effects: Vec<Effect>) -> Vec<Effect> {
        if self.busy || self.working.as_ref().is_some_and(|w| w.cancellable) {
            effects.extend(self.interrupt());
            return effects;
        }
        self.interrupt_armed = true;
        if effects.is_empty() {
            self.notify("press Ctrl-C again to quit", false);
        }
        effects
    }

    pub(super) fn interrupt(&mut self) -> Vec<Effect> {
        // Armed by the Ctrl-C just before (a cancel, a stop, a closed
        // overlay, the idle warning): this one quits, whatever still runs,
        // even when a cancel put the message back in the composer.
        if self.interrupt_armed {
            return vec![Effect::Quit];
        }
        if let Some(effects) = self.stop_working() {
            // Twice always quits: the next Ctrl-C, whatever it finds.
            self.interrupt_armed = true;
            return effects;
        }
        // A cancel that has not ended the turn yet: the second Ctrl-C
        // quits (closing the session's handle cancels what still runs).
        if self.busy && self.cancelling {
            return vec![Effect::Quit];
        }
        if self.busy {
            self.cancelling = true;
            self.interrupt_armed = true;
            self.notify(CANCELLING, false);
            return vec![Effect::Op(Op::Cancel)];
        }
        if !self.draft().is_empty() {
            // The first Ctrl-C clears a draft; the next ones quit.
            self.set_draft("");
            self.interrupt_armed = false;
            self.notify("draft cleared; press Ctrl-C twice to quit", false);
            return self.draft_changed();
        }
        self.interrupt_armed = true;
        self.notify("press Ctrl-C again to quit", false);
        Vec::new()
    }
}
