//! Bounded, defensive reading of one optional text file into a
//! [`SourceText`]: symlinks resolved and confined, directories, special files,
//! unreadable files, loops and binaries skipped, invalid UTF-8 decoded
//! lossily, and huge files read as a head and a tail only (DESIGN §4 "Caps").
//! Never panics and never reads more than the cap can use.

use super::WorkspaceError;
use crate::prompt::{SourceBody, SourceText, head_tail};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// A file with a NUL byte in this many leading bytes is taken as binary.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// A file up to this many bytes per character of its cap is read whole
/// (no UTF-8 character is longer than 4 bytes).
const BYTES_PER_CHAR: u64 = 4;

/// `ELOOP`: too many levels of symbolic links.
#[cfg(any(target_os = "linux", target_os = "android"))]
const ELOOP: i32 = 40;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const ELOOP: i32 = 62;

/// How many bytes the adapter read from files, for tests and the bench.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Bytes read from instruction, config and skill files.
    pub bytes_read: u64,
    /// Files opened for reading.
    pub files_read: u64,
}

/// Reads files and counts what it read.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    pub stats: ReadStats,
}

impl Reader {
    /// Reads `path` for a layer whose per-file cap is `cap` characters.
    /// With `confine`, a file whose real path is outside that (canonical)
    /// directory is refused unread. A file that does not exist is `Missing`.
    pub fn read(&mut self, path: &Path, confine: Option<&Path>, cap: usize) -> SourceText {
        let shown = path.display().to_string();
        match self.try_read(path, confine, cap) {
            Ok(Some((body, lossy))) => SourceText {
                path: shown,
                status: crate::domain::SourceStatus::Found,
                body,
                note: None,
                lossy,
            },
            Ok(None) => SourceText::missing(shown),
            Err(e @ WorkspaceError::OutsideWorkspace { .. }) => SourceText::blocked(shown, e.to_string()),
            Err(e) => SourceText::skipped(shown, e.to_string()),
        }
    }

    fn try_read(
        &mut self,
        path: &Path,
        confine: Option<&Path>,
        cap: usize,
    ) -> Result<Option<(SourceBody, bool)>, WorkspaceError> {
        let link = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(open_error(e)),
        };
        let real = fs::canonicalize(path).map_err(|e| {
            if e.raw_os_error() == Some(ELOOP) {
                WorkspaceError::SymlinkLoop
            } else if link.file_type().is_symlink() && e.kind() == io::ErrorKind::NotFound {
                WorkspaceError::BrokenSymlink
            } else {
                open_error(e)
            }
        })?;
        if let Some(root) = confine
            && !real.starts_with(root)
        {
            return Err(WorkspaceError::OutsideWorkspace {
                target: real.display().to_string(),
            });
        }
        let meta = fs::metadata(&real).map_err(open_error)?;
        if meta.is_dir() {
            return Err(WorkspaceError::IsDirectory);
        }
        if !meta.is_file() {
            return Err(WorkspaceError::NotRegularFile);
        }
        let mut file = File::open(&real).map_err(open_error)?;
        self.stats.files_read += 1;
        let size = meta.len();
        let limit = (cap as u64).saturating_mul(BYTES_PER_CHAR);
        if size <= limit {
            let bytes = self.read_up_to(&mut file, limit)?;
            check_text(&bytes)?;
            check_text(&bytes[bytes.len().saturating_sub(BINARY_SNIFF_BYTES)..])?;
            let (text, lossy) = decode(&bytes);
            return Ok(Some((SourceBody::Whole { text }, lossy)));
        }
        let (head_chars, tail_chars) = head_tail(cap);
        let head_bytes = self.read_up_to(&mut file, head_chars as u64 * BYTES_PER_CHAR)?;
        check_text(&head_bytes)?;
        let tail_len = (tail_chars as u64 * BYTES_PER_CHAR).min(size);
        file.seek(SeekFrom::Start(size - tail_len))
            .map_err(WorkspaceError::Read)?;
        let tail_bytes = self.read_up_to(&mut file, tail_len)?;
        // A text head does not make a binary tail text (e.g. a file padded with zeros).
        check_text(&tail_bytes[tail_bytes.len().saturating_sub(BINARY_SNIFF_BYTES)..])?;
        check_text(&tail_bytes)?;
        let (head, head_lossy) = decode(trim_partial_end(&head_bytes));
        let (tail, tail_lossy) = decode(trim_partial_start(&tail_bytes));
        let body = SourceBody::Excerpt {
            head,
            tail,
            original_bytes: size,
        };
        Ok(Some((body, head_lossy || tail_lossy)))
    }

    /// Reads at most `limit` bytes from the current position.
    pub fn read_up_to(&mut self, file: &mut File, limit: u64) -> Result<Vec<u8>, WorkspaceError> {
        let mut bytes = Vec::new();
        file.take(limit).read_to_end(&mut bytes).map_err(open_error)?;
        self.stats.bytes_read += bytes.len() as u64;
        Ok(bytes)
    }
}

/// Maps an I/O error to the reason shown to the user.
pub(crate) fn open_error(e: io::Error) -> WorkspaceError {
    match e.kind() {
        io::ErrorKind::PermissionDenied => WorkspaceError::PermissionDenied,
        io::ErrorKind::IsADirectory => WorkspaceError::IsDirectory,
        _ if e.raw_os_error() == Some(ELOOP) => WorkspaceError::SymlinkLoop,
        _ => WorkspaceError::Read(e),
    }
}

/// Refuses binary content: a NUL byte among the first 8 KiB of `bytes`
/// (callers sniff both ends of what they read).
fn check_text(bytes: &[u8]) -> Result<(), WorkspaceError> {
    let sniff = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    if sniff.contains(&0) {
        return Err(WorkspaceError::Binary);
    }
    Ok(())
}

/// Decodes UTF-8, replacing invalid sequences; drops a leading byte-order
/// mark. The flag says whether anything was replaced.
pub(crate) fn decode(bytes: &[u8]) -> (String, bool) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), true),
    }
}

/// Drops a UTF-8 sequence cut off at the end of `bytes`.
pub(crate) fn trim_partial_end(bytes: &[u8]) -> &[u8] {
    let n = bytes.len();
    for back in 1..=n.min(4) {
        let i = n - back;
        let byte = bytes[i];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if back < needed { &bytes[..i] } else { bytes };
    }
    bytes
}

/// Drops continuation bytes of a UTF-8 sequence cut off at the start.
pub(crate) fn trim_partial_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take(3).take_while(|b| **b & 0xC0 == 0x80).count();
    &bytes[skip..]
}

/// Reads a file the user attached to a message (`@path`), at most `cap`
/// characters: a larger file gives its head and tail around a marker.
///
/// # Errors
/// One clause saying why nothing was read: the file does not exist, is a
/// directory, looks binary, or cannot be read.
pub fn read_attachment(path: &Path, cap: usize) -> Result<String, String> {
    let text = Reader::default().read(path, None, cap);
    match (text.status, text.body) {
        (crate::domain::SourceStatus::Found, crate::prompt::SourceBody::Whole { text }) => Ok(text),
        (
            crate::domain::SourceStatus::Found,
            crate::prompt::SourceBody::Excerpt {
                head,
                tail,
                original_bytes,
            },
        ) => {
            // 70 % of the cap from the start, 20 % from the end.
            let head: String = head.chars().take(cap * 7 / 10).collect();
            let tail_chars = tail.chars().count();
            let tail: String = tail.chars().skip(tail_chars.saturating_sub(cap / 5)).collect();
            let left = original_bytes.saturating_sub((head.len() + tail.len()) as u64);
            Ok(format!(
                "{head}\n[... {left} bytes of this {original_bytes}-byte file left out ...]\n{tail}"
            ))
        }
        (crate::domain::SourceStatus::Missing, _) => Err("no such file".to_owned()),
        (_, _) => Err(text.note.unwrap_or_else(|| "it could not be read".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_sequences_are_dropped_at_both_edges() {
        let text = "aé€😀".as_bytes();
        assert_eq!(trim_partial_end(&text[..text.len() - 1]), "aé€".as_bytes());
        assert_eq!(trim_partial_end(text), text);
        assert_eq!(trim_partial_end(&text[..2]), b"a");
        assert_eq!(trim_partial_start(&text[2..]), "€😀".as_bytes());
        assert_eq!(trim_partial_start(&text[4..]), "😀".as_bytes());
    }

    #[test]
    fn decoding_is_lossy_and_says_so() {
        assert_eq!(decode(b"\xEF\xBB\xBFok"), ("ok".to_owned(), false));
        assert_eq!(decode(b"a\xFFb"), ("a\u{FFFD}b".to_owned(), true));
    }

    #[test]
    fn permission_errors_become_a_skip_reason() {
        let e = open_error(io::Error::from(io::ErrorKind::PermissionDenied));
        assert!(matches!(e, WorkspaceError::PermissionDenied));
        assert_eq!(e.to_string(), "permission was denied");
        let e = open_error(io::Error::from_raw_os_error(ELOOP));
        assert!(matches!(e, WorkspaceError::SymlinkLoop));
    }
}
