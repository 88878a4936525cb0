//! `strata sessions`, `strata show`, `strata export`.

use super::{Env, print_json};
use crate::cli::args::{ExportArgs, ExportFormat, SessionsArgs, ShowArgs};
use crate::cli::output::{local_time, printable, thousands};
use serde_json::json;
use std::io::Write;
use strata::runtime::{export_json, export_markdown};
use strata::store::SessionQuery;

pub fn sessions(env: &Env, args: &SessionsArgs) -> anyhow::Result<()> {
    let Some(runtime) = env.existing_runtime()? else {
        return if args.json {
            print_json(&json!([]))
        } else {
            Ok(writeln!(std::io::stdout(), "No sessions yet.")?)
        };
    };
    let list = runtime.list_sessions(&SessionQuery {
        search: args.search.clone(),
        workspace: None,
        limit: args.limit,
    })?;
    if args.json {
        return print_json(&list);
    }
    let mut out = std::io::stdout().lock();
    if list.is_empty() {
        writeln!(out, "No sessions match.")?;
        return Ok(());
    }
    let width = prefix_width(list.iter().map(|s| s.id.to_string()));
    writeln!(
        out,
        "{:<w$}  {:<16}  {:>6}  {:>9}  {:<24}  title",
        "id",
        "updated",
        "msgs",
        "tokens",
        "model",
        w = width
    )?;
    for s in &list {
        let id = s.id.to_string();
        writeln!(
            out,
            "{:<width$}  {:<16}  {:>6}  {:>9}  {:<24}  {}",
            &id[..width],
            local_time(s.updated_at),
            s.messages,
            thousands(s.tokens),
            format!("{}/{}", s.provider, s.model),
            printable(&s.title)
        )?;
    }
    Ok(())
}

pub fn show(env: &Env, args: &ShowArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let prompt = runtime.current_prompt(session.id)?;
    let messages = runtime.counted_messages(&session, args.archived)?;
    if args.json {
        let messages: Vec<_> = messages
            .iter()
            .map(|m| {
                json!({
                    "id": m.id, "seq": m.seq, "role": m.role, "content": m.content,
                    "tool_calls": m.tool_calls, "tool_call_id": m.tool_call_id, "kind": m.kind,
                    "status": m.status, "archived_by": m.archived_by, "pinned": m.pinned,
                    "tokens": m.tokens.as_ref().map(|t| t.tokens),
                    "tool": m.tool,
                })
            })
            .collect();
        return print_json(&json!({
            "session": session,
            "system_prompt": prompt.as_ref().map(|p| json!({"version": p.version, "sha256": p.sha256, "text": p.text})),
            "messages": messages,
        }));
    }
    let mut out = std::io::stdout().lock();
    write!(
        out,
        "{}",
        printable(&export_markdown(&session, prompt.as_ref(), &messages))
    )?;
    Ok(())
}

pub fn export(env: &Env, args: &ExportArgs) -> anyhow::Result<()> {
    let runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let prompt = runtime.current_prompt(session.id)?;
    let messages = runtime.messages(session.id, false)?;
    match args.format {
        ExportFormat::Json => print_json(&export_json(&session, prompt.as_ref(), &messages)),
        ExportFormat::Md => {
            let mut out = std::io::stdout().lock();
            write!(out, "{}", export_markdown(&session, prompt.as_ref(), &messages))?;
            Ok(())
        }
    }
}

/// The shortest prefix length (at least 8) that tells all `ids` apart, so
/// every id shown can be typed back as a session id.
fn prefix_width(ids: impl Iterator<Item = String>) -> usize {
    let mut ids: Vec<String> = ids.collect();
    ids.sort();
    let common = ids
        .windows(2)
        .map(|w| w[0].bytes().zip(w[1].bytes()).take_while(|(a, b)| a == b).count())
        .max()
        .unwrap_or(0);
    (common + 1).clamp(8, 36)
}

#[cfg(test)]
mod tests {
    use super::prefix_width;

    #[test]
    fn prefixes_are_long_enough_to_be_unique() {
        let ids = ["01a2284e-66c5-70a7", "01a2284e-66d0-7000", "ffff0000-0000-0000"].map(String::from);
        assert_eq!(prefix_width(ids.into_iter()), 12);
        assert_eq!(prefix_width(["abc".to_owned()].into_iter()), 8);
    }
}
