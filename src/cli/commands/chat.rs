//! `strata chat MESSAGE`: one turn, streamed to stdout, persisted; with
//! `--edit MSG`, an earlier user message is edited and the turn resent from
//! there (the edit is undone again when the text could not be sent).

use super::{Env, workspace_dir};
use crate::cli::args::ChatArgs;
use anyhow::Context as _;
use serde_json::json;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use strata::domain::{Message, MessageStatus, Role, Session, SessionId};
use strata::runtime::service::{Launch, Opening, ServiceEvent, Sink, ToolEvent};
use strata::runtime::{EditOutcome, Op, SessionHandle};

pub fn chat(env: &Env, args: &ChatArgs) -> anyhow::Result<()> {
    let result = turn(env, args);
    // A turn that failed has said so in its event stream already.
    if args.json
        && let Err(e) = &result
        && e.downcast_ref::<TurnFailed>().is_none()
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
    // Bad ids and unknown providers are usage errors, found before anything
    // is opened or sent.
    let choice = env.choice()?;
    let (opening, edit) = match (&args.session, args.continue_latest) {
        (Some(id), _) => {
            let runtime = env.runtime()?;
            let session = runtime.find_session(id)?;
            // The message edited, found before anything is opened.
            let edit = match &args.edit {
                Some(msg) => Some(super::message_arg::resolve(&runtime, &session, msg)?.id),
                None => None,
            };
            (Opening::Resume(session.id.to_string()), edit)
        }
        (None, true) => (Opening::Continue, None),
        (None, false) => (Opening::New, None),
    };
    let printer = Arc::new(Mutex::new(Printer {
        out: std::io::stdout(),
        json: args.json,
        terminal: std::io::IsTerminal::is_terminal(&std::io::stdout()),
        saw_text: false,
        failed: None,
        session: None,
        status: None,
        interruption: None,
        error: None,
        edited: None,
        unsent: false,
        continuing: opening != Opening::New,
        before_session: Vec::new(),
        closed: Arc::new(tokio::sync::Notify::new()),
        approval: String::new(),
    }));
    let closed = printer
        .lock()
        .map(|p| Arc::clone(&p.closed))
        .map_err(|_| anyhow::anyhow!("the output could not be set up; try again"))?;
    let shown = Arc::clone(&printer);
    let sink: Sink = Arc::new(move |event| {
        if let Ok(mut p) = shown.lock() {
            p.show(event);
        }
    });
    let mut config = env.config.clone();
    if let Some(tools) = args.tools {
        config.tools.enabled = Some(tools == crate::cli::args::OnOff::On);
    }
    if let Some(approve) = &args.approve {
        config.tools.approval = approve.as_str().to_owned();
    }
    if let Some(sandbox) = args.sandbox {
        config.tools.sandbox.mode = sandbox.as_str().to_owned();
    }
    if args.network {
        config.tools.sandbox.network = true;
    }
    if let Ok(mut p) = printer.lock() {
        p.approval.clone_from(&config.tools.approval);
    }
    if strata::runtime::tools_state(&config, &choice).on {
        let lines = mcp_json_notice(env, &cwd)?;
        if let Ok(mut p) = printer.lock() {
            lines.into_iter().for_each(|line| p.say(line));
        }
    }
    let launch = Launch {
        paths: env.paths.clone(),
        config,
        provider: env.provider.clone(),
        model: env.model.clone(),
        prompt_mode: env.prompt_mode,
        opening: opening.clone(),
        cwd,
        env: Arc::new(|name: &str| std::env::var(name).ok()),
        interactive: false,
    };
    let allowed: Vec<std::path::PathBuf> = args.attach.iter().map(|p| attach_path(p)).collect();
    if let Some((given, _)) = args.attach.iter().zip(&allowed).find(|(_, p)| !p.exists()) {
        return Err(super::UsageError(format!(
            "--attach {} names nothing that exists (relative paths are taken from the current directory); give the path of a file or directory",
            given.display()
        ))
        .into());
    }
    let consent = strata::runtime::AttachConsent {
        allowed,
        answered: true,
    };
    // Connect first: a provider that cannot be used leaves no empty
    // session behind (the session is created when the message is sent).
    let handle = SessionHandle::open(launch, sink)?;
    if args.take_over {
        handle.send(Op::Run(strata::runtime::service::Command::TakeOver));
    }
    handle.send(match edit {
        Some(message) => Op::EditSend { message, text },
        None => Op::Send { text, consent },
    });
    let canceller = handle.canceller();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let sent = rt.block_on(async {
        let mut finished = tokio::task::spawn_blocking(move || handle.finish());
        // Ctrl-C, or a reader that went away (`| head`): the turn stops
        // and the partial reply is stored as interrupted.
        loop {
            tokio::select! {
                finished = &mut finished => {
                    return finished.unwrap_or_else(|_| Err(anyhow::anyhow!("the session's thread failed; the reply so far is kept in the session")));
                }
                _ = tokio::signal::ctrl_c() => canceller.cancel(),
                () = closed.notified() => canceller.cancel(),
            }
        }
    });
    sent?;
    let mut p = printer
        .lock()
        .map_err(|_| anyhow::anyhow!("the output was lost; the reply is kept in the session"))?;
    let status = p.status.unwrap_or(MessageStatus::Error);
    // A reply the stream broke off is a failure, not a cancel: `error`,
    // with how it stopped beside it.
    let interruption = p.interruption.filter(|_| status == MessageStatus::Interrupted);
    let shown = match interruption {
        Some(strata::domain::Interruption::Failed) => MessageStatus::Error,
        _ => status,
    };
    let mut done = json!({"type": "done", "session_id": p.session, "status": serde_json::to_value(shown)?});
    if let Some(how) = interruption {
        done["interruption"] = json!(how.as_str());
    }
    p.json_line(done);
    let error = p.error.take();
    p.finish()?;
    let message = match (status, error) {
        // A reply that ended with a problem (e.g. the output limit) is
        // complete; the problem is still said.
        (MessageStatus::Complete, Some(message)) => {
            if !p.json {
                eprintln!("strata: {}", crate::cli::output::printable(&message));
            }
            return Ok(());
        }
        (MessageStatus::Complete, None) => return Ok(()),
        // A new session whose first message failed was not kept.
        (_, Some(message)) if p.unsent && !p.continuing => {
            return Err(TurnFailed(format!("{message}; no session was kept")).into());
        }
        (_, Some(message)) => return Err(TurnFailed(message).into()),
        (MessageStatus::Interrupted, None) => {
            "the reply was interrupted; the partial reply is kept in the session"
        }
        (_, None) => "the reply failed; the message is kept in the session, try again",
    };
    p.json_line(json!({"type": "error", "message": message}));
    Err(TurnFailed(message.to_owned()).into())
}

/// An `--attach` path as the mentions are compared with it: `~/…` in the
/// home directory, a relative path in the current directory.
fn attach_path(path: &std::path::Path) -> std::path::PathBuf {
    if let (Ok(rest), Some(home)) = (path.strip_prefix("~"), dirs::home_dir()) {
        return home.join(rest);
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The lines for stderr that say, once, that the workspace's `.mcp.json`
/// awaits acceptance (its servers are not started) and what is wrong with it.
fn mcp_json_notice(env: &Env, cwd: &std::path::Path) -> anyhow::Result<Vec<String>> {
    use crate::cli::output::printable;
    let root = strata::workspace::workspace_root(cwd);
    let workspace = env.runtime()?.workspace_mcp(&root);
    let mut lines: Vec<String> = (workspace.warnings.iter())
        .map(|warning| format!("warning: {}", printable(warning)))
        .collect();
    if let Some(pending) = &workspace.pending {
        lines.push(printable(&pending.message).into_owned());
    }
    Ok(lines)
}

/// The `edited` event of `--json` and the line of text mode, for an edit
/// in session `session`.
fn edited_line(o: &EditOutcome, session: Option<SessionId>) -> (serde_json::Value, String) {
    let mut event = serde_json::to_value(o).unwrap_or_default();
    event["type"] = json!("edited");
    // The text is the turn's own message, sent next.
    if let Some(map) = event.as_object_mut() {
        map.remove("text");
    }
    let id = session.map_or_else(|| "ID".to_owned(), |s| s.short());
    let line = format!(
        "edited message {}: it and the {} after it are archived (`strata undo-edit-message {id}` brings them back)",
        o.pos,
        o.archived.saturating_sub(1),
    );
    (event, line)
}

/// What follows `NAME denied` on stderr: why, and the flag or rule that
/// allows such a call (headless runs never ask).
fn denied_hint(name: &str, approval: &str) -> String {
    let policy = match approval {
        "" | "ask" => "read-only".to_owned(),
        other => other.to_owned(),
    };
    format!(
        " (approval is {policy} and headless runs never ask); `--approve all` or [tools] allow = [\"{name}\"] in the config lets it run, unless a [tools] deny rule names it"
    )
}

/// A turn that ended without a complete reply; its sentence is already in
/// the `--json` event stream.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct TurnFailed(String);

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

/// Writes a turn's output as text or JSON lines, remembering the first
/// write error instead of aborting the turn; a closed pipe cancels the turn,
/// whose partial reply is stored as interrupted.
struct Printer {
    out: std::io::Stdout,
    json: bool,
    /// Stdout is a terminal: the reply is written with its controls shown
    /// (a pipe gets the bytes as they came).
    terminal: bool,
    saw_text: bool,
    failed: Option<std::io::Error>,
    /// The session, once known (`start` is printed then).
    session: Option<SessionId>,
    /// How the turn ended.
    status: Option<MessageStatus>,
    /// How the turn's last reply stopped, when it was interrupted.
    interruption: Option<strata::domain::Interruption>,
    /// The last problem of the turn, one sentence.
    error: Option<String>,
    /// The edit the turn resends from: its `edited` event and its line,
    /// said once the session is known.
    edited: Option<(serde_json::Value, String)>,
    /// The service gave the text back: nothing was stored.
    unsent: bool,
    /// The turn continues a session (`-c`, `--session`) rather than
    /// starting one.
    continuing: bool,
    /// Lines for stderr said before the session is known: they follow
    /// the line naming it, which comes first.
    before_session: Vec<String>,
    /// Told when stdout is closed (`EPIPE`): the turn is cancelled, since
    /// nobody reads the rest of the reply.
    closed: Arc<tokio::sync::Notify>,
    /// The run's `[tools] approval` (after `--approve`), for the line that
    /// says how to allow a denied call.
    approval: String,
}

impl Drop for Printer {
    /// A turn that never got a session still says what it had to say.
    fn drop(&mut self) {
        for line in self.before_session.drain(..) {
            eprintln!("strata: {line}");
        }
    }
}

impl Printer {
    /// Writes `line` to stderr as `strata: line`, after the line naming
    /// the session.
    fn say(&mut self, line: String) {
        if self.session.is_some() {
            eprintln!("strata: {line}");
        } else {
            self.before_session.push(line);
        }
    }

    /// The first line on stderr: which session the turn is in.
    fn name_session(&mut self, session: &Session) {
        if !self.json {
            let how = if self.continuing {
                "continuing session"
            } else {
                "new session"
            };
            let title = crate::cli::output::printable(&session.title);
            eprintln!("strata: {how} {} \"{title}\"", session.id.short());
        }
        for line in std::mem::take(&mut self.before_session) {
            eprintln!("strata: {line}");
        }
    }

    /// The edit the turn resends from, once.
    fn say_edited(&mut self) {
        if let Some((event, line)) = self.edited.take() {
            if self.json {
                self.json_line(event);
            } else {
                eprintln!("strata: {line}");
            }
        }
    }

    fn write(&mut self, text: &str) {
        if self.failed.is_none()
            && let Err(e) = self
                .out
                .write_all(text.as_bytes())
                .and_then(|()| self.out.flush())
        {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                // Remembered until the turn waits for it.
                self.closed.notify_one();
            }
            self.failed = Some(e);
        }
    }

    fn json_line(&mut self, value: serde_json::Value) {
        if self.json {
            self.write(&format!("{value}\n"));
        }
    }

    fn show(&mut self, event: ServiceEvent) {
        match event {
            ServiceEvent::Loaded(view) => {
                // `-c` with no session to continue starts a new one.
                if self.session.is_none() && view.session.is_none() {
                    self.continuing = false;
                }
                if let (None, Some(session)) = (self.session, view.session.as_ref()) {
                    self.session = Some(session.id);
                    self.json_line(json!({"type": "start", "session_id": session.id, "title": session.title}));
                    self.name_session(session);
                    self.say_edited();
                }
            }
            ServiceEvent::Edited(edit) => {
                self.edited = Some(edited_line(&edit, self.session));
                if self.session.is_some() {
                    self.say_edited();
                }
            }
            ServiceEvent::Delta { text, .. } => {
                self.saw_text = true;
                if self.json {
                    self.json_line(json!({"type": "delta", "text": text}));
                } else if self.terminal {
                    // The model's text is untrusted: a terminal shows its
                    // escape sequences rather than acting on them.
                    self.write(&strata::text::visible(&text));
                } else {
                    self.write(&text);
                }
            }
            ServiceEvent::Usage(u) => self.json_line(json!({
                "type": "usage",
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "cache_read_tokens": u.cache_read_tokens,
                "cache_write_tokens": u.cache_write_tokens,
                "estimated_prompt_tokens": u.estimated_prompt_tokens,
                "estimated": u.prompt_tokens.is_none(),
            })),
            ServiceEvent::Error(message) => {
                self.json_line(json!({"type": "error", "message": message}));
                self.error = Some(message);
            }
            // Progress of a slow start goes to stderr, as it happens.
            ServiceEvent::Progress(line) => eprintln!("strata: {line}"),
            ServiceEvent::Notice(message) => {
                if self.json {
                    self.json_line(json!({"type": "notice", "message": message}));
                } else {
                    self.say(message);
                }
            }
            ServiceEvent::Compressed(outcome) => {
                if self.json {
                    let mut event = serde_json::to_value(&outcome).unwrap_or_default();
                    event["type"] = json!("compressed");
                    self.json_line(event);
                } else {
                    self.say(outcome.feedback);
                }
            }
            ServiceEvent::TurnDone { status } => self.status = Some(status),
            // Nothing was stored (an edit was undone, or a new session's
            // first message failed and no session was kept).
            ServiceEvent::Unsent(_) => self.unsent = true,
            ServiceEvent::Message(m) => {
                if m.role == Role::Assistant && m.status != MessageStatus::Streaming {
                    self.interruption = m.interruption;
                }
                self.show_tool_message(&m);
            }
            ServiceEvent::Tool(ToolEvent::Started { call, summary, .. }) if !self.json => {
                eprintln!("strata: running {} {summary}", call.name);
            }
            // For clients that keep a view of the session.
            ServiceEvent::Connected { .. }
            | ServiceEvent::Tool(_)
            | ServiceEvent::Context(_)
            | ServiceEvent::Tokens(_)
            | ServiceEvent::StreamStarted { .. }
            | ServiceEvent::Phase(_)
            | ServiceEvent::CommandDone
            | ServiceEvent::DraftTokens { .. }
            | ServiceEvent::Sessions { .. }
            | ServiceEvent::Request(_)
            | ServiceEvent::Stale(_)
            | ServiceEvent::CompressPreview(_)
            | ServiceEvent::ContextList(_)
            | ServiceEvent::Choices { .. }
            // Answers to the app's `/tools` and `/mcp`.
            | ServiceEvent::ToolList(_)
            | ServiceEvent::McpList(_)
            // Headless runs are never asked (`--attach` decides).
            | ServiceEvent::AttachAsk(_) => {}
        }
    }

    /// `tool_call` events for a stored reply's calls, `tool_result` for a
    /// stored result (text mode: one line on stderr per result).
    fn show_tool_message(&mut self, m: &Message) {
        if m.role == Role::Assistant && m.status != MessageStatus::Streaming {
            for call in &m.tool_calls {
                self.json_line(json!({
                    "type": "tool_call",
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }));
            }
        }
        let (Role::Tool, Some(meta)) = (m.role, m.tool.as_ref()) else {
            return;
        };
        let id = m.tool_call_id.as_deref().unwrap_or("");
        if self.json {
            self.json_line(json!({
                "type": "tool_result",
                "id": id,
                "name": meta.name,
                "status": meta.status.as_str(),
                "tokens": m.tokens.as_ref().map(|t| t.tokens),
                "truncated": meta.truncated,
                "previewed": meta.previewed,
                "spilled_to": meta.spilled_to,
                "duration_ms": meta.duration_ms,
                "sandbox": meta.sandbox,
                "network": meta.sandbox.is_some().then_some(meta.network),
            }));
        } else {
            let spilled = meta
                .spilled_to
                .as_deref()
                .map_or_else(String::new, |p| format!(", whole output in {p}"));
            let cut = if meta.truncated { ", truncated" } else { "" };
            let allow = if meta.status == strata::domain::ToolStatus::Denied {
                denied_hint(&meta.name, &self.approval)
            } else {
                String::new()
            };
            eprintln!(
                "strata: {} {}{cut}{spilled}{allow}",
                meta.name,
                meta.status.as_str()
            );
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if !self.json && self.saw_text {
            self.write("\n");
        }
        self.failed.take().map_or(Ok(()), Err)
    }
}
