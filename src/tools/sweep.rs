//! The start-up sweep of process groups recorded as running.
//!
//! The registry is a directory (created on demand, 0700) with one small
//! file per running `shell` command: its name is `<pgid>-<start>` (the
//! group's id and its leader's start time), its content `<pid> <start>` of
//! the strata process that owns it. A [`Record`] creates the file when the
//! command starts and removes it when dropped. A strata killed by SIGKILL
//! leaves its records behind; [`sweep`] at the next start kills the groups
//! they name that are still alive, unless their owner still runs (another
//! strata, or this one).
//!
//! Start times are clock ticks since boot (`/proc/<pid>/stat` field 22), so
//! a reused pid is never taken for the process recorded.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::fs::{self, DirBuilder, File};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A process as the kernel knows it: its id and when it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proc {
    /// The process id (for a group, its leader's id, which is the group's).
    pub pid: i32,
    /// Its start time, clock ticks since boot ([`start_time`]).
    pub started: u64,
}

impl Proc {
    /// The process `pid` if it exists now.
    #[must_use]
    pub fn of(pid: i32) -> Option<Self> {
        start_time(pid).map(|started| Self { pid, started })
    }

    /// This strata process.
    #[must_use]
    pub fn current() -> Option<Self> {
        i32::try_from(std::process::id()).ok().and_then(Self::of)
    }

    /// Whether this very process still runs (same pid, same start time;
    /// a zombie does not count).
    #[must_use]
    pub fn is_alive(self) -> bool {
        stat(self.pid).is_some_and(|s| s.started == self.started && s.state != 'Z')
    }
}

/// The start time of process `pid` in clock ticks since boot
/// (`/proc/<pid>/stat` field 22), `None` when there is no such process.
#[must_use]
pub fn start_time(pid: i32) -> Option<u64> {
    stat(pid).map(|s| s.started)
}

/// The fields of `/proc/<pid>/stat` the sweeps read.
pub(super) struct Stat {
    /// `R`, `S`, `D`, `Z`, …
    pub(super) state: char,
    /// The parent's pid.
    pub(super) ppid: i32,
    /// The process group's id.
    pub(super) pgrp: i32,
    /// Clock ticks since boot.
    pub(super) started: u64,
}

/// The stat of process `pid`, `None` when there is no such process.
pub(super) fn stat(pid: i32) -> Option<Stat> {
    if pid <= 0 {
        return None;
    }
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

/// A running group's file in the registry; removed when dropped.
#[derive(Debug)]
pub struct Record {
    path: PathBuf,
}

impl Record {
    /// Records `group` (its leader) as running, owned by `owner`, in the
    /// registry directory `registry` (created 0700 when missing).
    ///
    /// # Errors
    /// The directory or the file cannot be written.
    pub fn create(registry: &Path, group: Proc, owner: Proc) -> io::Result<Self> {
        DirBuilder::new().recursive(true).mode(0o700).create(registry)?;
        let path = registry.join(format!("{}-{}", group.pid, group.started));
        let mut file = File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        writeln!(file, "{} {}", owner.pid, owner.started)?;
        Ok(Self { path })
    }

    /// The record's file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Kills (SIGKILL) every group recorded in `registry` whose owner no longer
/// runs and that is still alive: its leader with the recorded start time,
/// or, the leader gone, a member of the group started since. Removes those
/// records and any it cannot read; keeps the records of owners still
/// running. Returns how many groups it killed. A missing registry is empty.
#[must_use]
pub fn sweep(registry: &Path) -> usize {
    let Ok(entries) = fs::read_dir(registry) else {
        return 0;
    };
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let owner = fs::read_to_string(&path).ok().and_then(|t| parse_owner(&t));
        if owner.is_some_and(Proc::is_alive) {
            continue;
        }
        if let Some(group) = parse_group(&entry.file_name().to_string_lossy())
            && group_alive(group)
            && killpg(Pid::from_raw(group.pid), Signal::SIGKILL).is_ok()
        {
            killed += 1;
        }
        let _ = fs::remove_file(&path);
    }
    killed
}

fn parse_group(name: &str) -> Option<Proc> {
    let (pid, started) = name.split_once('-')?;
    Some(Proc {
        pid: pid.parse().ok().filter(|p| *p > 1)?,
        started: started.parse().ok()?,
    })
}

fn parse_owner(text: &str) -> Option<Proc> {
    let mut words = text.split_whitespace();
    Some(Proc {
        pid: words.next()?.parse().ok()?,
        started: words.next()?.parse().ok()?,
    })
}

/// Whether the recorded group still has members. A leader alive with
/// another start time is a reused pid: the recorded group is gone (a pid
/// is not reused while its group exists).
fn group_alive(group: Proc) -> bool {
    if let Some(leader) = stat(group.pid) {
        return leader.started == group.started;
    }
    let Ok(procs) = fs::read_dir("/proc") else {
        return false;
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .any(|s| s.pgrp == group.pid && s.started >= group.started && s.state != 'Z')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = Proc::current().unwrap();
        assert!(me.is_alive());
        let reused = Proc {
            started: me.started + 1,
            ..me
        };
        assert!(!reused.is_alive());
        assert!(!Proc { pid: 0, started: 0 }.is_alive());
    }

    #[test]
    fn a_record_is_a_file_while_it_lives() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("groups");
        let me = Proc::current().unwrap();
        let record = Record::create(
            &registry,
            Proc {
                pid: 4242,
                started: 7,
            },
            me,
        )
        .unwrap();
        let text = fs::read_to_string(record.path()).unwrap();
        assert_eq!(record.path(), registry.join("4242-7"));
        assert_eq!(parse_owner(&text), Some(me));
        drop(record);
        assert_eq!(fs::read_dir(&registry).unwrap().count(), 0);
    }

    #[test]
    fn records_of_a_running_owner_are_kept_and_unreadable_ones_removed() {
        let dir = tempfile::tempdir().unwrap();
        let me = Proc::current().unwrap();
        let gone = Proc {
            pid: i32::MAX - 1,
            started: 1,
        };
        let mine = Record::create(dir.path(), gone, me).unwrap();
        fs::write(dir.path().join("not-a-record"), "x").unwrap();
        assert_eq!(sweep(dir.path()), 0);
        assert!(mine.path().exists());
        assert!(!dir.path().join("not-a-record").exists());
        assert_eq!(sweep(&dir.path().join("missing")), 0);
    }
}
