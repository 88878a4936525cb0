//! The sha256 of model files, remembered per path, size and modification
//! time so a start does not hash ~100 MB again.
//!
//! Owns the cache file (JSON, `{"files": [{path, size, mtime_ns, sha256}]}`):
//! an entry counts only while the file's size and modification time are the
//! ones hashed. An unreadable cache is ignored and rewritten; a cache that
//! cannot be written only costs a hash on the next start. Blocking.

use super::model_file::{ModelFileError, sha256_file};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Entries kept in the cache file (the most recent ones).
const MAX_ENTRIES: usize = 32;

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    files: Vec<CachedSha>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct CachedSha {
    path: PathBuf,
    size: u64,
    mtime_ns: u128,
    sha256: String,
}

/// Hex sha256 of `file`, from `cache` when it holds the file with its
/// current size and modification time, else computed and stored there.
///
/// # Errors
/// [`ModelFileError::Io`] when `file` cannot be read.
pub fn cached_sha256(file: &Path, cache: &Path) -> Result<String, ModelFileError> {
    let key = key_of(file)?;
    let stored = read_cache(cache);
    if let Some(hit) = stored
        .files
        .iter()
        .find(|c| c.path == key.path && c.size == key.size && c.mtime_ns == key.mtime_ns)
    {
        return Ok(hit.sha256.clone());
    }
    let sha256 = sha256_file(file)?;
    store(cache, stored, key, &sha256);
    Ok(sha256)
}

/// Hex sha256 of `file`, always computed (the cache is not trusted), and
/// stored in `cache` for later [`cached_sha256`] calls.
///
/// # Errors
/// [`ModelFileError::Io`] when `file` cannot be read.
pub fn fresh_sha256(file: &Path, cache: &Path) -> Result<String, ModelFileError> {
    let key = key_of(file)?;
    let sha256 = sha256_file(file)?;
    store(cache, read_cache(cache), key, &sha256);
    Ok(sha256)
}

/// Stores `sha256` as the hash of `file` as it is now (its size and
/// modification time), for a file whose hash is known without reading it
/// (one strata just wrote and hashed while writing). Best effort.
pub fn remember(file: &Path, cache: &Path, sha256: &str) {
    if let Ok(key) = key_of(file) {
        store(cache, read_cache(cache), key, sha256);
    }
}

/// A file's identity in the cache (the `sha256` left empty).
fn key_of(file: &Path) -> Result<CachedSha, ModelFileError> {
    let meta = fs::metadata(file).map_err(|source| ModelFileError::Io {
        path: file.to_path_buf(),
        source,
    })?;
    Ok(CachedSha {
        path: fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf()),
        size: meta.len(),
        mtime_ns: meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos()),
        sha256: String::new(),
    })
}

fn read_cache(cache: &Path) -> CacheFile {
    fs::read(cache)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn store(cache: &Path, mut stored: CacheFile, key: CachedSha, sha256: &str) {
    stored.files.retain(|c| c.path != key.path);
    stored.files.push(CachedSha {
        sha256: sha256.to_owned(),
        ..key
    });
    let excess = stored.files.len().saturating_sub(MAX_ENTRIES);
    stored.files.drain(..excess);
    if let Err(error) = write_atomically(cache, &stored) {
        tracing::warn!(cache = %cache.display(), %error, "cannot remember a model file's sha256");
    }
}

fn write_atomically(cache: &Path, stored: &CacheFile) -> std::io::Result<()> {
    if let Some(dir) = cache.parent() {
        fs::create_dir_all(dir)?;
    }
    let staged = cache.with_extension(format!("tmp-{}", std::process::id()));
    fs::write(
        &staged,
        serde_json::to_vec_pretty(stored).map_err(std::io::Error::other)?,
    )?;
    fs::rename(&staged, cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn the_hash_is_remembered_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.gguf");
        let cache = dir.path().join("state/sha256.json");
        fs::write(&file, b"abc").unwrap();
        assert_eq!(cached_sha256(&file, &cache).unwrap(), ABC);
        assert!(cache.is_file());

        // A remembered hash is used as long as size and time match: forge
        // the entry to prove the file is not hashed again.
        let mut stored: CacheFile = serde_json::from_slice(&fs::read(&cache).unwrap()).unwrap();
        stored.files[0].sha256 = "remembered".to_owned();
        fs::write(&cache, serde_json::to_vec(&stored).unwrap()).unwrap();
        assert_eq!(cached_sha256(&file, &cache).unwrap(), "remembered");

        // Another content (and size) is hashed anew.
        fs::write(&file, b"abcd").unwrap();
        assert_ne!(cached_sha256(&file, &cache).unwrap(), "remembered");
    }

    #[test]
    fn an_unreadable_cache_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.gguf");
        let cache = dir.path().join("sha256.json");
        fs::write(&file, b"abc").unwrap();
        fs::write(&cache, b"{not json").unwrap();
        assert_eq!(cached_sha256(&file, &cache).unwrap(), ABC);
        let stored: CacheFile = serde_json::from_slice(&fs::read(&cache).unwrap()).unwrap();
        assert_eq!(stored.files.len(), 1);
    }

    #[test]
    fn a_fresh_hash_replaces_a_remembered_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.gguf");
        let cache = dir.path().join("sha256.json");
        fs::write(&file, b"abc").unwrap();
        remember(&file, &cache, "forged");
        assert_eq!(cached_sha256(&file, &cache).unwrap(), "forged");
        assert_eq!(fresh_sha256(&file, &cache).unwrap(), ABC);
        assert_eq!(cached_sha256(&file, &cache).unwrap(), ABC);
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let error = cached_sha256(&dir.path().join("none"), &dir.path().join("c.json")).unwrap_err();
        assert!(matches!(error, ModelFileError::Io { .. }));
    }
}
