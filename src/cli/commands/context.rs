//! `strata context ID`: the token budget of a session's next request
//! (`--list`: the context list's rows, see `control`).

use super::{Env, print_json};
use crate::cli::args::ContextArgs;
use crate::cli::output::thousands;
use std::io::Write;

pub fn context(env: &Env, args: &ContextArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let (choice, _) = runtime.apply_served_window(env.choice_for(&session)?);
    // A llama.cpp server counts the session's texts itself.
    runtime.precount_session_blocking(&session, &choice);
    // The MCP servers' tools are part of the next request: count them from
    // the servers themselves.
    let workspace = std::path::PathBuf::from(&session.workspace);
    let servers = (!args.no_mcp && strata::runtime::tools_state(&env.config, &choice).on)
        .then(|| runtime.workspace_mcp(&workspace).config)
        .filter(|c| !c.servers.is_empty());
    let mcp = if let Some(servers) = servers {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let lookup = |name: &str| std::env::var(name).ok();
        eprintln!(
            "strata: starting {} MCP server(s) to count their tools (--no-mcp skips them)…",
            servers.servers.values().filter(|s| s.enabled).count()
        );
        let mcp = rt.block_on(runtime.start_mcp(&servers, &workspace, &lookup));
        let result = if args.list {
            super::control::context_list(&mut runtime, &session, &choice, mcp.as_ref(), args).map(|()| None)
        } else {
            runtime
                .context_report(&session, &choice, mcp.as_ref())
                .map(Some)
                .map_err(Into::into)
        };
        if let Some(mcp) = &mcp {
            rt.block_on(mcp.shutdown());
        }
        match result? {
            Some(report) => Some(report),
            None => return Ok(()),
        }
    } else {
        None
    };
    if args.list && mcp.is_none() {
        return super::control::context_list(&mut runtime, &session, &choice, None, args);
    }
    let report = match mcp {
        Some(report) => report,
        None => runtime.context_report(&session, &choice, None)?,
    };
    if args.json {
        return print_json(&report.to_json());
    }
    let b = &report.budget;
    let approx = if b.exact { "" } else { "~" };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} · {} · window {} · tokenizer {}{}",
        session.title,
        report.model,
        thousands(b.window),
        b.tokenizer,
        if b.exact { "" } else { " (estimate)" }
    )?;
    let c = &b.categories;
    for (name, cat) in [
        ("stable", &c.stable),
        ("context", &c.context),
        ("volatile", &c.volatile),
        ("tools", &c.tools),
        ("history", &c.history),
        ("reserved_output", &c.reserved_output),
        ("free", &c.free),
    ] {
        let share = if b.window == 0 {
            0.0
        } else {
            cat.tokens as f64 * 100.0 / b.window as f64
        };
        writeln!(
            out,
            "{name:<16} {approx}{:>10}  {share:5.1}%",
            thousands(cat.tokens)
        )?;
        let by_server = report.tool_servers.as_ref().filter(|t| t.mcp().next().is_some());
        match by_server {
            Some(servers) if name == "tools" => {
                for server in &servers.servers {
                    let deferred = server.tools.iter().filter(|t| t.deferred).count();
                    let state = match server.status.as_str() {
                        "ready" | "builtin" if deferred > 0 => format!(" ({deferred} deferred)"),
                        "ready" | "builtin" => String::new(),
                        other => format!(" ({other})"),
                    };
                    writeln!(
                        out,
                        "  {:<40} {approx}{:>8}",
                        format!("{}{state}", server.name),
                        thousands(server.tokens)
                    )?;
                    for tool in &server.tools {
                        let mark = if tool.deferred { " (deferred)" } else { "" };
                        writeln!(
                            out,
                            "    {:<38} {approx}{:>8}",
                            format!("{}{mark}", tool.name),
                            thousands(tool.tokens)
                        )?;
                    }
                }
                match servers.deferred_saving_tokens {
                    0 => {}
                    saved if saved > 0 => {
                        writeln!(out, "  deferral saves {approx}{saved} tokens per request")?
                    }
                    cost => writeln!(
                        out,
                        "  deferral costs {approx}{} tokens per request (the bridge tools outweigh the tools they stand in for)",
                        cost.unsigned_abs()
                    )?,
                }
            }
            _ => {
                for item in &cat.items {
                    writeln!(out, "  {:<40} {approx}{:>8}", item.name, thousands(item.tokens))?;
                }
            }
        }
    }
    writeln!(
        out,
        "next request (as sent): {approx}{} input tokens · calibrated to the provider's counts: {approx}{} (×{:.3})",
        thousands(report.input_tokens),
        thousands(report.calibrated_input_tokens),
        report.calibration_ratio
    )?;
    let prelimit = report
        .prelimit_tokens
        .map_or_else(|| "–".to_owned(), |t| format!("{approx}{}", thousands(t)));
    writeln!(
        out,
        "before the limit: {prelimit} (what the compression threshold is compared with) · stored history with the system prompt: {approx}{}",
        thousands(report.stored_tokens)
    )?;
    if let Some(why) = &report.prepare_error {
        writeln!(out, "the next request cannot be prepared: {why}")?;
    }
    writeln!(
        out,
        "threshold: requested {approx}{} · effective {approx}{} · cache boundary after {approx}{} tokens",
        thousands(b.threshold.requested),
        thousands(b.threshold.effective),
        thousands(b.boundary_tokens)
    )?;
    Ok(())
}
