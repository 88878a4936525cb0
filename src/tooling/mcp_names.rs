//! The names MCP tools are offered under: `server__tool`, made to fit the
//! providers' rule for tool names, `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's
//! function names and Anthropic's tool names share it; DESIGN §16).
//!
//! Owns the mapping of one session's `(server, tool)` pairs to those names
//! and back ([`McpNames`]). Invariants: every name follows the rule
//! ([`is_valid`]); distinct pairs get distinct names; the mapping depends
//! on the set of pairs only, never on the order they were given in. A name
//! is made in three steps:
//!
//! 1. each character of the server and the tool outside `[A-Za-z0-9_-]`
//!    becomes `_` (one `_` per character), and the two are joined by `__`;
//! 2. a name over 64 characters keeps its first 55 and ends in `_` and
//!    8 hex digits of the SHA-256 of the original pair, so two long names
//!    that share a start still differ;
//! 3. pairs that still share a name (`a.b` and `a_b` both become `a_b`)
//!    are taken in sorted `(server, tool)` order: the first keeps the name,
//!    the others get `_2`, `_3`, … — the smallest suffix that no pair's
//!    name from steps 1–2 and no earlier suffixed name uses, shortening the
//!    name first where the suffix would pass 64 characters.
//!
//! Every name holds `__` or is 64 characters long, so none equals a
//! built-in or bridge tool's name.
//!
//! A session keeps the names it gave ([`McpNames::with_kept`]): a pair
//! named before keeps its name, and only the pairs new to the session are
//! named by the steps above, around the kept names (those of tools absent
//! for now included). So a server that adds `a.b` next to `a_b`, or in
//! place of it for a while, leaves the name the history calls `a_b` by to
//! `a_b` alone.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// The longest tool name providers accept, in characters (all ASCII).
pub const MAX_LEN: usize = 64;
/// Between the server's and the tool's part of a name.
pub const SEPARATOR: &str = "__";
/// Hex digits of the hash that ends a shortened name.
const HASH_DIGITS: usize = 8;

/// Whether `name` follows the providers' rule `^[a-zA-Z0-9_-]{1,64}$`.
#[must_use]
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len()) && name.bytes().all(allowed)
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `part` with every character outside `[A-Za-z0-9_-]` replaced by `_`,
/// one `_` per character (`"my server/π"` → `"my_server__"`).
#[must_use]
pub fn sanitise(part: &str) -> String {
    part.chars()
        .map(|c| if c.is_ascii() && allowed(c as u8) { c } else { '_' })
        .collect()
}

/// Steps 1 and 2 of the module doc: the sanitised `server__tool`, shortened
/// with a hash of the original pair when over [`MAX_LEN`].
fn candidate(server: &str, tool: &str) -> String {
    let name = format!("{}{SEPARATOR}{}", sanitise(server), sanitise(tool));
    if name.len() <= MAX_LEN {
        return name;
    }
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    let digest = hex::encode(hasher.finalize());
    let keep = MAX_LEN - HASH_DIGITS - 1;
    format!("{}_{}", &name[..keep], &digest[..HASH_DIGITS])
}

/// `base` with `suffix` appended, `base` cut so the whole fits [`MAX_LEN`]
/// (names are ASCII, so any cut is at a character boundary).
fn with_suffix(base: &str, suffix: &str) -> String {
    let keep = base.len().min(MAX_LEN - suffix.len());
    format!("{}{suffix}", &base[..keep])
}

/// One session's MCP tool names: each `(server, tool)` pair's name and,
/// for a name the model called, its pair. Built once per change of the
/// servers' tool lists ([`McpNames::new`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpNames {
    by_pair: BTreeMap<(String, String), String>,
    by_name: BTreeMap<String, (String, String)>,
}

impl McpNames {
    /// The names of every tool of `servers`, given as `(server name, its
    /// tool names)` in any order; a pair given twice counts once. See the
    /// module doc for how names are made.
    #[must_use]
    pub fn new<S, T, I>(servers: impl IntoIterator<Item = (S, I)>) -> Self
    where
        S: AsRef<str>,
        T: AsRef<str>,
        I: IntoIterator<Item = T>,
    {
        Self::with_kept(std::iter::empty::<(String, String, String)>(), servers)
    }

    /// [`McpNames::new`], except that each pair of `kept` (`(server, tool,
    /// name)`, names given before) that is among `servers`' tools keeps its
    /// name when that name is valid and no kept pair sorted before it
    /// holds it already; the other pairs are named as the module doc says,
    /// never with a kept name — not even one of a tool absent now.
    #[must_use]
    pub fn with_kept<S, T, I>(
        kept: impl IntoIterator<Item = (String, String, String)>,
        servers: impl IntoIterator<Item = (S, I)>,
    ) -> Self
    where
        S: AsRef<str>,
        T: AsRef<str>,
        I: IntoIterator<Item = T>,
    {
        let pairs: BTreeSet<(String, String)> = servers
            .into_iter()
            .flat_map(|(server, tools)| {
                let server = server.as_ref().to_owned();
                tools
                    .into_iter()
                    .map(move |tool| (server.clone(), tool.as_ref().to_owned()))
            })
            .collect();
        let mut names = Self::default();
        // Names given so far.
        let mut given: BTreeSet<String> = BTreeSet::new();
        let kept: BTreeMap<(String, String), String> = kept
            .into_iter()
            .map(|(server, tool, name)| ((server, tool), name))
            .collect();
        let (present, absent): (Vec<_>, Vec<_>) =
            kept.into_iter().partition(|(pair, _)| pairs.contains(pair));
        for (pair, name) in present {
            if is_valid(&name) && given.insert(name.clone()) {
                names.by_name.insert(name.clone(), pair.clone());
                names.by_pair.insert(pair, name);
            }
        }
        // The name of a tool that is away for now stays its own: the
        // history may call it, and it may come back.
        for (_, name) in absent {
            given.insert(name);
        }
        let candidates: Vec<((String, String), String)> = pairs
            .into_iter()
            .filter(|pair| !names.by_pair.contains_key(pair))
            .map(|pair| {
                let name = candidate(&pair.0, &pair.1);
                (pair, name)
            })
            .collect();
        // Every name of steps 1–2 and every kept name is reserved, so a
        // suffixed name never takes the name another pair would have had.
        let mut taken: BTreeSet<String> = candidates.iter().map(|(_, n)| n.clone()).collect();
        taken.extend(given.iter().cloned());
        for (pair, name) in candidates {
            let name = if given.insert(name.clone()) {
                name
            } else {
                let mut n = 2u64;
                loop {
                    let suffixed = with_suffix(&name, &format!("_{n}"));
                    if taken.insert(suffixed.clone()) {
                        break suffixed;
                    }
                    n += 1;
                }
            };
            names.by_name.insert(name.clone(), pair.clone());
            names.by_pair.insert(pair, name);
        }
        names
    }

    /// The name of `server`'s tool `tool`; `None` when the pair was not
    /// given to [`McpNames::new`].
    #[must_use]
    pub fn name(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_pair
            .get(&(server.to_owned(), tool.to_owned()))
            .map(String::as_str)
    }

    /// The `(server, tool)` a name stands for, to route a call the model
    /// made; `None` for a name that is not an MCP tool of the session.
    #[must_use]
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.by_name
            .get(name)
            .map(|(server, tool)| (server.as_str(), tool.as_str()))
    }

    /// Every `(server, tool, name)`, sorted by server, then tool.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.by_pair
            .iter()
            .map(|((server, tool), name)| (server.as_str(), tool.as_str(), name.as_str()))
    }

    /// Number of tools named.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_pair.len()
    }

    /// Whether no tool is named.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_pair.is_empty()
    }
}

#[cfg(test)]
#[path = "mcp_names_tests.rs"]
mod tests;
