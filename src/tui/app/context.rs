//! The context list and the compression preview on the app's side: opening
//! the list (F8, `/context`) and filling it from the session's rows, its
//! keys (move, sort, filter, pin, exclude, open, compress up to here,
//! edit and resend), the preview arriving from `/compress` and its keys
//! (accept, edit in the overlay or in `$EDITOR`, cancel), and a message
//! opened whole. Part of [`App`]'s update; no I/O.

use super::App;
use super::select::Mark;
use crate::pipeline::{ContextRow, RowState};
use crate::runtime::Op;
use crate::runtime::service::Command;
use crate::tui::event::{CompressPreviewView, Effect};
use crate::tui::keymap::Action;
use crate::tui::overlay::{Accept, Overlay, Preview};
use crate::tui::readline;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The keys of the context list, for help.
pub const LIST_HELP: [(&str, &str); 7] = [
    ("↑ ↓  k j", "move; PgUp PgDn Home End jump"),
    ("s", "sort by position or by cost"),
    ("t", "only tool outputs, or every message"),
    ("p  x", "pin or unpin, exclude or include the selected message"),
    ("Enter", "open the message"),
    ("c", "compress everything up to the selected message"),
    ("e", "edit the selected message of yours and resend it"),
];

/// The keys of the compression preview, for help.
pub const PREVIEW_HELP: [(&str, &str); 4] = [
    (
        "Enter",
        "store this summary (a summary that grows the request asks twice)",
    ),
    ("e", "edit the summary here; Esc ends editing"),
    ("E", "edit the summary in $EDITOR"),
    ("Esc", "cancel: nothing is stored"),
];

impl App {
    /// Opens the context list and asks for its rows.
    pub(super) fn open_context_list(&mut self) -> Vec<Effect> {
        self.overlay = Some(Overlay::context_list());
        vec![Effect::Op(Op::Run(Command::ContextList))]
    }

    /// Opens a picker of `kind` and asks for its items.
    pub(super) fn open_choices(&mut self, kind: crate::runtime::service::ChoiceKind) -> Vec<Effect> {
        self.overlay = Some(Overlay::Choices(Box::new(crate::tui::overlay::Choices::new(
            kind,
        ))));
        vec![Effect::Op(Op::Run(Command::ListChoices(kind)))]
    }

    /// The session's items for the open picker of their kind.
    pub(super) fn choices(
        &mut self,
        kind: crate::runtime::service::ChoiceKind,
        items: Vec<crate::runtime::service::Choice>,
    ) {
        if let Some(Overlay::Choices(c)) = &mut self.overlay
            && c.kind == kind
        {
            c.set_items(items);
        }
    }

    fn choices_key(&mut self, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
        if action == Some(Action::Interrupt) {
            self.overlay = None;
            return self.interrupted_overlay(Vec::new());
        }
        if matches!(action, Some(Action::Close)) || key.code == KeyCode::Esc {
            self.overlay = None;
            // Nothing is left to show the list in: the listing stops.
            return self.stop_working().unwrap_or_default();
        }
        let Some(Overlay::Choices(c)) = self.overlay.as_mut() else {
            return Vec::new();
        };
        let kind = c.kind;
        match c.key(key.code) {
            crate::tui::overlay::Picked::Stay => Vec::new(),
            crate::tui::overlay::Picked::Name(name) => {
                self.overlay = None;
                match kind {
                    crate::runtime::service::ChoiceKind::Model => self.ask_rewrite(
                        format!("/model {name}"),
                        Effect::Op(Op::Run(Command::Model(name))),
                    ),
                    crate::runtime::service::ChoiceKind::Skill => {
                        vec![Effect::Op(Op::Run(Command::Skill(name)))]
                    }
                }
            }
        }
    }

    /// The session's rows: they fill the open list (also under a message
    /// opened from it); without one they are not needed.
    pub(super) fn context_rows(&mut self, rows: Vec<ContextRow>) {
        match &mut self.overlay {
            Some(Overlay::ContextList(list)) => list.set_rows(rows),
            Some(Overlay::Message { back: Some(back), .. }) => {
                if let Overlay::ContextList(list) = back.as_mut() {
                    list.set_rows(rows);
                }
            }
            _ => {}
        }
    }

    /// A preview arrived: it opens (the approval of a tool call, if one is
    /// open, stays on top and the preview waits behind nothing: a
    /// compression never runs during a turn).
    pub(super) fn preview_arrived(&mut self, view: CompressPreviewView) {
        if matches!(self.overlay, Some(Overlay::Approval(_))) {
            return;
        }
        // Never over what the user is typing: Enter there would accept it.
        if !self.draft().is_empty() || self.overlay.is_some() || self.busy {
            self.deferred_preview = Some(view);
            self.notify(
                "the compression preview is ready; it opens when the composer is empty (Ctrl-C clears it)",
                false,
            );
            return;
        }
        self.notice = None;
        self.overlay = Some(Overlay::Preview(Box::new(Preview::new(view))));
        self.question_appeared();
    }

    /// Opens a preview that waited for the composer to empty, once it is
    /// (and nothing else is on screen or running).
    pub(super) fn open_deferred_preview(&mut self) {
        if self.draft().is_empty()
            && self.overlay.is_none()
            && !self.busy
            && let Some(view) = self.deferred_preview.take()
        {
            self.notice = None;
            self.overlay = Some(Overlay::Preview(Box::new(Preview::new(view))));
            self.question_appeared();
        }
    }

    /// The text written in `$EDITOR` replaces the preview's summary.
    pub(super) fn editor_returned(&mut self, text: Option<String>) {
        if let (Some(Overlay::Preview(p)), Some(text)) = (&mut self.overlay, text) {
            p.set_summary(text);
        }
    }

    /// Pasted text goes into the preview's editor while it is open.
    pub(super) fn preview_paste(&mut self, text: &str) -> bool {
        if let Some(Overlay::Preview(p)) = &mut self.overlay
            && let Some(editor) = p.editor_mut()
        {
            editor.insert_str(text.replace("\r\n", "\n").replace('\r', "\n"));
            return true;
        }
        false
    }

    /// A key while the context list, the preview or a message is open.
    /// `None` when the open overlay is none of them.
    pub(super) fn control_overlay_key(
        &mut self,
        key: KeyEvent,
        action: Option<Action>,
    ) -> Option<Vec<Effect>> {
        match self.overlay.as_ref()? {
            Overlay::ContextList(_) => Some(self.list_key(key, action)),
            Overlay::Choices(_) => Some(self.choices_key(key, action)),
            Overlay::Preview(_) => Some(self.preview_key(key, action)),
            Overlay::Message { .. } => Some(self.message_key(key, action)),
            _ => None,
        }
    }

    fn list_key(&mut self, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
        if action == Some(Action::Interrupt) {
            self.overlay = None;
            return self.interrupted_overlay(Vec::new());
        }
        if matches!(action, Some(Action::Close | Action::ContextList)) {
            self.overlay = None;
            return Vec::new();
        }
        let Some(Overlay::ContextList(list)) = self.overlay.as_mut() else {
            return Vec::new();
        };
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let row = list
            .selected_row()
            .map(|r| (r.message_id, r.pos, r.pinned, r.state));
        match key.code {
            KeyCode::Up => list.step(-1),
            KeyCode::Down => list.step(1),
            KeyCode::PageUp => list.page(-1),
            KeyCode::PageDown => list.page(1),
            KeyCode::Home => list.home(),
            KeyCode::End => list.end(),
            KeyCode::Char('k') if plain => list.step(-1),
            KeyCode::Char('j') if plain => list.step(1),
            KeyCode::Char('s') if plain => list.toggle_sort(),
            KeyCode::Char('t') if plain => list.toggle_tools(),
            KeyCode::Enter => {
                if let Some((id, pos, ..)) = row {
                    return self.open_message(id, pos);
                }
            }
            KeyCode::Char(c @ ('p' | 'x' | 'c' | 'e')) if plain => {
                let Some((id, pos, pinned, state)) = row else {
                    return Vec::new();
                };
                if pos.is_none() {
                    self.notify(
                        "that message is archived; undo the compression or the edit that archived it first",
                        true,
                    );
                    return Vec::new();
                }
                return match c {
                    'p' => self.mark(id, Mark::Pin(!pinned)),
                    'x' => self.mark(id, Mark::Exclude(state != RowState::Excluded)),
                    'c' => self.leave_list_for(|app| app.compress_up_to(id)),
                    _ => self.leave_list_for(|app| app.edit_message(id)),
                };
            }
            _ => {}
        }
        Vec::new()
    }

    /// Closes the list and runs `then`; the list comes back when `then`
    /// refused (and said why).
    fn leave_list_for(&mut self, then: impl FnOnce(&mut Self) -> Vec<Effect>) -> Vec<Effect> {
        let list = self.overlay.take();
        let before = self.notice.clone();
        let effects = then(self);
        let refused = effects.is_empty()
            && self.control.editing.is_none()
            && self.notice != before
            && self.notice.as_ref().is_some_and(|n| n.error);
        if refused {
            self.overlay = list;
        }
        effects
    }

    /// Opens message `id` whole, over the context list (Esc goes back).
    fn open_message(&mut self, id: crate::domain::MessageId, pos: Option<usize>) -> Vec<Effect> {
        let Some(msg) = self.chat.message(id) else {
            self.notify(
                "that message is not loaded in the chat; resume the session again to read it",
                true,
            );
            return Vec::new();
        };
        let open = Overlay::message(msg, pos, self.overlay.take());
        self.overlay = Some(open);
        Vec::new()
    }

    fn message_key(&mut self, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
        if matches!(action, Some(Action::Close | Action::Interrupt)) {
            if let Some(Overlay::Message { back, .. }) = self.overlay.take() {
                self.overlay = back.map(|b| *b);
            }
            if action == Some(Action::Interrupt) {
                return self.interrupted_overlay(Vec::new());
            }
            return Vec::new();
        }
        if let Some(o) = self.overlay.as_mut() {
            scroll_key(o, key.code);
        }
        Vec::new()
    }

    fn preview_key(&mut self, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
        let Some(Overlay::Preview(preview)) = self.overlay.as_mut() else {
            return Vec::new();
        };
        if let Some(editor) = preview.editor_mut() {
            if matches!(action, Some(Action::Close | Action::Interrupt)) {
                preview.stop_editing();
                return Vec::new();
            }
            if readline::edit(editor, &key).is_none() {
                editor.input(key);
            }
            return Vec::new();
        }
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match (action, key.code) {
            (Some(action @ (Action::Close | Action::Interrupt)), _) => {
                self.overlay = None;
                self.notify("the compression was cancelled; nothing was stored", false);
                let cancel = vec![Effect::Op(Op::Run(Command::CancelPreview))];
                if action == Action::Interrupt {
                    return self.interrupted_overlay(cancel);
                }
                return cancel;
            }
            (_, KeyCode::Enter) => match preview.accept() {
                Accept::Confirm => {}
                Accept::Apply {
                    summary,
                    edited,
                    force,
                } => {
                    self.overlay = None;
                    self.notify("storing the summary…", false);
                    return vec![Effect::Op(Op::Run(Command::ApplyPreview {
                        summary,
                        edited,
                        force,
                    }))];
                }
            },
            (_, KeyCode::Char('e')) if plain => preview.start_editing(),
            (_, KeyCode::Char('E')) if plain => return vec![Effect::EditInEditor(preview.summary())],
            (_, code) => {
                if let Some(o) = self.overlay.as_mut() {
                    scroll_key(o, code);
                }
            }
        }
        Vec::new()
    }
}

/// The arrows, pages, Home and End scroll `overlay`.
fn scroll_key(overlay: &mut Overlay, code: KeyCode) {
    match code {
        KeyCode::Up => overlay.scroll(-1),
        KeyCode::Down => overlay.scroll(1),
        KeyCode::PageUp => overlay.scroll(-10),
        KeyCode::PageDown => overlay.scroll(10),
        KeyCode::Home => overlay.home(),
        KeyCode::End => overlay.end(),
        _ => {}
    }
}

/// What the preview overlay shows of a previewed compression.
pub(super) fn preview_view(o: &crate::runtime::CompressOutcome) -> crate::tui::event::CompressPreviewView {
    crate::tui::event::CompressPreviewView {
        summary: o.summary.clone().unwrap_or_default(),
        messages_before: o.messages_before,
        messages_after: o.messages_after,
        tokens_before: o.tokens_before,
        tokens_after: o.tokens_after,
        kept_verbatim: o
            .kept_verbatim
            .iter()
            .map(|k| crate::tui::event::KeptRow {
                pos: k.pos,
                role: k.role,
                tokens: k.tokens,
                preview: k.preview.clone(),
            })
            .collect(),
        topic: o.topic.clone(),
        summarizer: o
            .summarizer
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        warnings: o.warnings.clone(),
        grows: o.tokens_after > o.tokens_before,
        uncached_tokens: o.uncached_tokens_next_request,
    }
}
