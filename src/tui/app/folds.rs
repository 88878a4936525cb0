//! Folded pastes in the composer (see `paste`): a long paste goes in as its
//! label, its tokens are counted before the rest of the draft (the counter
//! keeps only the newest job, so the two never race), the label gains the
//! count when it arrives, Backspace after a label deletes the whole paste,
//! and the expand key opens the folds into their text. Part of [`App`]'s
//! update; no I/O.

use super::App;
use crate::runtime::Op;
use crate::tui::event::Effect;
use crate::tui::paste::{self, Fold};
use ratatui_textarea::{CursorMove, DataCursor};

/// Sent pastes the chat remembers, to show them folded (the oldest go
/// first; their messages then fold by length).
const SENT_KEPT: usize = 64;

impl App {
    /// Text pasted into the composer: a long paste as a fold, the rest as
    /// it is.
    pub(super) fn paste_text(&mut self, text: &str) -> Vec<Effect> {
        if paste::is_long(text) {
            self.insert_fold(text.to_owned());
        } else {
            self.composer.insert_str(text);
        }
        self.draft_changed()
    }

    /// Inserts the label of a new fold of `text` at the cursor.
    fn insert_fold(&mut self, text: String) {
        let lines = paste::line_count(&text);
        let fold = Fold::new(text, paste::next_nth(&self.folds, lines));
        self.composer.insert_str(fold.label());
        self.folds.push(fold);
    }

    /// Replaces the draft with `text`, folded whole when it is long (an
    /// input recalled from the history, a message that could not be sent).
    pub(super) fn put_draft(&mut self, text: &str) {
        self.set_draft("");
        self.folds.clear();
        if paste::is_long(text) {
            self.insert_fold(text.to_owned());
        } else {
            self.composer.insert_str(text);
        }
    }

    /// Whether the draft holds a folded paste.
    #[must_use]
    pub fn has_folds(&self) -> bool {
        !self.folds.is_empty()
    }

    /// The draft as it will be sent: the folds' labels replaced by their
    /// text.
    #[must_use]
    pub fn message_text(&self) -> String {
        if self.folds.is_empty() {
            self.draft()
        } else {
            paste::expand(&self.draft(), &self.folds)
        }
    }

    /// Drops the folds whose label is no longer in the draft.
    pub(super) fn prune_folds(&mut self) {
        if self.folds.is_empty() {
            return;
        }
        let draft = self.draft();
        self.folds.retain(|f| draft.contains(&f.label()));
    }

    /// The count for the first fold not counted yet, when there is one
    /// (asked before the draft's own count).
    pub(super) fn count_a_fold(&mut self) -> Option<Effect> {
        let ticket = self.ticket();
        let fold = self.folds.iter_mut().find(|f| f.tokens.is_none())?;
        fold.ticket = Some(ticket);
        Some(Effect::Op(Op::CountDraft {
            ticket,
            text: fold.text.clone(),
        }))
    }

    /// A count arrived for a fold: its label shows it, and the draft is
    /// counted next. `None` when `ticket` is no fold's.
    pub(super) fn fold_counted(&mut self, ticket: u64, tokens: u64) -> Option<Vec<Effect>> {
        let at = self.folds.iter().position(|f| f.ticket == Some(ticket))?;
        let old = self.folds[at].label();
        self.folds[at].tokens = Some(tokens);
        self.folds[at].ticket = None;
        let new = self.folds[at].label();
        self.relabel(&old, &new);
        Some(self.draft_changed())
    }

    /// Replaces the first `old` in the composer with `new`, keeping the
    /// cursor where it was in the text around it.
    fn relabel(&mut self, old: &str, new: &str) {
        let lines = self.composer.lines().to_vec();
        let DataCursor(row, col) = self.composer.cursor();
        let Some((r, at)) = lines
            .iter()
            .enumerate()
            .find_map(|(r, l)| l.find(old).map(|at| (r, at)))
        else {
            return;
        };
        let start = lines[r][..at].chars().count();
        let (old_n, new_n) = (old.chars().count(), new.chars().count());
        let col = if r == row && col >= start + old_n {
            col - old_n + new_n
        } else if r == row && col > start {
            start
        } else {
            col
        };
        let mut lines = lines;
        lines[r].replace_range(at..at + old.len(), new);
        self.set_draft(&lines.join("\n"));
        self.move_to(row, col);
    }

    /// Moves the composer's cursor to `col` (characters) of `row`.
    fn move_to(&mut self, row: usize, col: usize) {
        if let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(col)) {
            self.composer.move_cursor(CursorMove::Jump(r, c));
            return;
        }
        self.composer.move_cursor(CursorMove::Top);
        self.composer.move_cursor(CursorMove::Head);
        for _ in 0..row {
            self.composer.move_cursor(CursorMove::Down);
        }
        for _ in 0..col {
            self.composer.move_cursor(CursorMove::Forward);
        }
    }

    /// Backspace just after a fold's label deletes the whole label (and
    /// the paste). Returns whether it did.
    pub(super) fn delete_fold_before_cursor(&mut self) -> bool {
        let DataCursor(row, col) = self.composer.cursor();
        let Some(line) = self.composer.lines().get(row) else {
            return false;
        };
        let before: String = line.chars().take(col).collect();
        let Some(n) = self
            .folds
            .iter()
            .map(Fold::label)
            .find(|l| before.ends_with(l.as_str()))
            .map(|l| l.chars().count())
        else {
            return false;
        };
        for _ in 0..n {
            self.composer.move_cursor(CursorMove::Back);
        }
        let yank = self.composer.yank_text();
        self.composer.delete_str(n);
        self.composer.set_yank_text(yank);
        true
    }

    /// The expand key with folds in the draft: they become their text.
    /// Returns `None` when the draft has none.
    pub(super) fn expand_folds(&mut self) -> Option<Vec<Effect>> {
        if self.folds.is_empty() {
            return None;
        }
        let text = self.message_text();
        self.set_draft(&text);
        self.folds.clear();
        Some(self.draft_changed())
    }

    /// The draft's folds were sent: the chat shows them folded.
    pub(super) fn folds_sent(&mut self) {
        let sent = std::mem::take(&mut self.folds);
        self.chat.pastes.extend(sent);
        let over = self.chat.pastes.len().saturating_sub(SENT_KEPT);
        self.chat.pastes.drain(..over);
    }
}
