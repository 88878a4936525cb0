//! `strata mcp list|add|remove|accept|decline`.

use super::{Env, UsageError, print_json, workspace_dir};
use crate::cli::args::{McpAddArgs, McpCommand, McpListArgs, McpTrustArgs};
use crate::cli::output::{printable, thousands};
use std::io::Write;
use strata::config::mcp::edit;
use strata::runtime::mcp_setup;

pub fn mcp(env: &Env, command: &McpCommand) -> anyhow::Result<()> {
    match command {
        McpCommand::List(args) => list(env, args),
        McpCommand::Add(args) => add(env, args),
        McpCommand::Accept(args) => decide(env, args, true),
        McpCommand::Decline(args) => decide(env, args, false),
        McpCommand::Remove(args) => {
            let path = env.paths.config_file();
            edit::remove_from_file(&path, &args.name).map_err(edit_error)?;
            writeln!(
                std::io::stdout(),
                "removed MCP server `{}` from {}",
                args.name,
                path.display()
            )?;
            Ok(())
        }
    }
}

/// A bad request is a usage error (exit 2); a file that cannot be
/// written is not (exit 1).
fn edit_error(e: edit::FileEditError) -> anyhow::Error {
    match e {
        edit::FileEditError::Invalid(why) => UsageError(why).into(),
        edit::FileEditError::Io(why) => anyhow::anyhow!(why),
    }
}

fn add(env: &Env, args: &McpAddArgs) -> anyhow::Result<()> {
    let vars = args
        .env
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
            _ => Err(UsageError(format!(
                "--env {pair} is not NAME=VALUE; write it as --env NAME=VALUE"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let Some((command, rest)) = args.command.split_first() else {
        return Err(UsageError("give the server's command after `--`".to_owned()).into());
    };
    let path = env.paths.config_file();
    edit::add_to_file(&path, &args.name, command, rest, &vars).map_err(edit_error)?;
    let cwd = workspace_dir(None)?;
    let path_var = std::env::var("PATH").ok();
    if let Err(why) = strata::mcp::resolve_program(&args.name, command, path_var.as_deref(), &cwd) {
        eprintln!("strata: warning: {why}");
    }
    writeln!(
        std::io::stdout(),
        "added MCP server `{}` to {}",
        args.name,
        path.display()
    )?;
    Ok(())
}

/// `strata mcp accept|decline`: the decision on the `.mcp.json` at the
/// workspace's root, then what the workspace starts now.
fn decide(env: &Env, args: &McpTrustArgs, accept: bool) -> anyhow::Result<()> {
    let root = workspace_root(args.workspace.as_deref())?;
    let mut runtime = env.runtime()?;
    let said = if accept {
        runtime.accept_mcp_json(&root)
    } else {
        runtime.decline_mcp_json(&root)
    }
    .map_err(UsageError)?;
    writeln!(std::io::stdout(), "{}", printable(&said))?;
    for warning in runtime.workspace_mcp(&root).warnings {
        eprintln!("strata: warning: {}", printable(&warning));
    }
    Ok(())
}

/// The workspace root of `--workspace DIR` or the current directory.
fn workspace_root(dir: Option<&std::path::Path>) -> anyhow::Result<std::path::PathBuf> {
    Ok(strata::workspace::workspace_root(&workspace_dir(dir)?))
}

fn list(env: &Env, args: &McpListArgs) -> anyhow::Result<()> {
    let choice = env.choice()?;
    let cwd = workspace_dir(args.workspace.as_deref())?;
    // Servers start at the workspace root, as in a session.
    let root = workspace_root(Some(&cwd))?;
    let workspace = env.runtime()?.workspace_mcp(&root);
    for warning in &workspace.warnings {
        eprintln!("strata: warning: {}", printable(warning));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let lookup = |name: &str| std::env::var(name).ok();
    let listing = rt.block_on(mcp_setup::list(
        &env.config,
        &workspace,
        &env.paths,
        &choice,
        &root,
        &lookup,
    ));
    if args.json {
        return print_json(&listing);
    }
    let mut out = std::io::stdout().lock();
    let approx = if listing.exact { "" } else { "~" };
    if let Some(pending) = &listing.pending_mcp_json {
        writeln!(out, "{}", printable(&pending.message))?;
    }
    if listing.servers.is_empty() {
        writeln!(
            out,
            "no MCP servers are configured; add one with strata mcp add NAME -- COMMAND ARGS…"
        )?;
        return Ok(());
    }
    let form = if listing.wire_form == "anthropic" {
        "Anthropic tool"
    } else {
        "OpenAI function"
    };
    let whose = if listing.provider == strata::domain::ProviderKind::Local {
        format!("in the {form} form (the embedded model has no tool calling)")
    } else {
        format!("as {} receives it ({form} form)", listing.provider)
    };
    writeln!(
        out,
        "tokens of each tool {whose}, counted with {}{} · servers settled in {:.1} s",
        listing.tokenizer,
        if listing.exact { "" } else { " (estimate)" },
        listing.ready_ms as f64 / 1000.0
    )?;
    for server in &listing.servers {
        let what = match server.status {
            "ready" => format!(
                "{} tools  {approx}{} tokens",
                server.tools.len(),
                thousands(server.tokens)
            ),
            _ => server.why.clone().unwrap_or_default(),
        };
        let from = match server.source {
            strata::runtime::McpSource::McpJson => "  (.mcp.json)",
            strata::runtime::McpSource::Config => "",
        };
        writeln!(
            out,
            "{:<16} {:<12} {}{from}",
            printable(&server.name),
            server.status,
            printable(&what)
        )?;
        if server.status == "ready" {
            let rule = if server.trust_annotations {
                "its annotations are trusted (trust_annotations = true): a tool it marks readOnlyHint runs without asking".to_owned()
            } else {
                format!(
                    "its annotations are not trusted: every tool is approved like shell (set [mcp.servers.{}] trust_annotations = true to believe them)",
                    server.name
                )
            };
            writeln!(out, "  approval: {}", printable(&rule))?;
        }
        for tool in &server.tools {
            let access = match (tool.access, tool.read_only_hint) {
                ("read-only", _) => "  read-only",
                (_, true) => "  asks (its readOnlyHint is not believed)",
                _ => "  asks",
            };
            writeln!(
                out,
                "  {:<40} {approx}{:>7}{access}",
                printable(&tool.wire_name),
                thousands(tool.tokens),
            )?;
        }
        if !server.filtered_out.is_empty() {
            writeln!(
                out,
                "  left out by allow_tools/deny_tools: {}",
                printable(&server.filtered_out.join(", "))
            )?;
        }
        for w in &server.warnings {
            writeln!(out, "  warning: {}", printable(w))?;
        }
        for line in &server.stderr_tail {
            writeln!(out, "  | {}", printable(line))?;
        }
    }
    Ok(())
}
