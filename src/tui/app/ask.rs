//! The question before sending a message larger than the model's window
//! (the open session's effective window: the window less the output
//! reserve): Enter sends it anyway (the pipeline then cuts it to fit), Esc
//! or any editing key goes back to the draft. A message of fewer bytes
//! than the window holds tokens goes without a question (a token is at
//! least a byte); a larger one waits for the draft's count when it is not
//! in yet. Part of [`App`]'s update; no I/O.

use super::App;
use crate::tui::event::Effect;
use crate::tui::fmt;
use crate::tui::keymap::Action;

/// The question in the status bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendQuestion {
    /// The message may not fit and its count is on its way.
    Counting,
    /// It does not fit.
    TooLarge {
        /// Tokens of the message.
        tokens: u64,
        /// Tokens of input the window takes.
        room: u64,
    },
}

impl SendQuestion {
    /// The status bar's line, with its keys.
    #[must_use]
    pub fn text(self) -> String {
        match self {
            Self::Counting => "counting the message's tokens… Enter sends it now · Esc edits".to_owned(),
            Self::TooLarge { tokens, room } => format!(
                "message {} tokens, the window takes {}: Enter sends it cut · Esc edits",
                fmt::tokens(tokens),
                fmt::tokens(room)
            ),
        }
    }
}

impl App {
    /// The question asked before sending, as the status bar shows it.
    #[must_use]
    pub fn question(&self) -> Option<String> {
        self.question.map(SendQuestion::text)
    }

    /// Tokens of input the open session's window takes, once known.
    fn input_room(&self) -> Option<u64> {
        self.context
            .as_ref()
            .map(|c| c.budget.effective_window)
            .filter(|w| *w > 0)
    }

    /// Whether sending `text` must ask first (the question is then open).
    pub(super) fn asks_before_sending(&mut self, text: &str) -> bool {
        let Some(room) = self.input_room() else {
            return false;
        };
        if text.len() as u64 <= room {
            return false;
        }
        self.question = if !self.draft_counted {
            Some(SendQuestion::Counting)
        } else if self.draft_tokens > room {
            Some(SendQuestion::TooLarge {
                tokens: self.draft_tokens,
                room,
            })
        } else {
            None
        };
        self.question.is_some()
    }

    /// The draft's count arrived while the question waited for it: ask,
    /// or send when it fits.
    pub(super) fn count_answers_question(&mut self) -> Vec<Effect> {
        if self.question != Some(SendQuestion::Counting) {
            return Vec::new();
        }
        self.question = None;
        let text = self.message_text();
        if self.asks_before_sending(&text) {
            return Vec::new();
        }
        self.send_message(text)
    }

    /// A key while the question is open: `Some` when the key answered it,
    /// `None` when it closed it and goes on to edit the draft.
    pub(super) fn question_key(&mut self, action: Option<Action>) -> Option<Vec<Effect>> {
        self.question?;
        self.question = None;
        match action {
            Some(Action::Send) => {
                let text = self.message_text();
                Some(self.send_message(text))
            }
            Some(Action::Close | Action::Interrupt) => Some(Vec::new()),
            _ => None,
        }
    }
}
