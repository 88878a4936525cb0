//! Layer 1 (pure): the decisions about tools, none of their execution
//! (DESIGN §15). Which tools exist and the exact bytes of their schemas
//! ([`schema`]); how a tool's output is cut, spilled and previewed to fit
//! the window ([`limits`]); whether a call runs, asks or is denied
//! ([`approval`]), whether a tool may change things ([`access`]) and which
//! files look like credentials ([`credentials`]). The handlers that run a
//! call live in the `tools` adapter; the runtime routes calls to them and
//! feeds the outcomes back to the conversation, which stores the results.

pub mod access;
pub mod approval;
pub mod credentials;
pub mod deferred;
pub mod limits;
pub mod mcp_names;
pub mod orphans;
pub mod sandbox;
pub mod schema;

pub use crate::domain::ToolStatus;
use serde::{Deserialize, Serialize};

/// What a tool does to the world, which decides whether it may run without
/// asking and whether it may run concurrently with others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Reads only (files, search, the clock): runs at once, concurrently
    /// with other read-only calls of the same round.
    ReadOnly,
    /// Changes files (`write_file`, `edit_file`; `memory`, whose notes go
    /// into every future session's prompt).
    Write,
    /// Runs a program (`shell`): not confined by strata.
    Run,
}

/// A tool's raw output as the handler captured it, before the limits.
///
/// Small outputs are whole (`tail` empty, `omitted_bytes == 0`). A handler
/// that streams a large output (the shell) keeps only its first and last
/// part in memory — each at least [`limits::Limits::max_chars`] characters —
/// writes the whole output to the spill file itself, and counts what it
/// left out, so [`limits::cut`] gives the same text it would give on the
/// whole output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// The output, or its first part.
    pub head: String,
    /// The last part when the middle was left out; empty otherwise.
    pub tail: String,
    /// Bytes left out between `head` and `tail`.
    pub omitted_bytes: u64,
    /// Newlines in the left-out bytes.
    pub omitted_lines: u64,
    /// Where the whole output was written already (a handler that streams
    /// it), as a path string.
    pub spilled_to: Option<String>,
    /// Set when the handler saw binary bytes (see
    /// [`limits::bytes_look_binary`]): `spilled_to` then holds the raw
    /// bytes, and `head` only strata's own notes (an exit code line), no
    /// decoded bytes.
    pub binary: Option<Binary>,
    /// Whether the spill file the handler wrote has its lines folded at
    /// [`limits::Limits::max_line_chars`] (a text spill file).
    pub folded: bool,
}

/// What is told of a binary output instead of its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binary {
    /// The real size of the output, bytes.
    pub bytes: u64,
    /// Its guessed type as a MIME type (`application/x-executable`,
    /// `image/png`), `application/octet-stream` when unknown.
    pub kind: String,
}

impl Output {
    /// A whole output held in memory.
    #[must_use]
    pub fn whole(text: impl Into<String>) -> Self {
        Self {
            head: text.into(),
            ..Self::default()
        }
    }

    /// Whether the middle was left out.
    #[must_use]
    pub fn is_elided(&self) -> bool {
        self.omitted_bytes > 0 || !self.tail.is_empty()
    }
}
