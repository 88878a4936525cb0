//! Running `prompt.context_cmd` for the `computed` layer: `sh -c CMD` in the
//! workspace root, once, with no input, standard output captured up to what
//! the layer can keep, a timeout after which the whole process group is
//! killed. Problems become warnings; the layer then holds whatever output
//! there was.

use super::WorkspaceError;
use crate::prompt::{COMPUTED_MAX_CHARS, ComputedOutput};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long the command may run (DESIGN §4).
pub const CONTEXT_CMD_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of output read at most (4 per kept character); the rest is refused
/// by closing the pipe.
const MAX_OUTPUT_BYTES: u64 = COMPUTED_MAX_CHARS as u64 * 4;

/// How long to wait for the output of a killed command to drain.
const AFTER_KILL: Duration = Duration::from_secs(1);

/// The process groups of the commands running now, for
/// [`stop_running_commands`].
static RUNNING: std::sync::LazyLock<std::sync::Mutex<std::collections::HashSet<u32>>> =
    std::sync::LazyLock::new(Default::default);

/// Kills every configured command still running (with what it started):
/// its result is no longer wanted (the turn that needed it was cancelled,
/// or strata is ending), and nothing of it outlives strata.
pub fn stop_running_commands() {
    let groups: Vec<u32> = RUNNING
        .lock()
        .map(|mut r| r.drain().collect())
        .unwrap_or_default();
    for group in groups {
        kill_group_id(group);
    }
}

/// How often the exit of a command that closed its output is checked.
const POLL: Duration = Duration::from_millis(10);

/// Runs `command` in `dir` with `timeout`; returns its output and warnings
/// (which name `setting`, the config key the command came from).
#[must_use]
pub fn run_context_cmd(
    setting: &'static str,
    command: &str,
    dir: &Path,
    timeout: Duration,
) -> (ComputedOutput, Vec<String>) {
    let mut warnings = Vec::new();
    let mut out = ComputedOutput {
        command: command.to_owned(),
        output: String::new(),
        cut_short: false,
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(source) => {
            let e = WorkspaceError::CommandSpawn {
                setting,
                command: command.to_owned(),
                source,
            };
            warnings.push(e.to_string());
            return (out, warnings);
        }
    };
    let group = child.id();
    if let Ok(mut running) = RUNNING.lock() {
        running.insert(group);
    }
    let deadline = Instant::now() + timeout;
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let mut limited = stdout.take(MAX_OUTPUT_BYTES + 1);
            let result = limited.read_to_end(&mut bytes).map(|_| bytes);
            let _ = tx.send(result);
        });
    }
    let remaining = deadline.saturating_duration_since(Instant::now());
    let (bytes, status) = match rx.recv_timeout(remaining) {
        Ok(bytes) => {
            let status = wait_until(&mut child, deadline);
            if status.is_none() {
                kill_group(&mut child);
            }
            (bytes.ok(), status)
        }
        Err(_) => {
            // Over time with the pipe still open: stop everything, then take
            // what was printed before.
            kill_group(&mut child);
            (rx.recv_timeout(AFTER_KILL).ok().and_then(Result::ok), None)
        }
    };
    if let Ok(mut running) = RUNNING.lock() {
        running.remove(&group);
    }
    if let Some(mut bytes) = bytes {
        if bytes.len() as u64 > MAX_OUTPUT_BYTES {
            bytes.truncate(MAX_OUTPUT_BYTES as usize);
            out.cut_short = true;
        }
        let (text, _) = super::read::decode(super::read::trim_partial_end(&bytes));
        out.output = text;
    }
    match status {
        Some(status) if !status.success() && !out.cut_short => warnings.push(
            WorkspaceError::CommandFailed {
                setting,
                command: command.to_owned(),
                status: status
                    .code()
                    .map_or_else(|| "a signal".to_owned(), |c| c.to_string()),
            }
            .to_string(),
        ),
        Some(_) => {}
        None => {
            warnings.push(
                WorkspaceError::CommandTimeout {
                    setting,
                    command: command.to_owned(),
                    seconds: timeout.as_secs_f64(),
                }
                .to_string(),
            );
        }
    }
    (out, warnings)
}

/// Waits for `child` to exit until `deadline`; `None` on timeout.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<std::process::ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
            Ok(None) | Err(_) => return None,
        }
    }
}

/// Kills the command and everything it started (its process group).
fn kill_group(child: &mut Child) {
    kill_group_id(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// Kills the process group `group` (a command and what it started).
fn kill_group_id(group: u32) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{group}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_captured_in_the_given_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker.txt"), "").unwrap();
        let (out, warnings) = run_context_cmd(
            "prompt.context_cmd",
            "ls; echo done",
            dir.path(),
            CONTEXT_CMD_TIMEOUT,
        );
        assert_eq!(out.output, "marker.txt\ndone\n");
        assert!(!out.cut_short);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_failing_command_warns_and_keeps_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let (out, warnings) = run_context_cmd(
            "prompt.context_cmd",
            "echo partial; exit 3",
            dir.path(),
            CONTEXT_CMD_TIMEOUT,
        );
        assert_eq!(out.output, "partial\n");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("exited with status 3"), "{warnings:?}");
    }

    #[test]
    fn a_command_over_its_time_is_killed_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let (out, warnings) = run_context_cmd(
            "prompt.context_cmd",
            "echo started; sleep 30",
            dir.path(),
            Duration::from_millis(300),
        );
        assert_eq!(out.output, "started\n");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("did not finish"), "{warnings:?}");
    }

    #[test]
    fn huge_output_is_cut_at_the_byte_limit() {
        let dir = tempfile::tempdir().unwrap();
        let (out, _) = run_context_cmd(
            "prompt.context_cmd",
            "yes 0123456789 | head -c 1000000",
            dir.path(),
            CONTEXT_CMD_TIMEOUT,
        );
        assert!(out.cut_short);
        assert_eq!(out.output.len() as u64, MAX_OUTPUT_BYTES);
    }
}
