//! What each row and figure of the context pane means: the pane's row
//! labels, in words, and the legend that `?` (on an empty composer) and
//! help show. The JSON names (`strata context --json`) are given beside
//! each label, so the pane and the machine-readable report can be matched.

use super::theme;
use ratatui::text::Line;

/// The pane's label of each budget category, in display order, with the
/// category's name in `strata context --json`.
pub const CATEGORIES: [(&str, &str); 7] = [
    ("system", "stable"),
    ("workspace", "context"),
    ("session", "volatile"),
    ("tools", "tools"),
    ("messages", "history"),
    ("reply", "reserved_output"),
    ("free", "free"),
];

/// The legend: each figure of the pane and what it means.
const ROWS: &[(&str, &str)] = &[
    (
        "input N / W",
        "the next request's input tokens over the model's context window, then the tokenizer that counts them; `~` marks an estimate (strata's tokenizer, not the provider's); (server), (config) or (overflow error) say where the window comes from when it is not strata's model table",
    ),
    (
        "system",
        "the fixed part of the system prompt: safety rules, identity, guidelines, skills, environment (`stable`)",
    ),
    (
        "workspace",
        "the workspace's root and its instruction files, AGENTS.md, CLAUDE.md and the like (`context`)",
    ),
    (
        "cache boundary",
        "everything above it is sent identically in every request of the session, so the provider can read it from its prompt cache",
    ),
    (
        "session",
        "memory, the date and what the session started with, frozen when it started (`volatile`)",
    ),
    (
        "tools",
        "the tool schemas offered to the model, by server; `d` or deferred: found through tool_search instead of sent",
    ),
    (
        "messages",
        "the conversation's messages as this request sends them; F3 shows them by role, and the framing every request spends on roles and reply priming (`history`)",
    ),
    (
        "reply",
        "kept free for the model's reply: max_tokens (`reserved_output`)",
    ),
    ("free", "what is left of the window"),
    (
        "threshold",
        "when the next request, with every message in it, reaches this many tokens, strata summarises older messages first; given as a share of the usable window (the window minus the reply); asked: what the config asks when the value in force differs (raised to the 64k floor, held at 85 % of the usable window when the floor or the asked value would reach it, or lowered to threshold_tokens)",
    ),
    (
        "next request",
        "the input tokens of the request as it will be sent, after the pipeline has cut and left out what does not fit",
    ),
    (
        "before fitting",
        "shown when the pipeline cut or left something out: the request with every message (oversized ones cut), which is what the threshold is compared with",
    ),
    (
        "stored",
        "the whole stored history as one request, with the system prompt",
    ),
    (
        "cached C of P",
        "of the last request's P prompt tokens, C were read from the provider's cache; predicted: what strata expected",
    ),
    (
        "⚠ auto-compress",
        "the next request nears the threshold: the tokens left and, at this pace, the turns left before older messages are summarised",
    ),
    (
        "⚠ warnings",
        "something the prompt or the tools left out or could not do: an instruction file refused or left out, a shell that is not sandboxed, the cached prefix broken (where and why)",
    ),
    (
        "compression blocked",
        "why older messages are not summarised on their own (off in the config, paused, or stopped after compressions that saved too little) and how to resume it",
    ),
    (
        "the chart",
        "prompt · cached · threshold · N req: each request of the session, its prompt tokens and what was read from the cache, under the threshold line",
    ),
    (
        "compacted",
        "the last summary of older messages: auto, manual or after an overflow, tokens before → after",
    ),
    (
        "stale",
        "instruction files changed on disk since the prompt was frozen; /reload or /new applies them",
    ),
];

/// The legend's heading.
#[must_use]
pub fn heading() -> Line<'static> {
    Line::styled("The context pane (? on an empty composer)", theme::title())
}

/// The legend's text: one line per row or figure, `name — meaning`, for
/// a pager to wrap.
#[must_use]
pub fn text() -> String {
    ROWS.iter()
        .map(|(row, meaning)| format!("{row} — {meaning}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_label_is_explained() {
        let text = text();
        for (label, json) in CATEGORIES {
            let row = text
                .lines()
                .find(|l| l.starts_with(&format!("{label} — ")))
                .unwrap_or_else(|| panic!("{label} has no row in {text:?}"));
            assert!(
                label == json || row.contains(&format!("(`{json}`)")),
                "{row} names {json}"
            );
        }
    }
}
