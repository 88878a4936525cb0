//! `shell`: `bash -c` in the workspace, in its own process group.
//!
//! The command runs in the workspace root with stdin `/dev/null`, no
//! terminal, a pager-free and prompt-free environment, and strata's
//! environment less every variable whose name holds `KEY`, `TOKEN`,
//! `SECRET` or `PASSWORD` ([`command_env`]). Its stdout and stderr share
//! one pipe (as `2>&1`), so the output reads in the order it was written;
//! it is captured with bounded memory ([`super::capture`]) and streamed to
//! the caller's progress callback. The result ends with the exit code, the
//! signal, or the timeout.
//!
//! Processes: with [`super::ShellLimits::supervisor`] set the command is
//! held by `strata __supervise` ([`super::supervisor`]), a child subreaper
//! that ends every process below it — its own process group, and what left
//! it with `setsid` or a double fork — when bash ends, when strata stops it
//! (SIGTERM on timeout or cancel, then SIGKILL after
//! [`supervisor::STOP_WAIT`] if it has not ended), and when strata dies,
//! even by SIGKILL. It reports how many processes it stopped, and the
//! result says so. Each running group is also recorded in
//! [`super::ShellLimits::registry`] for the start-up [`super::sweep`].
//! Without a supervisor (tests of the library) the command gets its own
//! group, killed (SIGKILL) on timeout, on cancel and when the command ends.
//!
//! Sandbox: with [`super::ShellLimits::sandbox`] and a supervisor, the
//! supervisor confines the command ([`super::sandbox`]) as the session's
//! [`crate::tooling::sandbox::Confinement`] says for this call, and puts back the protected files
//! it changed ([`super::protect`]); the result names each. `TMPDIR` is the
//! session's private directory, and with the network off the variables
//! naming sockets ([`super::sandbox::SOCKET_ENV`]) are removed.

use super::capture::{Capture, Captured};
use super::protect::{Restored, Why};
use super::sandbox::{SOCKET_ENV, Spec};
use super::supervisor::Report;
use super::sweep::{Proc, Record};
use super::{Progress, ShellLimits, ShellSandbox, ToolEnv, ToolOutput, spill_path, supervisor};
use crate::tooling::ToolStatus;
use crate::tooling::sandbox::{CallSandbox, Mode};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;
use std::ffi::OsString;
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep_until};

/// The fewest milliseconds between two progress reports (at most 10 a second).
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// How long output is still read once the command ended and its group was
/// killed (a process outside the group may hold the pipe open).
const DRAIN: Duration = Duration::from_millis(500);

/// Bytes read from the pipe at once.
const READ_CHUNK: usize = 64 * 1024;

/// Variables set for every command so nothing waits for a person.
pub const FIXED_ENV: &[(&str, &str)] = &[
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// Words that mark a variable as a secret (its name holds one, any case).
pub const SECRET_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD"];

/// The command's environment made from `vars` (strata's own): every
/// variable whose name holds one of [`SECRET_WORDS`] (any case) removed,
/// then [`FIXED_ENV`] set.
#[must_use]
pub fn command_env(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy().to_ascii_uppercase();
            !SECRET_WORDS.iter().any(|w| name.contains(w))
                && !FIXED_ENV.iter().any(|(fixed, _)| name == *fixed)
        })
        .collect();
    env.extend(
        FIXED_ENV
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value))),
    );
    env
}

/// Runs `args.command` with `bash -c` in `env.root` (see the module doc).
///
/// `args`: `{"command": string, "timeout"?: seconds}`; the timeout
/// defaults to `env.shell.default_timeout_s` and may be 1 to
/// `env.shell.max_timeout_s`. The output is the command's stdout and
/// stderr, then a line `[exit code N]`, `[killed by signal N (NAME)]` or
/// the timeout; when larger than [`Capture::bound`] bytes it is spilled
/// whole to [`spill_path`] and only its ends are kept. `progress` gets the
/// latest output line, at most 10 times a second. Status `Ok` for exit
/// code 0, `Error` otherwise (the output is kept) and for bad arguments or
/// a command that could not start.
pub async fn run(env: &ToolEnv, tool_call_id: &str, args: &Value, progress: Progress) -> ToolOutput {
    let (command, timeout_s) = match parse_args(args, &env.shell) {
        Ok(parsed) => parsed,
        Err(sentence) => return ToolOutput::error(sentence),
    };
    let sandbox = env
        .shell
        .sandbox
        .as_ref()
        .filter(|_| env.shell.supervisor.is_some())
        .map(|s| (s, s.confinement.for_call(args)));
    let (mut group, mut reader) = match start(env, command, sandbox) {
        Ok(started) => started,
        Err(e) => {
            return ToolOutput::error(format!(
                "The command could not be started ({e}); check that bash is installed and the workspace directory exists."
            ));
        }
    };
    let mut capture = Capture::new(
        spill_path(env, tool_call_id),
        env.keep_chars,
        crate::tooling::limits::Limits::DEFAULT.max_line_chars,
    );
    let mut buf = vec![0; READ_CHUNK];
    let deadline = Instant::now() + Duration::from_secs(timeout_s);
    let mut reported: Option<Instant> = None;
    let mut pending = false;
    let mut eof = false;
    let mut ended: Option<(Ending, Instant)> = None;
    loop {
        let report_at = reported.map_or_else(Instant::now, |at| at + PROGRESS_EVERY);
        let drain_until = ended.as_ref().map_or(deadline, |(_, at)| *at + DRAIN);
        tokio::select! {
            read = reader.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    capture.push(&buf[..n]);
                    pending = true;
                }
            },
            status = group.child.wait(), if ended.is_none() => {
                group.reaped();
                group.kill();
                let ending = status.map_or(Ending::Lost, Ending::Exited);
                ended = Some((ending, Instant::now()));
            },
            () = sleep_until(deadline), if ended.is_none() => {
                group.end().await;
                ended = Some((Ending::TimedOut, Instant::now()));
            },
            () = sleep_until(report_at), if pending => {
                pending = false;
                reported = Some(Instant::now());
                if let Some(line) = capture.last_line() {
                    progress(&line);
                }
            },
            () = sleep_until(drain_until), if ended.is_some() && !eof => eof = true,
        }
        if eof && ended.is_some() {
            break;
        }
    }
    if pending && let Some(line) = capture.last_line() {
        progress(&line);
    }
    group.done();
    let report = group.report();
    let ending = ended.map_or(Ending::Lost, |(ending, _)| ending);
    let mut output = finish(capture.finish(), &ending, &report, timeout_s, &env.shell);
    output.sandbox = sandbox.map(|(s, call)| {
        let label = s.confinement.label(call);
        crate::tooling::sandbox::RanIn {
            label,
            // Outside the sandbox nothing holds the network back.
            network: call.network || label == crate::tooling::sandbox::Label::Off,
        }
    });
    output
}

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
    /// Waiting for it failed.
    Lost,
}

/// The command and its timeout in seconds, or the sentence for the model.
fn parse_args<'a>(args: &'a Value, limits: &ShellLimits) -> Result<(&'a str, u64), String> {
    let command = match args.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.as_str(),
        _ => {
            return Err(
                "The `shell` tool needs a non-empty `command` string to run with `bash -c`, for example {\"command\": \"ls -la\"}."
                    .to_owned(),
            );
        }
    };
    let max = limits.max_timeout_s.max(1);
    let timeout = match args.get("timeout") {
        None | Some(Value::Null) => limits.default_timeout_s.clamp(1, max),
        Some(value) => match whole_seconds(value) {
            Some(s) if (1..=max).contains(&s) => s,
            _ => {
                return Err(format!(
                    "The `timeout` of `shell` must be a whole number of seconds from 1 to {max} (it was {value}); call it again with a timeout in that range, or without one for the default of {} s.",
                    limits.default_timeout_s.clamp(1, max)
                ));
            }
        },
    };
    Ok((command, timeout))
}

/// A timeout given as an integer, a float without fraction or a string of
/// digits.
fn whole_seconds(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// What the supervisor applies for a call that runs under `call`: `None`
/// outside the sandbox.
fn spec(root: &std::path::Path, sandbox: &ShellSandbox, call: CallSandbox) -> Option<Spec> {
    let mut writable = Vec::new();
    if call.mode == Mode::WorkspaceWrite {
        writable.push(root.to_path_buf());
        writable.extend(sandbox.writable.iter().cloned());
    }
    writable.extend([sandbox.tmpdir.clone(), "/dev/shm".into(), "/dev/null".into()]);
    (call.mode != Mode::Off).then(|| Spec {
        mode: call.mode,
        network: call.network,
        required: sandbox.required,
        writable,
        protect: (call.mode == Mode::WorkspaceWrite).then(|| root.to_path_buf()),
    })
}

/// The command's environment: strata's ([`command_env`]), with `TMPDIR`
/// the session's directory and, when the network is off, no variable
/// naming a socket.
fn sandbox_env(
    mut vars: Vec<(OsString, OsString)>,
    sandbox: Option<(&ShellSandbox, CallSandbox)>,
) -> Vec<(OsString, OsString)> {
    let Some((sandbox, call)) = sandbox else {
        return vars;
    };
    vars.retain(|(name, _)| name != "TMPDIR" && (call.network || !SOCKET_ENV.iter().any(|s| name == *s)));
    vars.push(("TMPDIR".into(), sandbox.tmpdir.clone().into_os_string()));
    vars
}

/// Starts the command in its own process group, with the pipe's reading
/// end.
fn start(
    env: &ToolEnv,
    command: &str,
    sandbox: Option<(&ShellSandbox, CallSandbox)>,
) -> std::io::Result<(Group, pipe::Receiver)> {
    let (reader, writer) = std::io::pipe()?;
    let mut report = None;
    let mut cmd = match &env.shell.supervisor {
        Some(strata) => {
            // The supervisor's stdin is a socket it reports on; bash gets
            // /dev/null.
            let (ours, theirs) = UnixStream::pair()?;
            let mut cmd = Command::new(strata);
            let spec = sandbox.and_then(|(s, call)| spec(&env.root, s, call));
            cmd.args(supervisor::args(std::process::id(), command, true, spec.as_ref()))
                .stdin(Stdio::from(OwnedFd::from(theirs)));
            report = Some(ours);
            cmd
        }
        None => {
            let mut cmd = Command::new("bash");
            cmd.arg("-c").arg(command).process_group(0).stdin(Stdio::null());
            cmd
        }
    };
    cmd.current_dir(&env.root)
        .env_clear()
        .envs(sandbox_env(
            command_env(
                std::env::vars_os()
                    .filter(|(name, _)| !env.shell.hidden_env.iter().any(|h| name == h.as_str())),
            ),
            sandbox,
        ))
        .stdout(writer.try_clone()?)
        .stderr(writer);
    let child = cmd.spawn()?;
    // Our copies of the pipe's writing end go with the command, so the
    // reader sees the end once the command's processes close theirs.
    drop(cmd);
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| std::io::Error::other("the command ended before it could be watched"))?;
    let mut group = Group {
        child,
        pid: Some(Pid::from_raw(pid)),
        pgid: Pid::from_raw(pid),
        supervisor: report.is_some().then(|| Proc::of(pid)).flatten(),
        report,
        record: None,
        armed: true,
    };
    if let (Some(registry), Some(leader), Some(owner)) = (&env.shell.registry, Proc::of(pid), Proc::current())
    {
        group.record = Record::create(registry, leader, owner).ok();
    }
    let reader = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok((group, reader))
}

/// A running command: its process (the supervisor, or bash) and its
/// process group; ended when dropped unless [`Group::done`].
struct Group {
    child: Child,
    /// The child's pid until it was reaped (it may be reused after).
    pid: Option<Pid>,
    /// The group's id (the child's pid: bash directly, or the supervisor).
    pgid: Pid,
    /// The supervisor as the kernel knows it (`None` without one).
    supervisor: Option<Proc>,
    /// The socket the supervisor reports on (`None` without one).
    report: Option<UnixStream>,
    /// Its record in the registry, removed with it.
    record: Option<Record>,
    armed: bool,
}

impl Group {
    /// SIGKILL to the child (the supervisor may not have made its group
    /// yet; once killed it never will), then to the whole group.
    fn kill(&self) {
        if let Some(pid) = self.pid {
            let _ = kill(pid, Signal::SIGKILL);
        }
        let _ = killpg(self.pgid, Signal::SIGKILL);
    }

    /// Asks the command to end: SIGTERM to a supervisor still running (it
    /// sweeps every process below it, then exits), the kill otherwise.
    /// `true` when the supervisor was asked.
    fn stop(&self) -> bool {
        match (self.pid, self.supervisor) {
            (Some(pid), Some(_)) => kill(pid, Signal::SIGTERM).is_ok(),
            _ => {
                self.kill();
                false
            }
        }
    }

    /// Ends the command and waits for it: [`Group::stop`], then a
    /// supervisor that has not ended within [`supervisor::STOP_WAIT`] is
    /// killed with its group.
    async fn end(&mut self) {
        if self.stop()
            && tokio::time::timeout(supervisor::STOP_WAIT, self.child.wait())
                .await
                .is_ok()
        {
            self.reaped();
            // Nothing should be left; a member that is, goes.
            self.kill();
            return;
        }
        self.kill();
        let _ = self.child.wait().await;
        self.reaped();
    }

    /// The child was waited for: its pid is no longer ours.
    fn reaped(&mut self) {
        self.pid = None;
    }

    /// The command ended and its group was killed: nothing is left to kill.
    fn done(&mut self) {
        self.armed = false;
        self.record = None;
    }

    /// What the supervisor reported when the command ended (read once it
    /// has ended; empty without a supervisor).
    fn report(&mut self) -> Report {
        let Some(mut socket) = self.report.take() else {
            return Report::default();
        };
        if socket.set_nonblocking(true).is_err() {
            return Report::default();
        }
        let mut text = String::new();
        let _ = socket.read_to_string(&mut text);
        supervisor::parse_report(&text)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match self.supervisor.filter(|_| self.pid.is_some()) {
            Some(proc) if self.stop() => stop_later(proc, self.pgid),
            _ => self.kill(),
        }
    }
}

/// After a cancel: waits up to [`supervisor::STOP_WAIT`] on a thread of
/// its own for the supervisor told to stop to end, then kills it (SIGKILL)
/// with its group. A supervisor that ends is followed by the kill of its
/// group's leftovers (none, unless it was killed itself).
fn stop_later(supervisor: Proc, pgid: Pid) {
    let waited = std::thread::Builder::new()
        .name("strata-shell-stop".to_owned())
        .spawn(move || {
            let deadline = std::time::Instant::now() + supervisor::STOP_WAIT;
            while supervisor.is_alive() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if supervisor.is_alive() {
                let _ = kill(Pid::from_raw(supervisor.pid), Signal::SIGKILL);
            }
            let _ = killpg(pgid, Signal::SIGKILL);
        });
    if waited.is_err() {
        let _ = kill(Pid::from_raw(supervisor.pid), Signal::SIGKILL);
        let _ = killpg(pgid, Signal::SIGKILL);
    }
}

/// The result: the output with a last line saying how the command ended.
fn finish(
    captured: Captured,
    ending: &Ending,
    report: &Report,
    timeout_s: u64,
    limits: &ShellLimits,
) -> ToolOutput {
    let Captured {
        mut output,
        total_bytes,
        spill_error,
    } = captured;
    let (status, mut last) = match ending {
        Ending::Exited(status) => match (status.code(), status.signal()) {
            (Some(0), _) => (ToolStatus::Ok, "[exit code 0]".to_owned()),
            (Some(code), _) => (ToolStatus::Error, format!("[exit code {code}]")),
            (None, Some(signal)) => (
                ToolStatus::Error,
                format!("[killed by signal {}]", signal_name(signal)),
            ),
            (None, None) => (ToolStatus::Error, "[ended without an exit code]".to_owned()),
        },
        Ending::TimedOut => (
            ToolStatus::Error,
            format!(
                "[timed out after {timeout_s} s: the command and every process it started were killed; pass a larger `timeout` (at most {} s) if it needs longer]",
                limits.max_timeout_s
            ),
        ),
        Ending::Lost => (
            ToolStatus::Error,
            "[the command's end could not be observed; it and every process it started were killed]"
                .to_owned(),
        ),
    };
    if let (Ending::Exited(_) | Ending::TimedOut, Some(n @ 1..)) = (ending, report.stopped) {
        last.push('\n');
        last.push_str(&stopped_line(n));
    }
    for line in restored_lines(&report.restored) {
        last.push('\n');
        last.push_str(&line);
    }
    if let Some(e) = spill_error {
        last.push_str(&format!(
            "\n[the whole output ({total_bytes} bytes) could not be saved ({e}); only its first and last parts are here]"
        ));
    }
    let text = if output.is_elided() {
        &mut output.tail
    } else {
        &mut output.head
    };
    if total_bytes == 0 {
        text.push_str("(no output)\n");
    } else if !text.ends_with('\n') && output.binary.is_none() {
        text.push('\n');
    }
    text.push_str(&last);
    ToolOutput {
        status,
        output,
        diff: None,
        change: None,
        paged: false,
        sandbox: None,
    }
}

/// `[restored .git/hooks/pre-commit: the command created it]` for each
/// protected file put back (the path as the supervisor gave it), then one
/// line saying why.
fn restored_lines(restored: &[Restored]) -> Vec<String> {
    if restored.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<String> = restored
        .iter()
        .map(|r| {
            let what = match r.why {
                Why::Changed => "the command changed it",
                Why::Created => "the command created it",
                Why::Removed => "the command removed it",
            };
            if r.undone {
                format!("[restored {}: {what}]", r.path.display())
            } else {
                format!("[could not restore {}: {what}]", r.path.display())
            }
        })
        .collect();
    lines.push(
        "[protected files (git hooks and config, .mcp.json, instruction files, .strata/) are put back after a sandboxed command; to change them, ask the user, or call shell with sandbox \"off\" and a reason the user will approve]"
            .to_owned(),
    );
    lines
}

/// `[2 background processes were stopped when the command ended]`.
fn stopped_line(n: usize) -> String {
    if n == 1 {
        "[1 background process was stopped when the command ended]".to_owned()
    } else {
        format!("[{n} background processes were stopped when the command ended]")
    }
}

/// `9 (SIGKILL)`, or the bare number when the signal is unknown.
fn signal_name(number: i32) -> String {
    match Signal::try_from(number) {
        Ok(signal) => format!("{number} ({})", signal.as_str()),
        Err(_) => number.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(n, v)| (n.into(), v.into())).collect()
    }

    #[test]
    fn secrets_are_removed_and_pagers_and_editors_disarmed() {
        let env = command_env(os(&[
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk"),
            ("github_token", "t"),
            ("My_Secret_Thing", "s"),
            ("PGPASSWORD", "p"),
            ("PAGER", "less"),
            ("HOME", "/h"),
        ]));
        let names: Vec<&str> = env.iter().map(|(n, _)| n.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "PAGER",
                "GIT_PAGER",
                "GIT_EDITOR",
                "EDITOR",
                "VISUAL",
                "GIT_TERMINAL_PROMPT"
            ]
        );
        assert!(env.contains(&("PAGER".into(), "cat".into())));
    }

    #[test]
    fn the_timeout_defaults_and_must_be_in_range() {
        let limits = ShellLimits::default();
        let parse = |v: Value| parse_args(&v, &limits).map(|(_, t)| t);
        assert_eq!(parse(json!({"command": "ls"})), Ok(120));
        assert_eq!(parse(json!({"command": "ls", "timeout": 600})), Ok(600));
        assert_eq!(parse(json!({"command": "ls", "timeout": 5.0})), Ok(5));
        assert_eq!(parse(json!({"command": "ls", "timeout": "30"})), Ok(30));
        for bad in [
            json!(0),
            json!(601),
            json!(-3),
            json!(1.5),
            json!("soon"),
            json!([1]),
        ] {
            let err = parse(json!({"command": "ls", "timeout": bad})).unwrap_err();
            assert!(err.contains("from 1 to 600"), "{err}");
        }
        for bad in [json!({}), json!({"command": "  "}), json!({"command": 3})] {
            assert!(parse(bad).unwrap_err().contains("`command` string"));
        }
    }
}
