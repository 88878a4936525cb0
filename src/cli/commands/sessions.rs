//! `strata sessions`, `strata show`, `strata export`.

use super::{Env, print_json};
use crate::cli::args::{ExportArgs, ExportFormat, SessionsArgs, ShowArgs};
use crate::cli::output::{local_time, thousands};
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
    let list = runtime.store.list_sessions(&SessionQuery {
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
    writeln!(
        out,
        "{:<8}  {:<16}  {:>6}  {:>9}  {:<24}  title",
        "id", "updated", "msgs", "tokens", "model"
    )?;
    for s in &list {
        let id = s.id.to_string();
        writeln!(
            out,
            "{:<8}  {:<16}  {:>6}  {:>9}  {:<24}  {}",
            &id[id.len() - 8..],
            local_time(s.updated_at),
            s.messages,
            thousands(s.tokens),
            format!("{}/{}", s.provider, s.model),
            s.title
        )?;
    }
    Ok(())
}

pub fn show(env: &Env, args: &ShowArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.store.find_session(&args.id)?;
    let prompt = runtime.store.current_prompt(session.id)?;
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
    write!(out, "{}", export_markdown(&session, prompt.as_ref(), &messages))?;
    Ok(())
}

pub fn export(env: &Env, args: &ExportArgs) -> anyhow::Result<()> {
    let runtime = env.runtime()?;
    let session = runtime.store.find_session(&args.id)?;
    let prompt = runtime.store.current_prompt(session.id)?;
    let messages = runtime.store.messages(session.id, false)?;
    match args.format {
        ExportFormat::Json => print_json(&export_json(&session, prompt.as_ref(), &messages)),
        ExportFormat::Md => {
            let mut out = std::io::stdout().lock();
            write!(out, "{}", export_markdown(&session, prompt.as_ref(), &messages))?;
            Ok(())
        }
    }
}
