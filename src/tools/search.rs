//! `glob` and `grep`, over a walk of the `ignore` crate that honours
//! `.gitignore` (also outside a Git repository), shows hidden files and
//! leaves `.git` out. Both walk in parallel and sort what they found, so
//! their output does not depend on the order threads finish in.
//!
//! Neither follows symbolic links: a link in the workspace may point
//! anywhere, and only regular files are listed or searched. `grep` leaves
//! out files that look like credentials (by name, or holding a private
//! key: `crate::tooling::credentials`), as `read_file` asks for them, and
//! says how many it left out.

use super::paths::{Args, Intent, real_root, resolve, shown, shown_under};
use super::{ToolEnv, ToolOutput};
use crate::text::group_digits;
use crate::tooling::credentials;
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::{DirEntry, WalkBuilder, WalkState};
use serde_json::Value;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Paths `glob` lists at most.
const GLOB_MAX_RESULTS: usize = 1_000;
/// Matching lines `grep` shows when the model gives no `max_results`.
const GREP_DEFAULT_RESULTS: usize = 100;
/// The most matching lines `grep` shows.
const GREP_MAX_RESULTS: usize = 1_000;
/// Characters of one matching line shown.
const GREP_LINE_CHARS: usize = 500;

const GLOB_USAGE: &str = r#"{"pattern": "**/*.rs", "path": "src"}"#;
const GREP_USAGE: &str =
    r#"{"pattern": "fn main", "path": "src", "glob": "*.rs", "case_insensitive": false, "max_results": 100}"#;

/// The walk the file tools share: `.gitignore`, `.ignore` and Git's
/// excludes honoured even without a `.git` directory, hidden files kept,
/// `.git` itself skipped, symbolic links not followed.
pub(super) fn walker(base: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(base);
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

/// A file filter: a pattern without `/` matches file names at any depth
/// (`*.rs`), one with `/` the path relative to the search base
/// (`src/**/*.rs`); `*` stays within a name, `**` crosses directories.
struct PathFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl PathFilter {
    fn new(pattern: &str, argument: &str) -> Result<Self, String> {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                format!(
                    "`{argument}` is not a valid glob ({}); use `*` within a name, `**` across directories and `{{a,b}}` for alternatives, as in `src/**/*.rs`.",
                    e.kind()
                )
            })?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            by_name: !pattern.contains('/'),
        })
    }

    fn matches(&self, entry: &DirEntry, base: &Path) -> bool {
        let path = entry.path();
        let relative = path.strip_prefix(base).unwrap_or(path);
        if self.by_name || relative.as_os_str().is_empty() {
            self.matcher.is_match(entry.file_name())
        } else {
            self.matcher.is_match(relative)
        }
    }
}

/// `n` and the noun, in the singular for one: `1 file`, `1,204 files`.
pub(super) fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", group_digits(n), if n == 1 { one } else { many })
}

fn is_file(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_file())
}

/// The resolved search base of a call's `path` (default the root).
fn base_of(env: &ToolEnv, path: Option<&str>) -> Result<PathBuf, String> {
    let base = resolve(env, path.unwrap_or("."), Intent::Read)?;
    if base.exists() {
        Ok(base)
    } else {
        Err(format!(
            "`{}` does not exist; give an existing directory as `path`, or leave it out to search the whole workspace.",
            shown(env, &base)
        ))
    }
}

/// `glob {pattern, path?}`: the regular files under `path` (default the
/// root) that match `pattern` (see the filter rules above), as paths
/// relative to the workspace root, sorted, at most 1,000 with a count of
/// the rest. An invalid pattern is an error naming the problem.
pub fn glob(env: &ToolEnv, args: &Value) -> ToolOutput {
    match glob_text(env, args) {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::error(e),
    }
}

fn glob_text(env: &ToolEnv, args: &Value) -> Result<String, String> {
    let a = Args::new("glob", GLOB_USAGE, args);
    let pattern = a.string("pattern")?;
    let filter = PathFilter::new(pattern, "pattern")?;
    let base = base_of(env, a.opt_string("path")?)?;
    let found = Mutex::new(Vec::new());
    walker(&base).build_parallel().run(|| {
        let (filter, base, found) = (&filter, &base, &found);
        Box::new(move |result| {
            if let Ok(entry) = result
                && is_file(&entry)
                && filter.matches(&entry, base)
            {
                found
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(entry.into_path());
            }
            WalkState::Continue
        })
    });
    let mut found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    let where_ = shown(env, &base);
    if found.is_empty() {
        // A hint only for a relative pattern that a leading `**/` could help.
        let hint = if pattern.contains('/')
            && !pattern.starts_with("**")
            && !pattern.starts_with('/')
            && !pattern.contains("..")
        {
            format!(" (a pattern with `/` matches paths relative to `{where_}`; try `**/{pattern}`)")
        } else {
            String::new()
        };
        return Ok(format!("No files under `{where_}` match `{pattern}`{hint}."));
    }
    found.sort();
    let total = found.len();
    let root = real_root(env);
    let mut text = String::new();
    for path in found.iter().take(GLOB_MAX_RESULTS) {
        text.push_str(&shown_under(&root, path));
        text.push('\n');
    }
    if total > GLOB_MAX_RESULTS {
        text.push_str(&format!(
            "[{} of {} matching files shown; narrow the pattern or the path to see the rest]\n",
            group_digits(GLOB_MAX_RESULTS as u64),
            group_digits(total as u64)
        ));
    }
    Ok(text)
}

/// One matching line; ordered by path, then line number.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    path: PathBuf,
    line: u64,
    text: String,
}

/// What the search of one file found: its first `keep` matching lines and
/// how many there were.
struct FileHits {
    keep: usize,
    hits: Vec<(u64, String)>,
    count: u64,
    binary: bool,
}

impl Sink for FileHits {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        if self.hits.len() < self.keep {
            let text = String::from_utf8_lossy(mat.bytes());
            let text = text.trim_end_matches(['\n', '\r']);
            let text = match text.char_indices().nth(GREP_LINE_CHARS) {
                Some((i, _)) => format!("{} …", &text[..i]),
                None => text.to_owned(),
            };
            self.hits.push((mat.line_number().unwrap_or(0), text));
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// The best `keep` hits of all files so far, and the counts.
struct Found {
    keep: usize,
    /// A max-heap: the worst kept hit is on top, to be dropped first.
    best: BinaryHeap<Hit>,
    lines: u64,
    files: u64,
    /// Files with matches left out as credentials.
    withheld: u64,
}

/// Whether `path`, a file with matching lines, looks like a credential:
/// by its name, or by a private key anywhere in its first
/// [`credentials::SNIFF_BYTES`].
fn is_credential(path: &Path) -> bool {
    use std::io::Read;
    if credentials::by_name(path).is_some() {
        return true;
    }
    let mut head = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|f| f.take(credentials::SNIFF_BYTES as u64).read_to_end(&mut head));
    read.is_ok() && credentials::by_content(path, &head).is_some()
}

impl Found {
    fn add(&mut self, path: &Path, file: FileHits) {
        self.lines += file.count;
        self.files += 1;
        for (line, text) in file.hits {
            if self.best.len() == self.keep
                && self
                    .best
                    .peek()
                    .is_some_and(|worst| (worst.path.as_path(), worst.line) < (path, line))
            {
                break;
            }
            self.best.push(Hit {
                path: path.to_path_buf(),
                line,
                text,
            });
            if self.best.len() > self.keep {
                self.best.pop();
            }
        }
    }
}

fn regex_error(e: &grep_regex::Error) -> String {
    let text = e.to_string();
    let reason = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(
            || text.split_whitespace().collect::<Vec<_>>().join(" "),
            str::to_owned,
        );
    format!(
        "The pattern is not a valid regular expression ({reason}); fix it, or escape characters such as ( [ {{ . * + ? with a backslash to match them literally."
    )
}

/// `grep {pattern, path?, glob?, case_insensitive?, max_results?}`: the
/// lines matching the Rust regular expression `pattern` in the regular
/// files under `path` (default the root; a file searches that file)
/// whose names or paths match `glob`, as `path:line:text` sorted by path
/// and line, each line cut at 500 characters, at most `max_results`
/// (default 100, at most 1,000) with the total count. Binary files are
/// skipped. A bad regex or glob is an error naming the problem.
pub fn grep(env: &ToolEnv, args: &Value) -> ToolOutput {
    match grep_text(env, args) {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::error(e),
    }
}

fn grep_text(env: &ToolEnv, args: &Value) -> Result<String, String> {
    let a = Args::new("grep", GREP_USAGE, args);
    let pattern = a.string("pattern")?;
    let case_insensitive = a.opt_bool("case_insensitive")?.unwrap_or(false);
    let keep = a
        .opt_positive("max_results")?
        .unwrap_or(GREP_DEFAULT_RESULTS)
        .min(GREP_MAX_RESULTS);
    let filter = a
        .opt_string("glob")?
        .map(|g| PathFilter::new(g, "glob"))
        .transpose()?;
    let matcher: RegexMatcher = RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| regex_error(&e))?;
    let base = base_of(env, a.opt_string("path")?)?;
    let found = Mutex::new(Found {
        keep,
        best: BinaryHeap::with_capacity(keep + 1),
        lines: 0,
        files: 0,
        withheld: 0,
    });
    let searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    walker(&base).build_parallel().run(|| {
        let (filter, base, found, matcher) = (&filter, &base, &found, &matcher);
        let mut searcher = searcher.clone();
        Box::new(move |result| {
            let Ok(entry) = result else {
                return WalkState::Continue;
            };
            if !is_file(&entry) || filter.as_ref().is_some_and(|f| !f.matches(&entry, base)) {
                return WalkState::Continue;
            }
            let mut file = FileHits {
                keep,
                hits: Vec::new(),
                count: 0,
                binary: false,
            };
            let searched = searcher.search_path(matcher, entry.path(), &mut file);
            if searched.is_ok() && file.count > 0 && !file.binary {
                let credential = is_credential(entry.path());
                let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
                if credential {
                    found.withheld += 1;
                } else {
                    found.add(entry.path(), file);
                }
            }
            WalkState::Continue
        })
    });
    let found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    let where_ = shown(env, &base);
    let withheld = (found.withheld > 0).then(|| {
        format!(
            "[{} that look like credentials left out; read_file asks the user for one]\n",
            counted(found.withheld, "file with matches", "files with matches")
        )
    });
    if found.lines == 0 {
        let within = a
            .opt_string("glob")?
            .map_or_else(String::new, |g| format!(" in files matching `{g}`"));
        let none = format!("No lines under `{where_}`{within} match `{pattern}`.");
        return Ok(match withheld {
            Some(w) => format!("{none}\n{w}"),
            None => none,
        });
    }
    let hits = found.best.into_sorted_vec();
    let root = real_root(env);
    let mut text = String::new();
    for hit in &hits {
        text.push_str(&format!(
            "{}:{}:{}\n",
            shown_under(&root, &hit.path),
            hit.line,
            hit.text
        ));
    }
    let counts = format!(
        "{} in {}",
        counted(found.lines, "matching line", "matching lines"),
        counted(found.files, "file", "files")
    );
    if (hits.len() as u64) < found.lines {
        text.push_str(&format!(
            "[{} of {counts} shown; narrow the pattern, path or glob, or raise max_results (at most {})]\n",
            group_digits(hits.len() as u64),
            group_digits(GREP_MAX_RESULTS as u64)
        ));
    } else {
        text.push_str(&format!("[{counts}]\n"));
    }
    if let Some(w) = withheld {
        text.push_str(&w);
    }
    Ok(text)
}
