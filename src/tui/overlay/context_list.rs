//! The context list overlay: every message of the session with its state
//! in the next request (`kept`, `truncated 1.2k→300`, `pruned`, `dropped`,
//! `excluded`, `pinned`, `summarised`, `archived`) and its tokens, with
//! totals of what is sent and what is not. Sorted by position or by cost,
//! filtered to tool outputs or not; one row selected.
//!
//! The rows come from the session ([`ContextRow`], the same rows as
//! `strata context ID --list`); this module holds only the view state: the
//! order (indices into the rows, so a re-sort never copies a row), the
//! selection, the first row shown and the totals, computed once per set of
//! rows. A frame draws only the rows on screen, so 10,000 messages cost
//! what 20 do; it learns how many rows the window holds (a memo for
//! scrolling by keys, as the chat pane learns its size).

use crate::domain::{MessageId, MessageKind, Role};
use crate::pipeline::{ContextRow, RowState};
use crate::tui::{fmt, theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::cell::Cell;
use std::collections::HashMap;

/// Rows above the list (totals, sort and filter, column heads) and below
/// it (the keys).
const CHROME: u16 = 4;

/// Columns: position, role or tool, state, tokens (the preview takes the
/// rest, and is the first to go on a narrow screen).
const POS: usize = 5;
const ROLE: usize = 12;
const STATE: usize = 19;
const TOKENS: usize = 6;

/// The narrowest preview worth showing, in cells.
const MIN_PREVIEW: usize = 8;

/// What the header says of the rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Totals {
    /// Messages sent in the next request, and what they add, tokens.
    sent: (usize, u64),
    /// Active messages not sent (excluded, pruned, dropped), stored tokens.
    unsent: (usize, u64),
    /// Archived messages (summarised or archived by an edit).
    archived: usize,
}

/// The context list's state.
#[derive(Clone, Debug, Default)]
pub struct ContextList {
    /// The rows, in position order (`None` until the first answer).
    rows: Option<Vec<ContextRow>>,
    /// Indices into `rows` in the order shown (sorted, filtered).
    order: Vec<usize>,
    /// Sorted by stored tokens, largest first (otherwise by position).
    by_cost: bool,
    /// Only tool outputs.
    tools_only: bool,
    /// The selected row, an index into `order`.
    selected: usize,
    /// The first row shown, an index into `order`.
    top: usize,
    /// Rows the list showed at the last frame (0 before one).
    window: Cell<usize>,
    totals: Totals,
    /// The position of each active summary, for the rows it stands for.
    summaries: HashMap<MessageId, usize>,
}

impl ContextList {
    /// Replaces the rows (the session's answer), keeping the selected
    /// message selected when it is still listed.
    pub fn set_rows(&mut self, rows: Vec<ContextRow>) {
        let keep = self.selected_row().map(|r| r.message_id);
        let mut totals = Totals::default();
        for r in &rows {
            match r.state {
                RowState::Summarised { .. } | RowState::Archived { .. } => totals.archived += 1,
                RowState::Excluded | RowState::Pruned | RowState::Dropped => {
                    totals.unsent.0 += 1;
                    totals.unsent.1 += u64::from(r.tokens);
                }
                RowState::Kept | RowState::Truncated { .. } | RowState::Pinned => {
                    totals.sent.0 += 1;
                    totals.sent.1 += u64::from(r.tokens_sent);
                }
            }
        }
        self.totals = totals;
        self.summaries = rows
            .iter()
            .filter(|r| r.kind == MessageKind::Summary)
            .filter_map(|r| Some((r.message_id, r.pos?)))
            .collect();
        self.rows = Some(rows);
        self.reorder(keep);
    }

    /// Whether rows arrived.
    #[must_use]
    pub fn loaded(&self) -> bool {
        self.rows.is_some()
    }

    /// The rows in the order shown.
    pub fn shown(&self) -> impl Iterator<Item = &ContextRow> {
        let rows = self.rows.as_deref().unwrap_or_default();
        self.order.iter().filter_map(|&i| rows.get(i))
    }

    /// Whether the list is sorted by cost (otherwise by position).
    #[must_use]
    pub fn by_cost(&self) -> bool {
        self.by_cost
    }

    /// Sorts by cost, or back by position; the selected message stays
    /// selected.
    pub fn toggle_sort(&mut self) {
        self.by_cost = !self.by_cost;
        self.reorder(self.selected_row().map(|r| r.message_id));
    }

    /// Shows only tool outputs, or every message again.
    pub fn toggle_tools(&mut self) {
        self.tools_only = !self.tools_only;
        self.reorder(self.selected_row().map(|r| r.message_id));
    }

    /// The selected row.
    #[must_use]
    pub fn selected_row(&self) -> Option<&ContextRow> {
        let i = *self.order.get(self.selected)?;
        self.rows.as_ref()?.get(i)
    }

    /// Moves the selection by `delta` rows, stopping at the ends, and
    /// scrolls to keep it in view.
    pub fn step(&mut self, delta: i64) {
        let last = i64::try_from(self.order.len().saturating_sub(1)).unwrap_or(0);
        let at = i64::try_from(self.selected).unwrap_or(0).saturating_add(delta);
        self.selected = usize::try_from(at.clamp(0, last)).unwrap_or(0);
        self.follow();
    }

    /// Moves by a page (the rows shown at the last frame).
    pub fn page(&mut self, pages: i64) {
        let rows = i64::try_from(self.window.get().max(1)).unwrap_or(1);
        self.step(pages.saturating_mul(rows));
    }

    /// Selects the first row.
    pub fn home(&mut self) {
        self.selected = 0;
        self.follow();
    }

    /// Selects the last row.
    pub fn end(&mut self) {
        self.selected = self.order.len().saturating_sub(1);
        self.follow();
    }

    /// Rebuilds the order from the sort and the filter; selects `keep`
    /// when it is listed, otherwise the row at the same place.
    fn reorder(&mut self, keep: Option<MessageId>) {
        let Some(rows) = self.rows.as_deref() else {
            return;
        };
        let tools_only = self.tools_only;
        let mut order: Vec<usize> = (0..rows.len())
            .filter(|&i| !tools_only || rows[i].is_tool_output())
            .collect();
        if self.by_cost {
            order.sort_by_key(|&i| (std::cmp::Reverse(rows[i].tokens), i));
        }
        let found = keep.and_then(|id| order.iter().position(|&i| rows[i].message_id == id));
        self.order = order;
        self.selected = found
            .unwrap_or(self.selected)
            .min(self.order.len().saturating_sub(1));
        self.follow();
    }

    /// Scrolls just enough to show the selection (at the window of the
    /// last frame; before one, the selection goes on top).
    fn follow(&mut self) {
        let window = self.window.get().max(1);
        if self.selected < self.top {
            self.top = self.selected;
        } else if self.selected >= self.top + window {
            self.top = self.selected + 1 - window;
        }
    }

    /// Draws the list into `area` (inside the overlay's border).
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        let width = usize::from(area.width);
        let mut line = |y: u16, l: Line<'_>| buf_line(buf, area, y, &l);
        let Some(rows) = self.rows.as_deref() else {
            line(0, Line::styled("loading the context list…", theme::dim()));
            return;
        };
        line(
            0,
            Line::styled(fmt::cut(&self.totals_line(rows.len()), width), theme::title()),
        );
        if area.height < CHROME {
            return;
        }
        let sort = if self.by_cost {
            "sorted by cost (s: by position)"
        } else {
            "sorted by position (s: by cost)"
        };
        let filter = if self.tools_only {
            "tool outputs only (t: every message)"
        } else {
            "every message (t: tool outputs)"
        };
        let cost = self
            .selected_row()
            .and_then(|r| Some((r.excluded, r.uncached_if_toggled?)))
            .map_or_else(String::new, |(excluded, u)| {
                let what = if excluded { "including" } else { "excluding" };
                format!(" · {what} it: ~{} uncached next request", fmt::tokens(u))
            });
        line(
            1,
            Line::styled(fmt::cut(&format!("{sort} · {filter}{cost}"), width), theme::dim()),
        );
        let columns = Columns::for_width(width);
        line(2, Line::styled(fmt::cut(&columns.heads(), width), theme::title()));
        let window = usize::from(area.height - CHROME);
        self.window.set(window);
        // The selection is on screen even when the window changed size.
        let top = self
            .top
            .max((self.selected + 1).saturating_sub(window))
            .min(self.selected)
            .min(self.order.len().saturating_sub(window));
        if self.order.is_empty() {
            let empty = if self.tools_only {
                "no tool outputs in this session"
            } else {
                "no messages in this session yet"
            };
            line(3, Line::styled(empty, theme::dim()));
        }
        for (k, &i) in self.order.iter().skip(top).take(window).enumerate() {
            let y = 3 + u16::try_from(k).unwrap_or(0);
            let row = &rows[i];
            let selected = top + k == self.selected;
            let text = fmt::cut(&columns.row(row, self.state_of(row), selected), width);
            let style = if selected {
                theme::selected()
            } else {
                row_style(row)
            };
            let fill = " ".repeat(width.saturating_sub(fmt::width(&text)));
            line(
                y,
                Line::from(vec![Span::styled(text, style), Span::styled(fill, style)]),
            );
        }
        let keys = [
            "↑↓ move · p pin · x exclude · Enter open · c compress to here · e edit · s sort · t tools",
            "↑↓ · p pin · x exclude · Enter open · c compress · e edit · s t",
        ];
        let keys = keys.iter().find(|k| fmt::width(k) <= width).unwrap_or(&keys[1]);
        line(area.height - 1, Line::styled(fmt::cut(keys, width), theme::dim()));
    }

    /// The state column of `row`; a summarised row says which summary
    /// (by position) stands for it.
    fn state_of(&self, row: &ContextRow) -> String {
        match row.state {
            RowState::Summarised { summary: Some(id) } => match self.summaries.get(&id) {
                Some(pos) => format!("summarised → {pos}"),
                None => state_label(&row.state),
            },
            state => state_label(&state),
        }
    }

    /// `312 messages · sent 280 (41.2k tok) · not sent 32 (12.1k tok) · archived 12`.
    fn totals_line(&self, n: usize) -> String {
        let t = self.totals;
        let mut s = format!(
            "{n} messages · sent {} ({} tok) · not sent {} ({} tok)",
            t.sent.0,
            fmt::tokens(t.sent.1),
            t.unsent.0,
            fmt::tokens(t.unsent.1)
        );
        if t.archived > 0 {
            s.push_str(&format!(" · archived {}", t.archived));
        }
        s
    }
}

/// Writes `line` on row `y` of `area`.
fn buf_line(buf: &mut Buffer, area: Rect, y: u16, line: &Line<'_>) {
    if y < area.height {
        buf.set_line(area.x, area.y + y, line, area.width);
    }
}

/// Unsent and archived rows are dim; pinned ones stand out.
fn row_style(row: &ContextRow) -> Style {
    match row.state {
        RowState::Kept | RowState::Truncated { .. } => Style::new(),
        RowState::Pinned => theme::title(),
        _ => theme::dim(),
    }
}

/// The state column of a row: `kept`, `truncated 1.2k→300`, ...
#[must_use]
pub fn state_label(state: &RowState) -> String {
    match state {
        RowState::Kept => "kept".to_owned(),
        RowState::Truncated { from, to } => format!(
            "truncated {}→{}",
            fmt::tokens(u64::from(*from)),
            fmt::tokens(u64::from(*to))
        ),
        RowState::Pruned => "pruned".to_owned(),
        RowState::Dropped => "dropped".to_owned(),
        RowState::Excluded => "excluded".to_owned(),
        RowState::Pinned => "pinned".to_owned(),
        RowState::Summarised { .. } => "summarised".to_owned(),
        RowState::Archived { .. } => "archived".to_owned(),
    }
}

/// The role column: the tool's name for a tool output, `summary` for a
/// summary, otherwise the role (`you` for the user, as in the chat).
fn role_label(row: &ContextRow) -> String {
    if row.kind == MessageKind::Summary {
        return "summary".to_owned();
    }
    match row.role {
        Role::Tool => row.tools.first().cloned().unwrap_or_else(|| "tool".to_owned()),
        Role::User => "you".to_owned(),
        Role::Assistant => "assistant".to_owned(),
        Role::System => "system".to_owned(),
    }
}

/// Which columns fit a width.
#[derive(Clone, Copy, Debug)]
struct Columns {
    /// Cells of the preview (0: not shown).
    preview: usize,
}

impl Columns {
    fn for_width(width: usize) -> Self {
        let fixed = 2 + POS + 1 + ROLE + 1 + STATE + 1 + TOKENS + 2;
        let rest = width.saturating_sub(fixed);
        Self {
            preview: if rest >= MIN_PREVIEW { rest } else { 0 },
        }
    }

    fn heads(self) -> String {
        let mut s = format!(
            "  {:>POS$} {:<ROLE$} {:<STATE$} {:>TOKENS$}",
            "pos", "role", "state", "tokens"
        );
        if self.preview > 0 {
            s.push_str("  preview");
        }
        s
    }

    /// One row: `state` is its state column; the selected row is marked
    /// (the mark shows without colours too).
    fn row(self, row: &ContextRow, state: String, selected: bool) -> String {
        let pos = row.pos.map_or_else(|| "–".to_owned(), |p| p.to_string());
        let role = fmt::cut(&role_label(row), ROLE);
        let state = fmt::cut(&state, STATE);
        let mark = if selected { "›" } else { " " };
        let mut s = format!(
            "{mark} {pos:>POS$} {role}{} {state}{} {:>TOKENS$}",
            " ".repeat(ROLE.saturating_sub(fmt::width(&role))),
            " ".repeat(STATE.saturating_sub(fmt::width(&state))),
            fmt::tokens(u64::from(row.tokens)),
        );
        if self.preview > 0 {
            s.push_str("  ");
            s.push_str(&fmt::cut(&row.preview, self.preview));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::MessageKind;

    fn row(pos: usize, role: Role, tokens: u32, state: RowState) -> ContextRow {
        ContextRow {
            pos: Some(pos),
            seq: pos as i64,
            excluded: state == RowState::Excluded,
            message_id: MessageId::new(),
            role,
            kind: MessageKind::Normal,
            state,
            tokens,
            tokens_sent: tokens,
            pinned: state == RowState::Pinned,
            tools: if role == Role::Tool {
                vec!["read_file".into()]
            } else {
                Vec::new()
            },
            preview: format!("message {pos}"),
            uncached_if_toggled: None,
        }
    }

    fn list() -> ContextList {
        let mut l = ContextList::default();
        l.set_rows(vec![
            row(1, Role::User, 10, RowState::Kept),
            row(2, Role::Tool, 900, RowState::Excluded),
            row(3, Role::Assistant, 50, RowState::Pinned),
            row(4, Role::Tool, 300, RowState::Truncated { from: 300, to: 40 }),
        ]);
        l
    }

    fn positions(l: &ContextList) -> Vec<Option<usize>> {
        l.shown().map(|r| r.pos).collect()
    }

    #[test]
    fn sorting_by_cost_keeps_the_selected_message_selected() {
        let mut l = list();
        l.step(2);
        assert_eq!(l.selected_row().and_then(|r| r.pos), Some(3));
        l.toggle_sort();
        assert_eq!(positions(&l), [Some(2), Some(4), Some(3), Some(1)]);
        assert_eq!(l.selected_row().and_then(|r| r.pos), Some(3));
        l.toggle_sort();
        assert_eq!(positions(&l), [Some(1), Some(2), Some(3), Some(4)]);
    }

    #[test]
    fn the_tool_filter_keeps_tool_outputs_and_totals_count_what_is_sent() {
        let mut l = list();
        l.toggle_tools();
        assert_eq!(positions(&l), [Some(2), Some(4)]);
        assert_eq!(l.totals.sent, (3, 360));
        assert_eq!(l.totals.unsent, (1, 900));
        assert_eq!(
            l.totals_line(4),
            "4 messages · sent 3 (360 tok) · not sent 1 (900 tok)"
        );
    }

    #[test]
    fn new_rows_keep_the_selection_on_the_same_message() {
        let mut l = list();
        l.end();
        let id = l.selected_row().map(|r| r.message_id);
        let mut rows: Vec<ContextRow> = l.shown().cloned().collect();
        rows.insert(0, row(0, Role::User, 5, RowState::Kept));
        l.set_rows(rows);
        assert_eq!(l.selected_row().map(|r| r.message_id), id);
    }

    #[test]
    fn a_summarised_row_names_the_summary_that_stands_for_it() {
        let mut summary = row(1, Role::User, 200, RowState::Kept);
        summary.kind = MessageKind::Summary;
        let mut old = row(
            1,
            Role::User,
            900,
            RowState::Summarised {
                summary: Some(summary.message_id),
            },
        );
        old.pos = None;
        let mut l = ContextList::default();
        l.set_rows(vec![old.clone(), summary]);
        assert_eq!(l.state_of(&old), "summarised → 1");
        assert_eq!(l.totals.archived, 1);
    }

    #[test]
    fn states_read_as_the_issue_names_them() {
        assert_eq!(
            state_label(&RowState::Truncated { from: 1_200, to: 300 }),
            "truncated 1.2k→300"
        );
        assert_eq!(state_label(&RowState::Summarised { summary: None }), "summarised");
    }
}
