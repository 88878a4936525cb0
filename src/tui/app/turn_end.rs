//! The end of a turn as the app says it: what the status line tells (a
//! cancel is only what the user did; a reply that broke off is a failure;
//! a cancel before any reply keeps only the message), and the reply slot
//! no reply replaced goes.

use super::App;
use crate::domain::MessageStatus;

impl App {
    pub(super) fn turn_done(&mut self, status: MessageStatus) {
        self.busy = false;
        self.phase = None;
        self.tools_turn_done();
        let cancelling = std::mem::take(&mut self.cancelling);
        let broke = self.turn_error.take();
        // A reply slot no reply replaced (cancelled while the
        // history was compressed, say) goes with the turn.
        self.chat.streaming = None;
        let kept = self
            .messages()
            .last()
            .is_some_and(|m| m.role == crate::domain::Role::Assistant && !m.content.trim().is_empty());
        match (status, broke) {
            // Only what the user did is a cancel.
            (MessageStatus::Interrupted, Some(why)) if !cancelling => {
                self.notify(
                    &format!("the reply broke off: {why}; the partial reply is kept"),
                    true,
                );
            }
            (MessageStatus::Interrupted, _) if !kept => {
                self.notify(
                    "the reply was interrupted before any of it came; your message is kept",
                    false,
                );
            }
            (MessageStatus::Interrupted, _) => {
                self.notify("the reply was interrupted; the partial reply is kept", false);
            }
            _ if cancelling => self.notify("cancelled; the turn stopped", false),
            _ => {}
        }
    }
}
