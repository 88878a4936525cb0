//! Leftovers of interrupted work in the models directory: the staging
//! files of a conversion (`.convert-PID.gguf`, `.convert-PID.json`) and the
//! staging directory of a download (`.pull-PID`) that a process killed
//! midway (`kill -9`, a crash, a power cut) never removed.
//!
//! Owns the rule for when such a leftover is stale: its process (the PID
//! in its name) is not running, or, where that cannot be told, it is older
//! than [`STALE_AFTER`]. Leftovers of this process are never touched.

use std::fs;
use std::path::Path;
use std::time::Duration;

/// Age after which a leftover is stale even if a process with its PID runs
/// (PIDs are reused).
pub const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

/// Removes the stale leftovers in `models_dir` and returns how many it
/// removed. Best effort: what cannot be removed is logged and left.
pub fn remove_stale(models_dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(models_dir) else {
        return 0;
    };
    let own = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = leftover_pid(&name) else {
            continue;
        };
        if pid == own {
            continue;
        }
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if !(old || process_running(pid) == Some(false)) {
            continue;
        }
        let path = entry.path();
        let result = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        match result {
            Ok(()) => {
                tracing::info!(file = %path.display(), "removed what an interrupted model conversion or download left");
                removed += 1;
            }
            Err(error) => {
                tracing::warn!(file = %path.display(), %error, "cannot remove what an interrupted model conversion or download left");
            }
        }
    }
    removed
}

/// The PID in a leftover's name (`.convert-123.gguf`, `.pull-123`), else `None`.
fn leftover_pid(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix(".convert-")
        .or_else(|| name.strip_prefix(".pull-"))?;
    let digits = rest.split('.').next()?;
    digits.parse().ok()
}

/// Whether a process with `pid` runs, where `/proc` tells; `None` elsewhere.
fn process_running(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.join("self")
        .is_dir()
        .then(|| proc.join(pid.to_string()).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PID above Linux's maximum (2^22), so never a running process.
    const DEAD: u32 = 999_999_999;

    #[test]
    fn leftovers_of_dead_processes_go_and_the_rest_stays() {
        let dir = tempfile::tempdir().unwrap();
        let dead_gguf = dir.path().join(format!(".convert-{DEAD}.gguf"));
        let dead_json = dir.path().join(format!(".convert-{DEAD}.json"));
        let dead_pull = dir.path().join(format!(".pull-{DEAD}"));
        let own = dir.path().join(format!(".convert-{}.gguf", std::process::id()));
        let model = dir.path().join("SmolLM2-135M-Instruct.Q4_1.gguf");
        for file in [&dead_gguf, &dead_json, &own, &model] {
            fs::write(file, b"x").unwrap();
        }
        fs::create_dir(&dead_pull).unwrap();
        fs::write(dead_pull.join("wheel.whl"), b"x").unwrap();
        assert_eq!(remove_stale(dir.path()), 3);
        assert!(!dead_gguf.exists() && !dead_json.exists() && !dead_pull.exists());
        assert!(own.exists() && model.exists());
    }

    #[test]
    fn names_that_are_not_leftovers_have_no_pid() {
        assert_eq!(leftover_pid(".convert-12.gguf"), Some(12));
        assert_eq!(leftover_pid(".pull-7"), Some(7));
        assert_eq!(leftover_pid(".convert-x.gguf"), None);
        assert_eq!(leftover_pid("sha256.json"), None);
    }
}
