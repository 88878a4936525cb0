//! `strata __confine [--sandbox MODE …] -- COMMAND`: the process between
//! the supervisor and `bash` that enters the sandbox and becomes bash.
//!
//! The supervisor stays outside the sandbox, so the command cannot reach
//! it: Landlock scopes signals (and ptrace) to the sandbox's own domain,
//! so `kill -9 $PPID` or `kill -STOP $PPID` from the command is refused,
//! and the supervisor always sweeps what the command started and puts the
//! protected files back. This process applies Landlock and seccomp
//! ([`super::sandbox::apply`]), drops every capability (strata run as root
//! keeps none: no `mknod`, no `chown` of others' files, no clock or host
//! name), and replaces itself with `bash -c COMMAND`, which inherits the
//! domain, the filter and the empty capability sets.

use super::sandbox::{self, Spec};
use caps::CapSet;
use std::ffi::CString;
use std::io::Write;
use std::process::ExitCode;

/// The name of the hidden subcommand that runs [`confine`].
pub const SUBCOMMAND: &str = "__confine";

/// The arguments that make strata's binary confine `command` by `spec`.
#[must_use]
pub fn args(spec: &Spec, command: &str) -> Vec<std::ffi::OsString> {
    let mut args = vec![SUBCOMMAND.into()];
    args.extend(spec.confine_args());
    args.push("--".into());
    args.push(command.into());
    args
}

/// Enters the sandbox `spec`, drops every capability and runs `bash -c
/// command` in this process; returns only when that failed, with one
/// sentence on stderr: [`super::supervisor::SETUP_FAILED`] when the
/// sandbox could not be entered (nothing ran), 127 when bash could not be
/// started.
#[must_use]
pub fn confine(spec: &Spec, command: &str) -> ExitCode {
    if let Err(e) = sandbox::apply(spec) {
        say(&format!(
            "strata: the shell command's sandbox {e}; the command did not run."
        ));
        return ExitCode::from(super::supervisor::SETUP_FAILED);
    }
    if let Err(e) = drop_capabilities() {
        say(&format!(
            "strata: the shell command's capabilities could not be dropped ({e}); the command did not run."
        ));
        return ExitCode::from(super::supervisor::SETUP_FAILED);
    }
    let Ok(args) = ["bash", "-c", command]
        .iter()
        .map(|a| CString::new(*a))
        .collect::<Result<Vec<_>, _>>()
    else {
        say("strata: the command holds a NUL byte; the command did not run.");
        return ExitCode::from(super::supervisor::SETUP_FAILED);
    };
    let e = nix::unistd::execvp(&args[0], &args).err();
    say(&format!(
        "strata: bash could not be started ({}); install bash or put it on PATH.",
        e.map_or_else(|| "unknown error".to_owned(), |e| e.to_string())
    ));
    ExitCode::from(super::supervisor::NOT_STARTED)
}

/// Every capability out of the bounding set (where this process may drop
/// them: root may, others have none to drop), then the ambient,
/// inheritable, effective and permitted sets emptied.
fn drop_capabilities() -> Result<(), String> {
    if caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP).unwrap_or(false) {
        for cap in caps::all() {
            caps::drop(None, CapSet::Bounding, cap).map_err(|e| e.to_string())?;
        }
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn say(sentence: &str) {
    let _ = writeln!(std::io::stderr(), "{sentence}");
}
