//! `strata chat MESSAGE`: one turn, streamed to stdout, persisted.

use super::{Env, workspace_dir};
use crate::cli::args::ChatArgs;
use anyhow::Context as _;
use serde_json::json;
use std::io::{Read, Write};
use strata::domain::{MessageStatus, Session};
use strata::runtime::{ChatOutput, NewSession, Runtime, connect, resolve_mode};

pub fn chat(env: &Env, args: &ChatArgs) -> anyhow::Result<()> {
    let result = turn(env, args);
    if args.json
        && let Err(e) = &result
    {
        // Scripts reading the event stream see the failure there too.
        let line = json!({"type": "error", "message": crate::cli::output::sentence(e)});
        let _ = writeln!(std::io::stdout(), "{line}");
    }
    result
}

fn turn(env: &Env, args: &ChatArgs) -> anyhow::Result<()> {
    let text = message_text(&args.message)?;
    let cwd = workspace_dir(args.workspace.as_deref())?;
    let mut runtime = env.runtime()?;
    let existing = existing_session(&mut runtime, args, &cwd)?;
    let choice = match &existing {
        Some(session) if env.provider.is_none() && env.model.is_none() => env.choice_for(session)?,
        _ => env.choice()?,
    };
    let mode = resolve_mode(env.prompt_mode, &env.config, choice.context_window);
    let lookup = |name: &str| std::env::var(name).ok();
    // Connect first: a provider that cannot be used leaves no empty session behind.
    let connected = connect(&choice, &env.paths, &env.config, &lookup, &mut |line| {
        eprintln!("strata: {line}");
    })?;
    let session = match existing {
        Some(session) => session,
        None => new_session(&mut runtime, &choice, mode, &cwd, &text)?,
    };
    let mut conversation = runtime.open_conversation(&session, &choice, mode, connected.counter)?;

    let mut printer = Printer {
        out: std::io::stdout().lock(),
        json: args.json,
        saw_text: false,
        failed: None,
    };
    printer.json_line(json!({"type": "start", "session_id": session.id}));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = rt.block_on(async {
        let cancel = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        runtime
            .chat_turn(
                &mut conversation,
                connected.provider.as_ref(),
                text,
                cancel,
                &mut |out| printer.show(&out),
            )
            .await
    })?;
    let status = serde_json::to_value(outcome.status)?;
    printer.json_line(json!({"type": "done", "session_id": outcome.session_id, "status": status}));
    printer.finish()?;
    match (outcome.status, outcome.error) {
        (MessageStatus::Complete, _) => Ok(()),
        (_, Some(e)) => Err(e.into()),
        (MessageStatus::Interrupted, None) => Err(anyhow::anyhow!(
            "the reply was interrupted; the partial reply is kept in the session"
        )),
        (_, None) => Err(match outcome.message {
            Some(message) => anyhow::anyhow!("{message}"),
            None => anyhow::anyhow!("the reply failed; the message is kept in the session, try again"),
        }),
    }
}

/// The message: the words joined by spaces, or standard input for `-`.
fn message_text(words: &[String]) -> anyhow::Result<String> {
    let text = if words.len() == 1 && words[0] == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read the message from standard input")?;
        s
    } else {
        words.join(" ")
    };
    if text.trim().is_empty() {
        return Err(super::UsageError("the message is empty; type something to send".to_owned()).into());
    }
    Ok(text)
}

/// The session named by `--session`, else (without `--new`) the latest
/// session of the workspace; `None` when a new one is wanted.
fn existing_session(
    runtime: &mut Runtime,
    args: &ChatArgs,
    cwd: &std::path::Path,
) -> anyhow::Result<Option<Session>> {
    if let Some(id) = &args.session {
        return Ok(Some(runtime.find_session(id)?));
    }
    if args.new {
        return Ok(None);
    }
    let root = strata::workspace::workspace_root(cwd);
    Ok(runtime.latest_session(&root.to_string_lossy())?)
}

/// A new session titled after the first message.
fn new_session(
    runtime: &mut Runtime,
    choice: &strata::config::ModelChoice,
    mode: strata::domain::PromptMode,
    cwd: &std::path::Path,
    text: &str,
) -> anyhow::Result<Session> {
    let title = strata::runtime::title_from(&[strata::domain::Message::new(
        strata::domain::SessionId::new(),
        strata::domain::Role::User,
        text,
        0,
    )]);
    let (session, _, warnings) = runtime.create_session(NewSession {
        cwd,
        choice,
        mode,
        title,
        now: &jiff::Zoned::now(),
        interactive: false,
        env: strata::prompt::EnvFacts::from_process(),
    })?;
    for w in warnings {
        eprintln!("strata: warning: {w}");
    }
    Ok(session)
}

/// Writes a turn's output as text or JSON lines, remembering the first
/// write error (a closed pipe) instead of aborting the turn, so the reply is
/// still stored completely.
struct Printer<'a> {
    out: std::io::StdoutLock<'a>,
    json: bool,
    saw_text: bool,
    failed: Option<std::io::Error>,
}

impl Printer<'_> {
    fn write(&mut self, text: &str) {
        if self.failed.is_none()
            && let Err(e) = self
                .out
                .write_all(text.as_bytes())
                .and_then(|()| self.out.flush())
        {
            self.failed = Some(e);
        }
    }

    fn json_line(&mut self, value: serde_json::Value) {
        if self.json {
            self.write(&format!("{value}\n"));
        }
    }

    fn show(&mut self, out: &ChatOutput<'_>) {
        match out {
            ChatOutput::Delta(t) => {
                self.saw_text = true;
                if self.json {
                    self.json_line(json!({"type": "delta", "text": t}));
                } else {
                    self.write(t);
                }
            }
            ChatOutput::Usage(u) => self.json_line(json!({
                "type": "usage",
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "cache_read_tokens": u.cache_read_tokens,
                "cache_write_tokens": u.cache_write_tokens,
                "estimated_prompt_tokens": u.estimated_prompt_tokens,
                "estimated": u.prompt_tokens.is_none(),
            })),
            ChatOutput::Error(message) => self.json_line(json!({"type": "error", "message": message})),
            // The terminal shows progress as it arrives; phases are for the app.
            ChatOutput::Phase(_) | ChatOutput::Stored(_) | ChatOutput::Compacted { .. } => {}
            ChatOutput::Notice(message) => {
                if self.json {
                    self.json_line(json!({"type": "notice", "message": message}));
                } else {
                    eprintln!("strata: {message}");
                }
            }
            ChatOutput::Compressed(outcome) => {
                if self.json {
                    let mut event = serde_json::to_value(outcome).unwrap_or_default();
                    event["type"] = json!("compressed");
                    self.json_line(event);
                } else {
                    eprintln!("strata: {}", outcome.feedback);
                }
            }
        }
    }

    fn finish(mut self) -> std::io::Result<()> {
        if !self.json && self.saw_text {
            self.write("\n");
        }
        self.failed.map_or(Ok(()), Err)
    }
}
