//! The session picker's lines: a search line, then a table of sessions
//! (short id, title, workspace, messages, tokens, model, last update)
//! whose columns are laid out by display width, so CJK and emoji titles
//! keep every column in place. It lists the current workspace's sessions
//! (without the workspace column) until Tab asks for every workspace's.
//! When the overlay is narrow the model, then the counts, then the id are
//! left out before the title gets short, and the workspace last; the time
//! column is never cut.

use super::Picker;
use crate::domain::SessionSummary;
use crate::tui::{fmt, theme};
use ratatui::text::{Line, Span};

/// Cells between two columns.
const GAP: usize = 2;

/// The title column gets at least this many cells before a column is left out.
const TITLE_MIN: usize = 24;

/// Widest workspace and model columns, in cells.
const WORKSPACE_MAX: usize = 20;
const MODEL_MAX: usize = 16;

/// One column of the table.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Column {
    Id,
    Title,
    Workspace,
    Messages,
    Tokens,
    Model,
    Updated,
}

impl Column {
    fn head(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Title => "title",
            Self::Workspace => "workspace",
            Self::Messages => "msgs",
            Self::Tokens => "tokens",
            Self::Model => "model",
            Self::Updated => "updated",
        }
    }

    fn right_aligned(self) -> bool {
        matches!(self, Self::Messages | Self::Tokens)
    }
}

/// A row's cells, in [`Column`] order.
struct Cells {
    id: String,
    title: String,
    workspace: String,
    messages: String,
    tokens: String,
    model: String,
    updated: String,
}

impl Cells {
    fn of(r: &SessionSummary) -> Self {
        let workspace = std::path::Path::new(&r.workspace)
            .file_name()
            .map_or_else(|| r.workspace.clone(), |n| n.to_string_lossy().into_owned());
        let title = if r.title.is_empty() {
            "(untitled)".to_owned()
        } else {
            crate::text::strip_terminal_controls(&r.title, false)
        };
        Self {
            id: r.id.short(),
            title,
            workspace: crate::text::strip_terminal_controls(&workspace, false),
            messages: r.messages.to_string(),
            tokens: fmt::tokens(r.tokens),
            model: crate::text::strip_terminal_controls(&r.model, false),
            updated: date(r.updated_at),
        }
    }

    fn get(&self, column: Column) -> &str {
        match column {
            Column::Id => &self.id,
            Column::Title => &self.title,
            Column::Workspace => &self.workspace,
            Column::Messages => &self.messages,
            Column::Tokens => &self.tokens,
            Column::Model => &self.model,
            Column::Updated => &self.updated,
        }
    }
}

fn date(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map_or_else(|_| "?".to_owned(), |t| t.strftime("%Y-%m-%d %H:%M").to_string())
}

/// The columns shown in `width` cells and the width of each: every
/// column as wide as its widest cell (workspace and model capped), the
/// title taking what is left, and columns left out while the title would
/// get fewer than [`TITLE_MIN`] cells.
fn layout(rows: &[Cells], width: usize, all: bool) -> Vec<(Column, usize)> {
    let widest = |c: Column, cap: usize| {
        rows.iter()
            .map(|r| fmt::width(r.get(c)))
            .chain([fmt::width(c.head())])
            .max()
            .unwrap_or(0)
            .min(cap)
    };
    let mut columns: Vec<(Column, usize)> = [
        (Column::Id, widest(Column::Id, usize::MAX)),
        (Column::Title, 0),
        (Column::Workspace, widest(Column::Workspace, WORKSPACE_MAX)),
        (Column::Messages, widest(Column::Messages, usize::MAX)),
        (Column::Tokens, widest(Column::Tokens, usize::MAX)),
        (Column::Model, widest(Column::Model, MODEL_MAX)),
        (Column::Updated, widest(Column::Updated, usize::MAX)),
    ]
    .into();
    if !all {
        columns.retain(|(c, _)| *c != Column::Workspace);
    }
    let others = |cols: &[(Column, usize)]| -> usize {
        cols.iter()
            .filter(|(c, _)| *c != Column::Title)
            .map(|(_, w)| w + GAP)
            .sum()
    };
    for drop in [
        Column::Model,
        Column::Messages,
        Column::Tokens,
        Column::Id,
        Column::Workspace,
    ] {
        if width.saturating_sub(others(&columns)) >= TITLE_MIN {
            break;
        }
        columns.retain(|(c, _)| *c != drop);
    }
    let title = width.saturating_sub(others(&columns));
    for (c, w) in &mut columns {
        if *c == Column::Title {
            *w = title;
        }
    }
    columns
}

/// `text` in exactly `cells` cells: cut with `…`, or padded with spaces
/// (before it when `right`).
fn fit(text: &str, cells: usize, right: bool) -> String {
    let text = fmt::cut(text, cells);
    let pad = " ".repeat(cells.saturating_sub(fmt::width(&text)));
    if right { pad + &text } else { text + &pad }
}

fn line(columns: &[(Column, usize)], cell: impl Fn(Column) -> String) -> String {
    let parts: Vec<String> = columns
        .iter()
        .map(|&(c, w)| fit(&cell(c), w, c.right_aligned()))
        .collect();
    parts.join(&" ".repeat(GAP))
}

/// The picker's lines in `width` × `height` cells: the search line, the
/// table's head, then one line per session (the selected one highlighted,
/// the rows scrolled so it is on screen), or what the search is doing
/// when there is none.
pub(super) fn picker_lines(p: &Picker, width: u16, height: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let rows: Vec<Cells> = p.rows.iter().map(Cells::of).collect();
    let columns = layout(&rows, width, p.all);
    let scope = if p.all {
        "  every workspace · Tab: this one"
    } else {
        "  this workspace · Tab: every one"
    };
    let mut out = vec![
        Line::from(vec![
            Span::styled("search: ", theme::dim()),
            Span::raw(p.query.clone()),
            Span::styled("▏", theme::dim()),
            Span::styled(scope, theme::dim()),
        ]),
        Line::styled(
            fmt::cut(&line(&columns, |c| c.head().to_owned()), width),
            theme::dim(),
        ),
    ];
    if rows.is_empty() {
        out.push(Line::styled(
            if p.loaded {
                "no sessions match"
            } else {
                "searching…"
            },
            theme::dim(),
        ));
    }
    // The rows below the two head lines; the selection stays on screen.
    let shown = usize::from(height).saturating_sub(2).max(1);
    let first = p.selected.saturating_sub(shown - 1);
    for (i, r) in rows.iter().enumerate().skip(first).take(shown) {
        let style = if i == p.selected {
            theme::selected()
        } else {
            ratatui::style::Style::new()
        };
        let text = line(&columns, |c| r.get(c).to_owned());
        out.push(Line::styled(fmt::cut(&text, width), style));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ProviderKind;
    use crate::tui::overlay::Overlay;

    fn row(id: &str, title: &str, model: &str) -> SessionSummary {
        SessionSummary {
            id: id.parse().unwrap(),
            title: title.into(),
            workspace: "/home/ada/strata".into(),
            model: model.into(),
            provider: ProviderKind::OpenAi,
            messages: 7,
            tokens: 2_100,
            created_at: 0,
            updated_at: 1_764_400_000_000,
        }
    }

    fn text(p: &Picker, width: u16) -> Vec<String> {
        picker_lines(p, width, 40)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn picker() -> Picker {
        Picker {
            rows: vec![
                row(
                    "0193c3a0-0000-7000-8000-00001a2b3c4d",
                    "Refactor the parser",
                    "gpt-4o",
                ),
                row(
                    "0193c3a0-0000-7000-8000-00005e6f7a8b",
                    "日本語のタイトル 👍 and a title far too long for its column",
                    "a-model-name-longer-than-sixteen",
                ),
            ],
            loaded: true,
            ..Picker::default()
        }
    }

    /// The display column at which `needle` starts in `line`.
    fn cell_of(line: &str, needle: &str) -> usize {
        fmt::width(&line[..line.find(needle).unwrap()])
    }

    #[test]
    fn columns_line_up_by_display_width_and_the_time_is_whole() {
        for width in [66, 98, 140] {
            let lines = text(&picker(), width);
            let time = cell_of(&lines[1], "updated");
            for l in &lines[2..] {
                assert!(fmt::width(l) <= usize::from(width), "{l}");
                assert_eq!(cell_of(l, "2025-11-29 07:06"), time, "{width}: {lines:#?}");
                assert!(l.ends_with("2025-11-29 07:06"), "{l}");
            }
            assert!(
                lines[2].starts_with("1a2b3c4d  Refactor the parser"),
                "{lines:#?}"
            );
            assert!(
                lines[3].starts_with("5e6f7a8b  日本語のタイトル 👍"),
                "{lines:#?}"
            );
        }
    }

    #[test]
    fn the_workspace_column_shows_with_every_workspace_and_is_left_out_last() {
        let all = Picker {
            all: true,
            ..picker()
        };
        let wide = text(&all, 140);
        assert!(
            wide[1].contains("workspace") && wide[1].contains("model"),
            "{wide:#?}"
        );
        assert!(wide[0].ends_with("every workspace · Tab: this one"), "{wide:#?}");
        let mid = text(&all, 70);
        assert!(
            mid[1].contains("workspace") && !mid[1].contains("model") && !mid[1].contains("msgs"),
            "{mid:#?}"
        );
        let narrow = text(&all, 50);
        assert!(!narrow[1].contains("workspace"), "{narrow:#?}");
        let this = text(&picker(), 140);
        assert!(
            !this[1].contains("workspace") && this[1].contains("model"),
            "{this:#?}"
        );
        assert!(this[0].ends_with("this workspace · Tab: every one"), "{this:#?}");
    }

    #[test]
    fn narrow_pickers_leave_columns_out_before_the_title_and_time() {
        let narrow = text(&picker(), 50);
        assert!(!narrow[1].contains("model"), "{narrow:#?}");
        assert!(
            narrow[3].contains("日本語のタイトル") && narrow[3].ends_with("2025-11-29 07:06"),
            "{narrow:#?}"
        );
        let tiny = text(&picker(), 34);
        assert!(tiny[2].ends_with("2025-11-29 07:06"), "{tiny:#?}");
    }

    #[test]
    fn the_selected_row_is_always_on_screen() {
        let base = picker();
        let rows: Vec<SessionSummary> = (0..30)
            .map(|i| {
                let mut r = base.rows[0].clone();
                r.id = format!("0193c3a0-0000-7000-8000-0000000000{i:02}")
                    .parse()
                    .unwrap();
                r.title = format!("session number {i}");
                r
            })
            .collect();
        let mut p = Picker { rows, ..picker() };
        let lines = |p: &Picker| -> Vec<String> {
            picker_lines(p, 100, 12)
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                .collect()
        };
        let top = lines(&p);
        assert_eq!(top.len(), 12);
        assert!(top[2].contains("session number 0"), "{top:#?}");
        p.selected = 25;
        let down = lines(&p);
        assert_eq!(down.len(), 12);
        assert!(down[11].contains("session number 25"), "{down:#?}");
        assert!(down[2].contains("session number 16"), "{down:#?}");
        let mut o = Overlay::Picker(p);
        o.scroll(10);
        let Overlay::Picker(p) = &o else { unreachable!() };
        assert_eq!(p.selected, 29, "a page down goes as far as it can");
    }
}
