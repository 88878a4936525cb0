//! The supervisor process that holds a shell command's process group and
//! kills it when strata dies.
//!
//! A process group does not die with its parent: a `shell` command left
//! running when strata is killed by SIGKILL would run on. So strata starts
//! each command through itself, `strata __supervise --parent PID -- COMMAND`
//! ([`supervise`]), which
//!
//! 1. blocks the signals it waits for (`posix_spawn` unblocks them and
//!    resets them to their default for the command);
//! 2. asks the kernel for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`),
//!    then checks its parent is still `PID` (it may have died before);
//! 3. starts a new session (`setsid`): its own process group, no
//!    controlling terminal, so nothing can wait on the terminal;
//! 4. runs `bash -c COMMAND` in that group with its own stdin
//!    (`/dev/null`), stdout and stderr (strata's pipe) and environment;
//! 5. on SIGTERM, SIGINT, SIGHUP or SIGQUIT (its parent died, or it was
//!    told to stop) kills the whole group (itself included) with SIGKILL;
//! 6. when bash ends, ends the same way: the same exit code, or the same
//!    signal (a signal that would dump core becomes exit code `128 + N`).
//!
//! The group's id is the supervisor's pid, so strata kills the group
//! directly on a timeout or a cancel, and kills what is left of it once the
//! supervisor has ended. The kernel sends the parent-death signal when the
//! *thread* that spawned the supervisor ends: strata spawns it from a
//! runtime worker, which lives as long as strata.

use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::{SigSet, Signal, killpg, raise};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getppid, setsid};
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::ExitCode;

/// The name of the hidden subcommand that runs [`supervise`].
pub const SUBCOMMAND: &str = "__supervise";

/// Exit code when the supervisor could not set itself up (the command did
/// not run).
pub const SETUP_FAILED: u8 = 125;

/// Exit code when bash could not be started.
pub const NOT_STARTED: u8 = 127;

/// The arguments that make strata's binary supervise `command` for the
/// process `parent` (strata itself): `__supervise --parent PID -- COMMAND`.
#[must_use]
pub fn args(parent: u32, command: &str) -> Vec<String> {
    vec![
        SUBCOMMAND.to_owned(),
        "--parent".to_owned(),
        parent.to_string(),
        "--".to_owned(),
        command.to_owned(),
    ]
}

/// Runs `bash -c command` under supervision (see the module doc) and
/// returns what the binary should exit with; when bash was killed by a
/// signal, raises the same signal first. `parent` is the pid of the
/// strata process that started the supervisor: when it is no longer the
/// parent, nothing runs and the result is [`SETUP_FAILED`]. Errors are
/// written to stderr as one sentence.
#[must_use]
pub fn supervise(parent: u32, command: &str) -> ExitCode {
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
    let bash = match spawn_bash(command, &signals) {
        Ok(pid) => pid,
        Err(e) => {
            say(&format!(
                "strata: bash could not be started ({e}); install bash or put it on PATH."
            ));
            return ExitCode::from(NOT_STARTED);
        }
    };
    loop {
        match signals.wait() {
            Ok(Signal::SIGCHLD) => match waitpid(bash, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(_, code)) => {
                    return ExitCode::from(u8::try_from(code).unwrap_or(1));
                }
                Ok(WaitStatus::Signaled(_, signal, _)) => return forward(signal, &signals),
                Ok(_) => {}
                Err(e) => {
                    say(&format!("strata: the command could not be waited for ({e})."));
                    kill_group();
                    return ExitCode::from(SETUP_FAILED);
                }
            },
            Ok(signal) => {
                kill_group();
                return ExitCode::from(128 + signal as u8);
            }
            Err(_) => {}
        }
    }
}

/// `bash -c command` with this process's stdin, stdout, stderr and
/// environment, the signals the supervisor blocks unblocked and reset to
/// their default (and SIGPIPE, which Rust ignores, too). `posix_spawn`
/// sets the mask and the dispositions in the child before bash runs, so no
/// signal can slip between.
fn spawn_bash(command: &str, blocked: &SigSet) -> Result<Pid, String> {
    let cstring = |bytes: &[u8]| CString::new(bytes).map_err(|_| "the command holds a NUL byte".to_owned());
    let args = [cstring(b"bash")?, cstring(b"-c")?, cstring(command.as_bytes())?];
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
    let actions = PosixSpawnFileActions::init().map_err(|e| e.to_string())?;
    posix_spawnp(&args[0], &actions, &attr, &args, &env).map_err(|e| e.to_string())
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

/// SIGKILL to the supervisor's own group: the command, everything it
/// started, and the supervisor.
fn kill_group() {
    let _ = killpg(getpgrp(), Signal::SIGKILL);
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
