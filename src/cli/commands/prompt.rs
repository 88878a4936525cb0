//! `strata prompt`: the system prompt a new session in a workspace would get.

use super::{Env, print_json, workspace_dir};
use crate::cli::args::{ClientArg, PromptArgs};
use crate::cli::output::thousands;
use std::io::Write;
use strata::prompt::EnvFacts;
use strata::runtime::{PromptPreview, resolve_mode};

pub fn prompt(env: &Env, args: &PromptArgs) -> anyhow::Result<()> {
    let cwd = workspace_dir(args.workspace.as_deref())?;
    let choice = env.choice()?;
    let explicit = args.mode.map(Into::into).or(env.prompt_mode);
    let mode = resolve_mode(explicit, &env.config, choice.context_window);
    let runtime = env.existing_runtime()?;
    let preview = PromptPreview {
        paths: &env.paths,
        config: &env.config,
        choice: &choice,
        mode,
        cwd: &cwd,
        now: &jiff::Zoned::now(),
        interactive: args.client == ClientArg::App,
        env: EnvFacts::from_process(),
    };
    let built = match &runtime {
        Some(runtime) => runtime.preview_prompt(preview)?,
        None => preview.build(None)?,
    };
    let a = &built;
    if args.json {
        return print_json(a);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", a.text)?;
    let client = match args.client {
        ClientArg::App => "the app's",
        ClientArg::Headless => "strata chat's",
    };
    writeln!(
        out,
        "\n── {client} prompt (--for app|headless) · {} layers · {} tokens ({}) · {} mode · sha256 {} ──",
        a.layers.len(),
        thousands(a.total_tokens as u64),
        a.tokenizer,
        mode.as_str(),
        &a.sha256[..12]
    )?;
    writeln!(
        out,
        "{:<9} {:<15} {:>15} {:>8}  sources",
        "tier", "layer", "bytes", "tokens"
    )?;
    for l in &a.layers {
        let sources = l
            .sources
            .iter()
            .map(|s| format!("{} ({})", s.path, s.status.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(
            out,
            "{:<9} {:<15} {:>15} {:>8}  {}",
            l.tier.as_str(),
            l.name.as_str(),
            format!("{}..{}", l.start, l.end),
            thousands(l.tokens as u64),
            sources
        )?;
    }
    match a.boundary_offset {
        Some(off) => {
            let before: usize = a.layers.iter().filter(|l| l.end <= off).map(|l| l.tokens).sum();
            writeln!(
                out,
                "cache boundary at byte {} ({} tokens before it are the cacheable prefix)",
                thousands(off as u64),
                thousands(before as u64)
            )?;
        }
        None => writeln!(out, "no cache boundary (no volatile layers)")?,
    }
    if !a.warnings.is_empty() {
        writeln!(out, "warnings:")?;
        for w in &a.warnings {
            writeln!(out, "  - {w}")?;
        }
    }
    Ok(())
}
