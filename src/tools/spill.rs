//! Spill files: whole tool outputs too large for the context, written to
//! `DATA/spill/<session>/<tool_call_id>.txt` (mode 0600, directories 0700)
//! so the model can page them with `read_file`; removed after
//! [`SPILL_MAX_AGE`], and the oldest first when they pass their cap
//! (`[tools] spill_max_mb`, default 256 MB).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long spill files are kept: 7 days.
pub const SPILL_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Writes `text` to the spill file `path` (mode 0600; its directory is
/// created with mode 0700).
///
/// # Errors
/// The I/O error, when the directory or the file cannot be written.
pub fn write_spill(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// Files and bytes under the spill directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpillUsage {
    /// Spill files.
    pub files: u64,
    /// Their size, bytes.
    pub bytes: u64,
}

/// What is in `spill_dir` (`DATA/spill`), for `strata doctor`.
#[must_use]
pub fn usage(spill_dir: &Path) -> SpillUsage {
    let mut usage = SpillUsage::default();
    for file in files(spill_dir) {
        usage.files += 1;
        usage.bytes += file.1.len();
    }
    usage
}

/// Removes spill files older than `max_age` at `now`, and session
/// directories left empty; returns what was removed. Errors are skipped (a
/// file another process removed first, say).
pub fn remove_older_than(spill_dir: &Path, max_age: Duration, now: SystemTime) -> SpillUsage {
    let mut removed = SpillUsage::default();
    for (path, meta) in files(spill_dir) {
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age > max_age);
        if old && std::fs::remove_file(&path).is_ok() {
            removed.files += 1;
            removed.bytes += meta.len();
        }
    }
    remove_empty_dirs(spill_dir);
    removed
}

/// Removes the oldest spill files (by modification time) until the rest
/// take at most `cap_bytes`, and session directories left empty; returns
/// what was removed. The files of the session directory named `keep` (the
/// session in use, whose results point at them) are never removed, though
/// they count. Errors are skipped.
pub fn remove_over_cap(spill_dir: &Path, cap_bytes: u64, keep: Option<&str>) -> SpillUsage {
    let all = files(spill_dir);
    let mut total: u64 = all.iter().map(|(_, m)| m.len()).sum();
    let mut removed = SpillUsage::default();
    if total <= cap_bytes {
        return removed;
    }
    let kept =
        |path: &Path| keep.is_some_and(|k| path.parent().and_then(Path::file_name).is_some_and(|d| d == k));
    let mut removable: Vec<_> = all.into_iter().filter(|(path, _)| !kept(path)).collect();
    removable.sort_by_key(|(_, m)| m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
    for (path, meta) in removable {
        if total <= cap_bytes {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            removed.files += 1;
            removed.bytes += meta.len();
            total -= meta.len();
        }
    }
    remove_empty_dirs(spill_dir);
    removed
}

fn remove_empty_dirs(spill_dir: &Path) {
    if let Ok(dirs) = std::fs::read_dir(spill_dir) {
        for dir in dirs.flatten() {
            // Only empty directories go; `remove_dir` refuses the others.
            let _ = std::fs::remove_dir(dir.path());
        }
    }
}

/// Every file one level below the session directories of `spill_dir`.
fn files(spill_dir: &Path) -> Vec<(std::path::PathBuf, std::fs::Metadata)> {
    let Ok(sessions) = std::fs::read_dir(spill_dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for session in sessions.flatten() {
        let Ok(entries) = std::fs::read_dir(session.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            if let Ok(meta) = entry.metadata()
                && meta.is_file()
            {
                out.push((entry.path(), meta));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn spill_files_are_private_and_old_ones_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("s1/call_1.txt");
        let stale = dir.path().join("s2/call_2.txt");
        write_spill(&fresh, "fresh output").unwrap();
        write_spill(&stale, "stale output!").unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(fresh.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(usage(dir.path()), SpillUsage { files: 2, bytes: 25 });

        // Eight days later by the stale file's clock: only it goes.
        let old = SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
        std::fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let removed = remove_older_than(dir.path(), SPILL_MAX_AGE, SystemTime::now());
        assert_eq!(removed, SpillUsage { files: 1, bytes: 13 });
        assert!(fresh.exists() && !stale.exists());
        assert!(
            !dir.path().join("s2").exists(),
            "the empty session directory goes too"
        );
    }

    #[test]
    fn past_the_cap_the_oldest_spill_files_go_first() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let paths: Vec<_> = (0..4)
            .map(|i| {
                let path = dir.path().join(format!("s{}/call_{i}.txt", i % 2));
                write_spill(&path, &"x".repeat(100)).unwrap();
                let at = now - Duration::from_secs(60 * (4 - i));
                std::fs::File::options()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_modified(at)
                    .unwrap();
                path
            })
            .collect();
        assert_eq!(
            remove_over_cap(dir.path(), 400, None),
            SpillUsage::default(),
            "at the cap"
        );
        let removed = remove_over_cap(dir.path(), 250, None);
        assert_eq!(removed, SpillUsage { files: 2, bytes: 200 });
        assert!(!paths[0].exists() && !paths[1].exists());
        assert!(paths[2].exists() && paths[3].exists(), "the newest stay");
        // The session in use keeps its files, even over the cap.
        let removed = remove_over_cap(dir.path(), 0, Some("s1"));
        assert_eq!(removed, SpillUsage { files: 1, bytes: 100 });
        assert!(!paths[2].exists() && paths[3].exists(), "{paths:?}");
    }
}
