//! A message too long to hold in memory: spooled to a file as it arrives
//! ([`Spool`]), then read back as a stream ([`read`]).
//!
//! A `tools/call` result's text goes to a second file, block after block
//! as [`super::render`] would join them, and the message the service sees
//! is a small result whose `_meta` carries [`LARGE_KEY`]: a token the
//! hub exchanges for that file ([`super::transport::Shared::take_large`]).
//! Tokens are random and taken once, so a server cannot name a file.
//! Images, audio and binary resources in such a result are decoded as they
//! stream into files of their own beside it, which stay (swept with the
//! spill files), and stand as one line naming the file, as in a small
//! result. A long message that is not valid JSON but has an `id`
//! answers its request with a parse error, so the call ends at once.

use super::transport::Shared;
use rmcp::RoleClient;
use rmcp::service::RxJsonRpcMessage;
use serde_json::{Value, json};
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use struson::reader::{JsonReader, JsonStreamReader, ValueType};
use struson::writer::{JsonStreamWriter, JsonWriter};

/// The `_meta` key of a result whose text is in a file.
pub const LARGE_KEY: &str = "strata/large-result";

/// JSON-RPC's parse error code, which a long answer strata could not read
/// or keep is turned into, its message starting with [`UNREAD`].
pub const PARSE_ERROR: i32 = -32700;

/// How the message of such an error starts.
pub const UNREAD: &str = "strata could not";

/// A long result's text, in a file the taker removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Large {
    /// The file (private to the user).
    pub file: PathBuf,
    /// Its size, bytes.
    pub bytes: u64,
    /// The size of the message it came in, bytes.
    pub message_bytes: u64,
    /// The files its images, audio and binary resources were saved to, in
    /// order (they stay when the text file is removed).
    pub files: Vec<PathBuf>,
}

/// A message being written to a file; the file is removed when dropped.
pub struct Spool {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    bytes: u64,
    error: Option<io::Error>,
}

impl Spool {
    /// A new file under `dir` (created, private) holding `first`.
    ///
    /// # Errors
    /// When the directory or file cannot be created or written.
    pub fn create(dir: &Path, first: &[u8]) -> io::Result<Self> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let path = dir.join(format!("mcp-message-{}.json", uuid::Uuid::now_v7()));
        let file = private_file(&path)?;
        let mut spool = Self {
            path,
            file: Some(BufWriter::with_capacity(64 << 10, file)),
            bytes: 0,
            error: None,
        };
        spool.write(first);
        match spool.error.take() {
            Some(e) => Err(e),
            None => Ok(spool),
        }
    }

    /// Appends `part` (a failure is kept and reported by [`read`]).
    pub fn write(&mut self, part: &[u8]) {
        self.bytes += part.len() as u64;
        if let Some(file) = &mut self.file
            && let Err(e) = file.write_all(part)
        {
            self.file = None;
            self.error = Some(e);
        }
    }

    /// Bytes of the message so far.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.file = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

fn private_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// What a long message held, as far as it was read.
#[derive(Default)]
struct Found {
    id: Option<Value>,
    method: bool,
    error: Option<Value>,
    result: Option<Texts>,
}

/// A result's content, its text written to a file.
struct Texts {
    out: BufWriter<File>,
    path: PathBuf,
    written: u64,
    blocks: usize,
    is_error: Option<bool>,
    /// Files binary blocks were saved to; removed unless handed over.
    files: Vec<PathBuf>,
    dir: PathBuf,
}

impl Texts {
    fn create(dir: &Path) -> io::Result<Self> {
        let path = dir.join(format!("mcp-result-{}.txt", uuid::Uuid::now_v7()));
        let file = private_file(&path)?;
        Ok(Self {
            out: BufWriter::with_capacity(64 << 10, file),
            path,
            written: 0,
            blocks: 0,
            is_error: None,
            files: Vec::new(),
            dir: dir.to_path_buf(),
        })
    }

    /// Starts a block: blocks are separated by a newline.
    fn block(&mut self) -> io::Result<()> {
        if self.blocks > 0 {
            self.put(b"\n")?;
        }
        self.blocks += 1;
        Ok(())
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn copy(&mut self, from: &mut impl Read) -> io::Result<()> {
        self.written += io::copy(from, &mut self.out)?;
        Ok(())
    }
}

impl Drop for Texts {
    fn drop(&mut self) {
        // Kept only once handed over (see `read`).
        let _ = std::fs::remove_file(&self.path);
        for file in &self.files {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Reads the spooled message: the small message the service gets, or
/// `None` (logged) for one that is not a response strata can use.
pub fn read(spool: Spool, dir: &Path, shared: &Shared) -> Option<RxJsonRpcMessage<RoleClient>> {
    let mut spool = spool;
    let size = spool.bytes;
    if let Some(e) = spool.error.take() {
        tracing::warn!(bytes = size, error = %e, "a long MCP message could not be written to a file");
        return None;
    }
    let flushed = spool.file.take().map_or(Ok(()), |mut f| f.flush());
    let mut found = Found::default();
    let outcome = flushed.and_then(|()| {
        let file = File::open(&spool.path)?;
        let mut json = JsonStreamReader::new(BufReader::with_capacity(64 << 10, file));
        walk(&mut json, dir, &mut found).map_err(io::Error::other)
    });
    // Not read as far as its `id`: the id written last in it, when its
    // tail names one, so the call it answers ends at once.
    if outcome.is_err() && found.id.is_none() && !found.method {
        found.id = id_in_tail(&spool.path);
    }
    let message = match (outcome, found) {
        (Err(e), Found { id: Some(id), .. }) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": PARSE_ERROR,
                "message": format!("{UNREAD} read its {}-byte answer ({e})", crate::text::group_digits(size)),
            },
        }),
        (Err(e), _) => {
            tracing::warn!(bytes = size, error = %e, "skipped a long line from an MCP server that is not JSON-RPC");
            return None;
        }
        (Ok(()), Found { method: true, .. }) => {
            tracing::warn!(
                bytes = size,
                "skipped a long request or notification from an MCP server"
            );
            return None;
        }
        (
            Ok(()),
            Found {
                id: Some(id),
                error: Some(error),
                ..
            },
        ) => {
            json!({"jsonrpc": "2.0", "id": id, "error": error})
        }
        (
            Ok(()),
            Found {
                id: Some(id),
                result: Some(mut texts),
                ..
            },
        ) => {
            let is_error = texts.is_error;
            if let Err(e) = texts.out.flush() {
                tracing::warn!(bytes = size, error = %e, "a long MCP result could not be written to a file");
                failed(id, size, &e)
            } else {
                let token = uuid::Uuid::now_v7().simple().to_string();
                let large = Large {
                    file: texts.path.clone(),
                    bytes: texts.written,
                    message_bytes: size,
                    files: std::mem::take(&mut texts.files),
                };
                // Handed over: no longer removed on drop.
                texts.path = PathBuf::new();
                shared.keep_large(token.clone(), large);
                json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "result": {"content": [], "isError": is_error, "_meta": {LARGE_KEY: token}},
                })
            }
        }
        (Ok(()), _) => {
            tracing::warn!(
                bytes = size,
                "skipped a long message from an MCP server with neither a result nor an error"
            );
            return None;
        }
    };
    match serde_json::from_value(message) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::warn!(error = %e, "a long MCP message could not be passed on");
            None
        }
    }
}

/// The last `"id": N` or `"id": "S"` in the last 4 KiB of the file at
/// `path`: where a message that broke before its `id` was read names it.
fn id_in_tail(path: &Path) -> Option<Value> {
    use std::io::{Seek as _, SeekFrom};
    static ID: std::sync::LazyLock<Option<regex::Regex>> =
        std::sync::LazyLock::new(|| regex::Regex::new(r#""id"\s*:\s*(-?[0-9]+|"[^"\\]{0,200}")"#).ok());
    let mut file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    let tail = String::from_utf8_lossy(&tail);
    let found = ID.as_ref()?.captures_iter(&tail).last()?;
    serde_json::from_str(found.get(1)?.as_str()).ok()
}

fn failed(id: Value, size: u64, e: &io::Error) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": PARSE_ERROR,
            "message": format!("{UNREAD} keep its {}-byte answer ({e})", crate::text::group_digits(size)),
        },
    })
}

type Json = JsonStreamReader<BufReader<File>>;
type Failure = Box<dyn std::error::Error + Send + Sync>;

/// The top-level object: `id`, `method`, `error`, `result`.
fn walk(json: &mut Json, dir: &Path, found: &mut Found) -> Result<(), Failure> {
    json.begin_object()?;
    while json.has_next()? {
        match json.next_name_owned()?.as_str() {
            "id" => found.id = Some(small_value(json)?),
            "method" => {
                found.method = true;
                json.skip_value()?;
            }
            "error" if json.peek()? == ValueType::Object => found.error = Some(error(json)?),
            "result" if json.peek()? == ValueType::Object => {
                let mut texts = Texts::create(dir)?;
                result(json, &mut texts)?;
                found.result = Some(texts);
            }
            _ => json.skip_value()?,
        }
    }
    json.end_object()?;
    Ok(())
}

/// Characters of a long error's message that are kept.
const ERROR_MESSAGE_CHARS: usize = 2_000;

/// A JSON-RPC error object as it streams: its code, and its message up to
/// [`ERROR_MESSAGE_CHARS`] (a longer one says how long it was); its `data`
/// is left out.
fn error(json: &mut Json) -> Result<Value, Failure> {
    let mut code = Value::from(-32603);
    let mut message = String::new();
    json.begin_object()?;
    while json.has_next()? {
        match json.next_name_owned()?.as_str() {
            "code" if json.peek()? == ValueType::Number => code = small_value(json)?,
            "message" if json.peek()? == ValueType::String => {
                let mut reader = json.next_string_reader()?;
                let mut head = Vec::new();
                (&mut reader)
                    .take((ERROR_MESSAGE_CHARS * 4) as u64)
                    .read_to_end(&mut head)?;
                let rest = io::copy(&mut reader, &mut io::sink())?;
                let head = String::from_utf8_lossy(&head);
                let total = head.len() as u64 + rest;
                message = head.chars().take(ERROR_MESSAGE_CHARS).collect();
                if message.len() as u64 != total {
                    message.push_str(&format!(
                        "… (a message of {} bytes, cut)",
                        crate::text::group_digits(total)
                    ));
                }
            }
            _ => json.skip_value()?,
        }
    }
    json.end_object()?;
    Ok(json!({"code": code, "message": message}))
}

/// A value read whole (an id, an error's code).
fn small_value(json: &mut Json) -> Result<Value, Failure> {
    let mut bytes = Vec::new();
    let mut writer = JsonStreamWriter::new(&mut bytes);
    json.transfer_to(&mut writer)?;
    writer.finish_document()?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// A `tools/call` result: its content blocks to the file; its structured
/// content too when no block carries text (servers send both, the text
/// saying the same).
fn result(json: &mut Json, texts: &mut Texts) -> Result<(), Failure> {
    let mut structured: Option<Side> = None;
    json.begin_object()?;
    while json.has_next()? {
        match json.next_name_owned()?.as_str() {
            "content" if json.peek()? == ValueType::Array => {
                json.begin_array()?;
                while json.has_next()? {
                    if json.peek()? == ValueType::Object {
                        block(json, texts)?;
                    } else {
                        json.skip_value()?;
                    }
                }
                json.end_array()?;
            }
            "isError" if json.peek()? == ValueType::Boolean => texts.is_error = Some(json.next_bool()?),
            "structuredContent" if json.peek()? != ValueType::Null => {
                let side = Side(
                    texts
                        .dir
                        .join(format!("mcp-structured-{}.json", uuid::Uuid::now_v7())),
                );
                let mut out = BufWriter::with_capacity(64 << 10, private_file(&side.0)?);
                let mut writer = JsonStreamWriter::new(&mut out);
                json.transfer_to(&mut writer)?;
                writer.finish_document()?;
                out.flush()?;
                structured = Some(side);
            }
            _ => json.skip_value()?,
        }
    }
    json.end_object()?;
    if let Some(side) = structured
        && texts.blocks == 0
    {
        texts.block()?;
        texts.put(b"structured content:\n")?;
        texts.copy(&mut File::open(&side.0)?)?;
    }
    Ok(())
}

/// A file written on the side, removed when dropped.
struct Side(PathBuf);

impl Drop for Side {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One content block, in place: `text`, a `resource` with `text`, or a
/// binary block (`data` of an image or audio, a resource's `blob`) decoded
/// into a file of its own and standing as one line; anything else is a
/// line saying it was left out.
fn block(json: &mut Json, texts: &mut Texts) -> Result<(), Failure> {
    let mut kind = String::new();
    let mut mime = None;
    let mut wrote = false;
    let mut saved: Option<Saved> = None;
    json.begin_object()?;
    while json.has_next()? {
        match json.next_name_owned()?.as_str() {
            "type" if json.peek()? == ValueType::String => kind = json.next_string()?,
            "mimeType" if json.peek()? == ValueType::String => mime = Some(json.next_string()?),
            "text" if json.peek()? == ValueType::String => {
                texts.block()?;
                texts.copy(&mut json.next_string_reader()?)?;
                wrote = true;
            }
            "data" if json.peek()? == ValueType::String => saved = Some(save(json, &texts.dir)?),
            "resource" if json.peek()? == ValueType::Object => {
                json.begin_object()?;
                let mut uri = None;
                let mut resource_mime = None;
                let mut blob = None;
                while json.has_next()? {
                    match json.next_name_owned()?.as_str() {
                        "uri" if json.peek()? == ValueType::String => uri = Some(json.next_string()?),
                        "mimeType" if json.peek()? == ValueType::String => {
                            resource_mime = Some(json.next_string()?);
                        }
                        "text" if json.peek()? == ValueType::String => {
                            texts.block()?;
                            let head = match uri.as_deref() {
                                Some(uri) => format!("[resource {}]\n", crate::text::visible(uri)),
                                None => "[resource]\n".to_owned(),
                            };
                            texts.put(head.as_bytes())?;
                            texts.copy(&mut json.next_string_reader()?)?;
                            wrote = true;
                        }
                        "blob" if json.peek()? == ValueType::String => blob = Some(save(json, &texts.dir)?),
                        _ => json.skip_value()?,
                    }
                }
                json.end_object()?;
                if let Some(mut blob) = blob {
                    blob.uri = uri;
                    saved = Some(blob);
                    kind = "resource".to_owned();
                    mime = resource_mime.or(mime);
                }
            }
            _ => json.skip_value()?,
        }
    }
    json.end_object()?;
    let line = match saved {
        Some(saved) => {
            let mime = mime.unwrap_or_else(|| "application/octet-stream".to_owned());
            saved.line(&crate::text::visible(&kind), &crate::text::visible(&mime), texts)
        }
        None if wrote => return Ok(()),
        None => {
            let kind = if kind.is_empty() { "content" } else { kind.as_str() };
            format!(
                "[{} block left out: strata does not know it]",
                crate::text::visible(kind)
            )
        }
    };
    texts.block()?;
    texts.put(line.as_bytes())?;
    Ok(())
}

/// A binary block decoded to a file (`file` is `None` when its data was
/// not valid base64).
struct Saved {
    file: Option<PathBuf>,
    bytes: u64,
    uri: Option<String>,
}

impl Saved {
    /// The block's line, as a small result's (see `render`): the file is
    /// named for its type and kept.
    fn line(self, kind: &str, mime: &str, texts: &mut Texts) -> String {
        let of = self
            .uri
            .as_deref()
            .map(|u| format!(" {}", crate::text::visible(u)))
            .unwrap_or_default();
        let Some(file) = self.file else {
            return format!("[{kind}{of} ({mime}): not saved, its data is not valid base64]");
        };
        let size = crate::text::group_digits(self.bytes);
        let named = file.with_extension(super::render::extension(mime));
        let path = match std::fs::rename(&file, &named) {
            Ok(()) => named,
            Err(_) => file,
        };
        let line = format!("[{kind}{of} ({mime}, {size} bytes) saved to {}]", path.display());
        texts.files.push(path);
        line
    }
}

/// Decodes the base64 string value next in `json` into a new file of
/// `dir`, as it streams.
fn save(json: &mut Json, dir: &Path) -> Result<Saved, Failure> {
    use base64::engine::general_purpose::STANDARD;
    let path = dir.join(format!("mcp-blob-{}.bin", uuid::Uuid::now_v7()));
    let mut out = BufWriter::with_capacity(64 << 10, private_file(&path)?);
    let copied = {
        let mut decoder = base64::read::DecoderReader::new(json.next_string_reader()?, &STANDARD);
        let copied = io::copy(&mut decoder, &mut out).and_then(|n| out.flush().map(|()| n));
        // What the decoder did not read of a bad value is read past, so the
        // message reads on.
        if copied.is_err() {
            io::copy(&mut decoder.into_inner(), &mut io::sink())?;
        }
        copied
    };
    match copied {
        Ok(bytes) => Ok(Saved {
            file: Some(path),
            bytes,
            uri: None,
        }),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            drop(out);
            let _ = std::fs::remove_file(&path);
            Ok(Saved {
                file: None,
                bytes: 0,
                uri: None,
            })
        }
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            Err(e.into())
        }
    }
}

#[cfg(test)]
#[path = "large_tests.rs"]
mod tests;
