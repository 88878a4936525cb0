//! `strata compress ID` and `strata undo-compress ID`.

use super::{Env, print_json};
use crate::cli::args::{CompressArgs, SummarizerValue, UndoCompressArgs, UndoEditArgs};
use anyhow::Context as _;
use std::io::Write;
use strata::compress::{SummarizerChoice, Trigger};
use strata::runtime::{CompressRequest, SummarizerArg, compress_topic, connect};

pub fn compress(env: &Env, args: &CompressArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let (choice, _) = runtime.apply_served_window(env.choice_for(&session)?);
    let summarizer = match args.summarizer {
        None => SummarizerArg::Config,
        Some(SummarizerValue::Model) => SummarizerArg::Model,
        Some(SummarizerValue::Extractive) => SummarizerArg::Extractive,
    };
    let needs_model = !args.dry_run
        && matches!(
            runtime.summarizer_choice(&session, summarizer),
            SummarizerChoice::Model(_)
        );
    let lookup = |name: &str| std::env::var(name).ok();
    let connected = if needs_model {
        Some(connect(&choice, &env.paths, &env.config, &lookup, &mut |line| {
            eprintln!("strata: {line}");
        })?)
    } else {
        None
    };
    let topic = match args.topic.as_deref().map(compress_topic).transpose() {
        Ok(topic) => topic.flatten(),
        Err(why) => return Err(super::UsageError(why).into()),
    };
    let request = CompressRequest {
        force: args.force,
        trigger: Trigger::Manual,
        topic,
        summarizer,
        dry_run: args.dry_run,
        choice: &choice,
        provider: connected.as_ref().map(|c| c.provider.as_ref()),
    };
    if needs_model && !args.json {
        eprintln!("strata: summarising with {} …", choice.model);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Ctrl-C stops the summariser; nothing is stored until it has answered.
    let outcome = rt.block_on(async {
        tokio::select! {
            outcome = runtime.compress(&session, &request) => Some(outcome),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    let Some(outcome) = outcome else {
        return Err(Cancelled.into());
    };
    let outcome = outcome?;
    if args.json {
        return print_json(&outcome);
    }
    for w in &outcome.warnings {
        eprintln!("strata: warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", outcome.feedback)?;
    if let Some(id) = outcome.compaction_id {
        writeln!(
            out,
            "compaction {id} · summarizer {} · undo with `strata undo-compress {}`",
            outcome.summarizer.as_ref().map_or("none", |s| s.as_str()),
            session.id
        )?;
    } else if outcome.dry_run && !outcome.noop {
        writeln!(out, "dry run: nothing was changed")?;
    }
    Ok(())
}

/// Ctrl-C stopped a compression before anything was stored.
#[derive(Debug, thiserror::Error)]
#[error("cancelled; the session is unchanged")]
pub struct Cancelled;

pub fn undo_compress(env: &Env, args: &UndoCompressArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let undone = runtime.undo_compress(&session)?;
    if args.json {
        return print_json(&undone);
    }
    writeln!(
        std::io::stdout().lock(),
        "Undid compaction {} · {} active messages · system prompt version {}",
        undone.compaction_id,
        undone.messages,
        undone.prompt_version
    )?;
    Ok(())
}

pub fn undo_edit(env: &Env, args: &UndoEditArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    let line = runtime.undo_edit(&session)?;
    writeln!(std::io::stdout().lock(), "{line}").context("cannot write to stdout")?;
    Ok(())
}
