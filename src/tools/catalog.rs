//! The search index of the deferred tools behind `tool_search`, and the
//! text `tool_search` and `tool_describe` answer with (DESIGN §16).
//!
//! An in-memory SQLite FTS5 table holds, per deferred tool, the words of
//! its name (`time__get_current_time` → `time get current time`), its
//! description and the words of its top-level parameter names; never the
//! schema body, which adds noise, not recall (hermes `tool_search.py`).
//! The `trigram` tokenizer matches each keyword anywhere inside a word, so
//! `zone` finds `timezone` and `file` finds `readFile`; results are ranked
//! by `bm25()` with a tool's name words weighing most. The index is
//! rebuilt only when the list of tools changes ([`Catalog::update`], keyed
//! by a SHA-256 of the list). Keywords shorter than 3 characters match
//! nothing (trigrams).
//!
//! The catalog owns its connection; the session service holds one and
//! calls it from one task at a time.

use rusqlite::{Connection, params};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::ToolOutput;
use crate::tooling::deferred::{self, Bridge, one_line};
use crate::tooling::schema::ToolSpec;

/// `bm25()` weights of the columns `name`, `description`, `parameters`.
const WEIGHTS: (f64, f64, f64) = (4.0, 1.0, 2.0);
/// Close names suggested when `tool_describe` is given an unknown one.
const SUGGESTIONS: usize = 3;

/// The index could not be built or read. Not retried: the bridge tools'
/// results then say so and the model can still call tools by name.
#[derive(Debug, thiserror::Error)]
#[error(
    "the tool search index failed ({0}); tool_search is unavailable, so call tools by the names tool_search's description lists"
)]
pub struct CatalogError(#[from] rusqlite::Error);

/// The deferred tools and their search index.
pub struct Catalog {
    conn: Connection,
    key: String,
    tools: Vec<ToolSpec>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("key", &self.key)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// The words of a tool or parameter name, lower-cased: split at anything
/// but letters and digits and where a lower-case letter meets an
/// upper-case one (`everything__getTinyImage` → `everything get tiny image`).
#[must_use]
pub fn name_words(name: &str) -> String {
    let mut words = String::with_capacity(name.len() + 4);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            prev = None;
            continue;
        }
        let boundary = match prev {
            None => !words.is_empty(),
            Some(p) => p.is_lowercase() && c.is_uppercase(),
        };
        if boundary && !words.ends_with(' ') {
            words.push(' ');
        }
        words.extend(c.to_lowercase());
        prev = Some(c);
    }
    words
}

/// The top-level parameter names of a JSON schema, in its (sorted) order.
fn parameter_names(parameters: &Value) -> Vec<&str> {
    parameters
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// The key of a tool list: SHA-256 (hex) over each tool's name,
/// description and schema, in order.
#[must_use]
pub fn list_key(tools: &[ToolSpec]) -> String {
    let mut hasher = Sha256::new();
    for spec in tools {
        for part in [&spec.name, &spec.description, &spec.parameters.to_string()] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
    }
    hex::encode(hasher.finalize())
}

/// The FTS5 expression for `query`: each distinct word (as [`name_words`]
/// splits it) of 3 characters or more, quoted, joined by `OR`; `None` when
/// no word is that long.
fn fts_query(query: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in name_words(query).split(' ') {
        if word.chars().count() >= 3 && !terms.iter().any(|t| t == word) {
            terms.push(word.to_owned());
        }
    }
    (!terms.is_empty()).then(|| {
        terms
            .iter()
            .map(|t| format!("\"{t}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

/// `name(a, b)`: a tool's name with its top-level parameter names.
fn signature(spec: &ToolSpec) -> String {
    format!("{}({})", spec.name, parameter_names(&spec.parameters).join(", "))
}

impl Catalog {
    /// An empty catalog over a new in-memory database.
    ///
    /// # Errors
    /// [`CatalogError`] when SQLite cannot open the database or lacks FTS5.
    pub fn new() -> Result<Self, CatalogError> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(
            "CREATE VIRTUAL TABLE tools USING fts5(name, description, parameters, tokenize = 'trigram');",
        )?;
        Ok(Self {
            conn,
            key: list_key(&[]),
            tools: Vec::new(),
        })
    }

    /// Makes the catalog hold `tools` (the deferred tools, as
    /// [`deferred::Disclosure::deferred`] gives them); the index is rebuilt
    /// only when the list differs from the one held ([`list_key`]).
    /// Returns whether it was rebuilt.
    ///
    /// # Errors
    /// [`CatalogError`] when SQLite fails; the catalog is then empty.
    pub fn update(&mut self, tools: &[ToolSpec]) -> Result<bool, CatalogError> {
        let key = list_key(tools);
        if key == self.key {
            return Ok(false);
        }
        self.tools.clear();
        self.key = list_key(&[]);
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM tools", [])?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO tools (rowid, name, description, parameters) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (i, spec) in tools.iter().enumerate() {
                let params: Vec<String> = parameter_names(&spec.parameters)
                    .into_iter()
                    .map(name_words)
                    .collect();
                let rowid = i64::try_from(i).unwrap_or(i64::MAX);
                insert.execute(params![
                    rowid,
                    name_words(&spec.name),
                    spec.description,
                    params.join(" ")
                ])?;
            }
        }
        tx.commit()?;
        self.tools = tools.to_vec();
        self.key = key;
        Ok(true)
    }

    /// The tools held, in the order given to [`update`](Self::update).
    #[must_use]
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The tool `name`, when held.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|s| s.name == name)
    }

    /// The tools matching any keyword of `query`, best first, at most
    /// `limit`: `(name, score)` with the score `-bm25()` (higher is
    /// better). Ties keep the list's order. A query with no keyword of 3
    /// characters or more matches nothing.
    ///
    /// # Errors
    /// [`CatalogError`] when SQLite fails.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<(String, f64)>, CatalogError> {
        let Some(expr) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let (n, d, p) = WEIGHTS;
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, bm25(tools, ?2, ?3, ?4) AS rank FROM tools WHERE tools MATCH ?1 \
             ORDER BY rank, rowid LIMIT ?5",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map(params![expr, n, d, p, limit], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, f64>(1)?))
        })?;
        let mut found = Vec::new();
        for row in rows {
            let (rowid, rank) = row?;
            let spec = usize::try_from(rowid).ok().and_then(|i| self.tools.get(i));
            if let Some(spec) = spec {
                found.push((spec.name.clone(), -rank));
            }
        }
        Ok(found)
    }

    /// The result of a `tool_search` call with `arguments`
    /// ([`deferred::search_args`]): the matches best first, one line each
    /// (`name(parameters): one-line description`), or a sentence saying
    /// nothing matched. Bad arguments and index failures are error results.
    #[must_use]
    pub fn search_output(&self, arguments: &Value) -> ToolOutput {
        let args = match deferred::search_args(arguments) {
            Ok(args) => args,
            Err(text) => return ToolOutput::error(text),
        };
        if self.tools.is_empty() {
            return ToolOutput::ok(
                "No tool is deferred in this session; call the tools of your tool list directly.",
            );
        }
        let found = match self.search(&args.query, args.limit) {
            Ok(found) => found,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        if found.is_empty() {
            return ToolOutput::ok(format!(
                "No deferred tool matches \"{}\" ({} are deferred); try other keywords of 3 letters or more, \
                 such as words for what the tool acts on or does.",
                args.query,
                self.tools.len()
            ));
        }
        let mut text = format!(
            "{} deferred tool{} for \"{}\", best first:\n",
            found.len(),
            if found.len() == 1 { "" } else { "s" },
            args.query
        );
        for (name, _) in &found {
            if let Some(spec) = self.get(name) {
                text.push_str(&format!(
                    "- {}: {}\n",
                    signature(spec),
                    one_line(&spec.description)
                ));
            }
        }
        text.push_str(&format!(
            "{} gives a tool's parameter schema; {} runs it.",
            Bridge::Describe.name(),
            Bridge::Call.name()
        ));
        ToolOutput::ok(text)
    }

    /// The result of a `tool_describe` call with `arguments`
    /// ([`deferred::describe_args`]): the tool's name, whole description
    /// and parameter schema (compact JSON), and how to call it. An unknown
    /// name is an error result naming the closest matches.
    #[must_use]
    pub fn describe_output(&self, arguments: &Value) -> ToolOutput {
        let name = match deferred::describe_args(arguments) {
            Ok(name) => name,
            Err(text) => return ToolOutput::error(text),
        };
        let Some(spec) = self.get(&name) else {
            let close: Vec<String> = self
                .search(&name, SUGGESTIONS)
                .unwrap_or_default()
                .into_iter()
                .map(|(n, _)| format!("`{n}`"))
                .collect();
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!(" (close: {})", close.join(", "))
            };
            return ToolOutput::error(format!(
                "There is no deferred tool named `{name}`{hint}; tool_search finds tools by keyword and gives their exact names."
            ));
        };
        ToolOutput::ok(format!(
            "{}\n{}\nParameters (JSON schema): {}\nRun it with {} {{\"name\": \"{}\", \"arguments\": {{…}}}}.",
            spec.name,
            spec.description.trim(),
            spec.parameters,
            Bridge::Call.name(),
            spec.name
        ))
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
