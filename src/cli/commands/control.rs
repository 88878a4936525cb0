//! `strata pin|unpin|exclude|include ID MSG` and `strata context ID --list`:
//! the user's pins and exclusions, and the context list's rows.

use super::{Env, print_json};
use crate::cli::args::{ContextArgs, ControlArgs};
use crate::cli::output::{pad, printable, thousands, width};
use std::io::{BufWriter, Write};
use strata::domain::Role;
use strata::pipeline::{ContextRow, RowState, keep_tool_outputs, sort_by_cost};
use strata::runtime::ControlAction;

pub fn control(env: &Env, args: &ControlArgs, action: ControlAction) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    runtime.refuse_if_held(&session)?;
    let outcome = match action {
        ControlAction::Pin | ControlAction::Unpin => {
            // The half-window rule uses the window the server serves.
            let (choice, _) = runtime.apply_served_window(env.choice_for(&session)?);
            // The pinned size is counted as `strata context` counts it.
            runtime.precount_session_blocking(&session, &choice);
            runtime.set_pin(&session, &choice, &args.msg, action == ControlAction::Pin)?
        }
        ControlAction::Exclude | ControlAction::Include => {
            runtime.set_excluded(&session, &args.msg, action == ControlAction::Exclude)?
        }
    };
    if args.json {
        return print_json(&outcome);
    }
    writeln!(std::io::stdout(), "{}", outcome.sentence())?;
    Ok(())
}

/// `strata context ID --list [--by-cost] [--tools] [--json]`.
pub fn context_list(
    runtime: &mut strata::runtime::Runtime,
    session: &strata::domain::Session,
    choice: &strata::config::ModelChoice,
    mcp: Option<&strata::runtime::McpSession>,
    args: &ContextArgs,
) -> anyhow::Result<()> {
    let mut rows = runtime.context_rows(session, choice, mcp)?;
    if args.tools {
        keep_tool_outputs(&mut rows);
    }
    if args.by_cost {
        sort_by_cost(&mut rows);
    }
    if args.json {
        return print_json(&rows);
    }
    print_rows(&rows)
}

/// The state column: `kept`, `truncated 1,200→300`, `summarised`, ….
fn state(row: &ContextRow) -> String {
    match row.state {
        RowState::Kept => "kept".to_owned(),
        RowState::Truncated { from, to } => {
            format!(
                "truncated {}→{}",
                thousands(u64::from(from)),
                thousands(u64::from(to))
            )
        }
        RowState::Pruned => "pruned".to_owned(),
        RowState::Dropped => "dropped".to_owned(),
        RowState::Excluded => "excluded".to_owned(),
        RowState::Pinned => "pinned".to_owned(),
        RowState::Summarised { .. } => "summarised".to_owned(),
        RowState::Archived { .. } => "archived".to_owned(),
    }
}

/// The aligned table: pos · role · state · tokens · preview.
fn print_rows(rows: &[ContextRow]) -> anyhow::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    if rows.is_empty() {
        writeln!(out, "No messages.")?;
        out.flush()?;
        return Ok(());
    }
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            let role = match (r.role, r.tools.first()) {
                (Role::Tool, Some(name)) => format!("tool {name}"),
                (role, _) => role.as_str().to_owned(),
            };
            [
                r.pos.map_or_else(|| "–".to_owned(), |p| p.to_string()),
                printable(&role).into_owned(),
                state(r),
                thousands(u64::from(r.tokens)),
                printable(&r.preview).into_owned(),
            ]
        })
        .collect();
    let header = ["pos", "role", "state", "tokens", "preview"];
    let widths: Vec<usize> = (0..4)
        .map(|c| {
            cells
                .iter()
                .map(|row| width(&row[c]))
                .max()
                .unwrap_or(0)
                .max(header[c].len())
        })
        .collect();
    let right = |text: &str, w: usize| format!("{}{text}", " ".repeat(w.saturating_sub(width(text))));
    writeln!(
        out,
        "{}  {}  {}  {}  {}",
        right(header[0], widths[0]),
        pad(header[1], widths[1]),
        pad(header[2], widths[2]),
        right(header[3], widths[3]),
        header[4]
    )?;
    for row in &cells {
        writeln!(
            out,
            "{}  {}  {}  {}  {}",
            right(&row[0], widths[0]),
            pad(&row[1], widths[1]),
            pad(&row[2], widths[2]),
            right(&row[3], widths[3]),
            row[4]
        )?;
    }
    out.flush()?;
    Ok(())
}
