//! Bounded capture of a streamed output: head and tail in memory, the whole
//! written to the spill file.
//!
//! A [`Capture`] keeps every byte while the stream is small (up to
//! [`Capture::bound`] bytes). Past that it creates the spill file, writes
//! the stream so far and everything after it there, and keeps only the
//! first and the last `keep_chars` characters in memory, counting the bytes
//! and newlines it left out between them. Its memory is a fixed multiple of
//! `keep_chars` whatever the volume; [`Capture::finish`] gives the
//! [`Output`] the limits stage cuts (DESIGN §15).
//!
//! Bytes are decoded as UTF-8 at the end, invalid sequences replaced
//! lossily (U+FFFD). Binary bytes ([`bytes_look_binary`], told from the
//! first bytes) are never decoded: the spill file holds them raw, written
//! at the end when the stream stayed small, and the output says only their
//! real size and guessed type. A text spill file has its lines folded at
//! `fold_at` characters as it is written (a newline inserted, nothing
//! removed), so `read_file`, which cuts long lines, reaches every
//! character. Writes to the spill file are plain blocking writes of at most
//! one read's worth of bytes (the page cache takes them at once).

use crate::tooling::limits::bytes_look_binary;
use crate::tooling::{Binary, Output};
use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The most bytes one character takes (UTF-8; an invalid sequence that
/// becomes one U+FFFD takes at most 3).
const MAX_CHAR_BYTES: usize = 4;

/// A bounded capture of one byte stream.
#[derive(Debug)]
pub struct Capture {
    keep_chars: usize,
    fold_at: usize,
    spill_path: PathBuf,
    total_bytes: u64,
    total_newlines: u64,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Every byte so far.
    Whole(Vec<u8>),
    /// The stream went to the spill file.
    Spilled(Box<Spilled>),
}

#[derive(Debug)]
struct Spilled {
    /// The first `keep_chars` characters.
    head: String,
    /// The stream bytes `head` was decoded from.
    head_bytes: usize,
    /// Newlines in those bytes.
    head_newlines: u64,
    /// The last bytes of the stream: at least `tail_keep` once the stream
    /// is that long, at most twice that.
    tail: Vec<u8>,
    /// The spill file, `None` once writing to it failed.
    file: Option<File>,
    /// Why the spill file is incomplete.
    error: Option<io::Error>,
    /// Set for a binary stream: its guessed type. Text is folded instead.
    binary: Option<String>,
    /// Characters of the current line in the spill file (text only).
    column: usize,
    /// Fold lines at this many characters (text only).
    fold_at: usize,
}

/// What a finished capture gives.
#[derive(Debug)]
pub struct Captured {
    /// The output: whole, or head and tail with the middle counted and
    /// `spilled_to` naming the spill file.
    pub output: Output,
    /// Bytes the stream carried.
    pub total_bytes: u64,
    /// Why the spill file could not be written (it is then missing or
    /// incomplete, and `output.spilled_to` is `None`).
    pub spill_error: Option<io::Error>,
}

impl Capture {
    /// A capture that keeps `keep_chars` characters of each end and spills
    /// to `spill_path` (see [`crate::tools::spill_path`]), text lines
    /// folded at `fold_at` characters (the limits' `max_line_chars`); both
    /// are at least one.
    #[must_use]
    pub fn new(spill_path: PathBuf, keep_chars: usize, fold_at: usize) -> Self {
        Self {
            keep_chars: keep_chars.max(1),
            fold_at: fold_at.max(1),
            spill_path,
            total_bytes: 0,
            total_newlines: 0,
            state: State::Whole(Vec::new()),
        }
    }

    /// The bytes kept whole before the capture spills: enough that head
    /// and tail never overlap (`2 × keep_chars` characters of 4 bytes, and
    /// a margin).
    #[must_use]
    pub fn bound(&self) -> usize {
        2 * MAX_CHAR_BYTES * self.keep_chars + 16
    }

    /// Bytes seen so far.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Whether the stream went to the spill file.
    #[must_use]
    pub fn spilled(&self) -> bool {
        matches!(self.state, State::Spilled(_))
    }

    /// Bytes held in memory now: up to twice [`Capture::bound`] and one
    /// pushed chunk while whole, at most twice the bound once spilled.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        match &self.state {
            State::Whole(bytes) => bytes.capacity(),
            State::Spilled(s) => s.head.capacity() + s.tail.capacity(),
        }
    }

    /// Adds the next bytes of the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        self.total_bytes += chunk.len() as u64;
        self.total_newlines += count_newlines(chunk);
        let (tail_keep, bound) = (self.tail_keep(), self.bound());
        match &mut self.state {
            State::Whole(bytes) => {
                bytes.extend_from_slice(chunk);
                if bytes.len() > bound {
                    let bytes = std::mem::take(bytes);
                    self.state = State::Spilled(Box::new(self.spill(&bytes)));
                }
            }
            State::Spilled(s) => {
                s.write(chunk);
                s.keep_tail(chunk, tail_keep);
            }
        }
    }

    /// Adds the whole content of the file at `path`, read in chunks (a
    /// long MCP result the transport left there).
    ///
    /// # Errors
    /// When the file cannot be opened or read.
    pub fn push_file(&mut self, path: &Path) -> io::Result<()> {
        use std::io::Read as _;
        let mut file = File::open(path)?;
        let mut buf = vec![0; 64 << 10];
        loop {
            match file.read(&mut buf)? {
                0 => return Ok(()),
                n => self.push(&buf[..n]),
            }
        }
    }

    /// The latest line of the stream for live progress (a carriage return
    /// starts a line too, as progress bars redraw), trimmed, at most 200
    /// characters; `None` before any visible character.
    #[must_use]
    pub fn last_line(&self) -> Option<String> {
        let bytes = match &self.state {
            State::Whole(bytes) => bytes.as_slice(),
            State::Spilled(s) => s.tail.as_slice(),
        };
        let end = &bytes[bytes.len().saturating_sub(1024)..];
        let line = String::from_utf8_lossy(end)
            .split(['\n', '\r'])
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .map(|l| {
                let skip = l.chars().count().saturating_sub(200);
                l.chars().skip(skip).collect::<String>()
            })?;
        Some(line)
    }

    /// Ends the capture: flushes the spill file and decodes what memory
    /// holds.
    #[must_use]
    pub fn finish(self) -> Captured {
        let total_bytes = self.total_bytes;
        match self.state {
            State::Whole(bytes) if bytes_look_binary(&bytes) => {
                let written = create_spill_file(&self.spill_path).and_then(|mut f| {
                    f.write_all(&bytes)?;
                    f.flush()
                });
                let spill_error = written.err();
                Captured {
                    output: Output {
                        spilled_to: spill_error
                            .is_none()
                            .then(|| self.spill_path.to_string_lossy().into_owned()),
                        binary: Some(Binary {
                            bytes: total_bytes,
                            kind: guess_type(&bytes),
                        }),
                        ..Output::default()
                    },
                    total_bytes,
                    spill_error,
                }
            }
            State::Whole(bytes) => Captured {
                output: Output::whole(String::from_utf8_lossy(&bytes).into_owned()),
                total_bytes,
                spill_error: None,
            },
            State::Spilled(s) => {
                let Spilled {
                    head,
                    head_bytes,
                    head_newlines,
                    tail,
                    file,
                    mut error,
                    binary,
                    ..
                } = *s;
                if let Some(mut file) = file
                    && let Err(e) = file.flush()
                {
                    error.get_or_insert(e);
                }
                let (tail, tail_bytes) = last_chars(&tail, self.keep_chars);
                let tail_newlines = count_newlines(&tail_bytes);
                let omitted_bytes = total_bytes
                    .saturating_sub(head_bytes as u64)
                    .saturating_sub(tail_bytes.len() as u64);
                let omitted_lines = self
                    .total_newlines
                    .saturating_sub(head_newlines)
                    .saturating_sub(tail_newlines);
                let spilled_to = error
                    .is_none()
                    .then(|| self.spill_path.to_string_lossy().into_owned());
                if let Some(kind) = binary {
                    return Captured {
                        output: Output {
                            spilled_to,
                            binary: Some(Binary {
                                bytes: total_bytes,
                                kind,
                            }),
                            ..Output::default()
                        },
                        total_bytes,
                        spill_error: error,
                    };
                }
                Captured {
                    output: Output {
                        head,
                        tail,
                        omitted_bytes,
                        omitted_lines,
                        spilled_to,
                        binary: None,
                        folded: true,
                    },
                    total_bytes,
                    spill_error: error,
                }
            }
        }
    }

    /// The bytes the tail buffer keeps: enough for `keep_chars` characters
    /// after a partial one.
    fn tail_keep(&self) -> usize {
        MAX_CHAR_BYTES * self.keep_chars + MAX_CHAR_BYTES
    }

    /// Leaves whole mode: the head decoded, the spill file created and
    /// given every byte so far.
    fn spill(&self, bytes: &[u8]) -> Spilled {
        let (mut head, head_bytes) = first_chars(bytes, self.keep_chars);
        head.shrink_to_fit();
        let mut spilled = Spilled {
            head_newlines: count_newlines(&bytes[..head_bytes]),
            head,
            head_bytes,
            // The longest the tail gets: `2 × keep` and a chunk's `keep`.
            tail: Vec::with_capacity(3 * self.tail_keep()),
            file: None,
            error: None,
            binary: bytes_look_binary(bytes).then(|| guess_type(bytes)),
            column: 0,
            fold_at: self.fold_at,
        };
        match create_spill_file(&self.spill_path) {
            Ok(file) => spilled.file = Some(file),
            Err(e) => spilled.error = Some(e),
        }
        spilled.write(bytes);
        spilled.keep_tail(bytes, self.tail_keep());
        spilled
    }
}

impl Spilled {
    /// Writes `chunk` to the spill file: as it is when binary, else with a
    /// newline inserted before the character that would make a line longer
    /// than `fold_at` characters (a character starts at each byte that is
    /// not a UTF-8 continuation byte, so a chunk may end inside one).
    fn write(&mut self, chunk: &[u8]) {
        let Some(file) = &mut self.file else {
            return;
        };
        let written = if self.binary.is_some() {
            file.write_all(chunk)
        } else {
            let mut out = Vec::with_capacity(chunk.len() + chunk.len() / self.fold_at + 1);
            for &b in chunk {
                if b == b'\n' {
                    self.column = 0;
                } else if b & 0xc0 != 0x80 {
                    if self.column == self.fold_at {
                        out.push(b'\n');
                        self.column = 0;
                    }
                    self.column += 1;
                }
                out.push(b);
            }
            file.write_all(&out)
        };
        if let Err(e) = written {
            self.error = Some(e);
            self.file = None;
        }
    }

    /// Appends the end of `chunk` to the tail buffer, which is shortened
    /// to `keep` bytes when it reaches twice that (one copy per `keep`
    /// bytes streamed).
    fn keep_tail(&mut self, chunk: &[u8], keep: usize) {
        let chunk = &chunk[chunk.len().saturating_sub(keep)..];
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > 2 * keep {
            let cut = self.tail.len() - keep;
            self.tail.copy_within(cut.., 0);
            self.tail.truncate(keep);
        }
    }
}

/// The MIME type of `bytes` guessed from their magic numbers (`infer`),
/// `application/octet-stream` when unknown.
fn guess_type(bytes: &[u8]) -> String {
    infer::get(bytes)
        .map_or("application/octet-stream", |t| t.mime_type())
        .to_owned()
}

/// Creates the spill file (0600) and its directory (0700) when missing.
fn create_spill_file(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(0o600))?;
    Ok(file)
}

fn count_newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// The first `n` characters of `bytes` decoded lossily, and how many bytes
/// they came from.
fn first_chars(bytes: &[u8], n: usize) -> (String, usize) {
    let mut out = String::new();
    let mut used = 0;
    let mut count = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if count == n {
                return (out, used);
            }
            out.push(c);
            used += c.len_utf8();
            count += 1;
        }
        if !chunk.invalid().is_empty() {
            if count == n {
                return (out, used);
            }
            out.push(char::REPLACEMENT_CHARACTER);
            used += chunk.invalid().len();
            count += 1;
        }
    }
    (out, used)
}

/// The last `n` characters of `bytes` decoded lossily, and the bytes they
/// came from. A partial character at the front of `bytes` is only taken
/// when there are fewer than `n` others.
fn last_chars(bytes: &[u8], n: usize) -> (String, Vec<u8>) {
    // Decoded units (character, byte length), oldest first.
    let mut units: Vec<(char, usize)> = Vec::new();
    for chunk in bytes.utf8_chunks() {
        units.extend(chunk.valid().chars().map(|c| (c, c.len_utf8())));
        if !chunk.invalid().is_empty() {
            units.push((char::REPLACEMENT_CHARACTER, chunk.invalid().len()));
        }
    }
    let kept = &units[units.len().saturating_sub(n)..];
    let len: usize = kept.iter().map(|(_, l)| l).sum();
    (
        kept.iter().map(|(c, _)| c).collect(),
        bytes[bytes.len() - len..].to_vec(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(dir: &Path, keep: usize) -> Capture {
        Capture::new(dir.join("spill/call_1.txt"), keep, 2_000)
    }

    /// The stream pushed in chunks of `step` bytes.
    fn feed(c: &mut Capture, bytes: &[u8], step: usize) {
        for chunk in bytes.chunks(step) {
            c.push(chunk);
        }
    }

    #[test]
    fn a_small_stream_stays_whole_in_memory_and_writes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = capture(dir.path(), 10);
        feed(&mut c, "héllo\nwörld\n".as_bytes(), 3);
        let got = c.finish();
        assert_eq!(got.output, Output::whole("héllo\nwörld\n"));
        assert_eq!(got.total_bytes, 14);
        assert!(!dir.path().join("spill").exists());
    }

    #[test]
    fn a_large_stream_spills_whole_and_keeps_both_ends_with_the_middle_counted() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..400).map(|i| format!("línea {i} 漢字\n")).collect();
        for step in [1, 7, 64, 100_000] {
            let mut c = capture(dir.path(), 10);
            feed(&mut c, text.as_bytes(), step);
            assert!(c.spilled());
            let got = c.finish();
            let out = &got.output;
            let chars: Vec<char> = text.chars().collect();
            let head: String = chars[..10].iter().collect();
            let tail: String = chars[chars.len() - 10..].iter().collect();
            assert_eq!(
                (out.head.as_str(), out.tail.as_str()),
                (head.as_str(), tail.as_str())
            );
            let middle = &text[head.len()..text.len() - tail.len()];
            assert_eq!(out.omitted_bytes, middle.len() as u64, "step {step}");
            assert_eq!(out.omitted_lines, middle.matches('\n').count() as u64);
            let path = dir.path().join("spill/call_1.txt");
            assert_eq!(out.spilled_to.as_deref(), Some(path.to_str().unwrap()));
            assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
        }
    }

    #[test]
    fn the_spill_file_is_private_and_so_is_its_new_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = capture(dir.path(), 4);
        feed(&mut c, &[b'x'; 100], 100);
        let out = c.finish().output;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(Path::new(out.spilled_to.as_deref().unwrap())), 0o600);
        assert_eq!(mode(&dir.path().join("spill")), 0o700);
    }

    #[test]
    fn invalid_utf8_is_replaced_in_memory_and_kept_raw_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = vec![0xff, b'a', 0xe6, 0xbc];
        bytes.extend_from_slice(&[b'-'; 200]);
        bytes.extend_from_slice(&[b'z', 0xc3]);
        let mut c = capture(dir.path(), 3);
        feed(&mut c, &bytes, 5);
        let out = c.finish().output;
        assert_eq!(out.head, "\u{fffd}a\u{fffd}");
        assert_eq!(out.tail, "-z\u{fffd}");
        assert_eq!(out.omitted_bytes, bytes.len() as u64 - 4 - 3);
        assert_eq!(std::fs::read(out.spilled_to.unwrap()).unwrap(), bytes);
    }

    #[test]
    fn memory_stays_bounded_however_much_is_pushed() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = capture(dir.path(), 100);
        let chunk = [b'y'; 4096];
        let mut peak = 0;
        for _ in 0..2_000 {
            c.push(&chunk);
            peak = peak.max(c.memory_bytes());
        }
        assert!(peak <= 3 * c.bound() + chunk.len(), "peak {peak}");
        let got = c.finish();
        assert_eq!(got.total_bytes, 2_000 * 4096);
        assert_eq!(got.output.head.len() + got.output.tail.len(), 200);
        assert_eq!(got.output.omitted_bytes, 2_000 * 4096 - 200);
    }

    #[test]
    fn a_spill_file_that_cannot_be_created_is_reported_and_memory_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spill"), "a file, not a directory").unwrap();
        let mut c = capture(dir.path(), 5);
        feed(&mut c, &[b'q'; 10_000], 512);
        assert!(c.memory_bytes() < 1_000);
        let got = c.finish();
        assert!(got.spill_error.is_some());
        assert_eq!(got.output.spilled_to, None);
        assert_eq!(got.output.head, "qqqqq");
        assert_eq!(got.output.omitted_bytes, 10_000 - 10);
    }

    #[test]
    fn the_last_line_is_the_latest_visible_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = capture(dir.path(), 1000);
        assert_eq!(c.last_line(), None);
        c.push(b"first\nsecond\n\n");
        assert_eq!(c.last_line().as_deref(), Some("second"));
        c.push(b" 10%\r 55% ");
        assert_eq!(c.last_line().as_deref(), Some("55%"));
    }
}
