//! The files of the state directory: whose each one is (an entry's,
//! a save being staged, strata's sha256 cache, or not strata's), their disk
//! use, and which staging files are leftovers of a stopped save.

use super::unique_suffix;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Files of an unfinished save (`*.tmp`) or `.kv` files without a `.meta`
/// older than this are leftovers of a process that stopped mid-save (a
/// staging file is one as soon as its writer no longer runs).
const LEFTOVER_AGE: Duration = Duration::from_secs(600);

/// Disk use of a state directory (for `strata doctor`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateUsage {
    /// Bytes of strata's saved entries (`ID.kv` with its `ID.meta`): what
    /// the cap counts, with `orphan_bytes`.
    pub bytes: u64,
    /// Bytes of `ID.kv` files without their `ID.meta` (a save stopped
    /// between its two renames, or a description removed by hand): counted
    /// by the cap, and removed 10 minutes after they were written.
    pub orphan_bytes: u64,
    /// Saved entries (`.meta` files).
    pub entries: usize,
    /// Bytes of unfinished saves (`.save-*.tmp`): being written, or left by
    /// a process that stopped mid-save (removed by the next sweep).
    pub unfinished_bytes: u64,
    /// Bytes of files that are not strata's: neither counted nor removed.
    pub other_bytes: u64,
}

/// Disk use of the state directory `root` (all model files); zero when it
/// does not exist.
#[must_use]
pub fn usage(root: &Path) -> StateUsage {
    let mut total = StateUsage::default();
    for file in all_files(root) {
        match file.kind {
            Kind::State { meta: false } if !file.path.with_extension("meta").exists() => {
                total.orphan_bytes += file.size;
            }
            Kind::State { meta } => {
                total.bytes += file.size;
                total.entries += usize::from(meta);
            }
            Kind::Staging { .. } => total.unfinished_bytes += file.size,
            Kind::Own => {}
            Kind::Other => total.other_bytes += file.size,
        }
    }
    total
}

/// Why no state can be saved under `root`: `None` when a file can be
/// created in it and in each of its model directories (checked by creating
/// and removing one), or when it does not exist yet (it is created on the
/// first save); otherwise the directory and the OS reason, as one sentence.
#[must_use]
pub fn write_problem(root: &Path) -> Option<String> {
    if !root.exists() {
        return None;
    }
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(items) = fs::read_dir(root) {
        dirs.extend(
            items
                .flatten()
                .map(|item| item.path())
                .filter(|path| path.is_dir()),
        );
    }
    dirs.iter().find_map(|dir| {
        let probe = dir.join(format!(".save-{}.probe.tmp", unique_suffix()));
        match create_file(&probe) {
            Ok(()) => {
                let _ = fs::remove_file(&probe);
                None
            }
            Err(error) => Some(format!("cannot create a file in {} ({error})", dir.display())),
        }
    })
}

/// Removes every saved state under `root` (all model files) and the
/// leftovers of stopped saves; files that are not strata's stay. Returns
/// the bytes removed. Used when the cap is 0.
pub fn clear(root: &Path) -> u64 {
    let mut removed = 0;
    for file in all_files(root) {
        let remove = match file.kind {
            Kind::State { .. } => true,
            Kind::Staging { pid } => is_leftover(pid, file.modified),
            Kind::Own | Kind::Other => false,
        };
        if remove && fs::remove_file(&file.path).is_ok() {
            removed += file.size;
        }
    }
    removed
}

/// Whether a staging file written by process `pid` at `modified` is a
/// leftover: its writer is not running, or it is older than
/// [`LEFTOVER_AGE`] (a save takes well under a second).
pub(super) fn is_leftover(pid: Option<u32>, modified: SystemTime) -> bool {
    is_old(modified) || pid.is_some_and(|pid| pid != std::process::id() && !is_running(pid))
}

pub(super) fn is_old(modified: SystemTime) -> bool {
    SystemTime::now()
        .duration_since(modified)
        .is_ok_and(|age| age > LEFTOVER_AGE)
}

/// Whether process `pid` is running (`/proc/PID` exists); where that
/// cannot be told, it is taken to run, and only the age counts.
fn is_running(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// Creates an empty file at `path` (0600 on Unix); fails if it exists.
pub(super) fn create_file(path: &Path) -> io::Result<()> {
    let mut options = fs::File::options();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(drop)
}

/// Whose a file in the state directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `ID.kv` or `ID.meta` in a model directory (`ID`: 32 hex digits).
    State { meta: bool },
    /// `.save-PID-N.*.tmp`: a save being written, or its leftover.
    Staging { pid: Option<u32> },
    /// The model files' sha256 cache in the top directory.
    Own,
    /// Not strata's.
    Other,
}

impl Kind {
    fn of(name: &str, in_model_dir: bool) -> Self {
        if let Some(rest) = name.strip_prefix(".save-").filter(|_| name.ends_with(".tmp")) {
            let pid = rest.split('-').next().and_then(|pid| pid.parse().ok());
            return Self::Staging { pid };
        }
        if !in_model_dir {
            return if name.starts_with("sha256.") {
                Self::Own
            } else {
                Self::Other
            };
        }
        let (id, meta) = match (name.strip_suffix(".kv"), name.strip_suffix(".meta")) {
            (Some(id), _) => (id, false),
            (_, Some(id)) => (id, true),
            _ => return Self::Other,
        };
        if id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Self::State { meta }
        } else {
            Self::Other
        }
    }
}

pub(super) struct FileInfo {
    pub path: PathBuf,
    pub size: u64,
    pub modified: SystemTime,
    pub kind: Kind,
}

/// Files directly in `root` and in its subdirectories (one level), each
/// with its kind.
pub(super) fn all_files(root: &Path) -> Vec<FileInfo> {
    let mut files = Vec::new();
    let Ok(items) = fs::read_dir(root) else {
        return files;
    };
    for item in items.flatten() {
        let Ok(meta) = item.metadata() else { continue };
        if meta.is_file() {
            files.push(file_info(&item, &meta, false));
            continue;
        }
        let Ok(inner) = fs::read_dir(item.path()) else {
            continue;
        };
        for item in inner.flatten() {
            let Ok(meta) = item.metadata() else { continue };
            if meta.is_file() {
                files.push(file_info(&item, &meta, true));
            }
        }
    }
    files
}

fn file_info(item: &fs::DirEntry, meta: &fs::Metadata, in_model_dir: bool) -> FileInfo {
    FileInfo {
        path: item.path(),
        size: meta.len(),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        kind: Kind::of(&item.file_name().to_string_lossy(), in_model_dir),
    }
}
