//! `strata sessions`, `strata show`, `strata export`.

use super::{Env, print_json};
use crate::cli::args::{ExportArgs, ExportFormat, SessionsArgs, ShowArgs};
use crate::cli::output::{local_time, pad, printable, thousands, width};
use serde_json::json;
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use strata::domain::{ProviderKind, SessionId, SessionSummary};
use strata::runtime::{export_json, export_markdown, show_markdown};
use strata::store::SessionQuery;

/// Bytes buffered before the table is written out.
const OUT_BUFFER: usize = 64 * 1024;

/// A row of `strata sessions --json`: the listed session with its short id.
#[derive(serde::Serialize)]
struct Listed<'a> {
    id: SessionId,
    short_id: String,
    title: &'a str,
    workspace: &'a str,
    model: &'a str,
    provider: ProviderKind,
    messages: u64,
    tokens: u64,
    created_at: i64,
    updated_at: i64,
}

impl<'a> From<&'a SessionSummary> for Listed<'a> {
    fn from(s: &'a SessionSummary) -> Self {
        Self {
            id: s.id,
            short_id: s.id.short(),
            title: &s.title,
            workspace: &s.workspace,
            model: &s.model,
            provider: s.provider,
            messages: s.messages,
            tokens: s.tokens,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

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
        return print_json(&list.iter().map(Listed::from).collect::<Vec<_>>());
    }
    let mut out = BufWriter::with_capacity(OUT_BUFFER, std::io::stdout().lock());
    if list.is_empty() {
        writeln!(out, "No sessions match.")?;
        out.flush()?;
        return Ok(());
    }
    let ids = shown_ids(&list);
    let zone = jiff::tz::TimeZone::system();
    let models: Vec<String> = list
        .iter()
        .map(|s| printable(&format!("{}/{}", s.provider, s.model)).into_owned())
        .collect();
    let id_width = ids.iter().map(|i| i.len()).max().unwrap_or(0).max(2);
    let model_width = models.iter().map(|m| width(m)).max().unwrap_or(0).max(5);
    writeln!(
        out,
        "{}  {:<16}  {:>6}  {:>9}  {}  title",
        pad("id", id_width),
        "updated",
        "msgs",
        "tokens",
        pad("model", model_width),
    )?;
    for ((s, id), model) in list.iter().zip(&ids).zip(&models) {
        writeln!(
            out,
            "{}  {:<16}  {:>6}  {:>9}  {}  {}",
            pad(id, id_width),
            local_time(s.updated_at, &zone),
            s.messages,
            thousands(s.tokens),
            pad(model, model_width),
            printable(&s.title)
        )?;
    }
    out.flush()?;
    Ok(())
}

pub fn show(env: &Env, args: &ShowArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let prompt = runtime.current_prompt(session.id)?;
    // A llama.cpp server counts the session's texts itself, as `strata
    // context` shows them; without a usable provider, strata's own counts.
    if let Ok(choice) = env.choice_for(&session) {
        let (choice, _) = runtime.apply_served_window(choice);
        runtime.precount_session_blocking(&session, &choice);
    }
    let messages = runtime.counted_messages(&session, args.archived)?;
    if args.json {
        let mut pos = 0;
        let messages: Vec<_> = messages
            .iter()
            .map(|m| {
                // Position among the active messages, as MSG arguments take it.
                let here = m.archived_by.is_none().then(|| {
                    pos += 1;
                    pos
                });
                json!({
                    "id": m.id, "pos": here, "seq": m.seq, "role": m.role, "content": m.content,
                    "tool_calls": m.tool_calls, "tool_call_id": m.tool_call_id, "kind": m.kind,
                    "status": m.status, "interruption": m.interruption, "archived_by": m.archived_by, "pinned": m.pinned,
                    "excluded": m.excluded,
                    "tokens": m.tokens.as_ref().map(|t| t.tokens),
                    "tool": m.tool,
                })
            })
            .collect();
        return print_json(&json!({
            "session": session,
            "short_id": session.id.short(),
            "system_prompt": prompt.as_ref().map(|p| json!({"version": p.version, "sha256": p.sha256, "text": p.text})),
            "messages": messages,
        }));
    }
    let mut out = std::io::stdout().lock();
    write!(
        out,
        "{}",
        printable(&show_markdown(&session, prompt.as_ref(), &messages))
    )?;
    Ok(())
}

pub fn export(env: &Env, args: &ExportArgs) -> anyhow::Result<()> {
    use std::io::IsTerminal as _;
    if args.raw && std::io::stdout().is_terminal() {
        return Err(super::UsageError(
            "--raw writes escape sequences as they were stored, which a terminal would act on; redirect it to a file or a program (strata export ID --raw > FILE)".to_owned(),
        )
        .into());
    }
    let runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let prompt = runtime.current_prompt(session.id)?;
    let messages = runtime.messages(session.id, false)?;
    match args.format {
        ExportFormat::Json => print_json(&export_json(&session, prompt.as_ref(), &messages)),
        ExportFormat::Md => {
            let text = export_markdown(&session, prompt.as_ref(), &messages);
            let mut out = std::io::stdout().lock();
            if args.raw {
                write!(out, "{text}")?;
            } else {
                write!(out, "{}", printable(&text))?;
            }
            Ok(())
        }
    }
}

/// The id to show for each session: its short id, or its full id when
/// another listed session has the same short id, so every id shown can be
/// typed back as a session id.
fn shown_ids(list: &[SessionSummary]) -> Vec<String> {
    let shorts: Vec<String> = list.iter().map(|s| s.id.short()).collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for short in &shorts {
        *seen.entry(short.as_str()).or_default() += 1;
    }
    list.iter()
        .zip(&shorts)
        .map(|(s, short)| {
            if seen.get(short.as_str()).copied().unwrap_or(0) > 1 {
                s.id.to_string()
            } else {
                short.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::shown_ids;
    use strata::domain::{ProviderKind, SessionSummary};

    fn summary(id: &str) -> SessionSummary {
        SessionSummary {
            id: id.parse().unwrap(),
            title: String::new(),
            workspace: String::new(),
            model: String::new(),
            provider: ProviderKind::OpenAi,
            messages: 0,
            tokens: 0,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn short_ids_are_shown_unless_two_listed_sessions_share_one() {
        let list = [
            summary("0190c3a0-0000-7000-8000-00001a2b3c4d"),
            summary("0190c3a0-0000-7000-8000-00005e6f7a8b"),
            summary("0190f000-0000-7000-8000-00005e6f7a8b"),
        ];
        assert_eq!(
            shown_ids(&list),
            [
                "1a2b3c4d",
                "0190c3a0-0000-7000-8000-00005e6f7a8b",
                "0190f000-0000-7000-8000-00005e6f7a8b"
            ]
        );
    }
}
