//! The embedded model's KV state on disk, so a new process resumes a
//! conversation without prefilling it again (DESIGN §8).
//!
//! Owns the state directory's layout and its disk budget. The directory
//! holds one subdirectory per model file, named by the first 16 hex digits
//! of the file's sha256, and in it one entry per saved token prefix:
//! `ID.kv` (llama.cpp's sequence state, written by the engine) and
//! `ID.meta` (written here: the prefix's tokens and the `.kv` file's size
//! and sha256), where `ID` is a hash of the tokens. An entry exists once its
//! `.meta` does: both are renamed into place, the `.kv` first.
//!
//! Entries are keyed by their tokens, not by a session: the provider only
//! sees requests, and the tokens are what the KV cache holds. A request
//! re-uses the entry sharing the longest token prefix with it, whichever
//! session (or fork, or new session with the same frozen system prompt)
//! saved it. An entry whose tokens are a prefix of a newer one is dropped
//! (the newer one serves every request it could serve). The directory is
//! kept under a byte cap by removing the least recently used entries (a
//! `.meta` file's modification time is its last use), never the one just
//! saved; an entry larger than the cap is not kept.
//!
//! The cap counts strata's entry files only. A save is staged in
//! `.save-PID-N.*.tmp` files; those of a process that no longer runs (or
//! older than ten minutes) are leftovers of a stopped save and removed at
//! the next start or save. Any other file is not strata's: neither counted
//! nor removed, only reported ([`usage`]).
//!
//! Nothing here is an error for the user: an unreadable, stale or corrupt
//! entry is logged, removed and ignored. Blocking file I/O: called on the
//! engine thread only.

use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

mod files;

use files::{FileInfo, Kind, all_files, create_file, is_leftover, is_old};
pub use files::{StateUsage, clear, usage, write_problem};

/// Default byte cap of the state directory (256 MB: about 11,000 tokens of
/// SmolLM2-135M's KV cache, a few long sessions' worth; one 5,600-token
/// prompt alone is 131 MB).
pub const DEFAULT_CAP_BYTES: u64 = 256_000_000;

/// What the cap removed since the process started: states (entries) and
/// their bytes. Shared between the store (which adds to it) and the
/// provider (which says it once).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Entries removed to stay under the cap.
    pub states: usize,
    /// Bytes they took (`.kv` and `.meta`).
    pub bytes: u64,
    /// The cap in bytes.
    pub cap: u64,
}

impl Pruned {
    /// The sentence the app and `strata chat` say once, when something was
    /// removed.
    #[must_use]
    pub fn sentence(&self) -> Option<String> {
        (self.states > 0).then(|| {
            format!(
                "the embedded model's saved KV states passed their {} MB cap; the {} least recently used ({:.1} MB) were removed ([providers.local] kv_state_max_mb sets the cap)",
                self.cap / 1_000_000,
                self.states,
                self.bytes as f64 / 1e6
            )
        })
    }
}

/// First bytes of a `.meta` file.
const META_MAGIC: &[u8; 8] = b"STKVMETA";
/// Version of the `.meta` layout.
const META_VERSION: u32 = 1;
/// Bytes of a `.meta` file besides its tokens: magic, version, token count,
/// `.kv` size, `.kv` sha256, and a sha256 of everything before it.
const META_FIXED: usize = 8 + 4 + 4 + 8 + 32 + 32;

/// A saved token prefix, as its `.meta` file describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// The entry's id (hash of its tokens).
    pub id: String,
    /// The tokens whose keys and values the `.kv` file holds.
    pub tokens: Vec<i32>,
    /// Size of the `.kv` file in bytes.
    pub kv_size: u64,
    /// sha256 of the `.kv` file.
    pub kv_sha256: [u8; 32],
}

/// The entries of one model file.
#[derive(Clone, Debug)]
pub(super) struct StateStore {
    root: PathBuf,
    dir: PathBuf,
    cap: u64,
    /// What the cap removed, added to at each sweep.
    pruned: std::sync::Arc<std::sync::Mutex<Pruned>>,
}

/// Why a state was not saved.
#[derive(Debug)]
pub(super) enum SaveError {
    /// The state alone is larger than the cap; nothing was kept.
    TooBig {
        /// Bytes of the state (`.kv` and `.meta`).
        bytes: u64,
        /// The cap in bytes.
        cap: u64,
    },
    /// A file could not be created, written, read or renamed: the sentence
    /// names the path and the OS reason.
    Io(String),
}

impl std::fmt::Display for SaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooBig { bytes, cap } => write!(
                f,
                "a state of {:.1} MB does not fit the cap of {:.1} MB; raise [providers.local] kv_state_max_mb to keep it",
                *bytes as f64 / 1e6,
                *cap as f64 / 1e6
            ),
            Self::Io(sentence) => f.write_str(sentence),
        }
    }
}

impl StateStore {
    /// The store of the model whose file has sha256 `model_sha256` (hex)
    /// under `root`, kept to `cap` bytes in all; creates its directory
    /// (0700 on Unix), then sweeps leftovers of stopped saves and enforces
    /// the cap (it may have been lowered since the last run); what the cap
    /// removes is added to `pruned`.
    pub(super) fn open(
        root: &Path,
        model_sha256: &str,
        cap: u64,
        pruned: std::sync::Arc<std::sync::Mutex<Pruned>>,
    ) -> io::Result<Self> {
        let short: String = model_sha256.chars().take(16).collect();
        let dir = root.join(short);
        create_private_dir(root)?;
        create_private_dir(&dir)?;
        let store = Self {
            root: root.to_path_buf(),
            dir,
            cap,
            pruned,
        };
        store.sweep(None);
        Ok(store)
    }

    /// The `.kv` file of an entry.
    pub(super) fn kv_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.kv"))
    }

    /// Creates an empty file for the engine to write a `.kv` file to before
    /// [`StateStore::commit`] (`.save-PID-N.kv.tmp`, unique per process and
    /// call) and returns its path. Created here, so that a directory that
    /// cannot be written is reported with its path and the OS reason
    /// (llama.cpp's own error gives neither).
    pub(super) fn create_staging(&self) -> Result<PathBuf, SaveError> {
        let path = self.dir.join(format!(".save-{}.kv.tmp", unique_suffix()));
        create_file(&path).map_err(|error| {
            SaveError::Io(format!(
                "cannot create {} ({error}); make the directory writable",
                path.display()
            ))
        })?;
        Ok(path)
    }

    /// The entries sharing more than `at_least` leading tokens with
    /// `tokens` and holding at most `max_tokens`, longest shared prefix
    /// first, each with that length. Unreadable `.meta` files are logged
    /// and removed.
    pub(super) fn candidates(
        &self,
        tokens: &[i32],
        at_least: usize,
        max_tokens: usize,
    ) -> Vec<(usize, Entry)> {
        let mut found: Vec<(usize, Entry)> = self
            .entries()
            .into_iter()
            .filter(|entry| entry.tokens.len() <= max_tokens)
            .map(|entry| (shared_prefix(&entry.tokens, tokens), entry))
            .filter(|(shared, _)| *shared > at_least)
            .collect();
        found.sort_by_key(|(shared, _)| std::cmp::Reverse(*shared));
        found
    }

    /// Checks that `entry`'s `.kv` file is whole (size and sha256); a file
    /// that is not is removed with its `.meta`, and the reason returned.
    pub(super) fn verify(&self, entry: &Entry) -> Result<PathBuf, String> {
        let path = self.kv_path(&entry.id);
        let problem = match fs::read(&path) {
            Err(error) => Some(format!("cannot read it ({error})")),
            Ok(bytes) if bytes.len() as u64 != entry.kv_size => Some(format!(
                "it is {} bytes, {} were saved (truncated)",
                bytes.len(),
                entry.kv_size
            )),
            Ok(bytes) if Sha256::digest(&bytes).as_slice() != entry.kv_sha256 => {
                Some("its sha256 does not match the saved one (corrupt)".to_owned())
            }
            Ok(_) => None,
        };
        match problem {
            None => Ok(path),
            Some(problem) => {
                self.remove(&entry.id);
                Err(problem)
            }
        }
    }

    /// Marks `entry` as just used (for the LRU order).
    pub(super) fn touch(&self, id: &str) {
        let _ = fs::File::options()
            .append(true)
            .open(self.meta_path(id))
            .and_then(|file| file.set_modified(SystemTime::now()));
    }

    /// Removes an entry (both files); missing files are fine.
    pub(super) fn remove(&self, id: &str) {
        let _ = fs::remove_file(self.meta_path(id));
        let _ = fs::remove_file(self.kv_path(id));
    }

    /// Makes the `.kv` file the engine wrote at `staged` the entry for
    /// `tokens`: hashes it, writes the `.meta`, renames both into place,
    /// then drops entries `tokens` supersede and enforces the cap. Returns
    /// the entry's size in bytes (`.kv` file).
    ///
    /// # Errors
    /// [`SaveError::TooBig`] when the entry alone exceeds the cap (the
    /// staged file is removed, no other entry is); [`SaveError::Io`] naming
    /// the file and the OS reason.
    pub(super) fn commit(&self, staged: &Path, tokens: &[i32]) -> Result<u64, SaveError> {
        let io = |what: &str, path: &Path, error: io::Error| {
            SaveError::Io(format!("cannot {what} {} ({error})", path.display()))
        };
        let bytes = fs::read(staged).map_err(|e| io("read", staged, e))?;
        let entry = Entry {
            id: entry_id(tokens),
            tokens: tokens.to_vec(),
            kv_size: bytes.len() as u64,
            kv_sha256: Sha256::digest(&bytes).into(),
        };
        drop(bytes);
        let meta = encode_meta(&entry);
        let size = entry.kv_size + meta.len() as u64;
        if size > self.cap {
            let _ = fs::remove_file(staged);
            return Err(SaveError::TooBig {
                bytes: size,
                cap: self.cap,
            });
        }
        let meta_staged = self.dir.join(format!(".save-{}.meta.tmp", unique_suffix()));
        fs::write(&meta_staged, meta).map_err(|e| io("write", &meta_staged, e))?;
        let kv = self.kv_path(&entry.id);
        fs::rename(staged, &kv).map_err(|e| io("rename the state to", &kv, e))?;
        let meta_path = self.meta_path(&entry.id);
        fs::rename(&meta_staged, &meta_path).map_err(|e| io("rename the description to", &meta_path, e))?;
        self.drop_superseded(&entry);
        self.sweep(Some(&entry.id));
        Ok(entry.kv_size)
    }

    /// Drops the entries of this model whose tokens are a strict prefix of
    /// `saved`'s.
    fn drop_superseded(&self, saved: &Entry) {
        for entry in self.entries() {
            if entry.id != saved.id
                && entry.tokens.len() < saved.tokens.len()
                && saved.tokens.starts_with(&entry.tokens)
            {
                self.remove(&entry.id);
            }
        }
    }

    /// Removes leftovers of stopped saves (of any model), then least
    /// recently used entries (of any model, never `keep`, the one just
    /// saved) until strata's state files fit the cap. Files that are not
    /// strata's are neither counted nor removed.
    fn sweep(&self, keep: Option<&str>) {
        let mut files = all_files(&self.root);
        files.retain(|file| {
            let leftover = match file.kind {
                Kind::Staging { pid } => is_leftover(pid, file.modified),
                // A `.kv` is renamed into place just before its `.meta`.
                Kind::State { meta: false } => {
                    !file.path.with_extension("meta").exists() && is_old(file.modified)
                }
                _ => false,
            };
            if leftover && fs::remove_file(&file.path).is_ok() {
                tracing::info!(file = %file.path.display(), bytes = file.size, "kv state leftover removed");
            }
            !leftover && matches!(file.kind, Kind::State { .. })
        });
        let mut total: u64 = files.iter().map(|file| file.size).sum();
        if total <= self.cap {
            return;
        }
        let kept = keep.map(|id| self.meta_path(id));
        // Oldest use first: a `.meta`'s time stands for its entry.
        let mut metas: Vec<&FileInfo> = files
            .iter()
            .filter(|file| file.kind == Kind::State { meta: true })
            .filter(|file| kept.as_ref() != Some(&file.path))
            .collect();
        metas.sort_by_key(|file| file.modified);
        for meta in metas {
            if total <= self.cap {
                break;
            }
            let kv = meta.path.with_extension("kv");
            let kv_size = fs::metadata(&kv).map_or(0, |m| m.len());
            let _ = fs::remove_file(&meta.path);
            let _ = fs::remove_file(&kv);
            total = total.saturating_sub(meta.size + kv_size);
            if let Ok(mut pruned) = self.pruned.lock() {
                pruned.states += 1;
                pruned.bytes += meta.size + kv_size;
                pruned.cap = self.cap;
            }
            tracing::info!(
                entry = %meta.path.display(),
                bytes = kv_size,
                cap = self.cap,
                "kv state removed to stay under the cap"
            );
        }
    }

    /// Every readable entry of this model; an unreadable `.meta` is logged
    /// and its entry removed.
    fn entries(&self) -> Vec<Entry> {
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut entries = Vec::new();
        for item in dir.flatten() {
            let path = item.path();
            if path.extension().is_none_or(|e| e != "meta") {
                continue;
            }
            let Some(id) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                continue;
            };
            match fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| decode_meta(&id, &b))
            {
                Ok(entry) => entries.push(entry),
                Err(problem) => {
                    tracing::warn!(entry = %path.display(), %problem, "kv state ignored and removed");
                    self.remove(&id);
                }
            }
        }
        entries
    }

    fn meta_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.meta"))
    }
}

/// `PID-N`: unique among the staging files of all processes (several
/// providers of one process may share a directory).
pub(super) fn unique_suffix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// Creates `dir` and its parents (0700 on Unix).
pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The id of the entry holding `tokens`: 32 hex digits of their sha256.
pub(super) fn entry_id(tokens: &[i32]) -> String {
    let mut hasher = Sha256::new();
    for token in tokens {
        hasher.update(token.to_le_bytes());
    }
    hex::encode(&hasher.finalize()[..16])
}

/// Length of the longest common prefix of two token sequences.
fn shared_prefix(a: &[i32], b: &[i32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn encode_meta(entry: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(META_FIXED + 4 * entry.tokens.len());
    out.extend_from_slice(META_MAGIC);
    out.extend_from_slice(&META_VERSION.to_le_bytes());
    out.extend_from_slice(
        &u32::try_from(entry.tokens.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    out.extend_from_slice(&entry.kv_size.to_le_bytes());
    out.extend_from_slice(&entry.kv_sha256);
    for token in &entry.tokens {
        out.extend_from_slice(&token.to_le_bytes());
    }
    let check = Sha256::digest(&out);
    out.extend_from_slice(&check);
    out
}

fn decode_meta(id: &str, bytes: &[u8]) -> Result<Entry, String> {
    if bytes.len() < META_FIXED || &bytes[..8] != META_MAGIC {
        return Err("not a kv state description".to_owned());
    }
    let (body, check) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != check {
        return Err("its description is corrupt or truncated".to_owned());
    }
    let u32_at = |at: usize| u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
    if u32_at(8) != META_VERSION {
        return Err(format!("description version {} is not {META_VERSION}", u32_at(8)));
    }
    let count = u32_at(12) as usize;
    if body.len() != META_FIXED - 32 + 4 * count {
        return Err("its description has the wrong length".to_owned());
    }
    let mut kv_size = [0_u8; 8];
    kv_size.copy_from_slice(&body[16..24]);
    let mut kv_sha256 = [0_u8; 32];
    kv_sha256.copy_from_slice(&body[24..56]);
    let tokens = (0..count)
        .map(|i| u32_at(56 + 4 * i).cast_signed())
        .collect::<Vec<i32>>();
    if entry_id(&tokens) != id {
        return Err("its name does not match its tokens".to_owned());
    }
    Ok(Entry {
        id: id.to_owned(),
        tokens,
        kv_size: u64::from_le_bytes(kv_size),
        kv_sha256,
    })
}

#[cfg(test)]
#[path = "kv_state_tests.rs"]
mod tests;
