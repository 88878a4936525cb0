//! Quality of the extractive summariser on generated histories with planted
//! facts (file paths, shell commands, error lines, user requests,
//! decisions): retention with a generous budget, recency and topic first
//! with a small one, verbatim quotes, determinism.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::compress as compress_support;

use compress_support::{Builder, QuarterCounter};
use strata::compress::{ExtractiveInput, extractive_summary};
use strata::domain::Message;
use strata::tokens::TokenCounter;

/// A history of `n` turns, each planting a request, a path, a command, an
/// error line and a decision, among filler sentences; every third turn is
/// about the parser. Returns the messages and the planted facts.
fn planted(n: usize) -> (Vec<Message>, Vec<String>) {
    let mut b = Builder::new();
    let mut facts = Vec::new();
    for i in 0..n {
        let area = if i % 3 == 0 { "parser" } else { "storage" };
        let request = format!("Please make the {area} handle case {i} without panicking");
        let path = format!("src/{area}/case_{i}.rs");
        let command = format!("cargo test -p {area} case_{i}");
        let error = format!("error[E{:04}]: mismatched types in case_{i}", 300 + i);
        let decision = format!("We decided to keep the {area} buffer {i} on the stack.");
        b.user(&request);
        b.assistant(format!(
            "I will look at {path} first. The surrounding code is old and mostly fine, and the module \
             has many helpers that are not relevant to this change at all. {decision} \
             Some more background that is not important for later."
        ));
        b.tool(
            "shell",
            &serde_json::json!({"command": command}).to_string(),
            format!("compiling\n{error}\n"),
        );
        b.assistant(format!(
            "The build failed as expected and the rest of the output was noise about warnings in \
             unrelated files that nobody needs to remember, number {i}."
        ));
        facts.extend([format!("\"{request}\""), path, command, error, decision]);
    }
    (b.build(), facts)
}

fn summarise(messages: &[Message], topic: Option<&str>, budget: u32) -> String {
    let refs: Vec<&Message> = messages.iter().collect();
    extractive_summary(&ExtractiveInput {
        messages: &refs,
        previous: None,
        topic,
        budget_tokens: budget,
        max_chars: None,
        counter: &QuarterCounter,
    })
}

fn facts_tokens(facts: &[String]) -> u32 {
    facts.iter().map(|f| QuarterCounter.count(f) as u32).sum()
}

#[test]
fn generous_budget_keeps_at_least_95_percent_of_planted_facts() {
    let (messages, facts) = planted(30);
    let budget = 2 * facts_tokens(&facts);
    let out = summarise(&messages, None, budget);
    let kept = facts.iter().filter(|f| out.contains(f.as_str())).count();
    assert!(
        kept * 100 >= facts.len() * 95,
        "kept {kept} of {}:\n{out}",
        facts.len()
    );
    assert!(QuarterCounter.count(&out) as u32 <= budget + 50);
}

#[test]
fn small_budget_keeps_recent_facts_first() {
    let (messages, facts) = planted(30);
    let out = summarise(&messages, None, facts_tokens(&facts) / 3);
    let kept = |range: std::ops::Range<usize>| {
        facts[range.start * 5..range.end * 5]
            .iter()
            .filter(|f| out.contains(f.as_str()))
            .count()
    };
    let (old, recent) = (kept(0..10), kept(20..30));
    assert!(recent > old, "recent {recent} vs old {old}");
}

#[test]
fn topic_facts_are_kept_first_and_listed_first() {
    let (messages, facts) = planted(30);
    let out = summarise(&messages, Some("parser"), facts_tokens(&facts) / 3);
    let parser_kept = facts
        .iter()
        .filter(|f| f.contains("parser") && out.contains(f.as_str()))
        .count();
    let parser_total = facts.iter().filter(|f| f.contains("parser")).count();
    assert!(
        parser_kept * 10 >= parser_total * 9,
        "{parser_kept}/{parser_total}:\n{out}"
    );
    for section in out.split("## ").skip(1) {
        let lines: Vec<&str> = section.lines().skip(1).filter(|l| l.starts_with("- ")).collect();
        let first_other = lines
            .iter()
            .position(|l| !l.contains("parser"))
            .unwrap_or(lines.len());
        assert!(
            lines[first_other..].iter().all(|l| !l.contains("parser")),
            "topic first in:\n{section}"
        );
    }
}

#[test]
fn quoted_requests_are_verbatim_and_output_is_deterministic() {
    let (messages, _) = planted(12);
    let out = summarise(&messages, Some("storage"), 5_000);
    let sources: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    let quotes: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("- on "))
        .filter_map(|l| {
            l.split_once(": \"")
                .map(|(_, q)| q.trim_end_matches("\" (continues)").trim_end_matches('"'))
        })
        .collect();
    assert_eq!(quotes.len(), 12);
    for q in quotes {
        assert!(sources.iter().any(|s| s.contains(q)), "not in the source: {q}");
    }
    assert_eq!(out, summarise(&messages, Some("storage"), 5_000));
    assert!(out.contains("on 2026-11-29"));
}

/// A history whose summary mixes every kind of line: indented code, lines
/// starting with `/`, Unicode, trailing spaces, punctuation at line ends.
fn varied(n: usize) -> Vec<Message> {
    let mut b = Builder::new();
    for i in 0..n {
        b.user(format!(
            "Fix /etc/app_{i}.conf — «ñandú» ☕ then run it; ok?\n  ```sh\n  make -j{i}   \n  ```\n/tmp/x_{i}.log"
        ));
        b.assistant(format!(
            "We decided to ship variant {i}. I fixed src/m_{i}.rs!  \n```rust\nfn f_{i}() {{}}\n```   \n"
        ));
        b.tool(
            "shell",
            &serde_json::json!({"command": format!("cargo test t_{i}")}).to_string(),
            format!("error: case {i} failed\n/usr/lib/x_{i}.so\n"),
        );
        b.assistant(format!(
            "Done with case {i}, 日本語 and émoji 😀 included in this sentence."
        ));
    }
    b.build()
}

/// `history` and then `more`, in `history`'s session, numbered after it
/// (call ids made distinct from `history`'s).
fn followed_by(history: &[Message], more: Vec<Message>) -> Vec<Message> {
    let last = history.last().map_or(0, |m| m.seq);
    let renamed = |id: &str| format!("later_{id}");
    let mut all = history.to_vec();
    all.extend(more.into_iter().map(|mut m| {
        m.session_id = history[0].session_id;
        m.seq += last;
        for call in &mut m.tool_calls {
            call.id = renamed(&call.id);
        }
        m.tool_call_id = m.tool_call_id.as_deref().map(renamed);
        m
    }));
    all
}

#[test]
fn the_summary_token_count_is_exact() {
    use strata::compress::{CompressionInput, Trigger, tokens_of};
    use strata::tokens::{Encoding, TiktokenCounter, message_tokens};

    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let counter = TiktokenCounter::new(encoding, true);
        for (history, topic) in [
            (planted(40).0, None),
            (planted(40).0, Some("parser")),
            (varied(40), None),
            (varied(40), Some("variant")),
        ] {
            let mut engine = compress_support::engine(16_000, 2_000, 0.5);
            let input = CompressionInput {
                messages: &history,
                fixed_tokens: 100,
                counter: &counter,
                topic,
                sent_tokens: None,
                sent_dropped: None,
            };
            let plan = engine.compress_extractive(Trigger::Manual, &input, 0).unwrap();
            assert_eq!(
                plan.summary_tokens,
                u64::from(message_tokens(&counter, &plan.summary)),
                "{encoding:?}:\n{}",
                plan.summary.content
            );
            let total: u64 = plan
                .messages
                .iter()
                .map(|m| u64::from(tokens_of(&counter, m)))
                .sum();
            assert_eq!(plan.tokens_after, 100 + total);
            // A second compression, after 40 more turns, updates the first
            // summary and counts it exactly too.
            let next = followed_by(&plan.messages, varied(40));
            let input = CompressionInput {
                messages: &next,
                fixed_tokens: 100,
                counter: &counter,
                topic,
                sent_tokens: None,
                sent_dropped: None,
            };
            let again = engine.compress_extractive(Trigger::Manual, &input, 0).unwrap();
            assert!(again.archived.contains(&plan.summary.id), "{encoding:?}");
            assert_eq!(
                again.summary_tokens,
                u64::from(message_tokens(&counter, &again.summary)),
                "{encoding:?}:\n{}",
                again.summary.content
            );
        }
    }
}

#[test]
fn error_lines_of_long_tool_outputs_survive_compression() {
    use strata::compress::{CompressionInput, Trigger};

    let errors = [
        "FAILED tests/test_api.py::test_login - AssertionError: 401 != 200",
        "E       AssertionError: expected 3 got 4",
        "ModuleNotFoundError: No module named 'yaml'",
        "TypeError: cannot read properties of undefined (reading 'id')",
        "Exception in thread \"main\" java.lang.NullPointerException",
        "Segmentation fault (core dumped)",
        "bash: fooctl: command not found",
        "npm ERR! code ERESOLVE",
        "make: *** [Makefile:12: all] Error 2",
        "git@github.com: Permission denied (publickey).",
        "cat: notes.txt: No such file or directory",
        "thread 'main' panicked at src/main.rs:4:5",
        "error[E0425]: cannot find value `x` in this scope",
        "fatal: not a git repository",
        "ValueError: invalid literal for int() with base 10: 'x'",
    ];
    let mut b = Builder::new();
    for (i, error) in errors.iter().enumerate() {
        b.user(format!("Please run step {i} of the build"));
        let noise: String = (0..80).map(|l| format!("step {i} line {l}: ok\n")).collect();
        b.tool(
            "shell",
            &serde_json::json!({"command": format!("./run step{i}")}).to_string(),
            format!("{noise}{error}\n"),
        );
        b.assistant(format!("Step {i} ran; I will look at the output next."));
    }
    // Enough later turns to fill the protected tail, so every step above
    // but the head's first is summarised.
    for i in 0..30 {
        b.user(format!("Now something else, part {i}"));
        b.assistant(compress_support::tokens(700));
    }
    let history = b.build();
    let mut engine = compress_support::engine(128_000, 2_000, 0.75);
    let input = CompressionInput {
        messages: &history,
        fixed_tokens: 100,
        counter: &QuarterCounter,
        topic: None,
        sent_tokens: None,
        sent_dropped: None,
    };
    let plan = engine.compress_extractive(Trigger::Manual, &input, 0).unwrap();
    let summary = &plan.summary.content;
    for error in &errors[1..] {
        assert!(summary.contains(error), "lost {error:?}:\n{summary}");
    }
}

#[test]
fn a_second_compression_keeps_the_first_summary_when_there_is_room() {
    use strata::compress::{CompressionInput, Trigger, split_summary};

    let (mut history, _) = planted(120);
    let mut b = Builder::new();
    let mut engine = compress_support::engine(200_000, 4_000, 0.75);
    let compress = |engine: &mut strata::compress::DefaultEngine, messages: &[Message]| {
        let input = CompressionInput {
            messages,
            fixed_tokens: 100,
            counter: &QuarterCounter,
            topic: None,
            sent_tokens: None,
            sent_dropped: None,
        };
        engine.compress_extractive(Trigger::Manual, &input, 0).unwrap()
    };
    let first = compress(&mut engine, &history);
    let body = |plan: &strata::compress::CompressionPlan| split_summary(&plan.summary.content).0.to_owned();
    let first_body = body(&first);
    history = first.messages.clone();
    for i in 0..8 {
        b.user(format!("Follow-up question {i} about the release notes"));
        b.assistant(format!(
            "Answer {i}: the release notes are in docs/release_{i}.md now."
        ));
    }
    history.extend(b.build());
    let second = compress(&mut engine, &history);
    let second_body = body(&second);
    let requests: Vec<&str> = first_body.lines().filter(|l| l.starts_with("- on ")).collect();
    let kept = requests.iter().filter(|r| second_body.contains(*r)).count();
    assert!(requests.len() > 20, "{first_body}");
    assert!(
        kept * 10 >= requests.len() * 9,
        "kept {kept} of {}:\n{second_body}",
        requests.len()
    );
    assert!(QuarterCounter.count(&second_body) * 10 >= QuarterCounter.count(&first_body) * 9);
}
