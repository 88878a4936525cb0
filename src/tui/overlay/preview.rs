//! The compression preview overlay: what a compression would store before
//! anything is stored — messages and tokens before → after, who wrote the
//! summary, the warnings, the messages that stay verbatim, and the summary
//! itself, scrollable, or in an editor inside the overlay.
//!
//! It holds the session's [`CompressPreviewView`] untouched and the summary
//! as it is now (edited or not), so accepting sends exactly what the user
//! saw; a summary that makes the request bigger needs a second Enter. The
//! keys are the app's (`app::context`); this module keeps the state and
//! draws it.

use super::super::event::CompressPreviewView;
use super::super::pager::{Item, Pager, key_of};
use super::super::{fmt, theme};
use crate::domain::Role;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use ratatui_textarea::TextArea;

/// Messages kept verbatim listed at most (the rest are counted).
const KEPT_SHOWN: usize = 4;

/// Rows the summary keeps at least before the other parts give way.
const SUMMARY_ROWS: usize = 3;

/// The preview's state.
#[derive(Clone, Debug)]
pub struct Preview {
    /// What the session previewed (never changed).
    pub view: CompressPreviewView,
    /// The summary as it is now (the previewed one, or the user's edit).
    summary: String,
    /// The editor while the user edits in the overlay.
    editor: Option<TextArea<'static>>,
    /// The summary's scroll position and layout.
    pager: Pager,
    /// Enter was pressed once on a summary that grows the request.
    confirming: bool,
}

/// What Enter on the preview does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Accept {
    /// Store `summary` (`edited`: the user changed it; `force`: it grows
    /// the request and the user confirmed).
    Apply {
        /// The summary's body.
        summary: String,
        /// Whether the user changed it.
        edited: bool,
        /// Whether it grows the request.
        force: bool,
    },
    /// The summary grows the request: the first Enter only asks.
    Confirm,
}

impl Preview {
    /// The preview of `view`, the summary at its top.
    #[must_use]
    pub fn new(view: CompressPreviewView) -> Self {
        Self {
            summary: view.summary.clone(),
            view,
            editor: None,
            pager: Pager::default(),
            confirming: false,
        }
    }

    /// The summary as it is now (with the editor's text while editing).
    #[must_use]
    pub fn summary(&self) -> String {
        match &self.editor {
            Some(e) => e.lines().join("\n"),
            None => self.summary.clone(),
        }
    }

    /// Whether the summary differs from the previewed one.
    #[must_use]
    pub fn edited(&self) -> bool {
        self.summary() != self.view.summary
    }

    /// Whether the editor is open.
    #[must_use]
    pub fn editing(&self) -> bool {
        self.editor.is_some()
    }

    /// The editor, while it is open.
    pub fn editor_mut(&mut self) -> Option<&mut TextArea<'static>> {
        self.editor.as_mut()
    }

    /// Opens the editor on the summary, the cursor at its end.
    pub fn start_editing(&mut self) {
        let mut editor = TextArea::from(self.summary.lines().map(str::to_owned));
        editor.set_cursor_line_style(ratatui::style::Style::new());
        editor.move_cursor(ratatui_textarea::CursorMove::Bottom);
        editor.move_cursor(ratatui_textarea::CursorMove::End);
        self.editor = Some(editor);
        self.confirming = false;
    }

    /// Closes the editor, keeping what was written.
    pub fn stop_editing(&mut self) {
        if let Some(e) = self.editor.take() {
            self.summary = e.lines().join("\n");
            self.pager.invalidate();
        }
    }

    /// Replaces the summary (written in `$EDITOR`).
    pub fn set_summary(&mut self, text: String) {
        self.editor = None;
        self.summary = text.trim_end_matches('\n').to_owned();
        self.pager.invalidate();
        self.confirming = false;
    }

    /// What Enter does now: apply, or (the first time on a summary that
    /// grows the request) ask again.
    pub fn accept(&mut self) -> Accept {
        if self.view.grows && !self.confirming {
            self.confirming = true;
            return Accept::Confirm;
        }
        Accept::Apply {
            summary: self.summary(),
            edited: self.edited(),
            force: self.view.grows,
        }
    }

    /// Scrolls the summary by `rows`.
    pub fn scroll(&mut self, rows: i64) {
        self.pager.scroll_by(rows);
    }

    /// The summary's top.
    pub fn home(&mut self) {
        self.pager.to_top();
    }

    /// The summary's last page.
    pub fn end(&mut self) {
        self.pager.to_end();
    }

    /// The keys, for the overlay's bottom row: the longest that fits
    /// `width` cells.
    #[must_use]
    pub fn keys(&self, width: usize) -> &'static str {
        let choices: &[&'static str] = if self.editing() {
            &[
                "editing the summary · Esc ends editing (then Enter accepts)",
                "editing · Esc ends editing",
            ]
        } else if self.confirming {
            &[
                "Enter again applies the larger summary · Esc cancels",
                "Enter again applies it · Esc cancels",
            ]
        } else {
            &[
                "Enter accepts · e edits here · E in $EDITOR · ↑↓ scroll · Esc cancels",
                "Enter accepts · e edit · E $EDITOR · Esc cancels",
            ]
        };
        choices
            .iter()
            .find(|k| fmt::width(k) <= width)
            .unwrap_or(&choices[choices.len() - 1])
    }

    /// Draws the preview into `area` (inside the overlay's border).
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let width = usize::from(area.width);
        let mut head: Vec<Line<'static>> = Vec::new();
        for row in fmt::wrap(&self.figures(), width) {
            head.push(Line::styled(row, theme::title()));
        }
        let mut notes: Vec<String> = Vec::new();
        if self.view.grows {
            notes.push(format!(
                "This summary is larger than what it replaces: the history grows from {} to {} tokens.",
                fmt::tokens(self.view.tokens_before),
                fmt::tokens(self.view.tokens_after)
            ));
        }
        notes.extend(self.view.warnings.iter().cloned());
        for note in &notes {
            for row in fmt::wrap(note, width) {
                head.push(Line::styled(row, theme::warning()));
            }
        }
        let rows = usize::from(area.height);
        // The summary keeps a few rows; the kept list and the notes give way.
        let room = rows.saturating_sub(SUMMARY_ROWS + 2);
        head.truncate(room);
        let kept_room = room.saturating_sub(head.len()).min(KEPT_SHOWN + 2);
        head.extend(self.kept_lines(width, kept_room));
        let edited = if self.edited() { " (edited)" } else { "" };
        let rule = format!("── summary{edited} ");
        let pad = "─".repeat(width.saturating_sub(fmt::width(&rule)));
        head.push(Line::styled(format!("{rule}{pad}"), theme::title()));
        let mut y = area.y;
        for line in head.iter().take(rows.saturating_sub(1)) {
            buf.set_line(area.x, y, line, area.width);
            y += 1;
        }
        let bottom = area.y + area.height - 1;
        let body = Rect::new(area.x, y, area.width, bottom.saturating_sub(y));
        if body.height > 0 {
            match &self.editor {
                Some(e) => e.render(body, buf),
                None => self.pager.render(
                    key_of(&self.summary),
                    &self.summary,
                    || summary_doc(&self.summary),
                    body,
                    buf,
                ),
            }
        }
        let keys = Line::styled(fmt::cut(self.keys(width), width), theme::dim());
        buf.set_line(area.x, bottom, &keys, area.width);
    }

    /// `messages 42 → 9 · tokens 31.2k → 4.1k · by gpt-4o-mini · topic auth`.
    fn figures(&self) -> String {
        let v = &self.view;
        let mut s = format!(
            "messages {} → {} · tokens {} → {} · by {}",
            v.messages_before,
            v.messages_after,
            fmt::tokens(v.tokens_before),
            fmt::tokens(v.tokens_after),
            v.summarizer
        );
        if let Some(t) = &v.topic {
            s.push_str(&format!(" · topic {t}"));
        }
        if let Some(u) = v.uncached_tokens {
            s.push_str(&format!(" · ~{} uncached next request", fmt::tokens(u)));
        }
        s
    }

    /// What stays verbatim, in at most `room` rows.
    fn kept_lines(&self, width: usize, room: usize) -> Vec<Line<'static>> {
        let kept = &self.view.kept_verbatim;
        if room == 0 {
            return Vec::new();
        }
        let mut out = vec![Line::styled(
            fmt::cut(&format!("kept verbatim after the summary: {}", kept.len()), width),
            theme::dim(),
        )];
        let listed = kept.len().min(room - 1);
        let listed = if listed < kept.len() {
            listed.saturating_sub(1)
        } else {
            listed
        };
        for k in kept.iter().take(listed) {
            let role = match k.role {
                Role::User => "you",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
                Role::System => "system",
            };
            let text = format!(
                "  {:>4} {role:<9} {:>6}  {}",
                k.pos,
                fmt::tokens(u64::from(k.tokens)),
                k.preview
            );
            out.push(Line::raw(fmt::cut(&text, width)));
        }
        if listed < kept.len() && out.len() < room {
            out.push(Line::styled(
                format!("  … and {} more", kept.len() - listed),
                theme::dim(),
            ));
        }
        out
    }
}

fn summary_doc(summary: &str) -> Vec<Item> {
    let mut out = Vec::new();
    Item::lines_of(summary, 0, summary.len(), &mut out);
    if out.is_empty() {
        out.push(Item::line(Line::styled("(the summary is empty)", theme::dim())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(grows: bool) -> CompressPreviewView {
        CompressPreviewView {
            summary: "Goal: fix the parser.".into(),
            messages_before: 12,
            messages_after: 5,
            tokens_before: 9_000,
            tokens_after: if grows { 9_500 } else { 2_000 },
            kept_verbatim: Vec::new(),
            topic: None,
            summarizer: "gpt-4o-mini".into(),
            warnings: Vec::new(),
            grows,
            uncached_tokens: None,
        }
    }

    #[test]
    fn a_summary_that_grows_the_request_needs_a_second_enter() {
        let mut p = Preview::new(view(true));
        assert_eq!(p.accept(), Accept::Confirm);
        assert_eq!(
            p.accept(),
            Accept::Apply {
                summary: "Goal: fix the parser.".into(),
                edited: false,
                force: true
            }
        );
        let mut p = Preview::new(view(false));
        assert!(matches!(p.accept(), Accept::Apply { force: false, .. }));
    }

    #[test]
    fn an_edit_is_what_is_applied_and_marked_edited() {
        let mut p = Preview::new(view(false));
        p.start_editing();
        if let Some(e) = p.editor_mut() {
            e.insert_str(" Keep the tests.");
        }
        assert!(p.edited());
        p.stop_editing();
        assert_eq!(
            p.accept(),
            Accept::Apply {
                summary: "Goal: fix the parser. Keep the tests.".into(),
                edited: true,
                force: false
            }
        );
    }
}
