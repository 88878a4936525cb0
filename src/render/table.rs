//! Markdown tables laid out in columns: each column as wide as its widest
//! cell, the widest columns narrowed (cells word-wrapped inside them) until
//! the table fits; when it cannot fit without splitting words, the caller
//! shows the rows as `header: value` records instead.

use super::style::MarkdownTheme;
use super::wrap::{Seg, width_of, wrap_words};
use pulldown_cmark::Alignment;
use ratatui::style::Style;

/// Between two columns.
const SEPARATOR: &str = " │ ";
/// Columns [`SEPARATOR`] takes.
const SEPARATOR_WIDTH: usize = 3;

/// A table being collected: rows of cells of styled text.
pub(crate) struct Table {
    pub aligns: Vec<Alignment>,
    pub rows: Vec<Vec<Vec<Seg>>>,
    /// How many of the first rows are the header.
    pub head_rows: usize,
}

impl Table {
    pub fn new(aligns: Vec<Alignment>) -> Self {
        Self {
            aligns,
            rows: Vec::new(),
            head_rows: 0,
        }
    }

    fn columns(&self) -> usize {
        self.rows.iter().map(Vec::len).max().unwrap_or(0)
    }
}

fn cell_width(cell: &[Seg]) -> usize {
    cell.iter().map(|(_, t)| width_of(t)).sum()
}

/// The widest word of a cell: a column narrower than this splits words.
fn longest_word(cell: &[Seg]) -> usize {
    let text: String = cell.iter().map(|(_, t)| t.as_str()).collect();
    text.split(' ').map(width_of).max().unwrap_or(0)
}

/// Column widths fitting `width`, or `None` when the columns cannot fit
/// without splitting words.
/// The widest columns are narrowed first, none below its longest word.
fn widths(t: &Table, width: usize) -> Option<Vec<usize>> {
    let n = t.columns();
    if n == 0 {
        return Some(Vec::new());
    }
    let seps = SEPARATOR_WIDTH * (n - 1);
    let mut w = vec![1; n];
    let mut floor = vec![1; n];
    for row in &t.rows {
        for (i, cell) in row.iter().enumerate() {
            w[i] = w[i].max(cell_width(cell));
            floor[i] = floor[i].max(longest_word(cell));
        }
    }
    if floor.iter().sum::<usize>() + seps > width {
        return None;
    }
    let mut total: usize = w.iter().sum::<usize>() + seps;
    while total > width {
        // Narrow the widest column that still can be, down to the next
        // widest (so wide columns share the cut) or its floor.
        let (col, &max) = w
            .iter()
            .enumerate()
            .filter(|(i, c)| **c > floor[*i])
            .max_by_key(|(_, c)| **c)?;
        let next = w
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != col)
            .map(|(_, c)| *c)
            .max()
            .unwrap_or(0);
        let cut = (total - width).min(max.saturating_sub(next.max(floor[col])).max(1));
        w[col] = max - cut;
        total -= cut;
    }
    Some(w)
}

/// `cell` padded to `width` columns as `align` says.
fn pad(mut cell: Vec<Seg>, width: usize, align: Alignment) -> Vec<Seg> {
    let room = width.saturating_sub(cell_width(&cell));
    let (left, right) = match align {
        Alignment::Right => (room, 0),
        Alignment::Center => (room / 2, room - room / 2),
        Alignment::Left | Alignment::None => (0, room),
    };
    if left > 0 {
        cell.insert(0, (Style::default(), " ".repeat(left)));
    }
    if right > 0 {
        cell.push((Style::default(), " ".repeat(right)));
    }
    cell
}

/// The table as physical lines of at most `width` columns, or `None` when it
/// cannot be shown in columns.
pub(crate) fn layout(t: &Table, width: usize, theme: &MarkdownTheme) -> Option<Vec<Vec<Seg>>> {
    let w = widths(t, width)?;
    let mut out = Vec::new();
    for (r, row) in t.rows.iter().enumerate() {
        let header = r < t.head_rows;
        let wrapped: Vec<Vec<Vec<Seg>>> = (0..w.len())
            .map(|c| {
                let mut cell = row.get(c).cloned().unwrap_or_default();
                if header {
                    for (s, _) in &mut cell {
                        *s = s.patch(theme.table_header);
                    }
                }
                wrap_words(&cell, w[c])
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for i in 0..height {
            let mut line = Vec::new();
            for (c, cell_lines) in wrapped.iter().enumerate() {
                if c > 0 {
                    line.push((theme.rule, SEPARATOR.to_owned()));
                }
                let piece = cell_lines.get(i).cloned().unwrap_or_default();
                let align = t.aligns.get(c).copied().unwrap_or(Alignment::None);
                line.extend(pad(piece, w[c], align));
            }
            out.push(line);
        }
        if header && r + 1 == t.head_rows {
            let rule: Vec<String> = w.iter().map(|c| "─".repeat(*c)).collect();
            out.push(vec![(theme.rule, rule.join("─┼─"))]);
        }
    }
    Some(out)
}

/// The body rows as records, one paragraph per row, one logical line per
/// cell: `header: value`.
pub(crate) fn as_records(t: &Table, theme: &MarkdownTheme) -> Vec<Vec<Vec<Seg>>> {
    let header: Vec<Vec<Seg>> = t
        .rows
        .first()
        .filter(|_| t.head_rows > 0)
        .cloned()
        .unwrap_or_default();
    t.rows
        .iter()
        .skip(t.head_rows)
        .map(|row| {
            row.iter()
                .enumerate()
                .map(|(c, cell)| {
                    let mut line: Vec<Seg> = header
                        .get(c)
                        .map(|h| {
                            h.iter()
                                .map(|(s, t)| (s.patch(theme.table_header), t.clone()))
                                .collect()
                        })
                        .unwrap_or_default();
                    if !line.is_empty() {
                        line.push((theme.table_header, ": ".to_owned()));
                    }
                    line.extend(cell.iter().cloned());
                    line
                })
                .collect()
        })
        .collect()
}
