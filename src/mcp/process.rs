//! A server's process: started in its own process group (directly, or
//! under `strata __supervise`), killed with its whole group when its
//! [`Group`] drops, and its stderr read into the log and a short tail.
//!
//! Processes are started from one thread that lives as long as strata
//! ([`spawn`]): the kernel sends the supervisor its parent-death signal when
//! the *thread* that started it ends, and a runtime's threads may come and
//! go (blocking-pool threads end when idle).

use super::{STDERR_TAIL_LINES, ServerSpec, environment};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};

/// How long a server's supervisor, told to stop (SIGTERM), has to sweep
/// and end before it is killed (SIGKILL) with its group; the same bound as
/// a shell command's.
pub const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Bytes of one stderr line that are logged and kept; the rest is cut.
pub const STDERR_LINE_CHARS: usize = 2_000;

/// Stderr lines of one process that go to the log; later ones are only
/// kept in the tail.
pub const STDERR_LOG_LINES: usize = 1_000;

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the process-starting thread, started on first use and
/// never ended.
fn on_keeper(job: Job) -> std::io::Result<()> {
    static KEEPER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("strata-mcp-spawn".to_owned())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            });
        if let Err(e) = started {
            tracing::error!(error = %e, "the thread that starts MCP servers could not be started");
        }
        Mutex::new(tx)
    });
    let sender = sender
        .lock()
        .map_err(|_| std::io::Error::other("the MCP spawn channel is poisoned"))?;
    sender
        .send(job)
        .map_err(|_| std::io::Error::other("the thread that starts MCP servers is gone"))
}

/// A started server: the process, its pipes, and its group.
pub struct Started {
    /// The process (the supervisor or the server itself).
    pub child: Child,
    /// Its group, killed when the last clone drops.
    pub group: Arc<Group>,
}

/// Starts `program` for `spec` with pipes for stdin, stdout and stderr, in
/// the environment `env`, in a process group of its own.
pub async fn spawn(
    spec: &ServerSpec,
    program: &std::path::Path,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
) -> std::io::Result<Started> {
    let mut cmd = match &spec.supervisor {
        Some(strata) => {
            // The supervisor makes its own session and group (setsid).
            let mut cmd = Command::new(strata);
            cmd.arg("__supervise")
                .arg("--parent")
                .arg(std::process::id().to_string())
                .args(&spec.supervisor_args)
                .arg("--")
                .arg(environment::command_line(program, &spec.args));
            cmd
        }
        None => {
            let mut cmd = Command::new(program);
            cmd.args(&spec.args).process_group(0);
            cmd
        }
    };
    cmd.env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let handle = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    on_keeper(Box::new(move || {
        let _runtime = handle.enter();
        let _ = tx.send(cmd.spawn());
    }))?;
    let child = rx
        .await
        .map_err(|_| std::io::Error::other("the thread that starts MCP servers dropped the request"))??;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| std::io::Error::other("the server ended before it could be watched"))?;
    Ok(Started {
        child,
        group: Arc::new(Group {
            pid: Pid::from_raw(pid),
            supervised: spec.supervisor.is_some(),
            reaped: Arc::new(AtomicBool::new(false)),
            stopping: AtomicBool::new(false),
        }),
    })
}

/// A server's process group (its id is the process's pid), ended when the
/// group drops: a supervisor is told to stop (SIGTERM), so it sweeps every
/// process below it, those that left the group with `setsid` too, and is
/// killed with its group only if it has not ended within
/// [`STOP_WAIT`]; a server started directly gets SIGKILL with its group.
#[derive(Debug)]
pub struct Group {
    pid: Pid,
    supervised: bool,
    reaped: Arc<AtomicBool>,
    stopping: AtomicBool,
}

impl Group {
    /// The process's pid, which is also the group's id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid.as_raw().unsigned_abs()
    }

    /// Ends the server and everything it started. A supervisor still
    /// running gets SIGTERM and sweeps its tree; a thread kills it with its
    /// group after [`STOP_WAIT`] if it is still there. Otherwise SIGKILL to
    /// the process (while it was not waited for: a supervisor may not have
    /// made its group yet) and to the whole group.
    pub fn kill(&self) {
        let reaped = self.reaped.load(Ordering::SeqCst);
        if self.supervised && !reaped {
            if self.stopping.swap(true, Ordering::SeqCst) {
                return;
            }
            if kill(self.pid, Signal::SIGTERM).is_ok() {
                let (pid, reaped) = (self.pid, Arc::clone(&self.reaped));
                let later = std::thread::Builder::new()
                    .name("strata-mcp-stop".to_owned())
                    .spawn(move || kill_if_still_running(pid, &reaped));
                if later.is_ok() {
                    return;
                }
            }
        }
        if !reaped {
            let _ = kill(self.pid, Signal::SIGKILL);
        }
        let _ = killpg(self.pid, Signal::SIGKILL);
    }

    /// The process was waited for: its pid is no longer ours to signal.
    pub fn reaped(&self) {
        self.reaped.store(true, Ordering::SeqCst);
    }
}

/// After [`STOP_WAIT`]: SIGKILL to a supervisor that has not ended (still
/// strata's child and not a zombie), and to its group.
fn kill_if_still_running(pid: Pid, reaped: &AtomicBool) {
    let deadline = std::time::Instant::now() + STOP_WAIT;
    while std::time::Instant::now() < deadline {
        if reaped.load(Ordering::SeqCst) || !running_child(pid) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if !reaped.load(Ordering::SeqCst) && running_child(pid) {
        let _ = kill(pid, Signal::SIGKILL);
        let _ = killpg(pid, Signal::SIGKILL);
    }
}

/// Whether `pid` is a running (not zombie) child of this process.
fn running_child(pid: Pid) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return false;
    };
    let mut fields = rest.split(' ');
    let state = fields.next().unwrap_or("Z");
    let parent = fields.next().and_then(|p| p.parse::<u32>().ok());
    state != "Z" && state != "X" && parent == Some(std::process::id())
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last stderr lines of a server, across its restarts.
#[derive(Debug, Default)]
pub struct Tail {
    lines: Mutex<VecDeque<String>>,
}

impl Tail {
    /// The kept lines, oldest first.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn push(&self, line: String) {
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == STDERR_TAIL_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }
}

/// Reads `stderr` to its end: each line (cut at [`STDERR_LINE_CHARS`]
/// bytes) goes to the log, the first [`STDERR_LOG_LINES`] of them, and to
/// `tail`.
pub async fn pump_stderr(server: String, mut stderr: ChildStderr, tail: Arc<Tail>) {
    let mut buf = vec![0u8; 8 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut logged = 0usize;
    let mut emit = |line: &mut Vec<u8>, cut: &mut bool| {
        let mut text = String::from_utf8_lossy(line).trim_end_matches('\r').to_owned();
        if *cut {
            text.push('…');
        }
        line.clear();
        *cut = false;
        if logged < STDERR_LOG_LINES {
            tracing::info!(target: "strata::mcp::stderr", server = %server, "{text}");
        } else if logged == STDERR_LOG_LINES {
            tracing::info!(target: "strata::mcp::stderr", server = %server, "further stderr lines are not logged");
        }
        logged += 1;
        tail.push(text);
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for part in buf[..n].split_inclusive(|b| *b == b'\n') {
            let (body, ends) = match part.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (part, false),
            };
            let room = STDERR_LINE_CHARS.saturating_sub(line.len());
            if body.len() > room {
                line.extend_from_slice(&body[..room]);
                cut = true;
            } else {
                line.extend_from_slice(body);
            }
            if ends {
                emit(&mut line, &mut cut);
            }
        }
    }
    if !line.is_empty() {
        emit(&mut line, &mut cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stderr_lines_are_cut_and_the_last_ones_kept() {
        let script = "for i in $(seq 1 24); do echo line $i >&2; done; \
                      head -c 5000 /dev/zero | tr '\\0' x >&2; echo >&2; printf 'no newline' >&2";
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let tail = Arc::new(Tail::default());
        pump_stderr("s".to_owned(), child.stderr.take().unwrap(), Arc::clone(&tail)).await;
        let _ = child.wait().await;
        let lines = tail.lines();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines[0], "line 7");
        assert_eq!(lines[17], "line 24");
        assert_eq!(lines[18], format!("{}…", "x".repeat(STDERR_LINE_CHARS)));
        assert_eq!(lines[19], "no newline");
    }

    #[tokio::test]
    async fn a_group_is_killed_when_it_drops() {
        let spec = ServerSpec::new("s", "sh", vec!["-c".into(), "sleep 30 & sleep 30".into()]);
        let started = spawn(&spec, std::path::Path::new("/bin/sh"), vec![])
            .await
            .unwrap();
        let pid = started.group.pid();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let pgrp: u32 = stat
            .rsplit_once(") ")
            .unwrap()
            .1
            .split(' ')
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(pgrp, pid, "its own process group");
        let Started { mut child, group } = started;
        drop(group);
        let status = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    }
}
