//! Golden files for the assembled prompt of the fixture home and project
//! (`tests/fixtures/`), for both instruction policies and all three modes,
//! plus the invariants every assembled prompt must keep.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::prompt as support;

use strata::domain::PromptMode;
use strata::prompt::{InstructionPolicy, PromptSettings, RecentSession, ToolFacts, assemble};
use strata::tokens::{Encoding, TiktokenCounter, TokenCounter};
use strata::workspace::{GatherRequest, gather};
use support::Fixture;

fn golden_request(f: &Fixture, policy: InstructionPolicy, mode: PromptMode) -> GatherRequest {
    let mut req = support::request(f, "services/api");
    req.mode = mode;
    req.first_session = true;
    req.settings = PromptSettings {
        instruction_files: policy,
        recent_sessions: 2,
        context_cmd: Some("printf ' M services/api/src/routes/invoice.rs\\n'".to_owned()),
        ..PromptSettings::default()
    };
    req.tools = ToolFacts {
        enabled: true,
        native: true,
        listing: None,
    };
    req.recent = vec![RecentSession {
        title: "Invoice rounding bug".to_owned(),
        started: "Friday, November 27, 2026".to_owned(),
        first_request: "Totals are off by a cent on some invoices; find out why.".to_owned(),
        last_reply: "Fixed: amounts are now summed in minor units before rounding.".to_owned(),
        omitted: 14,
    }];
    req
}

fn golden(policy: InstructionPolicy, mode: PromptMode) {
    let f = support::fixture();
    let inputs = gather(&golden_request(&f, policy, mode));
    let counter = support::counter();
    let real = assemble(&inputs, &counter);
    support::assert_layer_invariants(&real);
    for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
        let counter = TiktokenCounter::new(encoding, true);
        let p = assemble(&inputs, &counter);
        assert_eq!(
            p.total_tokens,
            counter.count(&p.text),
            "layer counts do not add up to the whole text under {}",
            encoding.id()
        );
    }
    let normalized = assemble(&support::normalize(&inputs, &f), &counter);
    assert_eq!(
        support::filter_paths(&real.text, &f),
        normalized.text,
        "normalising paths changed more than the paths"
    );
    support::assert_layer_invariants(&normalized);
    let name = format!("{}_{}", format!("{policy:?}").to_lowercase(), mode.as_str());
    insta::assert_snapshot!(name, support::render(&normalized));
}

#[test]
fn golden_first_full() {
    golden(InstructionPolicy::First, PromptMode::Full);
}

#[test]
fn golden_first_minimal() {
    golden(InstructionPolicy::First, PromptMode::Minimal);
}

#[test]
fn golden_first_none() {
    golden(InstructionPolicy::First, PromptMode::None);
}

#[test]
fn golden_all_full() {
    golden(InstructionPolicy::All, PromptMode::Full);
}

#[test]
fn golden_all_minimal() {
    golden(InstructionPolicy::All, PromptMode::Minimal);
}

#[test]
fn golden_all_none() {
    golden(InstructionPolicy::All, PromptMode::None);
}

#[test]
fn the_same_inputs_give_the_same_bytes() {
    let f = support::fixture();
    let req = golden_request(&f, InstructionPolicy::All, PromptMode::Full);
    let counter = support::counter();
    let first = assemble(&gather(&req), &counter);
    let second = assemble(&gather(&req), &counter);
    assert_eq!(first.text, second.text);
    assert_eq!(first.sha256, second.sha256);
    assert_eq!(first, second);
}

#[test]
fn the_text_has_the_date_but_no_time_of_day() {
    let f = support::fixture();
    for mode in [PromptMode::Full, PromptMode::Minimal, PromptMode::None] {
        let req = golden_request(&f, InstructionPolicy::First, mode);
        let p = assemble(&gather(&req), &support::counter());
        assert!(
            p.text
                .contains("Conversation started: Sunday, November 29, 2026 (Europe/Paris)"),
            "{}",
            p.text
        );
        assert!(!support::has_time_of_day(&p.text), "{}", p.text);
    }
    assert!(support::has_time_of_day("at 9:05 today"));
}

#[test]
fn the_boundary_marker_opens_the_volatile_tier() {
    let f = support::fixture();
    let p = assemble(
        &gather(&golden_request(&f, InstructionPolicy::First, PromptMode::Full)),
        &support::counter(),
    );
    let offset = p.boundary_offset.unwrap();
    let before = &p.text[..offset];
    let after = &p.text[offset..];
    assert!(before.contains("# Project instructions"));
    assert!(!before.contains("Conversation started"));
    assert!(after.contains("# Memory") && after.contains("Conversation started"));
}
