//! The Q8_0 copy of the pulled model that the embedded model runs: made
//! once from the Q4_1 file after `strata model pull` or on first use (~1-2
//! s, ~145 MB), it prefills about twice as fast (DESIGN §8, FACTS.md).
//!
//! Owns three files in the models directory next to the pulled
//! [`GGUF_NAME`]: [`Q8_0_NAME`]; its record [`RECORD_NAME`] (JSON: the
//! source's name and sha256, the result's sha256 and size), written after
//! the file, so a converted file without a matching record is not used; and
//! [`FAILED_NAME`], the reason the last conversion failed, which stops
//! every start from trying again until `strata model pull` does (kept in
//! the models directory's parent when the models directory cannot be
//! written). When there is no usable conversion the Q4_1 file runs and the
//! user is told.
//!
//! Integrity: a file runs only when its sha256 is the expected one (the
//! Q8_0 file's, the one its record holds; the Q4_1 file's, the pinned
//! [`GGUF_SHA256`]). The sha256 comes from [`SHA_CACHE_NAME`]
//! ([`super::file_sha`]), so a start hashes a file again only when its
//! size or modification time changed.

use super::file_sha::{cached_sha256, fresh_sha256, remember};
use super::model_file::{GGUF_NAME, GGUF_SHA256, GGUF_SIZE};
use super::quantize::convert_to_q8_0;
use super::staging;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// File name of the converted model.
pub const Q8_0_NAME: &str = "SmolLM2-135M-Instruct.Q8_0.gguf";
/// File name of the conversion's record.
pub const RECORD_NAME: &str = "SmolLM2-135M-Instruct.Q8_0.json";
/// File name of the last failure's reason.
pub const FAILED_NAME: &str = "SmolLM2-135M-Instruct.Q8_0.failed";
/// File name, in the models directory, of the sha256 cache of its files.
pub const SHA_CACHE_NAME: &str = "sha256.json";

/// What [`RECORD_NAME`] holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The file converted ([`GGUF_NAME`]).
    pub source: String,
    /// Its sha256, hex ([`GGUF_SHA256`]).
    pub source_sha256: String,
    /// The result's sha256, hex.
    pub sha256: String,
    /// The result's size in bytes.
    pub size: u64,
}

/// The model file that runs, and why it is that one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunningFile {
    /// The Q8_0 conversion, whose sha256 is the recorded one.
    Converted {
        /// The converted file.
        path: PathBuf,
        /// Its record.
        record: Record,
        /// The pulled Q4_1 file's sha256 when it is not the pinned one:
        /// the Q8_0 file still runs, but cannot be converted again until
        /// `strata model pull` downloads the source anew.
        damaged_source: Option<String>,
    },
    /// The pulled Q4_1 file (its sha256 is the pinned one).
    Pulled {
        /// The pulled file.
        path: PathBuf,
        /// Why the conversion is not used (`None`: not tried yet).
        failure: Option<String>,
    },
    /// The pulled Q4_1 file, because the Q8_0 file's sha256 is not the one
    /// its record holds (it changed after it was written);
    /// [`prepare`] converts it again.
    Mismatched {
        /// The pulled file.
        path: PathBuf,
        /// The Q8_0 file's sha256, hex.
        sha256: String,
        /// The sha256 its record holds, hex.
        recorded: String,
    },
    /// Nothing runs: the pulled Q4_1 file's sha256 is not the pinned one;
    /// `strata model pull` downloads it again.
    Damaged {
        /// The pulled file.
        path: PathBuf,
        /// Its sha256, hex.
        sha256: String,
    },
}

impl RunningFile {
    /// The file's path (for [`RunningFile::Damaged`], the damaged file,
    /// which must not run).
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            Self::Converted { path, .. }
            | Self::Pulled { path, .. }
            | Self::Mismatched { path, .. }
            | Self::Damaged { path, .. } => path,
        }
    }

    /// The error sentence when nothing can run ([`RunningFile::Damaged`]).
    #[must_use]
    pub fn damage(&self) -> Option<String> {
        match self {
            Self::Damaged { path, sha256 } => Some(format!(
                "the model file {} is damaged (sha256 {sha256}, not the pinned {GGUF_SHA256}); run `strata model pull` to download it again",
                path.display()
            )),
            _ => None,
        }
    }

    /// Whether `strata doctor` should warn: the Q4_1 file runs because of
    /// a failure or a damaged Q8_0 file (not merely before the first use).
    #[must_use]
    pub fn degraded(&self) -> bool {
        matches!(
            self,
            Self::Pulled { failure: Some(_), .. }
                | Self::Mismatched { .. }
                | Self::Converted {
                    damaged_source: Some(_),
                    ..
                }
        )
    }

    /// One sentence for `strata model path` and `strata doctor`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Converted {
                record,
                damaged_source: None,
                ..
            } => format!(
                "runs the Q8_0 file converted from the pulled Q4_1 {} (source sha256 {}, Q8_0 sha256 {})",
                record.source, record.source_sha256, record.sha256
            ),
            Self::Converted {
                record,
                damaged_source: Some(sha256),
                ..
            } => format!(
                "runs the Q8_0 file (sha256 {}), but the pulled Q4_1 {} it was converted from is damaged (sha256 {sha256}, not the pinned {}), so it cannot be converted again; run `strata model pull` to download it again",
                record.sha256, record.source, record.source_sha256
            ),
            Self::Pulled { failure: None, .. } => {
                "runs the pulled Q4_1 file; it is converted to the faster Q8_0 on first use".to_owned()
            }
            Self::Pulled {
                failure: Some(reason),
                ..
            } => format!(
                "runs the pulled Q4_1 file because the Q8_0 conversion failed ({reason}); `strata model pull` tries again"
            ),
            Self::Mismatched { sha256, recorded, .. } => format!(
                "runs the pulled Q4_1 file because the Q8_0 file is damaged (sha256 {sha256}, not the recorded {recorded}); it is converted again on the next start or by `strata model pull`"
            ),
            Self::Damaged { .. } => self.damage().unwrap_or_default(),
        }
    }
}

/// The file that runs from `models_dir`, `None` when nothing was pulled
/// (no Q4_1 file of the pinned size). The conversion runs when no failure
/// is recorded, its record matches the pinned source and its size, and its
/// sha256 is the recorded one; otherwise the Q4_1 file, when its sha256 is
/// the pinned one, else [`RunningFile::Damaged`]. Hashes only files whose
/// size or modification time changed since they were last hashed.
#[must_use]
pub fn running(models_dir: &Path) -> Option<RunningFile> {
    let source = models_dir.join(GGUF_NAME);
    let meta = fs::metadata(&source).ok()?;
    if !meta.is_file() || meta.len() != GGUF_SIZE {
        return None;
    }
    let cache = models_dir.join(SHA_CACHE_NAME);
    let failure = read_failure(models_dir);
    let converted = models_dir.join(Q8_0_NAME);
    let record = failure
        .is_none()
        .then(|| fs::read(models_dir.join(RECORD_NAME)).ok())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
        .filter(|r| r.source_sha256 == GGUF_SHA256)
        // A Q8_0 file of another size (cut short, say) is hashed like any
        // other and found damaged; a missing one is converted on first use.
        .filter(|_| converted.is_file());
    let mut mismatch = None;
    if let Some(record) = record {
        match cached_sha256(&converted, &cache) {
            Ok(sha256) if sha256 == record.sha256 => {
                let damaged_source = cached_sha256(&source, &cache)
                    .ok()
                    .filter(|sha256| sha256 != GGUF_SHA256);
                return Some(RunningFile::Converted {
                    path: converted,
                    record,
                    damaged_source,
                });
            }
            Ok(sha256) => mismatch = Some((sha256, record.sha256)),
            Err(error) => tracing::warn!(%error, "the Q8_0 model file cannot be hashed"),
        }
    }
    // An unreadable file is left to llama.cpp, whose error names the cause.
    if let Ok(sha256) = cached_sha256(&source, &cache)
        && sha256 != GGUF_SHA256
    {
        return Some(RunningFile::Damaged { path: source, sha256 });
    }
    Some(match mismatch {
        Some((sha256, recorded)) => RunningFile::Mismatched {
            path: source,
            sha256,
            recorded,
        },
        None => RunningFile::Pulled {
            path: source,
            failure,
        },
    })
}

/// Converts the pulled file unless a conversion is there or failed before
/// (`retry` tries again after a failure), converts it again when the Q8_0
/// file does not match its record, and returns the file that runs. A
/// failure is recorded and told to `progress`; the pulled file then runs.
/// `None` when nothing was pulled; [`RunningFile::Damaged`] is returned
/// as it is (nothing is converted from a damaged file).
pub fn prepare(models_dir: &Path, retry: bool, progress: &mut dyn FnMut(&str)) -> Option<RunningFile> {
    if retry {
        forget_failure(models_dir);
    }
    let found = running(models_dir)?;
    match &found {
        RunningFile::Mismatched { sha256, recorded, .. } => {
            progress(&format!(
                "the Q8_0 model file is damaged (sha256 {sha256}, not the recorded {recorded}), so it is not used: converting it again from the Q4_1 file"
            ));
            let _ = fs::remove_file(models_dir.join(RECORD_NAME));
            let _ = fs::remove_file(models_dir.join(Q8_0_NAME));
        }
        RunningFile::Pulled { failure: None, .. } => {
            progress("converting the model to Q8_0 once (about 2 s), which prefills about twice as fast");
        }
        _ => return Some(found),
    }
    staging::remove_stale(models_dir);
    match convert(models_dir) {
        Ok(record) => {
            progress(&format!("model ready: {}", models_dir.join(Q8_0_NAME).display()));
            tracing::info!(
                sha256 = record.sha256.as_str(),
                size = record.size,
                "model converted to Q8_0"
            );
        }
        Err(reason) => {
            mark_failed(models_dir, &reason);
            progress(&format!(
                "could not convert the model to Q8_0 ({reason}); running the Q4_1 file, which prefills about half as fast"
            ));
        }
    }
    running(models_dir)
}

/// Hashes the Q8_0 file anew (not trusting the cache), so the next
/// [`running`] or [`prepare`] judges it by its bytes; for `strata model
/// pull`. Nothing happens when there is no Q8_0 file.
pub fn rehash(models_dir: &Path) {
    let converted = models_dir.join(Q8_0_NAME);
    if converted.is_file()
        && let Err(error) = fresh_sha256(&converted, &models_dir.join(SHA_CACHE_NAME))
    {
        tracing::warn!(%error, "the Q8_0 model file cannot be hashed");
    }
}

/// Where a failure is recorded: the models directory, else its parent.
fn failure_files(models_dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![models_dir.join(FAILED_NAME)];
    if let Some(parent) = models_dir.parent() {
        files.push(parent.join(FAILED_NAME));
    }
    files
}

fn read_failure(models_dir: &Path) -> Option<String> {
    failure_files(models_dir)
        .iter()
        .find_map(|file| fs::read_to_string(file).ok())
        .map(|reason| reason.trim().to_owned())
}

/// Forgets that a conversion failed, so the next [`prepare`] tries again.
pub fn forget_failure(models_dir: &Path) {
    for file in failure_files(models_dir) {
        let _ = fs::remove_file(file);
    }
}

/// Records why the conversion cannot be used (also when llama.cpp could
/// not load it), so the pulled file runs until `strata model pull`: in the
/// models directory, else (not writable) in its parent.
pub fn mark_failed(models_dir: &Path, reason: &str) {
    tracing::warn!(%reason, "the Q8_0 model file is not used");
    let _ = fs::remove_file(models_dir.join(RECORD_NAME));
    let _ = fs::remove_file(models_dir.join(Q8_0_NAME));
    let recorded = failure_files(models_dir)
        .iter()
        .any(|file| fs::write(file, format!("{reason}\n")).is_ok());
    if !recorded {
        tracing::warn!("cannot record why the Q8_0 model file is not used; the next start tries again");
    }
}

/// Checks the source's sha256, converts it into a staging file and
/// renames the result and then its record into place.
fn convert(models_dir: &Path) -> Result<Record, String> {
    let source = models_dir.join(GGUF_NAME);
    let cache = models_dir.join(SHA_CACHE_NAME);
    let source_sha256 = cached_sha256(&source, &cache).map_err(|e| e.to_string())?;
    if source_sha256 != GGUF_SHA256 {
        return Err(format!(
            "{GGUF_NAME} has sha256 {source_sha256}, not the pinned {GGUF_SHA256}"
        ));
    }
    let staged = models_dir.join(format!(".convert-{}.gguf", std::process::id()));
    // Said with the OS's reason before any work (a read-only directory).
    fs::File::create(&staged)
        .map_err(|e| format!("cannot create a file in {}: {e}", models_dir.display()))?;
    let result = convert_to_q8_0(&source, &staged).map_err(|e| e.to_string());
    let converted = match result {
        Ok(converted) => converted,
        Err(reason) => {
            let _ = fs::remove_file(&staged);
            return Err(reason);
        }
    };
    let record = Record {
        source: GGUF_NAME.to_owned(),
        source_sha256,
        sha256: converted.sha256,
        size: converted.bytes,
    };
    let record_staged = models_dir.join(format!(".convert-{}.json", std::process::id()));
    let target = models_dir.join(Q8_0_NAME);
    let json = serde_json::to_vec_pretty(&record).map_err(|e| e.to_string())?;
    fs::write(&record_staged, json)
        .and_then(|()| fs::rename(&staged, &target))
        .and_then(|()| fs::rename(&record_staged, models_dir.join(RECORD_NAME)))
        .map_err(|e| {
            let _ = fs::remove_file(&staged);
            let _ = fs::remove_file(&record_staged);
            format!("cannot write the converted file ({e})")
        })?;
    // Hashed while written: the next start need not read 145 MB.
    remember(&target, &cache, &record.sha256);
    forget_failure(models_dir);
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    /// A pulled file of the pinned size whose sha256 the cache says is the
    /// pinned one (hashing zeros would give another): a conversion of it
    /// fails, as it is no GGUF.
    fn pulled(models_dir: &Path) -> PathBuf {
        let source = models_dir.join(GGUF_NAME);
        fs::File::create(&source).unwrap().set_len(GGUF_SIZE).unwrap();
        remember(&source, &models_dir.join(SHA_CACHE_NAME), GGUF_SHA256);
        source
    }

    /// A Q8_0 file with a record matching it, its mtime in the past.
    fn converted_file(models_dir: &Path, bytes: &[u8]) -> Record {
        let file = models_dir.join(Q8_0_NAME);
        fs::write(&file, bytes).unwrap();
        let past = SystemTime::now() - Duration::from_secs(60);
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(past)
            .unwrap();
        let record = Record {
            source: GGUF_NAME.to_owned(),
            source_sha256: GGUF_SHA256.to_owned(),
            sha256: super::super::model_file::sha256_file(&file).unwrap(),
            size: bytes.len() as u64,
        };
        fs::write(models_dir.join(RECORD_NAME), serde_json::to_vec(&record).unwrap()).unwrap();
        record
    }

    #[test]
    fn nothing_runs_before_a_pull() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(running(dir.path()), None);
        assert_eq!(prepare(dir.path(), false, &mut |_| {}), None);
    }

    #[test]
    fn a_converted_file_cut_short_is_damaged_not_unconverted() {
        let dir = tempfile::tempdir().unwrap();
        let source = pulled(dir.path());
        let record = converted_file(dir.path(), b"GGUF converted bytes");
        // Cut short: another size than the record's.
        let file = dir.path().join(Q8_0_NAME);
        fs::write(&file, b"GGUF conv").unwrap();
        let found = running(dir.path()).unwrap();
        assert_eq!(
            found,
            RunningFile::Mismatched {
                path: source,
                sha256: super::super::model_file::sha256_file(&file).unwrap(),
                recorded: record.sha256,
            }
        );
        assert!(found.describe().contains("is damaged"), "{}", found.describe());
        // Missing: converted on first use, nothing damaged.
        fs::remove_file(&file).unwrap();
        assert!(matches!(
            running(dir.path()),
            Some(RunningFile::Pulled { failure: None, .. })
        ));
    }

    #[test]
    fn a_damaged_source_beside_a_good_conversion_is_said_while_the_conversion_runs() {
        let dir = tempfile::tempdir().unwrap();
        let source = pulled(dir.path());
        converted_file(dir.path(), b"GGUF converted bytes");
        // Damaged in place: the cache no longer vouches for it (new mtime).
        fs::File::options()
            .write(true)
            .open(&source)
            .unwrap()
            .set_len(GGUF_SIZE)
            .unwrap();
        let future = SystemTime::now() + Duration::from_secs(5);
        fs::File::options()
            .write(true)
            .open(&source)
            .unwrap()
            .set_modified(future)
            .unwrap();
        let found = running(dir.path()).unwrap();
        let RunningFile::Converted {
            damaged_source: Some(sha256),
            ..
        } = &found
        else {
            panic!("{found:?}");
        };
        assert_ne!(sha256, GGUF_SHA256);
        assert!(found.degraded());
        assert!(
            found.describe().contains("is damaged") && found.describe().contains("strata model pull"),
            "{}",
            found.describe()
        );
    }

    #[test]
    fn a_converted_file_runs_only_while_its_sha256_is_the_recorded_one() {
        let dir = tempfile::tempdir().unwrap();
        let source = pulled(dir.path());
        let record = converted_file(dir.path(), b"GGUF converted bytes");
        let found = running(dir.path()).unwrap();
        assert!(matches!(found, RunningFile::Converted { .. }), "{found:?}");

        // Damaged in place: same size, a new modification time.
        let file = dir.path().join(Q8_0_NAME);
        fs::write(&file, b"GGUF cOnverted bytes").unwrap();
        let actual = super::super::model_file::sha256_file(&file).unwrap();
        let found = running(dir.path()).unwrap();
        assert_eq!(
            found,
            RunningFile::Mismatched {
                path: source,
                sha256: actual.clone(),
                recorded: record.sha256.clone()
            }
        );
        assert!(
            found.describe().contains(&actual),
            "the truth: {}",
            found.describe()
        );
        assert!(found.degraded());

        // Said once, converted again (which fails here: the source is zeros).
        let mut lines = Vec::new();
        let found = prepare(dir.path(), false, &mut |l| lines.push(l.to_owned())).unwrap();
        assert!(
            lines[0].contains("damaged") && lines[0].contains("converting it again"),
            "{lines:?}"
        );
        assert!(
            matches!(found, RunningFile::Pulled { failure: Some(_), .. }),
            "{found:?}"
        );
        assert!(!file.exists());
    }

    #[test]
    fn a_damaged_pulled_file_never_runs_and_is_not_converted() {
        let dir = tempfile::tempdir().unwrap();
        // The right size, not the right bytes (and no forged hash).
        fs::File::create(dir.path().join(GGUF_NAME))
            .unwrap()
            .set_len(GGUF_SIZE)
            .unwrap();
        let found = running(dir.path()).unwrap();
        let RunningFile::Damaged { sha256, .. } = &found else {
            panic!("{found:?}")
        };
        assert_ne!(sha256, GGUF_SHA256);
        let damage = found.damage().unwrap();
        assert!(
            damage.contains("is damaged") && damage.contains("run `strata model pull` to download it again"),
            "{damage}"
        );
        let mut lines = Vec::new();
        assert_eq!(
            prepare(dir.path(), false, &mut |l| lines.push(l.to_owned())),
            Some(found)
        );
        assert!(lines.is_empty(), "{lines:?}");
        assert_eq!(read_failure(dir.path()), None);
    }

    #[test]
    fn a_failed_conversion_runs_the_pulled_file_says_so_and_is_not_retried_until_asked() {
        let dir = tempfile::tempdir().unwrap();
        pulled(dir.path());
        let mut lines = Vec::new();
        let found = prepare(dir.path(), false, &mut |l| lines.push(l.to_owned())).unwrap();
        let RunningFile::Pulled {
            failure: Some(reason),
            ..
        } = &found
        else {
            panic!("{found:?}")
        };
        assert!(reason.contains("cannot be converted"), "{reason}");
        assert!(
            lines.iter().any(|l| l.contains("running the Q4_1 file")),
            "{lines:?}"
        );
        assert!(found.describe().contains("conversion failed"));
        assert!(!dir.path().join(Q8_0_NAME).exists());

        let mut again = Vec::new();
        prepare(dir.path(), false, &mut |l| again.push(l.to_owned()));
        assert!(again.is_empty(), "not retried: {again:?}");
        prepare(dir.path(), true, &mut |l| again.push(l.to_owned()));
        assert!(again.iter().any(|l| l.contains("converting")), "{again:?}");
    }

    #[test]
    fn an_unwritable_models_dir_is_said_with_the_os_error_recorded_beside_it_and_not_retried() {
        let home = tempfile::tempdir().unwrap();
        let models = home.path().join("models");
        fs::create_dir(&models).unwrap();
        pulled(&models);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&models, fs::Permissions::from_mode(0o555)).unwrap();
        }
        if fs::write(models.join("probe"), b"").is_ok() {
            // Privileged (root ignores modes): block the two writes instead.
            fs::remove_file(models.join("probe")).unwrap();
            fs::create_dir(models.join(format!(".convert-{}.gguf", std::process::id()))).unwrap();
            fs::create_dir(models.join(FAILED_NAME)).unwrap();
        }
        let mut lines = Vec::new();
        let found = prepare(&models, false, &mut |l| lines.push(l.to_owned())).unwrap();
        let said = lines.join("\n");
        assert!(said.contains("os error") && !said.contains("150 MB"), "{said}");
        assert!(found.degraded(), "{found:?}");
        assert!(home.path().join(FAILED_NAME).is_file());

        let mut again = Vec::new();
        let found = prepare(&models, false, &mut |l| again.push(l.to_owned())).unwrap();
        assert!(again.is_empty(), "not retried: {again:?}");
        assert!(found.describe().contains("os error"), "{}", found.describe());
        forget_failure(&models);
        assert_eq!(read_failure(&models), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&models, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn converting_removes_what_a_killed_conversion_left() {
        let dir = tempfile::tempdir().unwrap();
        pulled(dir.path());
        // A PID above Linux's maximum: its process is not running.
        let left = dir.path().join(".convert-999999999.gguf");
        fs::write(&left, b"84 MB of a killed conversion").unwrap();
        prepare(dir.path(), false, &mut |_| {});
        assert!(!left.exists());
    }
}
