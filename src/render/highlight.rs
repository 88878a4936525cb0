//! Code highlighting off the UI task: a [`Highlighter`] owns one thread that
//! loads syntect's syntax set and theme once, then highlights the code
//! blocks it is sent, in order. Results come back over a channel; the UI
//! moves them in with [`Highlighter::drain`] (never blocking) and looks them
//! up by [`HighlightKey`] while rendering.
//!
//! Invariants: nothing here blocks the caller (requests are an unbounded
//! send; loading and highlighting happen on the worker thread); code over
//! [`MAX_HIGHLIGHT_LINES`] lines or [`MAX_HIGHLIGHT_BYTES`] bytes is never
//! highlighted; a key names the code and its language, so a result can never
//! be applied to other text. If the thread cannot be started every request
//! resolves to [`Highlight::Plain`].
//!
//! Callers: the TUI (one highlighter per process), tests and benches.

use super::markdown::fenced_blocks;
use super::wrap::defuse;
use ratatui::style::{Color, Modifier, Style};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::mpsc;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// Code blocks with more lines than this are never highlighted.
pub const MAX_HIGHLIGHT_LINES: usize = 2_000;
/// Code blocks larger than this many bytes are never highlighted.
pub const MAX_HIGHLIGHT_BYTES: usize = 200 * 1024;
/// The syntect theme used unless [`HighlighterOptions::theme`] names another
/// of syntect's built-in themes.
pub const DEFAULT_THEME: &str = "base16-ocean.dark";

/// Whether a code block is small enough to be highlighted at all.
#[must_use]
pub fn highlightable(code: &str) -> bool {
    code.len() <= MAX_HIGHLIGHT_BYTES && code.lines().count() <= MAX_HIGHLIGHT_LINES
}

/// The language token of a fence's info string: its first word, up to a
/// comma or brace (` ```rust,ignore ` → `rust`). Empty when there is none.
#[must_use]
pub fn fence_language(info: &str) -> &str {
    let word = info.split_whitespace().next().unwrap_or("");
    let word = word.trim_start_matches('{').trim_start_matches('.');
    word.split([',', '{', '}']).next().unwrap_or("")
}

/// Names one highlighting job: a hash of the language token and the code.
/// Equal code in the same language has the same key, in any message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HighlightKey(pub u64);

impl HighlightKey {
    /// The key of `code` fenced as `lang` (the token from [`fence_language`]).
    #[must_use]
    pub fn of(code: &str, lang: &str) -> Self {
        // Fixed keys: stable within a build, which is all a key needs
        // (keys are never stored).
        let mut h = std::hash::DefaultHasher::new();
        lang.hash(&mut h);
        code.hash(&mut h);
        Self(h.finish())
    }
}

/// Highlighted code: one entry per source line (without its newline), each
/// a list of styled runs. Text is already defused (controls made visible,
/// tabs expanded), like the rest of a rendered message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HighlightedCode {
    /// Styled runs per line.
    pub lines: Vec<Vec<(Style, String)>>,
}

/// What is known about a code block's highlighting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Highlight {
    /// Not requested yet or not finished: render plain for now.
    Pending,
    /// Will never be highlighted (unknown language, too large, failed).
    Plain,
    /// The highlighted lines.
    Styled(Arc<HighlightedCode>),
}

/// Where rendering looks up finished highlights. Must be cheap and must not
/// block: it is called while building lines for the screen.
pub trait HighlightLookup {
    /// The state of the block with this key.
    fn lookup(&self, key: HighlightKey) -> Highlight;
}

/// A lookup for rendering without highlighting: every block is plain and
/// none is reported pending.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHighlights;

impl HighlightLookup for NoHighlights {
    fn lookup(&self, _key: HighlightKey) -> Highlight {
        Highlight::Plain
    }
}

impl HighlightLookup for HashMap<HighlightKey, Highlight> {
    fn lookup(&self, key: HighlightKey) -> Highlight {
        self.get(&key).cloned().unwrap_or(Highlight::Pending)
    }
}

/// How to start a [`Highlighter`].
#[derive(Default)]
pub struct HighlighterOptions {
    /// A syntect built-in theme name; [`DEFAULT_THEME`] when `None` or unknown.
    pub theme: Option<String>,
    /// Called on the worker thread after each result is sent (e.g. to post
    /// an `AppEvent` that asks for a frame). Must not block.
    pub waker: Option<Box<dyn Fn() + Send>>,
}

struct Job {
    key: HighlightKey,
    lang: String,
    code: String,
}

/// The highlighting service. Owned by the UI; cheap to call.
pub struct Highlighter {
    jobs: Option<mpsc::Sender<Job>>,
    results: mpsc::Receiver<(HighlightKey, Highlight)>,
    done: HashMap<HighlightKey, Highlight>,
    requested: HashSet<HighlightKey>,
}

impl std::fmt::Debug for Highlighter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Highlighter")
            .field("done", &self.done.len())
            .field("requested", &self.requested.len())
            .finish()
    }
}

impl Highlighter {
    /// Starts the worker thread with the default theme and no waker. Returns
    /// at once: the syntax set loads on the worker.
    #[must_use]
    pub fn spawn() -> Self {
        Self::spawn_with(HighlighterOptions::default())
    }

    /// Starts the worker thread with `options`.
    #[must_use]
    pub fn spawn_with(options: HighlighterOptions) -> Self {
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let (result_tx, result_rx) = mpsc::channel();
        let started = std::thread::Builder::new()
            .name("strata-highlight".to_owned())
            .spawn(move || worker(&job_rx, &result_tx, options));
        Self {
            jobs: started.ok().map(|_| job_tx),
            results: result_rx,
            done: HashMap::new(),
            requested: HashSet::new(),
        }
    }

    /// Asks for `code` in language `lang` (a fence token) to be highlighted
    /// and returns its key. Repeated requests are free. Code that is too
    /// large, or has no language, resolves to [`Highlight::Plain`] at once.
    pub fn request(&mut self, code: &str, lang: &str) -> HighlightKey {
        let key = HighlightKey::of(code, lang);
        if self.done.contains_key(&key) || !self.requested.insert(key) {
            return key;
        }
        if lang.is_empty() || !highlightable(code) {
            self.done.insert(key, Highlight::Plain);
            return key;
        }
        let job = Job {
            key,
            lang: lang.to_owned(),
            code: code.to_owned(),
        };
        if self.jobs.as_ref().is_none_or(|tx| tx.send(job).is_err()) {
            self.done.insert(key, Highlight::Plain);
        }
        key
    }

    /// Requests every fenced code block of a Markdown message (call it when
    /// a message is complete, not on every streamed delta). Returns the keys.
    pub fn request_markdown(&mut self, text: &str) -> Vec<HighlightKey> {
        fenced_blocks(text)
            .into_iter()
            .map(|(lang, code)| self.request(&code, &lang))
            .collect()
    }

    /// Moves finished results in without waiting; returns the keys that
    /// just finished (give them to [`super::WrapCache::highlights_arrived`]).
    pub fn drain(&mut self) -> Vec<HighlightKey> {
        let mut keys = Vec::new();
        while let Ok((key, result)) = self.results.try_recv() {
            self.done.insert(key, result);
            keys.push(key);
        }
        keys
    }

    /// Waits up to `timeout` for at least one result, then drains. For
    /// tests and benches only; the UI uses [`Highlighter::drain`].
    pub fn wait(&mut self, timeout: std::time::Duration) -> Vec<HighlightKey> {
        match self.results.recv_timeout(timeout) {
            Ok((key, result)) => {
                self.done.insert(key, result);
                let mut keys = vec![key];
                keys.extend(self.drain());
                keys
            }
            Err(_) => Vec::new(),
        }
    }
}

impl HighlightLookup for Highlighter {
    fn lookup(&self, key: HighlightKey) -> Highlight {
        self.done.get(&key).cloned().unwrap_or(Highlight::Pending)
    }
}

/// The worker: load once, then serve jobs until the highlighter is dropped.
fn worker(
    jobs: &mpsc::Receiver<Job>,
    results: &mpsc::Sender<(HighlightKey, Highlight)>,
    options: HighlighterOptions,
) {
    let syntaxes = SyntaxSet::load_defaults_newlines();
    let mut themes = ThemeSet::load_defaults();
    let name = options
        .theme
        .filter(|t| themes.themes.contains_key(t))
        .unwrap_or_else(|| DEFAULT_THEME.to_owned());
    let Some(theme) = themes.themes.remove(&name) else {
        return;
    };
    while let Ok(job) = jobs.recv() {
        let result = match syntaxes.find_syntax_by_token(&job.lang) {
            Some(syntax) => {
                let mut lines = Vec::new();
                let mut hl = HighlightLines::new(syntax, &theme);
                let mut failed = false;
                for line in LinesWithEndings::from(&job.code) {
                    match hl.highlight_line(line, &syntaxes) {
                        Ok(ranges) => lines.push(
                            ranges
                                .into_iter()
                                .filter_map(|(style, text)| {
                                    let text = text.trim_end_matches(['\n', '\r']);
                                    (!text.is_empty()).then(|| (convert(style), defuse(text).into_owned()))
                                })
                                .collect(),
                        ),
                        Err(_) => {
                            failed = true;
                            break;
                        }
                    }
                }
                if failed {
                    Highlight::Plain
                } else {
                    Highlight::Styled(Arc::new(HighlightedCode { lines }))
                }
            }
            None => Highlight::Plain,
        };
        if results.send((job.key, result)).is_err() {
            return;
        }
        if let Some(wake) = &options.waker {
            wake();
        }
    }
}

/// A syntect style as a ratatui style: foreground colour and font style
/// (the theme's background is left to the terminal).
fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::default().fg(Color::Rgb(fg.r, fg.g, fg.b));
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        out = out.add_modifier(Modifier::UNDERLINED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn fence_tokens_are_reduced_to_the_language() {
        assert_eq!(fence_language("rust,ignore"), "rust");
        assert_eq!(fence_language("{.python}"), "python");
        assert_eq!(fence_language("  sh title=x"), "sh");
        assert_eq!(fence_language(""), "");
    }

    #[test]
    fn size_limits_refuse_huge_blocks() {
        assert!(highlightable("fn main() {}\n"));
        assert!(!highlightable(&"x\n".repeat(MAX_HIGHLIGHT_LINES + 1)));
        assert!(!highlightable(&"x".repeat(MAX_HIGHLIGHT_BYTES + 1)));
    }

    #[test]
    fn keys_tell_language_and_code_apart() {
        assert_eq!(HighlightKey::of("a", "rust"), HighlightKey::of("a", "rust"));
        assert_ne!(HighlightKey::of("a", "rust"), HighlightKey::of("a", "python"));
        assert_ne!(HighlightKey::of("a", "rust"), HighlightKey::of("b", "rust"));
    }

    #[test]
    fn the_worker_highlights_known_languages_and_plains_the_rest() {
        let mut hl = Highlighter::spawn();
        let rust = hl.request("fn main() {\n    let x = 1;\n}\n", "rust");
        let unknown = hl.request("whatever\n", "no-such-language");
        let huge = hl.request(&"x\n".repeat(MAX_HIGHLIGHT_LINES + 1), "rust");
        assert_eq!(hl.lookup(huge), Highlight::Plain, "too large resolves at once");
        let mut waited = 0;
        while (hl.lookup(rust) == Highlight::Pending || hl.lookup(unknown) == Highlight::Pending)
            && waited < 60
        {
            hl.wait(Duration::from_secs(1));
            waited += 1;
        }
        assert_eq!(hl.lookup(unknown), Highlight::Plain);
        let Highlight::Styled(code) = hl.lookup(rust) else {
            panic!("rust was not highlighted: {:?}", hl.lookup(rust));
        };
        assert_eq!(code.lines.len(), 3);
        let first: String = code.lines[0].iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(first, "fn main() {");
        let colours: HashSet<_> = code.lines[0].iter().map(|(s, _)| s.fg).collect();
        assert!(
            colours.len() > 1,
            "one colour for a whole line: {:?}",
            code.lines[0]
        );
    }
}
