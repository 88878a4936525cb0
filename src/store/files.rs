//! The database's place on disk: a data directory private to the user (0700
//! when we create it) and database files readable by the user only (0600,
//! including SQLite's `-wal` and `-shm` companions).
//!
//! On non-Unix systems the modes are left to the operating system.

use super::StoreError;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Creates `dir` and any missing parents with mode 0700. An existing
/// directory is left as it is.
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| {
        // A file where a directory should be is not a matter of the
        // parent's permissions.
        match dir.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir()) {
            Some(file) => StoreError::NotWritable {
                path: file.to_path_buf(),
                reason: "something that is not a directory is in its place".to_owned(),
            },
            None => StoreError::CreateDir {
                path: dir.to_path_buf(),
                reason: e.to_string(),
            },
        }
    })
}

/// Creates `dir` (mode 0700) when missing and checks that a file can be
/// created in it, with a probe file removed at once: what every command
/// that stores something needs before it starts.
///
/// # Errors
/// [`StoreError::CreateDir`], or [`StoreError::NotWritable`] when the
/// directory exists and a file cannot be created in it.
pub fn check_writable_dir(dir: &Path) -> Result<(), StoreError> {
    if dir.exists() && !dir.is_dir() {
        return Err(StoreError::NotWritable {
            path: dir.to_path_buf(),
            reason: "something that is not a directory is in its place".to_owned(),
        });
    }
    create_private_dir(dir)?;
    let probe = dir.join(format!(".strata-write-check-{}", std::process::id()));
    let created = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe);
    match created {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(StoreError::NotWritable {
            path: dir.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}

/// Creates an empty database file with mode 0600 when none exists, so that
/// SQLite (which gives `-wal` and `-shm` the main file's mode) never makes a
/// world-readable file. An existing file is not touched.
pub(crate) fn create_private_file(path: &Path) -> Result<(), StoreError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Open {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}

/// The database file and its `-wal` / `-shm` companions.
pub(crate) fn database_files(path: &Path) -> [PathBuf; 3] {
    let with_suffix = |suffix: &str| {
        let mut s = path.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    [path.to_path_buf(), with_suffix("-wal"), with_suffix("-shm")]
}

/// Narrows the database files that exist to mode 0600. Called after the
/// schema is known to be ours, so a refused database keeps its mode too.
pub(crate) fn make_private(path: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for file in database_files(path) {
            let Ok(meta) = fs::metadata(&file) else {
                continue;
            };
            if meta.permissions().mode() & 0o077 != 0 {
                fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).map_err(|e| {
                    StoreError::Open {
                        path: file.clone(),
                        reason: format!("cannot make it private to the user: {e}"),
                    }
                })?;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn missing_directories_are_created_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
    }

    #[test]
    fn new_file_is_private_and_existing_file_keeps_its_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("db");
        create_private_file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        fs::write(&file, b"abc").unwrap();
        create_private_file(&file).unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"abc");
    }

    #[test]
    fn wide_modes_are_narrowed() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("db");
        fs::write(&file, b"").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        make_private(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
    }
}
