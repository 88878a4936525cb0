//! Tests of [`Budget::compute`].

use super::*;
use crate::domain::{LayerName, SessionId, SourceInfo, SourceStatus};

fn layer(name: LayerName, start: usize, end: usize, tokens: usize) -> LayerInfo {
    LayerInfo {
        name,
        tier: name.tier(),
        start,
        end,
        chars: end - start,
        tokens,
        sources: Vec::new(),
    }
}

fn source(path: &str, kept_chars: u64) -> SourceInfo {
    SourceInfo {
        path: path.to_owned(),
        status: SourceStatus::Found,
        original_chars: kept_chars,
        kept_chars,
    }
}

/// safety 100, identity 50 | workspace 20, project 400 (two files) |
/// cache_boundary 10, session 30. The boundary marker starts at byte 2,000.
fn layers() -> Vec<LayerInfo> {
    let mut project = layer(LayerName::Project, 800, 2_000, 400);
    project.sources = vec![
        source("/repo/AGENTS.md", 900),
        source("/repo/sub/AGENTS.md", 300),
        source("/repo/CLAUDE.md", 0),
    ];
    let mut safety = layer(LayerName::Safety, 0, 400, 100);
    safety.sources = vec![source("builtin:safety.md", 400)];
    vec![
        safety,
        layer(LayerName::Identity, 400, 600, 50),
        layer(LayerName::Workspace, 600, 800, 20),
        project,
        layer(LayerName::CacheBoundary, 2_000, 2_040, 10),
        layer(LayerName::Session, 2_040, 2_160, 30),
    ]
}

fn message(role: Role, kind: MessageKind) -> Message {
    let mut m = Message::new(SessionId::new(), role, "x", 0);
    m.kind = kind;
    m
}

fn history() -> (Vec<Message>, Vec<u32>) {
    let msgs = vec![
        message(Role::System, MessageKind::Normal),
        message(Role::User, MessageKind::Summary),
        message(Role::User, MessageKind::Normal),
        message(Role::Assistant, MessageKind::Normal),
        message(Role::Tool, MessageKind::Normal),
        message(Role::User, MessageKind::Normal),
        message(Role::Assistant, MessageKind::Synthetic),
    ];
    (msgs, vec![40, 300, 10, 20, 500, 15, 5])
}

fn tools() -> Vec<BudgetItem> {
    vec![
        BudgetItem {
            name: "read_file".into(),
            tokens: 70,
        },
        BudgetItem {
            name: "shell".into(),
            tokens: 30,
        },
    ]
}

fn input<'a>(
    layers: &'a [LayerInfo],
    msgs: &'a [Message],
    counts: &'a [u32],
    tools: &'a [BudgetItem],
    window: u64,
) -> BudgetInput<'a> {
    BudgetInput {
        layers,
        boundary_offset: Some(2_000),
        history: msgs,
        history_tokens: counts,
        tools,
        window,
        reserved_output: 2_000,
        threshold: ThresholdSettings::default(),
        tokenizer: "o200k_base",
        exact: true,
    }
}

fn item(category: &Category, name: &str) -> Option<u64> {
    category.items.iter().find(|i| i.name == name).map(|i| i.tokens)
}

fn total(c: &Categories) -> u64 {
    [
        &c.stable,
        &c.context,
        &c.volatile,
        &c.tools,
        &c.history,
        &c.reserved_output,
        &c.free,
    ]
    .iter()
    .map(|c| c.tokens)
    .sum()
}

#[test]
fn categories_add_up_to_the_window() {
    let (layers, (msgs, counts), tools) = (layers(), history(), tools());
    let b = Budget::compute(input(&layers, &msgs, &counts, &tools, 10_000));
    let c = &b.categories;
    assert_eq!(c.stable.tokens, 150);
    assert_eq!(c.context.tokens, 420);
    assert_eq!(c.volatile.tokens, 40);
    assert_eq!(c.tools.tokens, 100);
    assert_eq!(c.history.tokens, 890 + 7);
    assert_eq!(c.reserved_output.tokens, 2_000);
    assert_eq!(c.free.tokens, 10_000 - 150 - 420 - 40 - 100 - 897 - 2_000);
    assert_eq!(total(c), b.window);
    assert_eq!(b.input_tokens(), 150 + 420 + 40 + 100 + 897);
    assert_eq!(b.overflow(), 0);
}

#[test]
fn free_saturates_at_zero_when_the_request_overflows() {
    let (layers, (msgs, counts), tools) = (layers(), history(), tools());
    let b = Budget::compute(input(&layers, &msgs, &counts, &tools, 3_000));
    assert_eq!(b.categories.free.tokens, 0);
    assert!(total(&b.categories) > b.window);
    assert_eq!(b.overflow(), 1_607 + 2_000 - 3_000);
    assert!(b.over_threshold());
}

#[test]
fn history_is_split_by_role_with_summaries_system_and_overhead() {
    let (layers, (msgs, counts), tools) = (layers(), history(), tools());
    let h = Budget::compute(input(&layers, &msgs, &counts, &tools, 10_000))
        .categories
        .history;
    let names: Vec<&str> = h.items.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        ["user", "assistant", "tool", "summary", "system", "overhead"]
    );
    let tokens: Vec<u64> = h.items.iter().map(|i| i.tokens).collect();
    assert_eq!(tokens, [25, 25, 500, 300, 40, 7]);
    assert_eq!(h.tokens, tokens.iter().sum::<u64>());
}

#[test]
fn prompt_tiers_list_layers_then_their_files() {
    let (layers, (msgs, counts), tools) = (layers(), history(), tools());
    let b = Budget::compute(input(&layers, &msgs, &counts, &tools, 10_000));
    let names: Vec<&str> = b
        .categories
        .context
        .items
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "workspace",
            "project",
            "project: /repo/AGENTS.md",
            "project: /repo/sub/AGENTS.md"
        ]
    );
    // 400 tokens apportioned by 900 and 300 of the layer's 1,200 chars.
    assert_eq!(item(&b.categories.context, "project: /repo/AGENTS.md"), Some(300));
    assert_eq!(
        item(&b.categories.context, "project: /repo/sub/AGENTS.md"),
        Some(100)
    );
    // Built-in sources get no row of their own.
    let stable: Vec<&str> = b
        .categories
        .stable
        .items
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(stable, ["safety", "identity"]);
    assert_eq!(item(&b.categories.volatile, "cache_boundary"), Some(10));
}

#[test]
fn boundary_tokens_are_the_stable_and_context_layers() {
    let (layers, (msgs, counts), tools) = (layers(), history(), tools());
    let mut i = input(&layers, &msgs, &counts, &tools, 10_000);
    assert_eq!(Budget::compute(i).boundary_tokens, 570);
    i.boundary_offset = None;
    assert_eq!(Budget::compute(i).boundary_tokens, 570);
}

#[test]
fn empty_session_without_prompt_has_only_reply_priming() {
    let b = Budget::compute(input(&[], &[], &[], &[], 128_000));
    assert_eq!(b.categories.history.tokens, 3);
    assert_eq!(b.boundary_tokens, 0);
    assert_eq!(b.categories.free.tokens, 128_000 - 2_000 - 3);
}

#[test]
fn marks_follow_the_threshold_rule() {
    let b = Budget::compute(input(&[], &[], &[], &[], 128_000));
    assert_eq!(b.effective_window, 126_000);
    assert_eq!(b.threshold.requested, 94_500);
    assert_eq!(b.threshold.effective, 94_500);
}

#[test]
fn json_has_exactly_the_contract_fields() {
    let (layers, (msgs, counts), tools) = (layers(), history(), tools());
    let b = Budget::compute(input(&layers, &msgs, &counts, &tools, 10_000));
    let json = serde_json::to_value(&b).unwrap();
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let mut top = keys(&json);
    top.sort();
    assert_eq!(
        top,
        [
            "boundary_tokens",
            "categories",
            "effective_window",
            "exact",
            "reserved_output",
            "threshold",
            "tokenizer",
            "window",
            "window_source"
        ]
    );
    let mut cats = keys(&json["categories"]);
    cats.sort();
    assert_eq!(
        cats,
        [
            "context",
            "free",
            "history",
            "reserved_output",
            "stable",
            "tools",
            "volatile"
        ]
    );
    let mut threshold = keys(&json["threshold"]);
    threshold.sort();
    assert_eq!(threshold, ["effective", "requested"]);
    assert_eq!(
        json["categories"]["reserved_output"],
        serde_json::json!({"tokens": 2000, "items": [{"name": "max_tokens", "tokens": 2000}]})
    );
    assert_eq!(json["tokenizer"], "o200k_base");
    let back: Budget = serde_json::from_value(json).unwrap();
    assert_eq!(back.categories, b.categories);
}
