//! The extractive summariser (DESIGN §7 phase 3): a summary without a model,
//! deterministic, used for the embedded model, when configured, and as the
//! fallback when a model summary fails.
//!
//! It extracts facts from the (pruned, redacted) middle: every real user
//! request (its first line quoted verbatim, so a quote always exists in the
//! source), every file path, shell command and error line, decisions
//! (sentences with "decided", "we will", "let's", "chose", ...), statements
//! of finished work, code blocks and other sentences. Facts from an earlier
//! summary are carried over. A text is kept once, at its most recent
//! occurrence (requests are compared with requests, other facts with other
//! facts; an earlier summary's bullet that repeats anything newer is
//! dropped). Items are ranked by kind, topic and recency and taken greedily
//! until the token budget is spent (smaller items are still tried after a
//! large one does not fit, up to [`FILLER_TRIES`] misses); the chosen ones
//! are printed under the headings of the summary template, in source order,
//! with topical items first when a topic is given.
//!
//! Reading is lazy ([`select`]): requests and the other facts are read
//! from the newest message backwards, and reading stops as soon as no
//! older message can hold an item that would still be chosen. The result
//! is the one an eager pass over every message gives (a test compares the
//! two).
//!
//! Identical input gives identical output (no hashing order, no clock).

mod select;

pub(crate) use select::Summary;

use super::keywords::keyword_starts;
use super::redact::redact;
use super::{cut_at, input::date_of};
use crate::domain::{Message, Role};
use crate::tokens::TokenCounter;
use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

/// Once the budget has turned this many items away, the rest (ranked lower)
/// are not tried as fillers: each try tokenises an item, and on a long
/// history the items that cannot fit outnumber the chosen ones a hundred to
/// one, so trying them all cost most of a compression's time.
const FILLER_TRIES: usize = 64;

/// What the extractive summariser reads.
pub struct ExtractiveInput<'a> {
    /// The messages to summarise, in order (already pruned).
    pub messages: &'a [&'a Message],
    /// The body of the earlier summary being updated, if any.
    pub previous: Option<&'a str>,
    /// The focus of `/compress <topic>`.
    pub topic: Option<&'a str>,
    /// Tokens the body may take (counted with `counter`).
    pub budget_tokens: u32,
    /// An additional cap in chars (the fallback summary's 8,000).
    pub max_chars: Option<usize>,
    /// The session's token counter.
    pub counter: &'a dyn TokenCounter,
}

/// The headings, in the order of the summary template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    Completed,
    Active,
    Decisions,
    Files,
    Requests,
}

impl Section {
    const ALL: [Self; 5] = [
        Self::Completed,
        Self::Active,
        Self::Decisions,
        Self::Files,
        Self::Requests,
    ];

    fn heading(self) -> &'static str {
        match self {
            Self::Completed => "## Completed work",
            Self::Active => "## Active state",
            Self::Decisions => "## Decisions",
            Self::Files => "## Files and commands",
            Self::Requests => "## Historical requests",
        }
    }

    fn from_heading(line: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.heading() == line.trim())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Request,
    Fact,
    Decision,
    Previous,
    Completion,
    Code,
    Sentence,
}

impl Kind {
    fn base(self) -> f64 {
        match self {
            Self::Request => 6.0,
            Self::Fact | Self::Decision => 5.0,
            Self::Previous => 4.0,
            Self::Completion => 3.0,
            Self::Code => 2.0,
            Self::Sentence => 1.0,
        }
    }
}

/// One fact of the summary.
#[derive(Clone, Debug)]
struct Item {
    section: Section,
    kind: Kind,
    text: String,
    /// Source position: larger is more recent.
    order: usize,
    /// Whether the item's own text mentions the topic.
    topical: bool,
    score: f64,
}

impl Item {
    fn new(section: Section, kind: Kind, text: String, order: usize) -> Self {
        Self {
            section,
            kind,
            text,
            order,
            topical: false,
            score: 0.0,
        }
    }
}

static PATH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?:~|\.{1,2})?/?(?:[\w.\-]+/)+[\w\-]+\.[A-Za-z][A-Za-z0-9]{0,7}\b|\b[\w\-]+\.(?:rs|py|ts|tsx|js|jsx|go|java|c|h|cc|cpp|hpp|toml|json|yaml|yml|md|txt|sql|sh|lock|html|css|rb|kt|swift|cfg|ini|env|proto)\b",
    )
    .ok()
});
static ERROR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i:\b(?:error(?:\[\w+\])?|failed|failure|panicked|exception|traceback|fatal|segmentation fault|command not found|permission denied|no such file or directory)\b)|(?i:\berr!\B)|[A-Za-z0-9](?:Error|Exception)\b",
    )
    .ok()
});
static DECISION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:decided|decide to|we will|we'll|let's|let us|chose|choose to|going with|settled on|agreed|decision)\b").ok()
});
static COMPLETION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:fixed|added|implemented|done|completed|created|updated|removed|renamed|now passes|all tests pass|merged|finished)\b").ok()
});
static INLINE_COMMAND: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"`((?:cargo|git|npm|npx|pnpm|yarn|make|python3?|pip|pytest|go|rustc|ls|rg|grep|sed|cat|docker|kubectl|curl|uv|just|bash|sh) [^`\n]{1,200})`").ok()
});

/// One line of at most `max` chars (whitespace runs kept as they are, so the
/// result is a verbatim prefix when the input is one line).
fn clip(text: &str, max: usize) -> String {
    let t = text.trim();
    if t.chars().count() > max {
        format!("{}…", cut_at(t, max))
    } else {
        t.to_owned()
    }
}

/// The extractive summary body (Markdown, the template's headings), within
/// the budget. Empty input gives a body that says so.
#[must_use]
pub fn extractive_summary(input: &ExtractiveInput<'_>) -> String {
    summarise(&Slice(input.messages), &Options::of(input)).body
}

/// The summary of `messages` (read lazily, see the module doc).
pub(crate) fn summarise<'m>(messages: &dyn Messages<'m>, opts: &Options<'_>) -> Summary {
    select::summarise(messages, opts)
}

/// The messages an extractive summary reads, by position (oldest first):
/// a slice, or a view that prunes messages only when they are read.
pub(crate) trait Messages<'m> {
    /// How many messages there are.
    fn len(&self) -> usize;
    /// The role of message `i`, without reading (or pruning) the message.
    fn role(&self, i: usize) -> Role;
    /// Message `i` as the summariser reads it.
    fn get(&self, i: usize) -> Cow<'m, Message>;
}

struct Slice<'a, 'm>(&'a [&'m Message]);

impl<'m> Messages<'m> for Slice<'_, 'm> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn role(&self, i: usize) -> Role {
        self.0[i].role
    }

    fn get(&self, i: usize) -> Cow<'m, Message> {
        Cow::Borrowed(self.0[i])
    }
}

/// Everything of [`ExtractiveInput`] but the messages.
pub(crate) struct Options<'a> {
    pub previous: Option<&'a str>,
    pub topic: Option<&'a str>,
    pub budget_tokens: u32,
    pub max_chars: Option<usize>,
    pub counter: &'a dyn TokenCounter,
}

impl<'a> Options<'a> {
    fn of(input: &ExtractiveInput<'a>) -> Self {
        Self {
            previous: input.previous,
            topic: input.topic,
            budget_tokens: input.budget_tokens,
            max_chars: input.max_chars,
            counter: input.counter,
        }
    }

    /// The topic's words (3 chars or more), lower case.
    fn terms(&self) -> Vec<String> {
        self.topic
            .map(|t| {
                t.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
                    .filter(|w| w.chars().count() >= 3)
                    .map(str::to_lowercase)
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Carries the bullets of an earlier summary over, under their headings;
/// their orders are their positions (older than any message).
fn previous_items(previous: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut section = Section::Active;
    for line in previous.lines() {
        if let Some(s) = Section::from_heading(line) {
            section = s;
            continue;
        }
        let text = line.trim().trim_start_matches("- ").trim();
        if text.is_empty() || text.starts_with('#') || text.starts_with("```") {
            continue;
        }
        let order = items.len();
        items.push(Item::new(section, Kind::Previous, text.to_owned(), order));
    }
    items
}

/// The request item of a real user message: its first non-empty line with
/// secrets redacted, quoted (clipped at 400 chars), with the date, and
/// `(continues)` when more lines follow. Redacting the line alone hides
/// what redacting the whole message would: no secret value spans lines,
/// and a match that starts on the line and ends below it (a PEM block, a
/// label whose value is on the next line) holds only its label there.
fn request_item(content: &str, created_at: i64) -> Option<String> {
    let request = content.lines().find(|l| !l.trim().is_empty())?.trim();
    let quoted = clip(&redact(request), 400);
    let more = if content.trim().lines().nth(1).is_some() {
        " (continues)"
    } else {
        ""
    };
    Some(format!("on {}: \"{quoted}\"{more}", date_of(created_at)))
}

/// One candidate item: heading, kind, text.
type Candidate = (Section, Kind, String);

/// Every candidate item of one message but its request, in source order,
/// duplicates included; `content` is the message's redacted content.
fn fact_candidates(m: &Message, content: &str, out: &mut Vec<Candidate>) {
    let mut texts = vec![Cow::Borrowed(content)];
    for call in &m.tool_calls {
        let args = redact(&call.arguments);
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&args)
            && let Some(cmd) = ["command", "cmd"]
                .iter()
                .find_map(|k| v.get(*k).and_then(|c| c.as_str()))
        {
            out.push((Section::Files, Kind::Fact, format!("`{}`", clip(cmd, 200))));
        }
        texts.push(args);
    }
    let mut push = |section, kind, text: String| out.push((section, kind, text));
    for text in &texts {
        let text: &str = text;
        // A path cannot cross a newline, and `\n` (like the end of the
        // text) is no word char, so searching line by line finds the same
        // paths in the same order; lines without a `.` before a letter
        // cannot hold one and are skipped.
        if let Some(re) = PATH.as_ref() {
            for line in text.split('\n').filter(|l| may_hold_path(l)) {
                for p in re.find_iter(line) {
                    push(Section::Files, Kind::Fact, format!("`{}`", p.as_str()));
                }
            }
        }
        if let Some(re) = INLINE_COMMAND.as_ref() {
            for c in re.captures_iter(text) {
                if let Some(cmd) = c.get(1) {
                    push(Section::Files, Kind::Fact, format!("`{}`", cmd.as_str()));
                }
            }
        }
        // One scan per pattern over the whole text, instead of a regex call
        // per line or sentence: none of the patterns can match across a
        // line or sentence break or start or end on whitespace, so a line
        // (or sentence) matches exactly when a match of the whole text
        // lies inside it.
        let prose = m.role != Role::Tool;
        let assistant = m.role == Role::Assistant;
        let (errors, decisions, completions) = match keyword_starts(text) {
            Some([e, d, c]) => (
                Hits(e),
                Hits(if prose { d } else { Vec::new() }),
                Hits(if assistant { c } else { Vec::new() }),
            ),
            None => (
                Hits::new(&ERROR, text),
                Hits::new_if(prose, &DECISION, text),
                Hits::new_if(assistant, &COMPLETION, text),
            ),
        };
        let mut in_code = false;
        let mut code = String::new();
        let mut code_lines = 0usize;
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") {
                if in_code {
                    code.push_str(line);
                    push(Section::Active, Kind::Code, std::mem::take(&mut code));
                } else {
                    code = format!("{line}\n");
                    code_lines = 1;
                }
                in_code = !in_code;
                continue;
            }
            if in_code {
                if code_lines < 16 {
                    code.push_str(line);
                    code.push('\n');
                    code_lines += 1;
                }
                continue;
            }
            if let Some(cmd) = trimmed.strip_prefix("$ ") {
                push(Section::Files, Kind::Fact, format!("`{}`", clip(cmd, 200)));
                continue;
            }
            if errors.within(text, trimmed) {
                push(Section::Files, Kind::Fact, clip(trimmed, 300));
                continue;
            }
            if !prose {
                continue;
            }
            for sentence in sentences(trimmed) {
                if decisions.within(text, sentence) {
                    push(Section::Decisions, Kind::Decision, clip(sentence, 300));
                } else if completions.within(text, sentence) {
                    push(Section::Completed, Kind::Completion, clip(sentence, 300));
                } else if m.role == Role::Assistant && sentence.chars().count() >= 30 {
                    push(Section::Active, Kind::Sentence, clip(sentence, 300));
                }
            }
        }
    }
}

/// Whether `line` has what every [`PATH`] match needs: a `.` followed by
/// an ASCII letter (the extension).
fn may_hold_path(line: &str) -> bool {
    line.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'.' && w[1].is_ascii_alphabetic())
}

/// The start offsets of a pattern's matches in one text, in order.
struct Hits(Vec<usize>);

impl Hits {
    fn new(re: &LazyLock<Option<Regex>>, text: &str) -> Self {
        Self(
            re.as_ref()
                .map(|r| r.find_iter(text).map(|m| m.start()).collect())
                .unwrap_or_default(),
        )
    }

    fn new_if(wanted: bool, re: &LazyLock<Option<Regex>>, text: &str) -> Self {
        if wanted {
            Self::new(re, text)
        } else {
            Self(Vec::new())
        }
    }

    /// Whether a match starts inside `part`, a slice of `text`.
    fn within(&self, text: &str, part: &str) -> bool {
        if self.0.is_empty() {
            return false;
        }
        let start = part.as_ptr() as usize - text.as_ptr() as usize;
        let i = self.0.partition_point(|&p| p < start);
        self.0.get(i).is_some_and(|&p| p < start + part.len())
    }
}

/// Sentences of one line: split after `.`, `!` or `?` followed by a space.
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = line.as_bytes();
    for i in 0..bytes.len().saturating_sub(1) {
        if matches!(bytes[i], b'.' | b'!' | b'?') && bytes[i + 1] == b' ' {
            out.push(line[start..=i].trim());
            start = i + 1;
        }
    }
    out.push(line[start..].trim());
    out.retain(|s| !s.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::keywords::LISTS;

    /// The Aho-Corasick path finds a match in exactly the lines where the
    /// regexes do, on ASCII texts made of the listed words, near misses and
    /// separators.
    #[test]
    fn keyword_search_agrees_with_the_regexes() {
        let mut pieces: Vec<String> = LISTS
            .iter()
            .flat_map(|l| l.iter().map(|w| (*w).to_owned()))
            .collect();
        for w in pieces.clone() {
            pieces.push(w.to_uppercase());
            pieces.push(format!("{w}s"));
            pieces.push(format!("_{w}"));
            pieces.push(format!("{w}[E0308]:"));
        }
        pieces.extend(
            [
                "x",
                "9",
                "'",
                ".",
                "-",
                "[",
                "]",
                "we",
                "let",
                "the",
                "TypeError",
                "IOError",
                "Error",
                "Exception",
                "NullPointerException",
                "_Error",
                "xError",
                "Errors",
                "ERR!",
                "err!x",
                "!",
            ]
            .map(str::to_owned),
        );
        let seps = [" ", "", "\n", ". ", "_", "\t", "'"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let regexes = [&ERROR, &DECISION, &COMPLETION];
        for _ in 0..3_000 {
            let mut text = String::new();
            for _ in 0..next(12) {
                text.push_str(&pieces[next(pieces.len())]);
                text.push_str(seps[next(seps.len())]);
            }
            let fast = keyword_starts(&text).unwrap();
            for (list, re) in regexes.iter().enumerate() {
                let hits = Hits(fast[list].clone());
                let re = re.as_ref().unwrap();
                for line in text.lines() {
                    let trimmed = line.trim();
                    assert_eq!(
                        hits.within(&text, trimmed),
                        re.is_match(trimmed),
                        "list {list}, line {trimmed:?} of {text:?}"
                    );
                }
            }
        }
        assert!(keyword_starts("déjà fixed").is_none());
    }
}
