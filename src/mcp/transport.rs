//! The stdio transport to one server: newline-delimited JSON-RPC, with no
//! line length past which a message is dropped.
//!
//! A reader task owns the server's stdout. A message of up to
//! [`MEMORY_CAP`] bytes is parsed in memory; a longer one (a `tools/call`
//! result of 50 MB) is written to a file as it arrives and read back as a
//! stream ([`super::large`]), so memory stays bounded whatever its size.
//! Lines that are not JSON-RPC are skipped, as servers print banners. What
//! breaks the connection — the output closed in the middle of a message,
//! or a read error — is kept in [`Shared::broken`], so a call that loses
//! its answer says what happened instead of waiting for its timeout.

use super::large::{self, Large, Spool};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Bytes of one message held in memory; a longer message goes to a file.
pub const MEMORY_CAP: usize = 4 << 20;

/// Bytes read from the server's stdout at a time.
const CHUNK: usize = 64 << 10;

/// What the reader task shares with the connection's users.
#[derive(Debug, Default)]
pub struct Shared {
    /// The texts of long results, by the token their message carries.
    pub(super) large: Mutex<HashMap<String, Large>>,
    /// Why the connection broke, once it did.
    broken: Mutex<Option<String>>,
}

impl Shared {
    /// The long result the token `token` stands for, taken (only once; an
    /// unknown token, as a server could send, gives `None`).
    #[must_use]
    pub fn take_large(&self, token: &str) -> Option<Large> {
        self.large.lock().ok()?.remove(token)
    }

    /// Why the connection broke: a clause (`it closed its output in the
    /// middle of a message (1,024 bytes)`); `None` while it has not.
    #[must_use]
    pub fn broken(&self) -> Option<String> {
        self.broken.lock().ok()?.clone()
    }

    pub(super) fn keep_large(&self, token: String, text: Large) {
        if let Ok(mut large) = self.large.lock() {
            large.insert(token, text);
        }
    }

    fn set_broken(&self, why: String) {
        if let Ok(mut broken) = self.broken.lock() {
            broken.get_or_insert(why);
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Ok(large) = self.large.get_mut() {
            for (_, text) in large.drain() {
                let _ = std::fs::remove_file(&text.file);
            }
        }
    }
}

/// The transport: messages from the reader task; writes to stdin.
pub struct Stdio {
    messages: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    reader: JoinHandle<()>,
}

impl Stdio {
    /// Reads `stdout` (long messages written under `dir`) and writes to
    /// `stdin`; `shared` gets the long results and why it broke.
    #[must_use]
    pub fn new(stdout: ChildStdout, stdin: ChildStdin, dir: PathBuf, shared: Arc<Shared>) -> Self {
        let (tx, messages) = mpsc::channel(16);
        Self {
            messages,
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            reader: tokio::spawn(read(stdout, tx, dir, shared)),
        }
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for Stdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = Arc::clone(&self.stdin);
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut stdin = stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            stdin.write_all(&line).await?;
            stdin.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        self.messages.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.stdin.lock().await.take());
        Ok(())
    }
}

/// The line being read: in memory, or (past [`MEMORY_CAP`]) in a file.
enum Line {
    Memory(Vec<u8>),
    Spooled(Spool),
}

impl Line {
    fn len(&self) -> u64 {
        match self {
            Self::Memory(bytes) => bytes.len() as u64,
            Self::Spooled(spool) => spool.bytes(),
        }
    }
}

/// The reader task: one message per line, sent on `tx` until the output
/// ends, breaks, or the transport is gone.
async fn read(
    stdout: ChildStdout,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    dir: PathBuf,
    shared: Arc<Shared>,
) {
    let mut reader = BufReader::with_capacity(CHUNK, stdout);
    let mut line = Line::Memory(Vec::new());
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(chunk) => chunk,
            Err(e) => {
                shared.set_broken(format!("its output could not be read ({e})"));
                return;
            }
        };
        if chunk.is_empty() {
            let partial = match &line {
                Line::Memory(bytes) => bytes.iter().any(|b| !b.is_ascii_whitespace()),
                Line::Spooled(_) => true,
            };
            if partial {
                shared.set_broken(format!(
                    "it closed its output in the middle of a message ({} bytes)",
                    crate::text::group_digits(line.len())
                ));
            }
            return;
        }
        let end = memchr::memchr(b'\n', chunk);
        let part = &chunk[..end.unwrap_or(chunk.len())];
        match &mut line {
            Line::Memory(bytes) => {
                bytes.extend_from_slice(part);
                if bytes.len() > MEMORY_CAP {
                    match Spool::create(&dir, bytes) {
                        Ok(spool) => line = Line::Spooled(spool),
                        // Kept in memory rather than lost.
                        Err(e) => {
                            tracing::warn!(dir = %dir.display(), error = %e, "a long MCP message could not be written to a file")
                        }
                    }
                }
            }
            Line::Spooled(spool) => spool.write(part),
        }
        let used = end.map_or(chunk.len(), |i| i + 1);
        reader.consume(used);
        if end.is_none() {
            continue;
        }
        let message = match std::mem::replace(&mut line, Line::Memory(Vec::new())) {
            Line::Memory(bytes) => parse(&bytes),
            Line::Spooled(spool) => {
                let (dir, shared) = (dir.clone(), Arc::clone(&shared));
                tokio::task::spawn_blocking(move || large::read(spool, &dir, &shared))
                    .await
                    .ok()
                    .flatten()
            }
        };
        if let Some(message) = message
            && tx.send(message).await.is_err()
        {
            return;
        }
    }
}

/// One line as a message; `None` (logged) for a blank line or one that is
/// not JSON-RPC.
fn parse(line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice(line) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::debug!(error = %e, bytes = line.len(), "skipped a line from an MCP server that is not JSON-RPC");
            None
        }
    }
}
