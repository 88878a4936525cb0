//! The listing of deferred tools that `tool_search`'s description carries,
//! so the model knows what exists without searching first.
//!
//! It fits [`listing_budget`]: min(2,000 tokens, 5 % of the window), under
//! the session's counter. The tools keep the order they were given in. As
//! the budget shrinks, descriptions go first (from the last tool back),
//! then names (from the last tool back), and the listing ends by saying how
//! many tools it left out; with no room for any name it is only that
//! sentence. The same tools, budget and counter give the same text.

use crate::tokens::TokenCounter;
use crate::tooling::schema::ToolSpec;

/// The most tokens the listing takes, whatever the window.
pub const LISTING_MAX_TOKENS: u64 = 2_000;
/// The listing's share of the window, in percent.
pub const LISTING_PERCENT: u64 = 5;
/// The longest one-line description in the listing, in characters.
pub const DESCRIPTION_CHARS: usize = 100;

const HEADER: &str = "Deferred tools:\n";

/// A listing and what it holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The text appended to `tool_search`'s description (empty when no
    /// tool is deferred).
    pub text: String,
    /// Tools listed with a one-line description (the first ones).
    pub described: usize,
    /// Tools listed by name only (after the described ones).
    pub named: usize,
    /// Tools not listed (the last ones).
    pub left_out: usize,
    /// Tokens of [`text`](Self::text) under the counter it was fitted with.
    pub tokens: u64,
}

/// The listing's budget for a window of `window` tokens:
/// min([`LISTING_MAX_TOKENS`], `window` × [`LISTING_PERCENT`] %).
#[must_use]
pub fn listing_budget(window: u64) -> u64 {
    LISTING_MAX_TOKENS.min(window.saturating_mul(LISTING_PERCENT) / 100)
}

/// The first non-blank line of `description` with runs of whitespace made
/// one space, cut to [`DESCRIPTION_CHARS`] characters with `…`.
#[must_use]
pub fn one_line(description: &str) -> String {
    let line = description
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= DESCRIPTION_CHARS {
        return line;
    }
    let cut: String = line.chars().take(DESCRIPTION_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

fn named_line(spec: &ToolSpec) -> String {
    format!("- {}\n", spec.name)
}

fn described_line(spec: &ToolSpec) -> String {
    let line = one_line(&spec.description);
    if line.is_empty() {
        return named_line(spec);
    }
    format!("- {}: {line}\n", spec.name)
}

fn tail(left_out: usize, listed: usize) -> String {
    match (left_out, listed) {
        (0, _) => String::new(),
        (1, 0) => "1 deferred tool is not listed here; tool_search finds it.".to_owned(),
        (k, 0) => format!("{k} deferred tools are not listed here; tool_search finds them."),
        (k, _) => format!("…and {k} more; tool_search finds them."),
    }
}

fn render(tools: &[ToolSpec], described: usize, listed: usize) -> String {
    let mut text = String::new();
    if listed > 0 {
        text.push_str(HEADER);
        for (i, spec) in tools[..listed].iter().enumerate() {
            text.push_str(&if i < described {
                described_line(spec)
            } else {
                named_line(spec)
            });
        }
    }
    text.push_str(&tail(tools.len() - listed, listed));
    text.trim_end().to_owned()
}

fn count(counter: &dyn TokenCounter, text: &str) -> u64 {
    counter.count(text) as u64
}

/// The listing of `tools` within `budget` tokens under `counter` (see the
/// module doc). Pieces are counted one by one to choose what fits, then
/// the whole text once; if that count is over (a counter whose counts do
/// not add up), tools are dropped from the end until it fits. With no tool
/// listed, the text is the sentence saying how many were left out, even
/// over the budget.
#[must_use]
pub fn listing(tools: &[ToolSpec], budget: u64, counter: &dyn TokenCounter) -> Listing {
    let n = tools.len();
    if n == 0 {
        return Listing::default();
    }
    let header = count(counter, HEADER);
    let names: Vec<u64> = tools.iter().map(|s| count(counter, &named_line(s))).collect();
    let mut total = header;
    let mut listed = 0;
    while listed < n {
        let after = total + names[listed] + count(counter, &tail(n - listed - 1, listed + 1));
        if after > budget {
            break;
        }
        total += names[listed];
        listed += 1;
    }
    let mut described = 0;
    if listed == n {
        while described < n {
            let line = count(counter, &described_line(&tools[described]));
            let after = total - names[described] + line;
            if after > budget {
                break;
            }
            total = after;
            described += 1;
        }
    }
    loop {
        let text = render(tools, described, listed);
        let tokens = count(counter, &text);
        if tokens <= budget || listed == 0 {
            return Listing {
                text,
                described,
                named: listed - described,
                left_out: n - listed,
                tokens,
            };
        }
        if described > 0 {
            described -= 1;
        } else {
            listed -= 1;
        }
    }
}
