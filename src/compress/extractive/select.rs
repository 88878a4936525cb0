//! Choosing the items of an extractive summary, reading as few messages as
//! the choice allows.
//!
//! An item's score is its kind's base (request 6, fact and decision 5,
//! earlier summary 4, completion 3, code 2, sentence 1), plus up to 2 for
//! recency (its order over the largest order) and 3 when it mentions the
//! topic. Items are taken in rank order (score, then the more recent, then
//! the text) while the budget lasts.
//!
//! Messages are read newest first, twice over: for their request (its
//! first line, cheap) and for their other facts (the whole text). An unread
//! request scores at most `6 + 2 * bound / max_order + 3`, an unread fact
//! `5 + 2 * bound / max_order + 3`, each bound just below the orders of the
//! oldest message read for it. Every known item that ranks before anything
//! unread is settled and offered to the budget in rank order; the next
//! request, or the next message's facts, is read only when the budget is
//! still open after all settled items, whichever holds the best unread
//! item. Once the budget closes, nothing unread can change the result.

use super::{
    Candidate, FILLER_TRIES, Item, Kind, Messages, Options, Section, fact_candidates, previous_items,
    request_item,
};
use crate::compress::is_real_user;
use crate::compress::redact::{self, redact};
use crate::domain::Role;
use crate::tokens::TokenCounter;
use aho_corasick::AhoCorasick;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

/// Orders of one message's items start at `(position + 1) * ORDER_STEP`
/// (after the earlier summary's items) and take at most this many slots.
const ORDER_STEP: usize = 10_000;

/// The highest kind base among facts read from messages (fact, decision).
const FACT_BASE: f64 = 5.0;

/// The bonus of a topical item.
const TOPIC_BONUS: f64 = 3.0;

/// The score of an item (see the module doc).
fn score(kind_base: f64, order: usize, max_order: f64, topical: bool) -> f64 {
    kind_base + 2.0 * order as f64 / max_order + if topical { TOPIC_BONUS } else { 0.0 }
}

/// An item in rank order: `Ord` puts the item taken first greatest.
struct Ranked(Item);

impl Ranked {
    fn cmp_rank(a: &Item, b: &Item) -> Ordering {
        a.score
            .total_cmp(&b.score)
            .then(a.order.cmp(&b.order))
            .then_with(|| b.text.cmp(&a.text))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        Self::cmp_rank(&self.0, &other.0)
    }
}

/// The greedy choice within the budget. An item costs the tokens of its
/// line as the summary prints it.
struct Budget<'c> {
    counter: &'c dyn TokenCounter,
    /// Tokens for items (the headings' share taken off).
    tokens: usize,
    max_chars: usize,
    used: usize,
    chars: usize,
    misses: usize,
    chosen: Vec<Item>,
    /// The counted lines of the chosen items.
    line_tokens: HashMap<String, usize>,
}

impl<'c> Budget<'c> {
    fn new(opts: &Options<'c>) -> Self {
        let headings: usize = Section::ALL
            .iter()
            .map(|s| opts.counter.count(s.heading()) + 2)
            .sum();
        Self {
            counter: opts.counter,
            tokens: (opts.budget_tokens as usize).saturating_sub(headings),
            max_chars: opts.max_chars.unwrap_or(usize::MAX).saturating_sub(200),
            used: 0,
            chars: 0,
            misses: 0,
            chosen: Vec::new(),
            line_tokens: HashMap::new(),
        }
    }

    /// No item will be taken any more.
    fn closed(&self) -> bool {
        self.tokens.saturating_sub(self.used) < 4 || self.misses >= FILLER_TRIES
    }

    /// Takes `item` if it fits (call only while open). An item the
    /// counter's lower bound already puts over the tokens left is turned
    /// away without counting ([`TokenCounter::at_least`]).
    fn offer(&mut self, item: Item) {
        let line = line_of(&item);
        let left = self.tokens.saturating_sub(self.used);
        if self.chars + line.len() > self.max_chars || self.counter.at_least(&line) > left {
            self.misses += 1;
            return;
        }
        let cost = self.counter.count(&line);
        if cost <= left {
            self.used += cost;
            self.chars += line.len();
            self.chosen.push(item);
            self.line_tokens.insert(line, cost);
        } else {
            self.misses += 1;
        }
    }
}

/// What is known of the messages read so far. Requests are read from
/// `next_request` on, facts from `next_fact` on; requests are always read
/// at least as far back as facts (a message's fact orders start after its
/// request).
struct Reader<'s, 'm> {
    src: &'s dyn Messages<'m>,
    terms: Vec<String>,
    /// Orders of the earlier summary's items are below this.
    offset: usize,
    /// Per message read for requests: whether its request is kept.
    has_request: Vec<bool>,
    request_texts: HashSet<String>,
    /// Texts of the facts read so far.
    fact_texts: HashSet<String>,
    next_request: usize,
    next_fact: usize,
    scratch: Vec<Candidate>,
    /// With a topic: per position `p`, the newest message before `p` whose
    /// facts may mention it (`None` inside: none); `None` when any message
    /// may ([`may_mention`]).
    topical_before: Option<Vec<Option<usize>>>,
    /// The best score of an earlier summary's item.
    previous_best: f64,
}

/// A bound on what unread items can score: the best score and the orders
/// above all of theirs.
type Bound = (f64, usize);

/// Per message of `src`, whether facts read from it may mention one of
/// `terms`; `None` when that cannot be told without reading them (a term
/// that is not ASCII, or one a redaction marker holds). A fact's text is
/// cut from its message's redacted content or tool-call arguments, and no
/// term crosses what is added around it (backticks, `…`, line breaks); an
/// ASCII message's lower case is its ASCII lower case, so an ASCII search
/// that ignores case finds every mention; a message that is not ASCII, or
/// whose arguments hold a JSON `\u` escape, counts as mentioning.
fn may_mention(src: &dyn Messages<'_>, terms: &[String]) -> Option<Vec<bool>> {
    let markers: Vec<&str> = redact::marker_words().collect();
    if terms
        .iter()
        .any(|t| !t.is_ascii() || markers.iter().any(|m| m.contains(t.as_str())))
    {
        return None;
    }
    let ac = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(terms)
        .ok()?;
    let mentions = |text: &str| !text.is_ascii() || ac.is_match(text);
    Some(
        (0..src.len())
            .map(|i| {
                let m = src.get(i);
                // A command is read from the parsed arguments, where a
                // `\uXXXX` escape may spell a term.
                mentions(&m.content)
                    || m.tool_calls
                        .iter()
                        .any(|c| c.arguments.contains("\\u") || mentions(&c.arguments))
            })
            .collect(),
    )
}

impl Reader<'_, '_> {
    fn base(&self, position: usize) -> usize {
        self.offset + (position + 1) * ORDER_STEP
    }

    fn topical(&self, text: &str) -> bool {
        !self.terms.is_empty() && {
            let lower = text.to_lowercase();
            self.terms.iter().any(|t| lower.contains(t.as_str()))
        }
    }

    /// Reads the request of the next older message: its item (without a
    /// score) when it has one not repeated by a newer request.
    fn read_request(&mut self) -> Option<Item> {
        self.next_request -= 1;
        let i = self.next_request;
        if self.src.role(i) != Role::User {
            return None;
        }
        let m = self.src.get(i);
        if !is_real_user(&m) {
            return None;
        }
        let text = request_item(&m.content, m.created_at)?;
        if !self.request_texts.insert(text.clone()) {
            return None;
        }
        self.has_request[i] = true;
        Some(Item::new(
            Section::Requests,
            Kind::Request,
            text,
            self.base(i) + 1,
        ))
    }

    /// Reads the facts of the next older message (its request must have
    /// been read); returns its new items (without scores) and the number
    /// of item slots the message used, its request included.
    fn read_facts(&mut self) -> (Vec<Item>, usize) {
        self.next_fact -= 1;
        let i = self.next_fact;
        let m = self.src.get(i);
        let content = redact(&m.content);
        self.scratch.clear();
        fact_candidates(&m, &content, &mut self.scratch);
        let base = self.base(i);
        let mut local = usize::from(self.has_request[i]);
        let mut items = Vec::new();
        for (section, kind, text) in self.scratch.drain(..) {
            if text.is_empty() || self.fact_texts.contains(&text) {
                continue;
            }
            self.fact_texts.insert(text.clone());
            local += 1;
            items.push(Item::new(section, kind, text, base + local.min(ORDER_STEP - 1)));
        }
        (items, local)
    }

    /// Reads whatever must be read before the facts of the next message:
    /// requests down to it. Returns the request items read.
    fn requests_down_to_next_fact(&mut self) -> Vec<Item> {
        let mut items = Vec::new();
        while self.next_request >= self.next_fact && self.next_request > 0 {
            items.extend(self.read_request());
        }
        items
    }

    /// What unread items can score: the requests' bound, and the bounds
    /// of the other facts (messages not read for facts; among them the
    /// newest that may mention the topic; the earlier summary's items).
    fn bounds(&self, max_order: f64, previous_left: bool) -> Bounds {
        let topic = !self.terms.is_empty();
        let bound = |kind_base: f64, next: usize, topical: bool| {
            let above = self.base(next);
            (score(kind_base, above - 1, max_order, topical), above)
        };
        let mut facts = Vec::new();
        if self.next_fact > 0 {
            match &self.topical_before {
                None => facts.push(bound(FACT_BASE, self.next_fact, topic)),
                Some(before) => {
                    facts.push(bound(FACT_BASE, self.next_fact, false));
                    if let Some(j) = before[self.next_fact] {
                        facts.push(bound(FACT_BASE, j + 1, true));
                    }
                }
            }
        }
        if previous_left && self.offset > 0 {
            facts.push((self.previous_best, self.offset));
        }
        Bounds {
            requests: (self.next_request > 0).then(|| bound(Kind::Request.base(), self.next_request, topic)),
            facts,
        }
    }
}

/// What unread items can score (see [`Reader::bounds`]).
struct Bounds {
    requests: Option<Bound>,
    facts: Vec<Bound>,
}

impl Bounds {
    /// Whether `item` ranks before everything unread.
    fn settled(&self, item: &Item) -> bool {
        beats(item, self.requests) && self.facts.iter().all(|b| beats(item, Some(*b)))
    }

    /// Whether the best unread item may be a request (when nothing known
    /// is left to compare with).
    fn requests_first(&self) -> bool {
        self.requests
            .is_some_and(|(r, _)| self.facts.iter().all(|(f, _)| r >= *f))
    }

    fn nothing_left(&self) -> bool {
        self.requests.is_none() && self.facts.is_empty()
    }
}

/// Whether `item` ranks before every item a `bound` allows.
fn beats(item: &Item, bound: Option<Bound>) -> bool {
    bound.is_none_or(|(best, above)| item.score > best || (item.score == best && item.order >= above))
}

/// The summary body of `src` under `opts` (see the module doc).
pub(super) fn summarise(src: &dyn Messages<'_>, opts: &Options<'_>) -> Summary {
    let previous = opts.previous.map(previous_items).unwrap_or_default();
    let mut reader = Reader {
        src,
        terms: opts.terms(),
        offset: previous.len(),
        has_request: vec![false; src.len()],
        request_texts: HashSet::new(),
        fact_texts: HashSet::new(),
        next_request: src.len(),
        next_fact: src.len(),
        scratch: Vec::new(),
        topical_before: None,
        previous_best: 0.0,
    };
    if !reader.terms.is_empty() {
        reader.topical_before = may_mention(src, &reader.terms).map(|may| {
            let mut before = Vec::with_capacity(may.len() + 1);
            let mut newest = None;
            before.push(None);
            for (j, m) in may.iter().enumerate() {
                if *m {
                    newest = Some(j);
                }
                before.push(newest);
            }
            before
        });
    }
    // The largest order: the newest message with any item decides it.
    let mut unscored = Vec::new();
    let mut max_order = None;
    while max_order.is_none() && reader.next_fact > 0 {
        unscored.extend(reader.requests_down_to_next_fact());
        let (items, slots) = reader.read_facts();
        unscored.extend(items);
        if slots > 0 {
            max_order = Some(reader.base(reader.next_fact) + slots.min(ORDER_STEP - 1));
        }
    }
    let mut previous = Some(previous);
    if max_order.is_none() {
        // Nothing in any message: the earlier summary's items are all kept.
        let items = previous.take().unwrap_or_default();
        max_order = items.iter().map(|it| it.order).max();
        unscored.extend(items);
    }
    let max_order = max_order.unwrap_or(1).max(1) as f64;
    reader.previous_best = previous.iter().flatten().fold(f64::MIN, |best, it| {
        best.max(score(
            it.kind.base(),
            it.order,
            max_order,
            reader.topical(&it.text),
        ))
    });
    let mut heap = BinaryHeap::new();
    let add = |heap: &mut BinaryHeap<Ranked>, reader: &Reader<'_, '_>, mut it: Item| {
        it.topical = reader.topical(&it.text);
        it.score = score(it.kind.base(), it.order, max_order, it.topical);
        heap.push(Ranked(it));
    };
    for it in unscored {
        add(&mut heap, &reader, it);
    }
    let topic_bonus = !reader.terms.is_empty();
    let mut budget = Budget::new(opts);
    loop {
        let bounds = reader.bounds(max_order, previous.is_some());
        while let Some(Ranked(top)) = heap.peek() {
            if !bounds.settled(top) {
                break;
            }
            if budget.closed() {
                return Summary::of(budget, topic_bonus);
            }
            if let Some(Ranked(it)) = heap.pop() {
                budget.offer(it);
            }
        }
        if budget.closed() || bounds.nothing_left() {
            return Summary::of(budget, topic_bonus);
        }
        // Read what holds the best item unread: a request when the heap's
        // best does not beat the unread requests (or, with nothing known,
        // when they could score at least as much as unread facts).
        let want_request = match heap.peek() {
            Some(Ranked(top)) => !beats(top, bounds.requests),
            None => bounds.requests_first(),
        };
        if want_request {
            if let Some(it) = reader.read_request() {
                add(&mut heap, &reader, it);
            }
        } else if reader.next_fact > 0 {
            for it in reader.requests_down_to_next_fact() {
                add(&mut heap, &reader, it);
            }
            let (items, _) = reader.read_facts();
            for it in items {
                add(&mut heap, &reader, it);
            }
        } else if let Some(items) = previous.take() {
            for it in items {
                if !reader.request_texts.contains(&it.text) && !reader.fact_texts.contains(&it.text) {
                    add(&mut heap, &reader, it);
                }
            }
        }
    }
}

/// An item's line in the summary: code as it is, anything else a bullet.
fn line_of(item: &Item) -> String {
    if item.kind == Kind::Code {
        format!("{}\n", item.text)
    } else {
        format!("- {}\n", item.text)
    }
}

/// An extractive summary body and the token counts of its item lines (each
/// with its `\n`), for [`crate::tokens::count_by_lines`].
#[derive(Clone, Debug)]
pub(crate) struct Summary {
    pub body: String,
    pub line_tokens: HashMap<String, usize>,
}

impl Summary {
    fn of(budget: Budget<'_>, topical_first: bool) -> Self {
        Self {
            body: render(&budget.chosen, topical_first),
            line_tokens: budget.line_tokens,
        }
    }
}

/// The chosen items under their headings, in source order (topical ones
/// first when there is a topic).
fn render(chosen: &[Item], topical_first: bool) -> String {
    let mut out = String::new();
    for section in Section::ALL {
        let mut picked: Vec<&Item> = chosen.iter().filter(|it| it.section == section).collect();
        if picked.is_empty() {
            continue;
        }
        picked.sort_by(|a, b| {
            (topical_first && !a.topical, a.order, &a.text).cmp(&(
                topical_first && !b.topical,
                b.order,
                &b.text,
            ))
        });
        out.push_str(section.heading());
        out.push('\n');
        for it in picked {
            out.push_str(&line_of(it));
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("## Active state\n- (nothing to keep from the condensed messages)\n");
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::Slice;
    use super::*;
    use crate::domain::{Message, SessionId, ToolCall};
    use crate::tokens::{Encoding, TiktokenCounter};
    use proptest::prelude::*;
    use std::borrow::Cow;

    /// The reference: every message read, every item ranked, then the
    /// same greedy choice. The lazy reader must give the same text.
    fn eager(src: &dyn Messages<'_>, opts: &Options<'_>) -> String {
        let terms = opts.terms();
        let previous = opts.previous.map(previous_items).unwrap_or_default();
        let offset = previous.len();
        let mut items = Vec::new();
        let mut request_texts = HashSet::new();
        let mut fact_texts = HashSet::new();
        let mut scratch = Vec::new();
        for i in (0..src.len()).rev() {
            let base = offset + (i + 1) * ORDER_STEP;
            let m = src.get(i);
            let mut local = 0;
            if is_real_user(&m)
                && let Some(text) = request_item(&m.content, m.created_at)
                && request_texts.insert(text.clone())
            {
                local = 1;
                items.push(Item::new(Section::Requests, Kind::Request, text, base + 1));
            }
            scratch.clear();
            fact_candidates(&m, &redact(&m.content), &mut scratch);
            for (section, kind, text) in scratch.drain(..) {
                if text.is_empty() || !fact_texts.insert(text.clone()) {
                    continue;
                }
                local += 1;
                items.push(Item::new(section, kind, text, base + local.min(ORDER_STEP - 1)));
            }
        }
        items.extend(
            previous
                .into_iter()
                .filter(|it| !request_texts.contains(&it.text) && !fact_texts.contains(&it.text)),
        );
        let max_order = items.iter().map(|it| it.order).max().unwrap_or(1).max(1) as f64;
        for it in &mut items {
            it.topical = !terms.is_empty() && {
                let lower = it.text.to_lowercase();
                terms.iter().any(|t| lower.contains(t.as_str()))
            };
            it.score = score(it.kind.base(), it.order, max_order, it.topical);
        }
        items.sort_by(|a, b| Ranked::cmp_rank(b, a));
        let mut budget = Budget::new(opts);
        for it in items {
            if budget.closed() {
                break;
            }
            budget.offer(it);
        }
        render(&budget.chosen, !terms.is_empty())
    }

    fn lazy(src: &dyn Messages<'_>, opts: &Options<'_>) -> String {
        summarise(src, opts).body
    }

    /// Four chars a token, no lower bound: a counter unlike a BPE.
    struct Quarter;

    impl TokenCounter for Quarter {
        fn id(&self) -> &str {
            "quarter"
        }

        fn exact(&self) -> bool {
            false
        }

        fn count(&self, text: &str) -> usize {
            text.len().div_ceil(4)
        }
    }

    /// Lines that make items of every kind, several of them on purpose
    /// repeated across messages.
    const LINES: &[&str] = &[
        "Please fix the parser in src/parser/mod.rs today",
        "Please fix the parser in src/parser/mod.rs today",
        "Now look at the storage layer and its tests",
        "We decided to keep the cache on the stack for now.",
        "I fixed the off-by-one in src/store/page.rs and it works.",
        "error[E0308]: mismatched types in src/lib.rs",
        "$ cargo test -p storage",
        "Run `cargo build --release` before the benchmark please.",
        "The surrounding code is old but it is mostly fine to keep.",
        "```rust\nfn main() {}\n```",
        "Let's go with the smaller buffer. It is enough for the parser.",
        "token = sk-proj-AbCdEf0123456789AbCdEf0123456789xyz",
        "see docs/guide.md and README.md for the storage notes",
        "on 2026-11-29: \"Please fix the parser in src/parser/mod.rs today\"",
        "We decided the \u{212A}ELVIN scale stays; error: café ﬁle missing.",
        "FAILED tests/test_storage.py - TypeError: the OPENAI_KEY=abcdef123 was rejected",
        "",
    ];

    fn message(role: u8, lines: &[usize], call: Option<usize>, at: i64) -> Message {
        let text: Vec<&str> = lines.iter().map(|&i| LINES[i % LINES.len()]).collect();
        let role = match role % 3 {
            0 => Role::User,
            1 => Role::Assistant,
            _ => Role::Tool,
        };
        let mut m = Message::new(SessionId::new(), role, text.join("\n"), at);
        if let (Role::Assistant, Some(c)) = (role, call) {
            let cmd = ["cargo test", "git status", "ls src", "cargo test"][c % 4];
            // Some arguments spell a topic word with a JSON escape.
            let arguments = if c % 3 == 2 {
                r#"{"command":"make \u0070arser \u0053torage"}"#.to_owned()
            } else {
                serde_json::json!({ "command": cmd }).to_string()
            };
            m.tool_calls.push(ToolCall {
                id: format!("c{c}"),
                name: "shell".into(),
                arguments,
            });
        }
        m
    }

    fn history() -> impl Strategy<Value = Vec<Message>> {
        prop::collection::vec(
            (
                0u8..3,
                prop::collection::vec(0usize..LINES.len(), 0..6),
                prop::option::of(0usize..8),
            ),
            0..24,
        )
        .prop_map(|specs| {
            specs
                .into_iter()
                .enumerate()
                .map(|(i, (role, lines, call))| message(role, &lines, call, 1_795_910_400_000 + i as i64))
                .collect()
        })
    }

    const PREVIOUS: &str = "## Completed work\n- I fixed the off-by-one in src/store/page.rs and it works.\n\n## Files and commands\n- `src/parser/mod.rs`\n- `old/path.rs`\n\n## Historical requests\n- on 2026-11-28: \"an older request\"";

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn reading_lazily_chooses_what_reading_everything_chooses(
            messages in history(),
            budget in 0u32..700,
            topic in prop::option::of(prop::sample::select(vec!["parser", "storage", "cache buffer", "zz", "kelvin", "key", "redacted", "error"])),
            previous in any::<bool>(),
            max_chars in prop::option::of(150usize..2_000),
            bpe in any::<bool>(),
        ) {
            let tiktoken = TiktokenCounter::new(Encoding::O200kBase, true);
            let counter: &dyn TokenCounter = if bpe { &tiktoken } else { &Quarter };
            let refs: Vec<&Message> = messages.iter().collect();
            let opts = Options {
                previous: previous.then_some(PREVIOUS),
                topic,
                budget_tokens: budget,
                max_chars,
                counter,
            };
            let src = Slice(&refs);
            prop_assert_eq!(lazy(&src, &opts), eager(&src, &opts));
        }
    }

    #[test]
    fn a_fact_is_kept_at_its_newest_mention() {
        let a = message(1, &[12], None, 1);
        let b = message(1, &[5], None, 2);
        let c = message(1, &[12], None, 3);
        let refs = [&a, &b, &c];
        let opts = Options {
            previous: None,
            topic: None,
            budget_tokens: 2_000,
            max_chars: None,
            counter: &Quarter,
        };
        let out = lazy(&Slice(&refs), &opts);
        assert_eq!(out.matches("`docs/guide.md`").count(), 1, "{out}");
        // In source order (one heading) the repeated path comes after `b`'s.
        let repeated = out.find("`docs/guide.md`");
        let between = out.find("`src/lib.rs`");
        assert!(between.is_some() && between < repeated, "{out}");
    }

    /// Counts the messages read whole.
    struct Counted<'a> {
        messages: &'a [Message],
        reads: std::cell::Cell<usize>,
    }

    impl<'a> Messages<'a> for Counted<'a> {
        fn len(&self) -> usize {
            self.messages.len()
        }

        fn role(&self, i: usize) -> Role {
            self.messages[i].role
        }

        fn get(&self, i: usize) -> Cow<'a, Message> {
            if self.messages[i].role != Role::User {
                self.reads.set(self.reads.get() + 1);
            }
            Cow::Borrowed(&self.messages[i])
        }
    }

    #[test]
    fn a_tight_budget_reads_only_the_newest_messages() {
        let messages: Vec<Message> = (0..400)
            .map(|i| message(u8::from(i % 2 == 1), &[i % 13], None, i64::from(i as u16)))
            .collect();
        let src = Counted {
            messages: &messages,
            reads: std::cell::Cell::new(0),
        };
        let opts = Options {
            previous: None,
            topic: None,
            budget_tokens: 300,
            max_chars: None,
            counter: &Quarter,
        };
        let refs: Vec<&Message> = messages.iter().collect();
        assert_eq!(lazy(&src, &opts), eager(&Slice(&refs), &opts));
        assert!(src.reads.get() < 20, "read {} of 200 replies", src.reads.get());
    }
}
