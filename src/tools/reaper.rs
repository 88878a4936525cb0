//! The supervisor's sweep of every process below it.
//!
//! The supervisor is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a process
//! below it whose parent ends is reparented to it, not to init — one that
//! called `setsid`, or the grandchild of a double fork, included. So every
//! process a command started stays a descendant of the supervisor, and the
//! supervisor has no descendant once it has no child (a process's children
//! are reparented before its parent can reap it).
//!
//! [`sweep`] kills (SIGKILL) every descendant, reaps what ended, and goes
//! round again — for processes forked meanwhile and orphans reparented
//! meanwhile — until `waitpid` reports no child. Descendants are found by
//! walking `/proc` (each process's parent is field 4 of `/proc/<pid>/stat`;
//! `/proc/<pid>/task/*/children` needs a kernel option not every kernel
//! has). With no child left, nothing is read: the sweep at the end of a
//! command that left nothing behind is one `waitpid`.
//!
//! Only the supervisor calls this, in its own process: it kills whatever
//! runs below the calling process.

use super::sweep::stat;
use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The longest pause between two rounds of a sweep.
const MAX_PAUSE: Duration = Duration::from_millis(10);

/// What [`reap`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reaped {
    /// How `watched` ended, when it was reaped now.
    pub watched: Option<WaitStatus>,
    /// Whether children are left (alive, or not reaped yet).
    pub children_left: bool,
}

/// Reaps every child of this process that has ended, without waiting;
/// says how `watched` ended when it was among them.
#[must_use]
pub fn reap(watched: Option<Pid>) -> Reaped {
    let mut reaped = Reaped::default();
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL)) {
            Ok(WaitStatus::StillAlive) => {
                reaped.children_left = true;
                return reaped;
            }
            Ok(status) => {
                if status.pid().is_some() && status.pid() == watched {
                    reaped.watched = Some(status);
                }
            }
            Err(Errno::EINTR) => {}
            // ECHILD: no child at all.
            Err(_) => return reaped,
        }
    }
}

/// Kills every descendant of this process and reaps until none is left
/// (see the module doc); returns how many live processes it killed, not
/// counting `spare` (the command itself, killed but not counted).
#[must_use]
pub fn sweep(spare: Option<Pid>) -> usize {
    let me = getpid().as_raw();
    let spare = spare.map(Pid::as_raw);
    let mut killed: HashSet<(i32, u64)> = HashSet::new();
    let mut pause = Duration::from_micros(100);
    loop {
        if !reap(None).children_left {
            return killed.len();
        }
        for (pid, started) in descendants(me) {
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() && Some(pid) != spare {
                killed.insert((pid, started));
            }
        }
        if !reap(None).children_left {
            return killed.len();
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// Every live (not zombie) descendant of `root`: `(pid, start time)`,
/// parents before their children.
fn descendants(root: i32) -> Vec<(i32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<i32, Vec<(i32, u64, char)>> = HashMap::new();
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    {
        if let Some(s) = stat(pid) {
            children
                .entry(s.ppid)
                .or_default()
                .push((pid, s.started, s.state));
        }
    }
    let mut found = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for &(pid, started, state) in children.get(&parent).into_iter().flatten() {
            parents.push(pid);
            if state != 'Z' {
                found.push((pid, started));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_descendants_of_a_process_are_found_below_it() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let below = loop {
            let below = descendants(pid);
            if !below.is_empty() || std::time::Instant::now() > deadline {
                break below;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(below.len(), 1, "the background sleep");
        assert!(descendants(getpid().as_raw()).iter().any(|(p, _)| *p == pid));
        child.kill().unwrap();
        child.wait().unwrap();
        let _ = kill(Pid::from_raw(below[0].0), Signal::SIGKILL);
    }
}
