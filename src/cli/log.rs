//! The log file: every command's `tracing` events go to daily files
//! `strata.log.YYYY-MM-DD` (UTC dates) in `DATA/logs/`, the seven newest
//! kept, at the level `STRATA_LOG` sets (default `info`).
//!
//! Invariants: nothing is ever written to the terminal (there is no stderr
//! layer; the full-screen app owns the screen); the directory is private to
//! the user (0700) and so are the files (0600); a log that cannot be opened
//! never stops a command. What is logged is decided where events are
//! emitted: names, sizes, timings and errors, never keys or message text.
//! Called once, by [`crate::cli::main`], before any command runs.

use std::fs;
use std::path::{Path, PathBuf};
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;

/// The variable that sets the level (an `EnvFilter` directive list, e.g.
/// `debug` or `info,strata::provider=debug`).
pub const LEVEL_ENV: &str = "STRATA_LOG";

/// The level when `STRATA_LOG` is unset, empty or invalid.
const DEFAULT_LEVEL: &str = "info";

/// File names are `PREFIX.YYYY-MM-DD`.
const FILE_PREFIX: &str = "strata.log";

/// Daily files kept (older ones are removed when a new one starts).
const KEPT_FILES: usize = 7;

/// How logging was set up, for `strata doctor`.
#[derive(Clone, Debug)]
pub struct Logging {
    /// The directory of the log files.
    pub dir: PathBuf,
    /// The filter in use (`info`, or the value of `STRATA_LOG`).
    pub level: String,
    /// Why no log is written, when it could not be opened.
    pub error: Option<String>,
}

/// Opens today's log file in `dir` and installs the global subscriber.
/// Failures are returned in [`Logging::error`], never raised.
pub fn init(dir: &Path) -> Logging {
    let (level, note) = directives(std::env::var(LEVEL_ENV));
    let error = open(dir).and_then(|appender| {
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new(&level))
            .with_writer(appender)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).map_err(|e| e.to_string())
    });
    if let Some(note) = note {
        tracing::warn!("{note}");
    }
    Logging {
        dir: dir.to_path_buf(),
        level,
        error: error.err(),
    }
}

/// The directives to use for `STRATA_LOG`'s value, and a note when the
/// value was refused (`info` is used then).
fn directives(value: Result<String, std::env::VarError>) -> (String, Option<String>) {
    let fallback = |note: Option<String>| (DEFAULT_LEVEL.to_owned(), note);
    let value = match value {
        Err(std::env::VarError::NotPresent) => return fallback(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            return fallback(Some(format!(
                "{LEVEL_ENV} is not valid UTF-8; logging at {DEFAULT_LEVEL}"
            )));
        }
        Ok(v) if v.trim().is_empty() => return fallback(None),
        Ok(v) => v.trim().to_owned(),
    };
    // EnvFilter reads a lone word as a target, so a misspelt level would
    // silently log nothing: lone words must be levels or strata's modules.
    let why = match value.split(',').map(str::trim).find(|d| !is_plausible(d)) {
        Some(word) => format!("`{word}` is neither a level nor a strata module"),
        None => match EnvFilter::builder().parse(&value) {
            Ok(_) => return (value, None),
            Err(e) => e.to_string(),
        },
    };
    fallback(Some(format!(
        "{LEVEL_ENV}={value:?} is not a valid filter ({why}); logging at {DEFAULT_LEVEL}"
    )))
}

/// Whether one directive can be meant: `target=level`, a span filter, a
/// level name, or a target inside strata.
fn is_plausible(directive: &str) -> bool {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    directive.contains(['=', '['])
        || LEVELS.iter().any(|l| directive.eq_ignore_ascii_case(l))
        || directive == "strata"
        || directive.starts_with("strata::")
}

/// Creates the private directory and today's private file, narrows older
/// files to 0600, and builds the daily appender.
fn open(dir: &Path) -> Result<RollingFileAppender, String> {
    create_private_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // The appender names files by the UTC date and opens them for appending:
    // creating today's first makes it 0600 whatever the umask.
    let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    create_private_file(&dir.join(format!("{FILE_PREFIX}.{today}")))
        .map_err(|e| format!("cannot create the log file in {}: {e}", dir.display()))?;
    narrow_files(dir);
    RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix(FILE_PREFIX)
        .max_log_files(KEPT_FILES)
        .build(dir)
        .map_err(|e| e.to_string())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    #[cfg(unix)]
    {
        // The directory holds nothing but the logs: narrow it if it is wider.
        use std::os::unix::fs::PermissionsExt;
        if fs::metadata(dir)?.permissions().mode() & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map(drop)
}

/// Files a rotation created while a process ran have the umask's mode
/// (inside the private directory); narrows them to 0600 at the next start.
fn narrow_files(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let is_log = entry.file_name().to_string_lossy().starts_with(FILE_PREFIX);
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if is_log && meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
                let _ = fs::set_permissions(entry.path(), fs::Permissions::from_mode(0o600));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(value: &str) -> (String, bool) {
        let (level, note) = directives(Ok(value.to_owned()));
        (level, note.is_some())
    }

    #[test]
    fn levels_and_directives_are_taken_and_nonsense_falls_back_to_info() {
        assert_eq!(level(""), ("info".to_owned(), false));
        assert_eq!(level("DEBUG"), ("DEBUG".to_owned(), false));
        assert_eq!(
            level("warn,strata::provider=debug"),
            ("warn,strata::provider=debug".to_owned(), false)
        );
        assert_eq!(level("strata::runtime"), ("strata::runtime".to_owned(), false));
        assert_eq!(level("degub"), ("info".to_owned(), true));
        assert_eq!(level("strata=loud"), ("info".to_owned(), true));
        assert_eq!(
            directives(Err(std::env::VarError::NotPresent)),
            ("info".to_owned(), None)
        );
    }
}
