//! The skills metadata cache, `<data_dir>/skills-cache.json`: parsed
//! frontmatter of every `SKILL.md` with the `(path, mtime_ns, size)` it was
//! parsed from. An entry is reused only when all three match; any change
//! re-parses that file. A missing, unreadable or corrupt cache is ignored and
//! rewritten; the file is replaced atomically (write, then rename).

use super::WorkspaceError;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// File name of the cache inside the data directory.
pub const SKILLS_CACHE_FILE: &str = "skills-cache.json";

/// Bumped when the cache format changes; other versions are ignored.
const CACHE_VERSION: u32 = 1;

/// Parsed metadata of one `SKILL.md`, with its manifest key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CachedSkill {
    pub path: String,
    pub mtime_ns: u64,
    pub size: u64,
    pub name: String,
    pub description: Option<String>,
    pub category: Option<String>,
    /// Why the frontmatter could not be used, as a clause.
    pub error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: Vec<CachedSkill>,
}

/// The cache as loaded, keyed by path.
pub(crate) struct SkillsCache {
    file: PathBuf,
    loaded: Option<Vec<CachedSkill>>,
    by_path: HashMap<String, usize>,
}

impl SkillsCache {
    /// Loads `<data_dir>/skills-cache.json`; anything unusable loads as empty.
    pub fn load(data_dir: &Path) -> Self {
        let file = data_dir.join(SKILLS_CACHE_FILE);
        let loaded = fs::read(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<CacheFile>(&bytes).ok())
            .filter(|c| c.version == CACHE_VERSION)
            .map(|c| c.entries);
        let by_path = loaded
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, e)| (e.path.clone(), i))
            .collect();
        Self {
            file,
            loaded,
            by_path,
        }
    }

    /// The cached entry for `path` if its mtime and size still match.
    pub fn lookup(&self, path: &Path, mtime_ns: u64, size: u64) -> Option<&CachedSkill> {
        let key = path.display().to_string();
        let entry = self.loaded.as_ref()?.get(*self.by_path.get(&key)?)?;
        (entry.mtime_ns == mtime_ns && entry.size == size).then_some(entry)
    }

    /// Writes `entries` unless they equal what was loaded.
    pub fn store(&mut self, entries: &[CachedSkill]) -> Result<(), WorkspaceError> {
        if self.loaded.as_deref() == Some(entries) {
            return Ok(());
        }
        let write = || -> std::io::Result<()> {
            if let Some(dir) = self.file.parent() {
                fs::create_dir_all(dir)?;
            }
            let body = serde_json::to_vec(&CacheFile {
                version: CACHE_VERSION,
                entries: entries.to_vec(),
            })?;
            let tmp = self
                .file
                .with_extension(format!("json.{}.tmp", std::process::id()));
            fs::write(&tmp, body)?;
            fs::rename(&tmp, &self.file)
        };
        write().map_err(|source| WorkspaceError::CacheWrite {
            path: self.file.display().to_string(),
            source,
        })?;
        self.loaded = Some(entries.to_vec());
        Ok(())
    }
}
