//! `read_file`, `list_dir`, `memory`, `skill_view` and `current_time`.
//!
//! `read_file` streams the file through a buffered reader: whatever the
//! file's size, it keeps one page and one line (cut at 8 KiB) in memory,
//! counts the rest of the lines and, for files up to [`HASH_MAX_BYTES`],
//! hashes the whole content for the changed-since-read check of
//! [`super::edit`].

use super::edit::Seen;
use super::paths::{Args, Intent, resolve, shown};
use super::search::{counted, walker};
use super::{ToolEnv, ToolOutput};
use crate::text::group_digits;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::PoisonError;

/// Bytes looked at for a NUL (and valid UTF-8) before a file is shown.
const BINARY_PROBE_BYTES: u64 = 8 * 1024;
/// Characters of one shown line; the rest is cut with a marker.
const LINE_MAX_CHARS: usize = 2_000;
/// Bytes of one line kept in memory (enough for [`LINE_MAX_CHARS`]).
const LINE_MAX_BYTES: usize = LINE_MAX_CHARS * 4;
/// Characters kept free under `read_max_chars` for the closing line.
const FOOTER_RESERVE: usize = 200;
/// Files up to this size (bytes) are hashed whole when read; larger ones
/// are checked by size and modification time only.
pub const HASH_MAX_BYTES: u64 = 64 << 20;
/// Entries `list_dir` shows at most.
const LIST_MAX_ENTRIES: usize = 1_000;

const READ_USAGE: &str = r#"{"path": "src/main.rs", "offset": 1, "limit": 2000}"#;
const LIST_USAGE: &str = r#"{"path": "src"}"#;
const MEMORY_USAGE: &str = r#"{"text": "The user prefers tabs."}"#;
const SKILL_USAGE: &str = r#"{"name": "release"}"#;

/// `read_file {path, offset?, limit?}`: lines `offset..offset+limit`
/// (1-based; `limit` at most `read_max_lines`) as `{n:>6}\t{line}`, at
/// most `read_max_chars` characters, each line cut at 2,000 characters,
/// then a closing line saying which lines of how many were shown and the
/// `offset` to read on. Reads the workspace, `allow_paths` and the spill
/// directory. Binary (a NUL in the first 8 KiB) and non-UTF-8 files, and
/// directories, are refused. Records the read in `env.reads`. The output is
/// `paged` (never spilled).
pub fn read_file(env: &ToolEnv, args: &Value) -> ToolOutput {
    let mut out = match read(env, args) {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::error(e),
    };
    out.paged = true;
    out
}

/// A read of a file that looks like a credential asks the user first,
/// and approval does so when the call's `path` says so by its name
/// ([`crate::tooling::approval::sensitive_read`]). A file that looks like
/// one only once resolved (a symbolic link to `.env`) or by its content (a
/// private key named `notes.txt`) was not asked about, so it is refused
/// here, with how to get it asked. `file` is left at its start.
///
/// # Errors
/// `Err(Ok(sentence))` for the model; `Err(Err(io))` when the file's
/// start cannot be read.
fn credential_guard(
    asked: &str,
    real: &Path,
    name: &str,
    file: &mut File,
) -> Result<(), Result<String, io::Error>> {
    use crate::tooling::credentials;
    if credentials::by_name(Path::new(asked)).is_some() {
        return Ok(());
    }
    let mut head = Vec::with_capacity(credentials::SNIFF_BYTES);
    (&mut *file)
        .take(credentials::SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(Err)?;
    file.seek(SeekFrom::Start(0)).map_err(Err)?;
    let how = if credentials::by_name(real).is_some() {
        format!("call read_file with {{\"path\": \"{name}\"}} so the user is asked")
    } else {
        format!("ask the user to attach it as @{name}, which asks them first")
    };
    match credentials::detect(real, Some(&head)) {
        None => Ok(()),
        Some(kind) => Err(Ok(format!(
            "`{name}` looks like {}, so read_file does not return it without the user's approval; if it is needed, {how}.",
            kind.describe()
        ))),
    }
}

/// Why a page ended before the end of the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Limit,
    MaxLines,
    MaxChars,
}

/// One page of a file: the numbered lines shown, the last line number
/// shown, the file's line count and why the page ended early.
struct Page {
    text: String,
    last_shown: usize,
    total: usize,
    stop: Option<Stop>,
}

fn read(env: &ToolEnv, args: &Value) -> Result<String, String> {
    let a = Args::new("read_file", READ_USAGE, args);
    let path = a.string("path")?;
    let offset = a.opt_positive("offset")?.unwrap_or(1);
    let max_lines = env.read_max_lines.max(1);
    let asked = a.opt_positive("limit")?;
    let real = resolve(env, path, Intent::Read)?;
    let name = shown(env, &real);
    let meta = fs::metadata(&real).map_err(|e| open_error(&name, &e))?;
    if meta.is_dir() {
        return Err(format!(
            "`{name}` is a directory; call list_dir with {{\"path\": \"{name}\"}} to see its entries."
        ));
    }
    if !meta.is_file() {
        return Err(format!(
            "`{name}` is not a regular file (a device, pipe or socket); read_file reads regular files only."
        ));
    }
    let io_err = |e: io::Error| format!("`{name}` could not be read ({e}); check the file and try again.");
    let mut file = File::open(&real).map_err(|e| open_error(&name, &e))?;
    credential_guard(path, &real, &name, &mut file).map_err(|e| e.unwrap_or_else(&io_err))?;
    if looks_binary(&mut file).map_err(io_err)? {
        return Err(binary_refusal(&name, meta.len()));
    }
    let mut lines = Lines::new(file, meta.len() <= HASH_MAX_BYTES);
    let (limit, at_limit) = match asked {
        Some(l) if l < max_lines => (l, Stop::Limit),
        _ => (max_lines, Stop::MaxLines),
    };
    let budget = env
        .read_max_chars
        .saturating_sub(FOOTER_RESERVE)
        .max(LINE_MAX_CHARS / 4);
    let page = read_page(&mut lines, offset, (limit, at_limit), budget)
        .map_err(io_err)?
        .ok_or_else(|| binary_refusal(&name, meta.len()))?;
    env.reads.lock().unwrap_or_else(PoisonError::into_inner).record(
        real.clone(),
        Seen {
            size: lines.bytes,
            mtime: meta.modified().ok(),
            sha256: lines.sha256(),
        },
    );
    if page.total == 0 {
        return Ok(format!("`{name}` is empty (0 bytes)."));
    }
    if offset > page.total {
        return Err(format!(
            "`{name}` has {} lines, so offset={offset} is past its end; give an offset from 1 to {}.",
            group_digits(page.total as u64),
            page.total
        ));
    }
    let range = format!(
        "lines {}–{} of {}",
        group_digits(offset as u64),
        group_digits(page.last_shown as u64),
        group_digits(page.total as u64)
    );
    let footer = match page.stop {
        None => format!("[`{name}`: {range}; end of file]"),
        Some(why) => {
            let reason = match why {
                Stop::Limit => String::new(),
                Stop::MaxLines => format!(" (at most {} lines a call)", group_digits(max_lines as u64)),
                Stop::MaxChars => format!(
                    " (at most {} characters a call)",
                    group_digits(env.read_max_chars as u64)
                ),
            };
            format!(
                "[`{name}`: {range} shown{reason}; read on with offset={}]",
                page.last_shown + 1
            )
        }
    };
    Ok(page.text + &footer)
}

/// Reads the page of `limit` lines from line `offset` within `budget`
/// characters (the first line shown is cut to fit if need be), then counts
/// the rest of the lines; `None` when a shown line is not UTF-8.
fn read_page(
    lines: &mut Lines,
    offset: usize,
    (limit, at_limit): (usize, Stop),
    budget: usize,
) -> io::Result<Option<Page>> {
    let mut text = String::new();
    let mut used = 0usize;
    let mut number = 0usize;
    let mut last_shown = 0usize;
    let mut stop = None;
    let mut line = Vec::new();
    number += lines.skip(offset - 1)?;
    while let Some(full_len) = lines.next(&mut line)? {
        number += 1;
        if number - offset >= limit {
            stop = Some(at_limit);
            break;
        }
        let Some((content, whole)) = decode_line(&line, full_len) else {
            return Ok(None);
        };
        let numbered = |text: &str| format!("{number:>6}\t{text}\n");
        let mut entry = numbered(&cut_line(content, whole, full_len, LINE_MAX_CHARS));
        let mut cost = entry.chars().count();
        if used + cost > budget {
            if last_shown > 0 {
                stop = Some(Stop::MaxChars);
                break;
            }
            entry = numbered(&cut_line(content, whole, full_len, budget.saturating_sub(80)));
            cost = entry.chars().count();
        }
        used += cost;
        text.push_str(&entry);
        last_shown = number;
    }
    let total = number + lines.count_rest()?;
    Ok(Some(Page {
        text,
        last_shown,
        total,
        stop,
    }))
}

/// Whether the first [`BINARY_PROBE_BYTES`] hold a NUL or are not UTF-8
/// (a character cut by the probe's end does not count); rewinds `file`.
fn looks_binary(file: &mut File) -> io::Result<bool> {
    let mut probe = Vec::new();
    Read::by_ref(file)
        .take(BINARY_PROBE_BYTES)
        .read_to_end(&mut probe)?;
    file.seek(SeekFrom::Start(0))?;
    if probe.contains(&0) {
        return Ok(true);
    }
    Ok(match std::str::from_utf8(&probe) {
        Ok(_) => false,
        Err(e) => e.error_len().is_some(),
    })
}

fn binary_refusal(name: &str, size: u64) -> String {
    format!(
        "`{name}` is a binary or non-UTF-8 file ({} bytes) that read_file does not show; inspect it with shell (for example `file` or `xxd | head`) instead.",
        group_digits(size)
    )
}

fn open_error(name: &str, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => {
            format!("`{name}` does not exist; check the path with list_dir or glob and try again.")
        }
        io::ErrorKind::PermissionDenied => {
            format!("`{name}` cannot be opened (permission denied); choose a file you may read.")
        }
        _ => format!("`{name}` cannot be opened ({e}); check the path and try again."),
    }
}

/// The text of a line kept in memory (`full_len` bytes long on disk, without
/// its line break) and whether it is whole, or `None` when it is not UTF-8.
/// A character cut by the in-memory cap is dropped; a final `\r` is removed.
fn decode_line(line: &[u8], full_len: u64) -> Option<(&str, bool)> {
    let whole = line.len() as u64 == full_len;
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) if e.error_len().is_none() && !whole => std::str::from_utf8(&line[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    Some(if whole {
        (text.strip_suffix('\r').unwrap_or(text), true)
    } else {
        (text, false)
    })
}

/// `text` cut to `max` characters with a marker when longer, or when it is
/// not `whole` (the line on disk, `full_len` bytes, is longer).
fn cut_line(text: &str, whole: bool, full_len: u64, max: usize) -> String {
    let cut_at = text.char_indices().nth(max).map(|(i, _)| i);
    if whole && cut_at.is_none() {
        return text.to_owned();
    }
    let kept = &text[..cut_at.unwrap_or(text.len())];
    format!(
        "{kept} … [line cut after {} characters; it has {} bytes]",
        group_digits(kept.chars().count() as u64),
        group_digits(full_len)
    )
}

/// A file read line by line with each line's memory capped, hashing what
/// it reads when asked to.
struct Lines {
    reader: BufReader<File>,
    hasher: Option<Sha256>,
    /// Bytes read so far.
    bytes: u64,
}

impl Lines {
    fn new(file: File, hash: bool) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, file),
            hasher: hash.then(Sha256::new),
            bytes: 0,
        }
    }

    /// Reads the next line into `line` (at most [`LINE_MAX_BYTES`] of it,
    /// without the `\n`) and returns its whole length in bytes, or `None`
    /// at the end of the file.
    fn next(&mut self, line: &mut Vec<u8>) -> io::Result<Option<u64>> {
        line.clear();
        let mut len = 0u64;
        let mut any = false;
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(any.then_some(len));
            }
            any = true;
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            let content = &chunk[..if done { take - 1 } else { take }];
            let room = LINE_MAX_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&content[..content.len().min(room)]);
            len += content.len() as u64;
            if let Some(h) = &mut self.hasher {
                h.update(&chunk[..take]);
            }
            self.bytes += take as u64;
            self.reader.consume(take);
            if done {
                return Ok(Some(len));
            }
        }
    }

    /// Skips `n` lines without keeping them and returns how many there
    /// were (fewer at the end of the file).
    fn skip(&mut self, n: usize) -> io::Result<usize> {
        let mut skipped = 0usize;
        let mut partial = false;
        while skipped < n {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(skipped + usize::from(partial));
            }
            let mut take = chunk.len();
            for i in memchr::memchr_iter(b'\n', chunk) {
                skipped += 1;
                if skipped == n {
                    take = i + 1;
                    break;
                }
            }
            partial = chunk[take - 1] != b'\n';
            if let Some(h) = &mut self.hasher {
                h.update(&chunk[..take]);
            }
            self.bytes += take as u64;
            self.reader.consume(take);
        }
        Ok(skipped)
    }

    /// Reads to the end and returns how many lines were left.
    fn count_rest(&mut self) -> io::Result<usize> {
        let mut count = 0usize;
        let mut last = None;
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            count += memchr::memchr_iter(b'\n', chunk).count();
            last = chunk.last().copied();
            if let Some(h) = &mut self.hasher {
                h.update(chunk);
            }
            let n = chunk.len();
            self.bytes += n as u64;
            self.reader.consume(n);
        }
        Ok(count + usize::from(last.is_some_and(|b| b != b'\n')))
    }

    /// The hex SHA-256 of everything read, when hashing was asked for.
    fn sha256(&mut self) -> Option<String> {
        self.hasher.take().map(|h| hex::encode(h.finalize()))
    }
}

/// `list_dir {path?}`: the entries of one directory (default the root),
/// sorted by name, directories with a trailing `/`, files with their size,
/// symbolic links with their target; `.gitignore`d entries and `.git` left
/// out, other hidden entries shown; at most 1,000 with a count of the rest.
pub fn list_dir(env: &ToolEnv, args: &Value) -> ToolOutput {
    match list(env, args) {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::error(e),
    }
}

fn list(env: &ToolEnv, args: &Value) -> Result<String, String> {
    let a = Args::new("list_dir", LIST_USAGE, args);
    let path = a.opt_string("path")?.unwrap_or(".");
    let real = resolve(env, path, Intent::Read)?;
    let name = shown(env, &real);
    let meta = fs::metadata(&real).map_err(|e| open_error(&name, &e))?;
    if !meta.is_dir() {
        return Err(format!(
            "`{name}` is a file, not a directory; call read_file with {{\"path\": \"{name}\"}} to read it."
        ));
    }
    let mut entries: Vec<(String, String)> = walker(&real)
        .max_depth(Some(1))
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.depth() == 1)
        .map(|e| {
            let file_name = e.file_name().to_string_lossy().into_owned();
            let line = describe(e.path(), &file_name, e.file_type());
            (file_name, line)
        })
        .collect();
    if entries.is_empty() {
        return Ok(format!(
            "`{name}` is empty (or all its entries are ignored by .gitignore)."
        ));
    }
    entries.sort();
    let total = entries.len();
    let mut text = format!("`{name}` ({}):\n", counted(total as u64, "entry", "entries"));
    for (_, line) in entries.iter().take(LIST_MAX_ENTRIES) {
        text.push_str(line);
        text.push('\n');
    }
    if total > LIST_MAX_ENTRIES {
        text.push_str(&format!(
            "… and {} more entries; use glob with a pattern to narrow the list.\n",
            group_digits((total - LIST_MAX_ENTRIES) as u64)
        ));
    }
    Ok(text)
}

fn describe(path: &Path, file_name: &str, kind: Option<fs::FileType>) -> String {
    match kind {
        Some(k) if k.is_dir() => format!("{file_name}/"),
        Some(k) if k.is_symlink() => {
            let target = fs::read_link(path).map_or_else(|_| "?".to_owned(), |t| t.display().to_string());
            format!("{file_name} -> {target}")
        }
        _ => match fs::symlink_metadata(path) {
            Ok(m) => format!("{file_name}  ({} bytes)", group_digits(m.len())),
            Err(_) => file_name.to_owned(),
        },
    }
}

/// `memory {text}`: appends `text` as a new paragraph to `env.memory_file`
/// (creating it and its directory), one bullet ending in a comment that
/// records its origin ([`memory_line`]). The frozen system prompt is not
/// rebuilt: the note takes effect in new sessions. A note that gives
/// orders is refused here too, though approval refuses it first.
pub fn memory(env: &ToolEnv, tool_call_id: &str, args: &Value) -> ToolOutput {
    let (line, secrets) = match memory_line(env, tool_call_id, args) {
        Ok(note) => note,
        Err(e) => return ToolOutput::error(e),
    };
    match append_paragraph(&env.memory_file, &line) {
        Ok(()) => ToolOutput::ok(format!(
            "Saved to {}{}; it takes effect in new sessions (this session's system prompt stays as it is).",
            env.memory_file.display(),
            if secrets {
                " with what looked like secrets replaced"
            } else {
                ""
            }
        )),
        Err(e) => ToolOutput::error(format!(
            "The note could not be saved to {} ({e}); tell the user, who can add it with /memory.",
            env.memory_file.display()
        )),
    }
}

/// The exact line a `memory` call of `tool_call_id` would append, and
/// whether secrets were replaced in it: `- NOTE <!-- strata: session
/// SHORT, call ID -->`, the note on one line with secrets redacted and
/// any comment markers of its own removed (so it cannot forge an origin),
/// the origin comment last. The approval overlay shows this line.
///
/// # Errors
/// One sentence for the model: `text` is missing or empty, or the note
/// looks like a prompt injection or gives a standing order
/// ([`crate::prompt::scan_memory`]).
pub fn memory_line(env: &ToolEnv, tool_call_id: &str, args: &Value) -> Result<(String, bool), String> {
    let a = Args::new("memory", MEMORY_USAGE, args);
    let text = match a.string("text") {
        Ok(t) if !t.trim().is_empty() => t.trim(),
        Ok(_) => return Err(format!("`text` is empty; call memory as {MEMORY_USAGE}.")),
        Err(e) => return Err(e),
    };
    // Memory goes into every future session's prompt: no instructions that
    // would override it, no standing orders, no secrets, no headings of its
    // own (one bullet).
    let findings = crate::prompt::scan_memory(text);
    if !findings.is_empty() {
        let list: Vec<String> = findings.iter().map(ToString::to_string).collect();
        return Err(format!(
            "The note was not saved: it looks like a prompt injection or a standing order ({}); memory keeps facts about the user and the project, not instructions.",
            list.join("; ")
        ));
    }
    let redacted = crate::compress::redact::redact(text);
    let secrets = matches!(redacted, std::borrow::Cow::Owned(_));
    let note = redacted
        .replace("<!--", "")
        .replace("-->", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let session = crate::tooling::limits::spill_name(&env.session);
    let call = crate::tooling::limits::spill_name(tool_call_id);
    Ok((
        format!("- {note} <!-- strata: session {session}, call {call} -->"),
        secrets,
    ))
}

fn append_paragraph(file: &Path, text: &str) -> io::Result<()> {
    if let Some(dir) = file.parent() {
        fs::create_dir_all(dir)?;
    }
    let existing = match fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let separator = if existing.is_empty() || existing.ends_with(b"\n\n") {
        ""
    } else if existing.ends_with(b"\n") {
        "\n"
    } else {
        "\n\n"
    };
    let mut out = fs::OpenOptions::new().create(true).append(true).open(file)?;
    out.write_all(format!("{separator}{text}\n").as_bytes())
}

/// `skill_view {name}`: the body of the skill's `SKILL.md` (its YAML
/// frontmatter left out), headed by its path. An unknown name lists the
/// known ones.
pub fn skill_view(env: &ToolEnv, args: &Value) -> ToolOutput {
    let a = Args::new("skill_view", SKILL_USAGE, args);
    let name = match a.string("name") {
        Ok(n) => n.trim(),
        Err(e) => return ToolOutput::error(e),
    };
    let found = env
        .skills
        .iter()
        .find(|s| s.name == name)
        .or_else(|| env.skills.iter().find(|s| s.name.eq_ignore_ascii_case(name)));
    let Some(skill) = found else {
        if env.skills.is_empty() {
            return ToolOutput::error(format!(
                "There is no skill named `{name}`, and no skills are installed."
            ));
        }
        let known: Vec<String> = env.skills.iter().map(|s| format!("`{}`", s.name)).collect();
        return ToolOutput::error(format!(
            "There is no skill named `{name}`; call skill_view with one of {}.",
            known.join(", ")
        ));
    };
    match fs::read(&skill.path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let body = crate::prompt::split_frontmatter(&text).map_or(&*text, |(_, body)| body);
            ToolOutput::ok(format!(
                "Skill `{}` ({}):\n\n{}",
                skill.name,
                skill.path.display(),
                body.trim_start_matches(['\n', '\r'])
            ))
        }
        Err(e) => ToolOutput::error(format!(
            "The skill `{}` could not be read from {} ({e}); tell the user to check the file.",
            skill.name,
            skill.path.display()
        )),
    }
}

/// `current_time {}`: the local date and time with its zone, UTC offset
/// and weekday, in words and as RFC 3339, and the Unix time in seconds.
pub fn current_time(_env: &ToolEnv, _args: &Value) -> ToolOutput {
    let now = jiff::Zoned::now();
    let words = jiff::fmt::strtime::format("%A %-d %B %Y, %H:%M:%S %Z (UTC%:z)", &now);
    let rfc3339 = jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%S%:z", &now);
    match (words, rfc3339) {
        (Ok(words), Ok(rfc3339)) => {
            let zone = now.time_zone().iana_name().unwrap_or("the system's zone");
            ToolOutput::ok(format!(
                "{words}, time zone {zone}\nRFC 3339: {rfc3339}\nUnix time: {} s",
                now.timestamp().as_second()
            ))
        }
        (Err(e), _) | (_, Err(e)) => {
            ToolOutput::error(format!("The local time could not be formatted ({e})."))
        }
    }
}
