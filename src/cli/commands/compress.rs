//! `strata compress ID` (with `--preview`, `--keep-last`, `--up-to`,
//! `--summary-file`), `strata undo-compress ID`, `strata undo-edit ID` and
//! `strata undo-edit-message ID`.

use super::{Env, UsageError, print_json};
use crate::cli::args::{CompressArgs, SummarizerValue, UndoCompressArgs, UndoEditArgs, UndoEditMessageArgs};
use anyhow::Context as _;
use std::io::{Read as _, Write};
use std::path::Path;
use strata::compress::{SummarizerChoice, Trigger};
use strata::runtime::{CompressOutcome, CompressRequest, SummarizerArg, compress_topic, connect};

pub fn compress(env: &Env, args: &CompressArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    if !args.dry_run && !args.preview {
        runtime.refuse_if_held(&session)?;
    }
    let (choice, _) = runtime.apply_served_window(env.choice_for(&session)?);
    // A llama.cpp server counts the session's texts itself, so
    // `tokens_before` is the figure `strata context` shows.
    runtime.precount_session_blocking(&session, &choice);
    let summarizer = match args.summarizer {
        None => SummarizerArg::Config,
        Some(SummarizerValue::Model) => SummarizerArg::Model,
        Some(SummarizerValue::Extractive) => SummarizerArg::Extractive,
    };
    let summary = args.summary_file.as_deref().map(read_summary).transpose()?;
    if args.keep_last == Some(0) {
        return Err(UsageError(
            "--keep-last needs at least 1: the last request and its reply always stay verbatim".to_owned(),
        )
        .into());
    }
    let up_to = match &args.up_to {
        Some(msg) => Some(super::message_arg::resolve(&runtime, &session, msg)?.id),
        None => None,
    };
    let needs_model = !args.dry_run
        && summary.is_none()
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
        keep_last: args.keep_last,
        up_to,
        summary_edited: summary.is_some(),
        summary,
        preview: args.preview,
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
            "compaction {id} · summarizer {}{} · undo with `strata undo-compress {}`",
            outcome.summarizer.as_ref().map_or("none", |s| s.as_str()),
            if outcome.edited { " · edited summary" } else { "" },
            session.id
        )?;
    } else if outcome.preview && !outcome.noop {
        write_preview(&mut out, &outcome, &session.id.to_string())?;
    } else if outcome.dry_run && !outcome.noop {
        writeln!(out, "dry run: nothing was changed")?;
    }
    Ok(())
}

/// The summary body of `--summary-file` (`-`: standard input).
fn read_summary(path: &Path) -> anyhow::Result<String> {
    let shown = path.display();
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the summary from standard input")?;
        text
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the summary file {shown}; check the path"))?
    };
    if text.trim().is_empty() {
        let from = if path == Path::new("-") {
            "standard input".to_owned()
        } else {
            format!("the file {shown}")
        };
        return Err(UsageError(format!(
            "the summary in {from} is empty; write the summary's text (the `summary` of `strata compress ID --preview --json` is a start)"
        ))
        .into());
    }
    Ok(text)
}

/// A preview for people: the summary, what stays verbatim, how to apply it.
fn write_preview(out: &mut impl Write, outcome: &CompressOutcome, session: &str) -> std::io::Result<()> {
    use crate::cli::output::printable;
    let summary = outcome.summary.as_deref().unwrap_or_default();
    writeln!(
        out,
        "\n--- summary ---\n{}\n--- end of summary ---\n",
        printable(summary)
    )?;
    writeln!(out, "kept verbatim ({} messages):", outcome.kept_verbatim.len())?;
    for kept in &outcome.kept_verbatim {
        let role = kept.role.as_str();
        let tools = if kept.tools.is_empty() {
            String::new()
        } else {
            format!(" [{}]", kept.tools.join(", "))
        };
        writeln!(
            out,
            "  {:>4}  {role:<9} {:>7}  {}{tools}",
            kept.pos,
            strata::text::group_digits(u64::from(kept.tokens)),
            printable(&kept.preview)
        )?;
    }
    writeln!(
        out,
        "preview: nothing was changed; store this summary (edited or not) with `strata compress {session} --summary-file FILE`"
    )
}

/// Ctrl-C stopped a compression before anything was stored.
#[derive(Debug, thiserror::Error)]
#[error("cancelled; the session is unchanged")]
pub struct Cancelled;

pub fn undo_compress(env: &Env, args: &UndoCompressArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    runtime.refuse_if_held(&session)?;
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

pub fn undo_edit_message(env: &Env, args: &UndoEditMessageArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    runtime.refuse_if_held(&session)?;
    let undone = runtime.undo_edit_message(&session)?;
    if args.json {
        return print_json(&undone);
    }
    writeln!(
        std::io::stdout().lock(),
        "Undid the edit {}: {} messages sent after it archived, {} restored · {} active messages",
        undone.edit_id,
        undone.archived,
        undone.restored,
        undone.messages
    )?;
    Ok(())
}

pub fn undo_edit(env: &Env, args: &UndoEditArgs) -> anyhow::Result<()> {
    let mut runtime = env.runtime()?;
    let session = runtime.find_session(&args.id)?;
    runtime.refuse_if_held(&session)?;
    let line = runtime.undo_edit(&session)?;
    writeln!(std::io::stdout().lock(), "{line}").context("cannot write to stdout")?;
    Ok(())
}
