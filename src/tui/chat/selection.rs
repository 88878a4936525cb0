//! The chat pane's message selection: which message is selected, moving
//! between the messages shown (a tool result is part of its call's
//! message, so it is never selected alone), scrolling the selected one
//! into view, and the positions that commands use (`pos`, counting from 1
//! among the active messages, as `strata show` prints it). The keys that
//! drive it are the app's (`app::select`); this module only keeps and
//! draws the selection.

use super::{Block, ChatPane, stepped};
use crate::domain::{Message, MessageId};
use crate::tui::theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The mark drawn in the first column of the selected message's rows.
const BAR: &str = "▌";

/// Marks row `y` of the selected message: its header row in the
/// selection style across the pane, every other row with a bar in the
/// first column (the indentation of bodies and tool blocks).
pub(super) fn mark(header: bool, area: Rect, y: u16, buf: &mut Buffer) {
    if header {
        buf.set_style(Rect::new(area.x, y, area.width, 1), theme::selected());
    } else {
        buf.set_string(area.x, y, BAR, theme::selection_bar());
    }
}

impl ChatPane {
    /// Moves the message selection by `step` messages (negative: towards
    /// older ones, stopping at the ends); with none selected, selects the
    /// newest message shown. The view scrolls to show it. Returns false
    /// when no message is shown.
    pub fn select_message(&mut self, step: i64) -> bool {
        let next = {
            let ids: Vec<MessageId> = self.visible().map(|m| m.id).collect();
            let Some(last) = ids.len().checked_sub(1) else {
                return false;
            };
            let at = self.selected.and_then(|s| ids.iter().position(|id| *id == s));
            let to = stepped(at, step, last);
            ids[to]
        };
        self.selected = Some(next);
        self.reveal_message(next);
        true
    }

    /// The selected message, while it is shown.
    #[must_use]
    pub fn selected_message(&self) -> Option<&Message> {
        let id = self.selected?;
        self.visible().find(|m| m.id == id)
    }

    /// Scrolls so message `id` is on screen at the size of the last frame.
    pub fn reveal_message(&mut self, id: MessageId) {
        if let Some(scroll) = self.scroll_showing(|b| matches!(b, Block::Message(m) if m.id == id)) {
            self.scroll = scroll;
        }
    }

    /// The position of message `id` among the active (not archived)
    /// messages, counting from 1; `None` for an archived or unknown one.
    #[must_use]
    pub fn position(&self, id: MessageId) -> Option<usize> {
        self.messages
            .iter()
            .filter(|m| m.archived_by.is_none())
            .position(|m| m.id == id)
            .map(|i| i + 1)
    }

    /// The active message at position `pos` (counting from 1).
    #[must_use]
    pub fn at_position(&self, pos: usize) -> Option<&Message> {
        self.messages
            .iter()
            .filter(|m| m.archived_by.is_none())
            .nth(pos.checked_sub(1)?)
    }

    /// The newest active message.
    #[must_use]
    pub fn last_active(&self) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.archived_by.is_none())
    }

    /// Any message of the session by id, archived ones included.
    #[must_use]
    pub fn message(&self, id: MessageId) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.id == id)
    }
}
