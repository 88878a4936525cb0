//! Selecting messages in the chat pane and acting on them: the selection
//! mode's keys (Up/Down or k/j move, `p` pins, `x` excludes, `e` edits a
//! message of yours and resends it, `c` compresses up to the selected
//! message, Enter opens it, Esc leaves), the edit-and-resend draft, and the
//! `/pin`, `/unpin`, `/exclude`, `/include` commands. Part of [`App`]'s
//! update; no I/O: every change is an [`Effect`] for the session, and the
//! badges change when it answers with the updated messages.

use super::App;
use crate::domain::{Message, MessageId, MessageKind, Role};
use crate::runtime::Op;
use crate::runtime::service::Command;
use crate::tui::event::{CompressAsk, Effect};
use crate::tui::keymap::Action;
use crate::tui::overlay::Overlay;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The keys of the selection mode, for help.
pub const HELP: [(&str, &str); 7] = [
    ("↑ ↓  k j", "move between messages"),
    (
        "p",
        "pin or unpin: a pinned message is never cut, dropped or summarised",
    ),
    (
        "x",
        "exclude or include: an excluded message is left out of every request",
    ),
    (
        "e",
        "edit a message of yours and resend it (what follows is archived; /undo-resend)",
    ),
    ("c", "compress everything up to the selected message"),
    ("Enter", "open the message"),
    ("Esc", "back to the composer"),
];

/// The context-control state of the app.
#[derive(Clone, Debug)]
pub struct Control {
    /// The selection mode is on: keys go to the selected message.
    pub selecting: bool,
    /// A message being edited in the composer, to resend.
    pub editing: Option<Editing>,
    /// `/compress` shows a preview first (`[compression] preview`).
    pub preview: bool,
}

impl Default for Control {
    fn default() -> Self {
        Self {
            selecting: false,
            editing: None,
            preview: true,
        }
    }
}

/// A user message being edited in the composer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Editing {
    /// The message edited.
    pub message: MessageId,
    /// Its position, counting from 1.
    pub pos: usize,
    /// The draft the edit replaced, restored when it is cancelled.
    pub saved: String,
}

/// Which way a toggle goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mark {
    Pin(bool),
    Exclude(bool),
}

impl App {
    /// Whether `/compress` asks for a preview first (`[compression]
    /// preview`; true unless set otherwise).
    pub fn set_compress_preview(&mut self, on: bool) {
        self.control.preview = on;
    }

    /// The message selected in the chat pane, if any.
    #[must_use]
    pub fn selected_message(&self) -> Option<&Message> {
        self.chat.selected_message()
    }

    /// Whether the selection mode has the keys.
    #[must_use]
    pub fn selecting(&self) -> bool {
        self.control.selecting && self.chat.selected.is_some()
    }

    /// The message being edited to resend: its id and position.
    #[must_use]
    pub fn editing(&self) -> Option<(MessageId, usize)> {
        self.control.editing.as_ref().map(|e| (e.message, e.pos))
    }

    /// Enters the selection mode on the newest message.
    pub(super) fn select_messages(&mut self) -> Vec<Effect> {
        self.chat.tools.selected = None;
        if self.chat.select_message(0) {
            self.control.selecting = true;
        } else {
            self.notify("there are no messages to select yet", false);
        }
        Vec::new()
    }

    /// Another session was loaded: its messages are not the ones selected
    /// or edited.
    pub(super) fn forget_control(&mut self) {
        self.end_selection();
        self.control.editing = None;
    }

    /// Leaves the selection mode and drops the selection.
    pub(super) fn end_selection(&mut self) {
        self.control.selecting = false;
        self.chat.selected = None;
    }

    /// A key in the selection mode: `Some` when the mode took it. The
    /// app's other keys (scrolling, panes, help) keep the mode; typing
    /// leaves it (the selection stays for `/pin` and the like).
    pub(super) fn select_key(&mut self, key: KeyEvent, action: Option<Action>) -> Option<Vec<Effect>> {
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let letter = match key.code {
            KeyCode::Char(c) if plain && action.is_none() => Some(c),
            _ => None,
        };
        let effects = match (letter, action) {
            (Some('k'), _) | (None, Some(Action::HistoryPrev)) => {
                self.chat.select_message(-1);
                Vec::new()
            }
            (Some('j'), _) | (None, Some(Action::HistoryNext)) => {
                self.chat.select_message(1);
                Vec::new()
            }
            (Some('p'), _) => self.toggle_selected(|m| Mark::Pin(!m.pinned)),
            (Some('x'), _) => self.toggle_selected(|m| Mark::Exclude(!m.excluded)),
            (Some('e'), _) => {
                let id = self.chat.selected?;
                self.edit_message(id)
            }
            (Some('c'), _) => {
                let id = self.chat.selected?;
                self.compress_up_to(id)
            }
            (None, Some(Action::Send)) => {
                let msg = self.chat.selected_message()?;
                let pos = self.chat.position(msg.id);
                self.overlay = Some(Overlay::message(msg, pos, None));
                Vec::new()
            }
            (None, Some(Action::Close | Action::SelectMessages)) => {
                self.end_selection();
                Vec::new()
            }
            (None, Some(Action::SelectTools)) => {
                self.end_selection();
                return None;
            }
            (None, Some(Action::Newline | Action::Complete) | None) | (Some(_), _) => {
                self.control.selecting = false;
                return None;
            }
            (None, Some(_)) => return None,
        };
        Some(effects)
    }

    /// Pins, unpins, excludes or includes the selected message, as `how`
    /// says for it.
    fn toggle_selected(&mut self, how: impl Fn(&Message) -> Mark) -> Vec<Effect> {
        let Some(msg) = self.chat.selected_message() else {
            return Vec::new();
        };
        let (id, mark) = (msg.id, how(msg));
        self.mark(id, mark)
    }

    /// The effect of `mark` on message `id`, or a sentence saying why not.
    pub(super) fn mark(&mut self, id: MessageId, mark: Mark) -> Vec<Effect> {
        if let Some(why) = self.cannot_change(id) {
            self.notify(&why, true);
            return Vec::new();
        }
        vec![match mark {
            Mark::Pin(on) => Effect::Op(Op::Run(Command::Pin { message: id, on })),
            Mark::Exclude(on) => Effect::Op(Op::Run(Command::Exclude { message: id, on })),
        }]
    }

    /// Why message `id` cannot be pinned, excluded, edited or compressed
    /// up to now (a reply streams, it is archived).
    fn cannot_change(&self, id: MessageId) -> Option<String> {
        if self.busy {
            return Some("a reply is streaming; wait for it or press Ctrl-C, then try again".into());
        }
        if self.chat.message(id).is_some_and(|m| m.archived_by.is_some()) {
            return Some(
                "that message is archived; undo the compression or the edit that archived it first".into(),
            );
        }
        None
    }

    /// Puts user message `id` into the composer to edit and resend.
    pub(super) fn edit_message(&mut self, id: MessageId) -> Vec<Effect> {
        if let Some(why) = self.cannot_change(id) {
            self.notify(&why, true);
            return Vec::new();
        }
        let Some(msg) = self.chat.message(id) else {
            return Vec::new();
        };
        if msg.role != Role::User || msg.kind != MessageKind::Normal {
            self.notify(
                "only a message you wrote can be edited and resent; select one marked you",
                true,
            );
            return Vec::new();
        }
        let text = msg.content.clone();
        let pos = self.chat.position(id).unwrap_or(0);
        // Editing another message keeps the draft from before the first.
        let saved = match self.control.editing.take() {
            Some(earlier) => earlier.saved,
            None => self.message_text(),
        };
        self.control.selecting = false;
        self.control.editing = Some(Editing {
            message: id,
            pos,
            saved,
        });
        self.put_draft(&text);
        let effects = self.draft_changed();
        self.notify(
            &format!("editing message {pos} — Enter resends, Esc cancels"),
            false,
        );
        effects
    }

    /// Enter while editing: resends the composer's text in place of the
    /// edited message (a turn, as a send is).
    pub(super) fn resend(&mut self, edit: Editing, text: String) -> Vec<Effect> {
        if self.busy {
            self.control.editing = Some(edit);
            self.notify(
                "a reply is streaming; wait for it or press Ctrl-C, then resend",
                true,
            );
            return Vec::new();
        }
        self.chat.selected = None;
        self.start_turn(
            text.clone(),
            Effect::Op(Op::EditSend {
                message: edit.message,
                text,
            }),
        )
    }

    /// Esc while editing: the draft from before comes back; nothing changed.
    pub(super) fn cancel_edit(&mut self) -> Vec<Effect> {
        let Some(edit) = self.control.editing.take() else {
            return Vec::new();
        };
        self.chat.selected = None;
        self.put_draft(&edit.saved);
        let effects = self.draft_changed();
        self.notify("the edit was cancelled; the history is unchanged", false);
        effects
    }

    /// Compresses everything up to message `id`.
    pub(super) fn compress_up_to(&mut self, id: MessageId) -> Vec<Effect> {
        if let Some(why) = self.cannot_change(id) {
            self.notify(&why, true);
            return Vec::new();
        }
        self.control.selecting = false;
        let pos = self.chat.position(id).unwrap_or(0);
        self.notify(&format!("compressing up to message {pos}…"), false);
        vec![Effect::Op(Op::Run(Command::Compress(CompressAsk {
            up_to: Some(id),
            preview: self.control.preview,
            ..CompressAsk::default()
        })))]
    }

    /// `/pin`, `/unpin`, `/exclude`, `/include` with `arg` (a position, or
    /// nothing for the selected message; pinning without either takes the
    /// last message).
    pub(super) fn mark_command(&mut self, name: &str, arg: &str, mark: Mark) -> Vec<Effect> {
        let target = if arg.is_empty() {
            match (self.chat.selected_message(), mark) {
                (Some(m), _) => Some(m.id),
                (None, Mark::Pin(_)) => self.chat.last_active().map(|m| m.id),
                (None, Mark::Exclude(_)) => {
                    let key = self
                        .keymap
                        .label_for(Action::SelectMessages)
                        .unwrap_or_else(|| "/context".to_owned());
                    self.notify(
                        &format!("select a message first ({key}), or give its position: /{name} 4"),
                        true,
                    );
                    return Vec::new();
                }
            }
        } else {
            let Ok(pos) = arg.parse::<usize>() else {
                self.notify(
                    &format!("/{name} takes a message's position as a number, e.g. /{name} 4; not '{arg}'"),
                    true,
                );
                return Vec::new();
            };
            let Some(m) = self.chat.at_position(pos) else {
                self.notify(
                    &format!("there is no message {pos}; positions count the active messages from 1"),
                    true,
                );
                return Vec::new();
            };
            Some(m.id)
        };
        let Some(id) = target else {
            self.notify("this session has no messages yet", true);
            return Vec::new();
        };
        self.mark(id, mark)
    }
}
