//! The supervisor process that holds a shell command (or an MCP server)
//! and every process it starts, and ends them all when the command ends,
//! when it is told to stop, or when strata dies.
//!
//! A process group does not die with its parent, and a process that calls
//! `setsid` leaves its group: a `shell` command could leave a server running
//! after it ended, or after strata was killed by SIGKILL. So strata starts
//! each command through itself, `strata __supervise --parent PID [--report]
//! -- COMMAND` ([`supervise`]), which
//!
//! 1. blocks the signals it waits for (`posix_spawn` unblocks them and
//!    resets them to their default for the command);
//! 2. asks the kernel for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`),
//!    then checks its parent is still `PID` (it may have died before);
//! 3. starts a new session (`setsid`): its own process group, no
//!    controlling terminal, so nothing can wait on the terminal;
//! 4. becomes a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every
//!    descendant that loses its parent is reparented to it, not to init
//!    ([`super::reaper`]);
//! 5. with a sandbox ([`super::sandbox::Spec`], from `--sandbox MODE …`
//!    flags), takes a snapshot of the workspace's protected files
//!    ([`super::protect`]);
//! 6. runs `bash -c COMMAND` in that group with its own stdout and stderr
//!    (strata's pipe, whose copy on its own stdout it then lets go) and
//!    environment; stdin is its own, or `/dev/null`
//!    with `--report`. With a sandbox it runs `strata __confine … --
//!    COMMAND` instead ([`super::confine`]), which enters the sandbox and
//!    becomes bash: the supervisor stays outside it, where the command
//!    can neither signal nor trace it;
//! 7. reaps every child that ends while bash runs (orphans reparented to
//!    it included);
//! 8. when bash ends, or on SIGTERM, SIGINT, SIGHUP or SIGQUIT (its parent
//!    died, or strata told it to stop), sweeps: kills every process below
//!    it and reaps until none is left ([`super::reaper::sweep`]);
//! 9. puts back the protected files the command changed, created or
//!    removed;
//! 10. with `--report`, writes `restored WHY PATH` for each and
//!     `stopped N` to its stdin (a socket strata holds): how many
//!     processes the sweep killed, bash not counted;
//! 11. ends like bash ended: the same exit code, or the same signal (a
//!     signal that would dump core becomes exit code `128 + N`); stopped
//!     by a signal, exit code `128 + N`.
//!
//! The group's id is the supervisor's pid. strata ends a command by
//! SIGTERM to the supervisor and waits for it, a bounded time
//! ([`STOP_WAIT`]); only a supervisor still running then is killed
//! (SIGKILL, with its group). The kernel sends the parent-death signal when
//! the *thread* that spawned the supervisor ends: strata spawns it from a
//! thread that lives as long as strata. A supervisor killed by SIGKILL
//! cannot sweep: what left its group then is on its own.

use super::protect::{Restored, Snapshot, Why};
use super::reaper;
use super::sandbox::Spec;
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
use nix::sys::prctl::{set_child_subreaper, set_pdeathsig};
use nix::sys::signal::{SigSet, Signal, raise};
use nix::sys::wait::WaitStatus;
use nix::unistd::{Pid, getpgrp, getpid, getppid, setsid};
use std::ffi::{CString, OsString};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::ExitCode;
use std::time::Duration;

/// The name of the hidden subcommand that runs [`supervise`].
pub const SUBCOMMAND: &str = "__supervise";

/// Exit code when the supervisor could not set itself up (the command did
/// not run).
pub const SETUP_FAILED: u8 = 125;

/// Exit code when bash could not be started.
pub const NOT_STARTED: u8 = 127;

/// How long strata waits for a supervisor told to stop (SIGTERM) to sweep
/// and end before it kills it (SIGKILL) with its group.
pub const STOP_WAIT: Duration = Duration::from_secs(3);

/// The flag that makes the supervisor report on its stdin.
pub const REPORT: &str = "--report";

/// The arguments that make strata's binary supervise `command` for the
/// process `parent` (strata itself): `__supervise --parent PID -- COMMAND`,
/// with `--report` before `--` when `report` (its stdin is then a socket
/// it writes its report to, and bash's stdin is `/dev/null`), and the
/// sandbox's flags ([`Spec::args`]) when `sandbox` is given.
#[must_use]
pub fn args(parent: u32, command: &str, report: bool, sandbox: Option<&Spec>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![SUBCOMMAND.into(), "--parent".into(), parent.to_string().into()];
    if report {
        args.push(REPORT.into());
    }
    if let Some(spec) = sandbox {
        args.extend(spec.args());
    }
    args.push("--".into());
    args.push(command.into());
    args
}

/// What a supervisor reported once it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// How many processes the sweep stopped (`stopped N`), when it said.
    pub stopped: Option<usize>,
    /// The protected files it put back (`restored WHY PATH`), and whether
    /// each is as it was again (`not-restored WHY PATH` when not).
    pub restored: Vec<Restored>,
}

/// A supervisor's report: `restored WHY PATH` / `not-restored WHY PATH`
/// lines and `stopped N`.
#[must_use]
pub fn parse_report(text: &str) -> Report {
    let mut report = Report::default();
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("stopped ") {
            report.stopped = n.trim().parse().ok();
            continue;
        }
        let (undone, rest) = match line.split_once(' ') {
            Some(("restored", rest)) => (true, rest),
            Some(("not-restored", rest)) => (false, rest),
            _ => continue,
        };
        if let Some((why, path)) = rest.split_once(' ')
            && let Some(why) = Why::parse(why)
        {
            report.restored.push(Restored {
                path: path.into(),
                why,
                undone,
            });
        }
    }
    report
}

/// Runs `bash -c command` under supervision (see the module doc) and
/// returns what the binary should exit with; when bash was killed by a
/// signal, raises the same signal first. `parent` is the pid of the
/// strata process that started the supervisor: when it is no longer the
/// parent, nothing runs and the result is [`SETUP_FAILED`]. With `report`
/// the count of processes the sweep stopped, and the protected files put
/// back, are written to stdin. With `sandbox` the command runs confined
/// (a sandbox that cannot be applied runs nothing: [`SETUP_FAILED`]).
/// Errors are written to stderr as one sentence.
#[must_use]
pub fn supervise(parent: u32, command: &str, report: bool, sandbox: Option<&Spec>) -> ExitCode {
    let mut signals = SigSet::empty();
    for s in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGCHLD,
    ] {
        signals.add(s);
    }
    if let Err(e) = signals.thread_block() {
        return setup_failed(&format!("could not block signals ({e})"));
    }
    if let Err(e) = set_pdeathsig(Signal::SIGTERM) {
        return setup_failed(&format!("could not ask for the parent-death signal ({e})"));
    }
    if u32::try_from(getppid().as_raw()).ok() != Some(parent) {
        // strata is gone already: run nothing.
        return ExitCode::from(SETUP_FAILED);
    }
    if setsid().is_err() && getpgrp() != getpid() {
        return setup_failed("could not start a new process group");
    }
    if let Err(e) = set_child_subreaper(true) {
        return setup_failed(&format!("could not become a child subreaper ({e})"));
    }
    let snapshot = sandbox.and_then(|s| s.protect.as_deref()).map(Snapshot::take);
    let bash = match spawn_bash(command, sandbox, &signals, report) {
        Ok(pid) => pid,
        Err(e) => {
            say(&format!(
                "strata: bash could not be started ({e}); install bash or put it on PATH."
            ));
            return ExitCode::from(NOT_STARTED);
        }
    };
    // The command holds strata's pipe on stdout now; this process lets go
    // of its copy, so the pipe ends when the command closes it (an MCP
    // server that closes its output mid-message is seen at once).
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
    let ending = loop {
        match signals.wait() {
            Ok(Signal::SIGCHLD) => {
                let reaped = reaper::reap(Some(bash));
                match reaped.watched {
                    Some(WaitStatus::Exited(_, code)) => break Ending::Exited(code),
                    Some(WaitStatus::Signaled(_, signal, _)) => break Ending::Signaled(signal),
                    _ if !reaped.children_left => {
                        say("strata: the command could not be waited for.");
                        break Ending::Lost;
                    }
                    _ => {}
                }
            }
            Ok(signal) => break Ending::Stopped(signal),
            Err(_) => {}
        }
    };
    let stopped = reaper::sweep(Some(bash));
    let restored = snapshot.map(|s| s.restore()).unwrap_or_default();
    if report {
        write_report(stopped, &restored);
    }
    match ending {
        Ending::Exited(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Ending::Signaled(signal) => forward(signal, &signals),
        Ending::Stopped(signal) => ExitCode::from(128 + signal as u8),
        Ending::Lost => ExitCode::from(SETUP_FAILED),
    }
}

/// Why the supervisor sweeps.
enum Ending {
    /// bash exited with this code.
    Exited(i32),
    /// bash was killed by this signal.
    Signaled(Signal),
    /// The supervisor got this signal.
    Stopped(Signal),
    /// bash is no longer a child, yet was never reaped.
    Lost,
}

/// `restored WHY PATH` lines and `stopped N` on stdin, a socket strata
/// reads once the supervisor ended.
fn write_report(stopped: usize, restored: &[Restored]) {
    let mut line = String::new();
    for r in restored {
        let word = if r.undone { "restored" } else { "not-restored" };
        let path = r.path.to_string_lossy().replace(['\n', '\r'], "?");
        line.push_str(&format!("{word} {} {path}\n", r.why.as_str()));
    }
    line.push_str(&format!("stopped {stopped}\n"));
    let stdin = std::io::stdin();
    let _ = nix::unistd::write(std::os::fd::AsFd::as_fd(&stdin), line.as_bytes());
}

/// `bash -c command` with this process's stdin (`/dev/null` when
/// `null_stdin`), stdout, stderr and environment, the signals the
/// supervisor blocks unblocked and reset to their default (and SIGPIPE,
/// which Rust ignores, too). `posix_spawn` sets the mask and the
/// dispositions in the child before bash runs, so no signal can slip
/// between.
fn spawn_bash(
    command: &str,
    sandbox: Option<&Spec>,
    blocked: &SigSet,
    null_stdin: bool,
) -> Result<Pid, String> {
    let cstring = |bytes: &[u8]| CString::new(bytes).map_err(|_| "the command holds a NUL byte".to_owned());
    let args = match sandbox {
        None => vec![cstring(b"bash")?, cstring(b"-c")?, cstring(command.as_bytes())?],
        Some(spec) => {
            let exe =
                std::env::current_exe().map_err(|e| format!("strata's own binary cannot be found ({e})"))?;
            let mut args = vec![cstring(exe.as_os_str().as_bytes())?];
            for arg in super::confine::args(spec, command) {
                args.push(cstring(arg.as_bytes())?);
            }
            args
        }
    };
    let env: Vec<CString> = std::env::vars_os()
        .filter_map(|(name, value)| {
            let mut pair = name.into_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            CString::new(pair).ok()
        })
        .collect();
    let mut defaults = *blocked;
    defaults.add(Signal::SIGPIPE);
    let mut attr = PosixSpawnAttr::init().map_err(|e| e.to_string())?;
    attr.set_flags(PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF)
        .map_err(|e| e.to_string())?;
    attr.set_sigmask(&SigSet::empty()).map_err(|e| e.to_string())?;
    attr.set_sigdefault(&defaults).map_err(|e| e.to_string())?;
    let mut actions = PosixSpawnFileActions::init().map_err(|e| e.to_string())?;
    // Opened close-on-exec; `dup2` onto stdin clears the flag there.
    let null = if null_stdin {
        let null = std::fs::File::open("/dev/null").map_err(|e| e.to_string())?;
        actions.add_dup2(null.as_raw_fd(), 0).map_err(|e| e.to_string())?;
        Some(null)
    } else {
        None
    };
    // Nothing but stdin, stdout and stderr reaches the command: strata may
    // hold descriptors it was given without close-on-exec (`strata …
    // 9>>~/.bashrc`), and the command must not write through them.
    for fd in open_descriptors().into_iter().filter(|fd| *fd > 2) {
        actions.add_close(fd).map_err(|e| e.to_string())?;
    }
    let spawned = posix_spawnp(&args[0], &actions, &attr, &args, &env).map_err(|e| e.to_string());
    drop(null);
    spawned
}

/// The descriptors open in this process now (read from `/proc/self/fd`;
/// the listing's own descriptor, closed again, is not among them).
fn open_descriptors() -> Vec<i32> {
    let listed: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    listed
        .into_iter()
        .filter(|fd| std::fs::symlink_metadata(format!("/proc/self/fd/{fd}")).is_ok())
        .collect()
}

/// Ends like bash ended: its exit code, or its signal raised on the
/// supervisor (unblocked first; a core-dumping signal is reported as
/// `128 + N` instead, so no core file is written for it).
fn forward(signal: Signal, blocked: &SigSet) -> ExitCode {
    if !dumps_core(signal) {
        if blocked.contains(signal) {
            let mut one = SigSet::empty();
            one.add(signal);
            let _ = one.thread_unblock();
        }
        let _ = raise(signal);
    }
    // The signal dumps core, or is ignored here (SIGPIPE, or one
    // inherited ignored).
    ExitCode::from(128 + signal as u8)
}

fn dumps_core(signal: Signal) -> bool {
    use Signal::*;
    matches!(
        signal,
        SIGQUIT | SIGILL | SIGTRAP | SIGABRT | SIGBUS | SIGFPE | SIGSEGV | SIGXCPU | SIGXFSZ | SIGSYS
    )
}

fn setup_failed(what: &str) -> ExitCode {
    say(&format!(
        "strata: the shell command's supervisor {what}; the command did not run."
    ));
    ExitCode::from(SETUP_FAILED)
}

fn say(sentence: &str) {
    let _ = writeln!(std::io::stderr(), "{sentence}");
}
