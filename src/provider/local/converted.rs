//! The Q8_0 copy of the pulled model that the embedded model runs: made
//! once from the Q4_1 file after `strata model pull` or on first use (~1-2
//! s, ~145 MB), it prefills about twice as fast (DESIGN §8, FACTS.md).
//!
//! Owns three files in the models directory next to the pulled
//! [`GGUF_NAME`]: [`Q8_0_NAME`]; its record [`RECORD_NAME`] (JSON: the
//! source's name and sha256, the result's sha256 and size), written after
//! the file, so a converted file without a matching record is not used; and
//! [`FAILED_NAME`], the reason the last conversion failed, which stops
//! every start from trying again until `strata model pull` does. When
//! there is no usable conversion the Q4_1 file runs and the user is told.

use super::file_sha::cached_sha256;
use super::model_file::{GGUF_NAME, GGUF_SHA256, GGUF_SIZE};
use super::quantize::convert_to_q8_0;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// File name of the converted model.
pub const Q8_0_NAME: &str = "SmolLM2-135M-Instruct.Q8_0.gguf";
/// File name of the conversion's record.
pub const RECORD_NAME: &str = "SmolLM2-135M-Instruct.Q8_0.json";
/// File name of the last failure's reason.
pub const FAILED_NAME: &str = "SmolLM2-135M-Instruct.Q8_0.failed";

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
    /// The Q8_0 conversion.
    Converted {
        /// The converted file.
        path: PathBuf,
        /// Its record.
        record: Record,
    },
    /// The pulled Q4_1 file.
    Pulled {
        /// The pulled file.
        path: PathBuf,
        /// Why the conversion is not used (`None`: not tried yet).
        failure: Option<String>,
    },
}

impl RunningFile {
    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        match self {
            Self::Converted { path, .. } | Self::Pulled { path, .. } => path,
        }
    }

    /// One sentence for `strata model path` and `strata doctor`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Converted { record, .. } => format!(
                "runs the Q8_0 file converted from the pulled Q4_1 {} (source sha256 {}, Q8_0 sha256 {})",
                record.source, record.source_sha256, record.sha256
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
        }
    }
}

/// The file that runs from `models_dir`: the conversion when its record
/// matches the pinned source and its size, else the pulled file; `None`
/// when nothing was pulled. Only sizes are checked (no hashing).
#[must_use]
pub fn running(models_dir: &Path) -> Option<RunningFile> {
    let source = models_dir.join(GGUF_NAME);
    let meta = fs::metadata(&source).ok()?;
    if !meta.is_file() || meta.len() != GGUF_SIZE {
        return None;
    }
    let converted = models_dir.join(Q8_0_NAME);
    let record = fs::read(models_dir.join(RECORD_NAME))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
        .filter(|r| r.source_sha256 == GGUF_SHA256)
        .filter(|r| fs::metadata(&converted).is_ok_and(|m| m.len() == r.size));
    Some(match record {
        Some(record) => RunningFile::Converted {
            path: converted,
            record,
        },
        None => RunningFile::Pulled {
            path: source,
            failure: fs::read_to_string(models_dir.join(FAILED_NAME))
                .ok()
                .map(|reason| reason.trim().to_owned()),
        },
    })
}

/// Converts the pulled file unless a conversion is there or failed before
/// (`retry` tries again after a failure), and returns the file that runs.
/// A failure is recorded and told to `progress`; the pulled file then runs.
/// `None` when nothing was pulled.
pub fn prepare(models_dir: &Path, retry: bool, progress: &mut dyn FnMut(&str)) -> Option<RunningFile> {
    if retry {
        forget_failure(models_dir);
    }
    let found = running(models_dir)?;
    if let RunningFile::Pulled { failure: None, .. } = &found {
        progress("converting the model to Q8_0 once (about 2 s), which prefills about twice as fast");
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
        return running(models_dir);
    }
    Some(found)
}

/// Forgets that a conversion failed, so the next [`prepare`] tries again.
pub fn forget_failure(models_dir: &Path) {
    let _ = fs::remove_file(models_dir.join(FAILED_NAME));
}

/// Records why the conversion cannot be used (also when llama.cpp could
/// not load it), so the pulled file runs until `strata model pull`.
pub fn mark_failed(models_dir: &Path, reason: &str) {
    tracing::warn!(%reason, "the Q8_0 model file is not used");
    let _ = fs::remove_file(models_dir.join(RECORD_NAME));
    let _ = fs::remove_file(models_dir.join(Q8_0_NAME));
    let _ = fs::write(models_dir.join(FAILED_NAME), format!("{reason}\n"));
}

/// Checks the source's sha256, converts it into a staging file and
/// renames the result and then its record into place.
fn convert(models_dir: &Path) -> Result<Record, String> {
    let source = models_dir.join(GGUF_NAME);
    let source_sha256 = cached_sha256(&source, &models_dir.join("sha256.json")).map_err(|e| e.to_string())?;
    if source_sha256 != GGUF_SHA256 {
        return Err(format!(
            "{GGUF_NAME} has sha256 {source_sha256}, not the pinned {GGUF_SHA256}"
        ));
    }
    let staged = models_dir.join(format!(".convert-{}.gguf", std::process::id()));
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
    let json = serde_json::to_vec_pretty(&record).map_err(|e| e.to_string())?;
    fs::write(&record_staged, json)
        .and_then(|()| fs::rename(&staged, models_dir.join(Q8_0_NAME)))
        .and_then(|()| fs::rename(&record_staged, models_dir.join(RECORD_NAME)))
        .map_err(|e| {
            let _ = fs::remove_file(&staged);
            let _ = fs::remove_file(&record_staged);
            format!("cannot write the converted file ({e})")
        })?;
    let _ = fs::remove_file(models_dir.join(FAILED_NAME));
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_runs_before_a_pull() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(running(dir.path()), None);
        assert_eq!(prepare(dir.path(), false, &mut |_| {}), None);
    }

    #[test]
    fn a_converted_file_without_a_matching_record_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join(GGUF_NAME);
        fs::File::create(&source).unwrap().set_len(GGUF_SIZE).unwrap();
        fs::write(dir.path().join(Q8_0_NAME), b"GGUF half written").unwrap();
        let record = Record {
            source: GGUF_NAME.to_owned(),
            source_sha256: GGUF_SHA256.to_owned(),
            sha256: "x".to_owned(),
            size: 1_000,
        };
        fs::write(dir.path().join(RECORD_NAME), serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(
            running(dir.path()),
            Some(RunningFile::Pulled {
                path: source,
                failure: None
            })
        );
    }

    #[test]
    fn a_failed_conversion_runs_the_pulled_file_says_so_and_is_not_retried_until_asked() {
        let dir = tempfile::tempdir().unwrap();
        // The right size, not the right bytes: the checksum refuses it.
        fs::File::create(dir.path().join(GGUF_NAME))
            .unwrap()
            .set_len(GGUF_SIZE)
            .unwrap();
        let mut lines = Vec::new();
        let found = prepare(dir.path(), false, &mut |l| lines.push(l.to_owned())).unwrap();
        let RunningFile::Pulled {
            failure: Some(reason),
            ..
        } = &found
        else {
            panic!("{found:?}")
        };
        assert!(reason.contains("not the pinned"), "{reason}");
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
}
