//! Free pruning (DESIGN §7 phase 1): shrinking old messages without a model
//! call. Outside the protected tail, an identical tool result of at least
//! [`DEDUPE_MIN_CHARS`] keeps only its newest copy, other tool results longer
//! than [`TOOL_RESULT_MAX_CHARS`] become one informative line, and tool-call
//! arguments longer than [`ARGUMENTS_MAX_CHARS`] are shortened inside the
//! parsed JSON so they stay valid. Across the whole history, every image but
//! the newest becomes a placeholder.
//!
//! Pinned messages are never rewritten, nor excluded ones with the tool call
//! unit they belong to (they stay as the user left them, to be included
//! again); an excluded result is not the newest copy of an output, and an
//! excluded message does not hold the newest image. Nothing is changed in place:
//! [`Pruner::message`] lends the original when pruning leaves it alone and
//! gives a copy (new id, the original's `seq`) when it rewrites it.

use super::{cut_at, tail_of};
use crate::domain::{Message, MessageId, Role};
use crate::text::group_digits;
use memchr::memmem::Finder;
use regex::Regex;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Tool results at least this long (chars) are deduplicated.
pub const DEDUPE_MIN_CHARS: usize = 200;
/// Old tool results longer than this (chars) become one line.
pub const TOOL_RESULT_MAX_CHARS: usize = 200;
/// Tool-call arguments longer than this (chars) are shortened.
pub const ARGUMENTS_MAX_CHARS: usize = 500;
/// String leaves of shortened arguments keep this many chars.
pub const ARGUMENT_STRING_KEEP_CHARS: usize = 200;

static IMAGE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"data:(image/[A-Za-z0-9.+\-]+);base64,([A-Za-z0-9+/=]+)|\[image(?:\]|:[^\]\n]{0,200}\])").ok()
});
static EXIT_CODE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\bexit(?:ed)?(?:\s+(?:code|status))?(?:\s+with)?(?:\s+code)?\s*[:=]?\s*(-?\d{1,3})\b")
        .ok()
});
static ERROR_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:error|fatal|panic|thread '.*' panicked|traceback|exception)\b").ok()
});

/// Free pruning of one history, decided up front and applied per message
/// on demand: [`Pruner::message`] gives a message as pruning leaves it
/// (see the module doc for the rules). What needs the whole history is
/// settled in [`Pruner::new`] (which tool results are older copies of a
/// later one, which message holds the newest image); rewriting a tool
/// result into its one line, shortening arguments and stripping images are
/// done per message, so a caller that reads only some of the messages pays
/// only for those.
pub struct Pruner<'a> {
    history: &'a [Message],
    tail_start: usize,
    calls: HashMap<&'a str, (&'a str, &'a str)>,
    /// Per message: an identical, longer-lived tool result comes later.
    duplicate: Vec<bool>,
    /// Per message: how many of its image matches become placeholders
    /// (`None`: leave its images alone).
    strip_images: Vec<Option<usize>>,
    /// Per message: excluded, or in a tool call unit with an excluded one.
    held: Vec<bool>,
}

impl<'a> Pruner<'a> {
    /// Settles deduplication and which images stay for `history`, with
    /// messages from `tail_start` on protected.
    #[must_use]
    pub fn new(history: &'a [Message], tail_start: usize) -> Self {
        let calls: HashMap<&str, (&str, &str)> = history
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .map(|c| (c.id.as_str(), (c.name.as_str(), c.arguments.as_str())))
            .collect();
        let held = crate::pipeline::excluded_units(history);
        let mut duplicate = vec![false; history.len()];
        let mut seen = SeenTexts::default();
        for (i, m) in history.iter().enumerate().rev() {
            if !held[i] && m.role == Role::Tool && at_least_chars(&m.content, DEDUPE_MIN_CHARS) {
                duplicate[i] = !seen.insert(m.content.as_str());
            }
        }
        let mut pruner = Self {
            history,
            tail_start,
            calls,
            duplicate,
            strip_images: Vec::new(),
            held,
        };
        pruner.strip_images = pruner.image_plan();
        pruner
    }

    /// The message at `index` after free pruning: borrowed when nothing
    /// changed, else a copy with a new id.
    #[must_use]
    pub fn message(&self, index: usize) -> Cow<'a, Message> {
        self.images_stripped(index, self.rewrite(index))
    }

    /// The message at `index` with only its old images replaced: tool
    /// results and arguments as they were. What the extractive summariser
    /// reads, so the error lines of a long tool output are not reduced to
    /// its one-line digest first.
    #[must_use]
    pub fn with_images_stripped(&self, index: usize) -> Cow<'a, Message> {
        self.images_stripped(index, None)
    }

    /// Message `index` (or its `rewritten` copy) with its old images
    /// replaced, when it has any.
    fn images_stripped(&self, index: usize, rewritten: Option<Message>) -> Cow<'a, Message> {
        let original = &self.history[index];
        let Some(count) = self.strip_images.get(index).copied().flatten() else {
            return rewritten.map_or(Cow::Borrowed(original), Cow::Owned);
        };
        let (content, copy) = match rewritten {
            Some(copy) => (strip_images(&copy.content, count), copy),
            None => (
                strip_images(&original.content, count),
                rewrite(original, String::new()),
            ),
        };
        Cow::Owned(Message { content, ..copy })
    }

    /// The rewrite of tool results and arguments (images aside).
    fn rewrite(&self, i: usize) -> Option<Message> {
        let m = &self.history[i];
        if self.rewrites_tool_result(i) {
            let (name, args) = self.call_of(m).unwrap_or(("tool", ""));
            let line = if self.duplicate[i] {
                format!(
                    "[{name}] same output as a later call ({} chars); only the newest copy is kept",
                    group_digits(m.content.chars().count() as u64)
                )
            } else {
                describe_tool_result(name, args, &m.content)
            };
            return Some(rewrite(m, line));
        }
        if i >= self.tail_start || m.pinned || self.held[i] {
            return None;
        }
        if !m
            .tool_calls
            .iter()
            .any(|c| at_least_chars(&c.arguments, ARGUMENTS_MAX_CHARS + 1))
        {
            return None;
        }
        let mut copy = rewrite(m, m.content.clone());
        let mut changed = false;
        for call in &mut copy.tool_calls {
            if let Some(short) = shorten_arguments(&call.arguments) {
                call.arguments = short;
                changed = true;
            }
        }
        changed.then_some(copy)
    }

    fn call_of(&self, m: &Message) -> Option<(&'a str, &'a str)> {
        m.tool_call_id
            .as_deref()
            .and_then(|id| self.calls.get(id).copied())
    }

    /// Whether message `i` is a tool result that pruning rewrites into one
    /// line (a duplicate, or longer than [`TOOL_RESULT_MAX_CHARS`]).
    fn rewrites_tool_result(&self, i: usize) -> bool {
        let m = &self.history[i];
        i < self.tail_start
            && !m.pinned
            && !self.held[i]
            && m.role == Role::Tool
            && (self.duplicate[i] || at_least_chars(&m.content, TOOL_RESULT_MAX_CHARS + 1))
    }

    /// Every image except the newest (the last one in the history) becomes
    /// `[image omitted: image/png, ~12 KB]`; pinned messages keep theirs. A
    /// tool result rewritten into one line takes its images with it and
    /// holds none; every other rewrite keeps the message's content, so only
    /// contents that hold one of the pattern's literals are searched.
    fn image_plan(&self) -> Vec<Option<usize>> {
        let mut plan = vec![None; self.history.len()];
        let Some(re) = IMAGE.as_ref() else {
            return plan;
        };
        let mut newest_seen = false;
        for (i, m) in self.history.iter().enumerate().rev() {
            if self.held[i] || self.rewrites_tool_result(i) || !has_image_literal(&m.content) {
                continue;
            }
            let matches: Vec<_> = re.find_iter(&m.content).collect();
            if matches.is_empty() {
                continue;
            }
            let keep_last = !newest_seen;
            newest_seen = true;
            if m.pinned {
                continue;
            }
            let strip_count = matches.len() - usize::from(keep_last);
            if matches[..strip_count]
                .iter()
                .any(|m| m.as_str().starts_with("data:"))
            {
                plan[i] = Some(strip_count);
            }
        }
        plan
    }
}

/// Whether `text` has at least `n` chars, counting only when the byte
/// length leaves it open (a char takes 1 to 4 bytes).
fn at_least_chars(text: &str, n: usize) -> bool {
    text.len() >= n.saturating_mul(4) || (text.len() >= n && text.chars().count() >= n)
}

/// A set of texts that hashes only their length and their first and last
/// [`SeenTexts::EDGE`] bytes (long tool outputs would otherwise be hashed
/// whole), comparing whole texts only within a bucket.
#[derive(Default)]
struct SeenTexts<'a> {
    buckets: HashMap<BucketKey<'a>, Vec<&'a str>>,
}

/// Byte length, first and last bytes of a text.
type BucketKey<'a> = (usize, &'a [u8], &'a [u8]);

impl<'a> SeenTexts<'a> {
    const EDGE: usize = 64;

    /// Adds `text`; `true` when it was not there yet.
    fn insert(&mut self, text: &'a str) -> bool {
        let b = text.as_bytes();
        let edge = Self::EDGE.min(b.len());
        let bucket = self
            .buckets
            .entry((b.len(), &b[..edge], &b[b.len() - edge..]))
            .or_default();
        if bucket.contains(&text) {
            return false;
        }
        bucket.push(text);
        true
    }
}

/// A copy of `m` with new content, a new id and no cached count.
fn rewrite(m: &Message, content: String) -> Message {
    let mut copy = m.clone();
    copy.id = MessageId::new();
    copy.content = content;
    copy.tokens = None;
    copy
}

/// Whether `text` holds a literal every [`IMAGE`] match starts with
/// (`data:image/` or `[image`): one search for their common `image`, each
/// hit then checked in place.
fn has_image_literal(text: &str) -> bool {
    static IMAGE_WORD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("image"));
    let bytes = text.as_bytes();
    IMAGE_WORD.find_iter(bytes).any(|at| {
        bytes[..at].ends_with(b"[") || (bytes[..at].ends_with(b"data:") && bytes.get(at + 5) == Some(&b'/'))
    })
}

/// `content` with its first `count` [`IMAGE`] matches that are data URLs
/// replaced by placeholders.
fn strip_images(content: &str, count: usize) -> String {
    let Some(re) = IMAGE.as_ref() else {
        return content.to_owned();
    };
    let mut out = String::with_capacity(content.len().min(4096));
    let mut last = 0;
    for (n, caps) in re.captures_iter(content).enumerate() {
        let Some(whole) = caps.get(0) else { continue };
        if n >= count || !whole.as_str().starts_with("data:") {
            continue;
        }
        out.push_str(&content[last..whole.start()]);
        let mime = caps.get(1).map_or("image", |m| m.as_str());
        let bytes = caps.get(2).map_or(0, |m| m.as_str().len() * 3 / 4);
        out.push_str(&format!("[image omitted: {mime}, ~{} KB]", bytes.div_ceil(1024)));
        last = whole.end();
    }
    out.push_str(&content[last..]);
    out
}

/// Shortens every string leaf longer than [`ARGUMENT_STRING_KEEP_CHARS`] of
/// a JSON argument text longer than [`ARGUMENTS_MAX_CHARS`]; `None` when the
/// text is short, not valid JSON, or has no long string.
#[must_use]
pub fn shorten_arguments(arguments: &str) -> Option<String> {
    if arguments.chars().count() <= ARGUMENTS_MAX_CHARS {
        return None;
    }
    let mut value: Value = serde_json::from_str(arguments).ok()?;
    if !shorten_value(&mut value) {
        return None;
    }
    serde_json::to_string(&value).ok()
}

fn shorten_value(value: &mut Value) -> bool {
    match value {
        Value::String(s) => {
            let chars = s.chars().count();
            if chars <= ARGUMENT_STRING_KEEP_CHARS {
                return false;
            }
            let cut = chars - ARGUMENT_STRING_KEEP_CHARS;
            *s = format!(
                "{}…[{} chars cut]",
                cut_at(s, ARGUMENT_STRING_KEEP_CHARS),
                group_digits(cut as u64)
            );
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |acc, v| shorten_value(v) | acc),
        Value::Object(map) => map.values_mut().fold(false, |acc, v| shorten_value(v) | acc),
        _ => false,
    }
}

/// The first string among `keys` of a JSON object text.
fn arg(args: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match args.get(*k)? {
        Value::String(s) => Some(one_line(s, 80)),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// `text` on one line, at most `max` chars.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", cut_at(&flat, max))
    } else {
        flat
    }
}

/// One informative line standing for a tool result: what the call did and
/// how big the result was, from the tool's name, its JSON arguments and
/// the result text, e.g. `[read_file] read src/lib.rs from line 1 (12,400
/// chars)` or ``[shell] ran `cargo test` -> exit 101, 212 lines``.
#[must_use]
pub fn describe_tool_result(name: &str, arguments: &str, result: &str) -> String {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let chars = group_digits(result.chars().count() as u64);
    let lines = group_digits(line_count(result) as u64);
    let lower = name.to_ascii_lowercase();
    let path = arg(&args, &["path", "file_path", "file", "filename", "target_file"]);
    let line = if lower.contains("read") || lower.contains("view") || lower == "cat" {
        let from = arg(&args, &["offset", "start_line", "line", "from"]);
        match (path, from) {
            (Some(p), Some(f)) => format!("read {p} from line {f} ({chars} chars)"),
            (Some(p), None) => format!("read {p} ({chars} chars)"),
            _ => format!("read {chars} chars"),
        }
    } else if let Some(cmd) = arg(&args, &["command", "cmd", "script"]) {
        let exit = EXIT_CODE
            .as_ref()
            .and_then(|re| re.captures(tail_of(result, 2_000)))
            .and_then(|c| c.get(1))
            .map(|m| format!("exit {}, ", m.as_str()))
            .unwrap_or_default();
        let error = first_error_line(result)
            .map(|e| format!("; {e}"))
            .unwrap_or_default();
        format!("ran `{cmd}` -> {exit}{lines} lines{error}")
    } else if lower.contains("write") || lower.contains("edit") || lower.contains("patch") {
        match path {
            Some(p) => format!("changed {p} ({chars} chars of output)"),
            None => format!("{chars} chars of output"),
        }
    } else if let Some(pattern) = arg(&args, &["pattern", "query", "regex", "search"]) {
        let scope = path.map(|p| format!(" in {p}")).unwrap_or_default();
        format!("searched for \"{pattern}\"{scope} -> {lines} lines")
    } else if let Some(url) = arg(&args, &["url", "uri"]) {
        format!("fetched {url} ({chars} chars)")
    } else {
        let first = result.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let detail = path.map(|p| format!("{p}: ")).unwrap_or_default();
        format!(
            "{detail}{chars} chars, {lines} lines, starting \"{}\"",
            one_line(first, 60)
        )
    };
    format!("[{name}] {line}")
}

/// `text.lines().count()`, counting newline bytes in one pass.
fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The first line of `text` that reads as an error, on one line.
fn first_error_line(text: &str) -> Option<String> {
    let re = ERROR_LINE.as_ref()?;
    text.lines()
        .find(|l| may_start_error(l) && re.is_match(l))
        .map(|l| one_line(l, 120))
}

/// The starts (lower case) of the words [`ERROR_LINE`] looks for; each is
/// ASCII with no letter that has a non-ASCII case variant.
const ERROR_STARTS: [&[u8]; 6] = [b"error", b"fatal", b"panic", b"threa", b"trace", b"excep"];

/// A cheap necessary condition for [`ERROR_LINE`]: after leading
/// whitespace the line starts with one of [`ERROR_STARTS`] in any case, or
/// holds a non-ASCII char there (left to the regex). Most lines of a tool's
/// output fail it at the first byte, so the regex runs on few lines.
fn may_start_error(line: &str) -> bool {
    let rest = line.trim_start();
    let Some(head) = rest.as_bytes().get(..5) else {
        return !rest.is_ascii();
    };
    if !head.is_ascii() {
        return true;
    }
    ERROR_STARTS.iter().any(|w| head.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{SessionId, ToolCall};

    /// The copy [`Pruner::message`] makes of message `i`, `None` when it
    /// lends the original.
    fn copy(pruner: &Pruner<'_>, i: usize) -> Option<Message> {
        match pruner.message(i) {
            Cow::Owned(copy) => Some(copy),
            Cow::Borrowed(_) => None,
        }
    }

    #[test]
    fn read_and_shell_results_get_informative_lines() {
        let big = "x".repeat(12_400);
        assert_eq!(
            describe_tool_result("read_file", r#"{"path":"src/lib.rs","offset":1}"#, &big),
            "[read_file] read src/lib.rs from line 1 (12,400 chars)"
        );
        let out = (0..211)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
            + "\nexit code: 101";
        assert_eq!(
            describe_tool_result("shell", r#"{"command":"cargo test"}"#, &out),
            "[shell] ran `cargo test` -> exit 101, 212 lines"
        );
        for text in ["", "\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n"] {
            assert_eq!(line_count(text), text.lines().count(), "{text:?}");
        }
        let mixed = "aé€😀\n".repeat(700);
        for max in [0, 1, 5, 2_000, 2_799, 2_800, 5_000] {
            let chars: Vec<char> = mixed.chars().collect();
            let naive: String = chars[chars.len().saturating_sub(max)..].iter().collect();
            assert_eq!(tail_of(&mixed, max), naive, "max {max}");
        }
        let unknown = describe_tool_result("weather", r#"{"city":"Oslo"}"#, "sunny\nwarm");
        assert_eq!(unknown, "[weather] 10 chars, 2 lines, starting \"sunny\"");
    }

    #[test]
    fn arguments_stay_valid_json_and_get_shorter() {
        let long = "é\"\\\n".repeat(1_250);
        let args = serde_json::json!({"path": "a.rs", "content": long}).to_string();
        let short = shorten_arguments(&args).unwrap();
        let v: Value = serde_json::from_str(&short).unwrap();
        assert!(short.len() < args.len());
        assert_eq!(v["path"], "a.rs");
        assert!(v["content"].as_str().unwrap().starts_with("é\"\\\n"));
        assert_eq!(shorten_arguments("{not json"), None);
    }

    #[test]
    fn image_literals_are_found_where_the_pattern_can_match() {
        let re = IMAGE.as_ref().unwrap();
        for text in [
            "",
            "image",
            "an image here",
            "[image]",
            "see [image: a cat]",
            "data:image/png;base64,AAAA",
            "xdata:image/",
            "data:image",
            "data:images/png",
            "[images]",
            "image image [image",
            "data: image/png",
        ] {
            assert!(
                has_image_literal(text) || !re.is_match(text),
                "{text:?} can match but was skipped"
            );
        }
        assert!(has_image_literal("x [image"));
        assert!(has_image_literal("data:image/png"));
        assert!(!has_image_literal("an image of data: image/png"));
    }

    #[test]
    fn an_image_in_a_tool_result_goes_with_its_one_line_summary() {
        let s = SessionId::new();
        let png = format!("data:image/png;base64,{}", "iVBORw0KGgo".repeat(40));
        let user = Message::new(s, Role::User, format!("look: {png}"), 0);
        let mut call = Message::new(s, Role::Assistant, "", 0);
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "screenshot".into(),
            arguments: "{}".into(),
        });
        let mut shot = Message::new(s, Role::Tool, format!("{png}\n{}", "pixels ".repeat(40)), 0);
        shot.tool_call_id = Some("c1".into());
        let history = vec![user, call, shot, Message::new(s, Role::Assistant, "done", 0)];
        let p = Pruner::new(&history, 3);
        let summary = copy(&p, 2).unwrap().content;
        assert!(
            summary.starts_with("[screenshot]") && !summary.contains("[image omitted"),
            "{summary}"
        );
        assert!(
            copy(&p, 0).is_none(),
            "the user's image is now the newest and stays"
        );
        let kept_in_tail = Pruner::new(&history, 2);
        assert!(copy(&kept_in_tail, 2).is_none(), "the newest image, in the tail");
        assert!(
            copy(&kept_in_tail, 0)
                .unwrap()
                .content
                .contains("[image omitted: image/png")
        );
    }

    #[test]
    fn duplicates_keep_the_newest_copy_only() {
        let s = SessionId::new();
        let mut history = Vec::new();
        for i in 0..3 {
            let mut a = Message::new(s, Role::Assistant, "", 0);
            a.tool_calls.push(ToolCall {
                id: format!("c{i}"),
                name: "read_file".into(),
                arguments: r#"{"path":"a.rs"}"#.into(),
            });
            let mut t = Message::new(s, Role::Tool, "y".repeat(300), 0);
            t.tool_call_id = Some(format!("c{i}"));
            history.push(a);
            history.push(t);
        }
        let p = Pruner::new(&history, 6);
        assert!(copy(&p, 1).unwrap().content.contains("newest copy"));
        assert!(copy(&p, 3).unwrap().content.contains("newest copy"));
        assert_eq!(copy(&p, 5).unwrap().content, "[read_file] read a.rs (300 chars)");
        let protected = Pruner::new(&history, 5);
        assert!(copy(&protected, 5).is_none(), "the newest copy is in the tail");
        assert!(copy(&protected, 3).unwrap().content.contains("newest copy"));
    }
}
