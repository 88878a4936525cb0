use super::*;
use crate::domain::{
    BlockKind, BreakAt, BreakReason, CacheRule, ChatRequest, Fingerprint, LayerInfo, LayerName, Message,
    MessageKind, PrefixSnapshot, PromptId, PromptMode, RequestMessage, RequestSystem, Role, SessionId,
    SystemPrompt,
};
use crate::pipeline::{Action, ReportEntry};

const STABLE: &str = "You are strata's assistant.\n\n";
const PROJECT: &str = "AGENTS.md: run the tests.\n\n";
const VOLATILE: &str = "Date: 2026-12-01\n";

fn prompt(project: &str) -> SystemPrompt {
    let text = format!("{STABLE}{project}{VOLATILE}");
    let layer = |name, start: usize, end: usize, tokens| LayerInfo {
        name,
        tier: LayerName::tier(name),
        start,
        end,
        chars: end - start,
        tokens,
        sources: Vec::new(),
    };
    let a = STABLE.len();
    let b = a + project.len();
    SystemPrompt {
        id: PromptId::new(),
        session_id: SessionId::new(),
        version: 1,
        layers: vec![
            layer(LayerName::Identity, 0, a, 400),
            layer(LayerName::Project, a, b, 300),
            layer(LayerName::Session, b, text.len(), 20),
        ],
        boundary_offset: Some(b),
        text,
        sha256: String::new(),
        fingerprint: Fingerprint {
            provider: crate::domain::ProviderKind::OpenAi,
            model: "m".into(),
            mode: PromptMode::Full,
            tool_set_hash: String::new(),
            template_version: 1,
        },
        created_at: 0,
    }
}

/// A history of `n` alternating user/assistant messages, each 100 tokens.
fn history(n: usize) -> Vec<Message> {
    let session = SessionId::new();
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            let mut m = Message::new(session, role, format!("message {i}"), i as i64);
            m.seq = i as i64 + 1;
            m
        })
        .collect()
}

/// The snapshot of sending `messages` minus those in `left_out`.
fn send(
    p: &SystemPrompt,
    messages: &[Message],
    left_out: &[(usize, Action)],
    tools: &[serde_json::Value],
    at_ms: i64,
    rule: CacheRule,
    hashes: &mut BlockHashes,
) -> (PrefixSnapshot, Vec<ReportEntry>) {
    let mut report = Vec::new();
    let mut out = Vec::new();
    let mut sources = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let action = left_out
            .iter()
            .find(|(k, _)| *k == i)
            .map_or(Action::Kept, |(_, a)| *a);
        let sent = action == Action::Kept;
        report.push(ReportEntry {
            message_id: m.id,
            action,
            tokens_before: 100,
            tokens_after: if sent { 100 } else { 0 },
        });
        if sent {
            out.push(RequestMessage {
                role: m.role,
                content: m.content.clone(),
                tool_calls: Vec::new(),
                tool_call_id: None,
            });
            sources.push(i..i + 1);
        }
    }
    let request = ChatRequest {
        model: "m".into(),
        system: RequestSystem {
            text: p.text.clone(),
            boundary_offset: p.boundary_offset,
        },
        messages: out,
        max_tokens: 100,
        tools: tools.to_vec(),
        temperature: None,
    };
    let s = snapshot(
        &SnapshotInput {
            request: &request,
            report: &report,
            sources: &sources,
            messages,
            prompt: p,
            tool_tokens: 50,
            system_tokens: 720,
            rule,
            now_ms: at_ms,
        },
        hashes,
    );
    (s, report)
}

fn check(
    rule: CacheRule,
    prev: &PrefixSnapshot,
    cur: &PrefixSnapshot,
    messages: &[Message],
    report: &[ReportEntry],
) -> (Prediction, Option<crate::domain::CacheBreak>) {
    let p = predict(rule, Some(prev), cur, 1.0);
    let b = reason(&p, Some(prev), cur, &Changes { messages, report });
    (p, b)
}

#[test]
fn an_appended_turn_shares_the_whole_previous_request() {
    let p = prompt(PROJECT);
    let h = history(12);
    let mut hashes = BlockHashes::new();
    let (prev, _) = send(&p, &h[..10], &[], &[], 0, CacheRule::OPENAI, &mut hashes);
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (pred, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    assert_eq!(pred.first_change, None);
    assert_eq!(brk, None);
    // 720 prompt tokens + 10 messages of 100 = 1,720 shared; 13 steps of 128.
    assert_eq!(pred.shared_tokens, 1_720);
    assert_eq!(pred.predicted_cached_tokens, 1_664);
    // Each message was hashed once although it went out twice.
    assert_eq!(hashes.len(), 12);
}

#[test]
fn openai_caches_nothing_under_1024_tokens() {
    let p = prompt(PROJECT);
    let h = history(4);
    let mut hashes = BlockHashes::new();
    let (prev, _) = send(&p, &h[..2], &[], &[], 0, CacheRule::OPENAI, &mut hashes);
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (pred, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    assert_eq!(pred.shared_tokens, 920);
    assert_eq!(pred.predicted_cached_tokens, 0);
    assert_eq!(brk, None);
    let (pred, _) = check(CacheRule::SharedPrefix, &prev, &cur, &h, &report);
    assert_eq!(pred.predicted_cached_tokens, 920, "a KV prefix has no minimum");
    // The reply the server generated after the previous request (message
    // 3, an assistant message) is in its KV cache too.
    let (prev, _) = send(&p, &h[..3], &[], &[], 0, CacheRule::SharedPrefix, &mut hashes);
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::SharedPrefix, &mut hashes);
    let (pred, _) = check(CacheRule::SharedPrefix, &prev, &cur, &h, &report);
    assert_eq!((pred.shared_tokens, pred.predicted_cached_tokens), (1_020, 1_120));
}

#[test]
fn a_reloaded_project_layer_breaks_there() {
    let h = history(10);
    let mut hashes = BlockHashes::new();
    let (prev, _) = send(
        &prompt(PROJECT),
        &h[..8],
        &[],
        &[],
        0,
        CacheRule::OPENAI,
        &mut hashes,
    );
    let other = prompt("AGENTS.md: run the tests twice.\n\n");
    let (cur, report) = send(&other, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (pred, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    assert_eq!(pred.shared_tokens, 400, "only the identity layer is shared");
    assert_eq!(pred.predicted_cached_tokens, 0);
    let brk = brk.unwrap();
    assert_eq!(
        brk.at,
        BreakAt::System {
            layer: Some(LayerName::Project)
        }
    );
    assert_eq!(brk.reason, BreakReason::Reload);
}

#[test]
fn an_excluded_message_breaks_at_its_position() {
    let p = prompt(PROJECT);
    let h = history(10);
    let mut hashes = BlockHashes::new();
    let (prev, _) = send(&p, &h[..8], &[], &[], 0, CacheRule::OPENAI, &mut hashes);
    let (cur, report) = send(
        &p,
        &h,
        &[(5, Action::Excluded)],
        &[],
        1,
        CacheRule::OPENAI,
        &mut hashes,
    );
    let (pred, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    assert_eq!(pred.shared_tokens, 720 + 500);
    assert_eq!(pred.predicted_cached_tokens, 1_152);
    let brk = brk.unwrap();
    assert_eq!(
        brk.at,
        BreakAt::Message {
            pos: Some(6),
            message_id: Some(h[5].id)
        },
        "the excluded message is where the prefix broke"
    );
    assert_eq!(brk.reason, BreakReason::Exclusion);
}

#[test]
fn a_changed_tool_set_breaks_at_the_tools() {
    let p = prompt(PROJECT);
    let h = history(4);
    let mut hashes = BlockHashes::new();
    let tools = [serde_json::json!({"type": "function", "function": {"name": "read"}})];
    let (prev, _) = send(&p, &h[..2], &[], &tools, 0, CacheRule::OPENAI, &mut hashes);
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (_, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    let brk = brk.unwrap();
    assert_eq!(
        (brk.at, brk.reason),
        (
            BreakAt::System {
                layer: Some(LayerName::Identity)
            },
            BreakReason::ToolSet
        )
    );
    let more = [
        tools[0].clone(),
        serde_json::json!({"type": "function", "function": {"name": "write"}}),
    ];
    let (prev, _) = send(&p, &h[..2], &[], &tools, 0, CacheRule::OPENAI, &mut hashes);
    let (cur, report) = send(&p, &h, &[], &more, 1, CacheRule::OPENAI, &mut hashes);
    let (pred, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    assert_eq!(pred.shared_tokens, 0);
    assert_eq!(brk.unwrap().at, BreakAt::Tools);
}

#[test]
fn a_summary_replacing_messages_is_a_compaction_and_an_older_message_back_is_an_inclusion() {
    let p = prompt(PROJECT);
    let h = history(10);
    let mut hashes = BlockHashes::new();
    let (prev, _) = send(&p, &h, &[], &[], 0, CacheRule::OPENAI, &mut hashes);
    let mut summary = Message::new(h[0].session_id, Role::User, "summary", 20);
    summary.kind = MessageKind::Summary;
    let after: Vec<Message> = std::iter::once(summary).chain(h[6..].iter().cloned()).collect();
    let (cur, report) = send(&p, &after, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (_, brk) = check(CacheRule::OPENAI, &prev, &cur, &after, &report);
    assert_eq!(brk.unwrap().reason, BreakReason::Compaction);

    let (prev, _) = send(
        &p,
        &h,
        &[(2, Action::Excluded)],
        &[],
        0,
        CacheRule::OPENAI,
        &mut hashes,
    );
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (_, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    let brk = brk.unwrap();
    assert_eq!(brk.reason, BreakReason::Inclusion);
    assert_eq!(
        brk.at,
        BreakAt::Message {
            pos: Some(3),
            message_id: Some(h[2].id)
        }
    );
}

#[test]
fn another_model_shares_nothing() {
    let p = prompt(PROJECT);
    let h = history(20);
    let mut hashes = BlockHashes::new();
    let (mut prev, _) = send(&p, &h[..18], &[], &[], 0, CacheRule::OPENAI, &mut hashes);
    prev.model = "other".into();
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (pred, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    assert_eq!(pred.predicted_cached_tokens, 0);
    assert_eq!(brk.unwrap().reason, BreakReason::Model);
}

#[test]
fn anthropic_reads_up_to_the_previous_markers_until_the_ttl() {
    let rule = CacheRule::Anthropic {
        min_tokens: 1_024,
        ttl_ms: 300_000,
    };
    let p = prompt(PROJECT);
    let h = history(12);
    let mut hashes = BlockHashes::new();
    let (prev, _) = send(&p, &h[..10], &[], &[], 0, rule, &mut hashes);
    // Markers: after the project layer (the boundary), after the system
    // prompt, after each of the last two turns.
    assert_eq!(prev.markers, vec![1, 2, 11, 12]);
    let (cur, report) = send(&p, &h, &[], &[], 60_000, rule, &mut hashes);
    let (pred, brk) = check(rule, &prev, &cur, &h, &report);
    assert_eq!(
        pred.predicted_cached_tokens, 1_720,
        "the whole previous request, at its last marker"
    );
    assert_eq!(brk, None);
    let (late, report) = send(&p, &h, &[], &[], 400_000, rule, &mut hashes);
    let (pred, _) = check(rule, &prev, &late, &h, &report);
    assert!(pred.expired);
    assert_eq!(pred.predicted_cached_tokens, 0);
    // A message changed before the last markers: only the system prompt's
    // entry (720 tokens) is left, under the 1,024 minimum.
    let (cur, report) = send(&p, &h, &[(5, Action::Excluded)], &[], 60_000, rule, &mut hashes);
    let (pred, _) = check(rule, &prev, &cur, &h, &report);
    assert_eq!(pred.shared_tokens, 1_220);
    assert_eq!(pred.predicted_cached_tokens, 0);
}

#[test]
fn bisecting_the_chain_finds_the_first_change_a_scan_finds() {
    let p = prompt(PROJECT);
    let h = history(40);
    let mut hashes = BlockHashes::new();
    let (prev, _) = send(&p, &h, &[], &[], 0, CacheRule::SharedPrefix, &mut hashes);
    for k in 0..40 {
        let (cur, report) = send(
            &p,
            &h,
            &[(k, Action::Excluded)],
            &[],
            1,
            CacheRule::SharedPrefix,
            &mut hashes,
        );
        let (pred, _) = check(CacheRule::SharedPrefix, &prev, &cur, &h, &report);
        let scan = prev
            .blocks
            .iter()
            .zip(&cur.blocks)
            .position(|(a, b)| a.chain != b.chain);
        assert_eq!(pred.first_change, scan, "excluding message {k}");
        if let Some(i) = scan {
            assert!(matches!(cur.blocks[i].kind, BlockKind::Message { .. }));
        }
    }
}

#[test]
fn an_older_message_back_in_place_of_a_summary_is_an_undone_compaction_else_an_undone_edit() {
    let p = prompt(PROJECT);
    let h = history(10);
    let mut hashes = BlockHashes::new();
    let mut summary = Message::new(h[0].session_id, Role::User, "summary", 20);
    summary.kind = MessageKind::Summary;
    let compacted: Vec<Message> = std::iter::once(summary).chain(h[6..].iter().cloned()).collect();
    let (prev, _) = send(&p, &compacted, &[], &[], 0, CacheRule::OPENAI, &mut hashes);
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (_, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    assert_eq!(brk.unwrap().reason, BreakReason::UndoCompaction);

    // `/undo-resend`: the edited message leaves, the original is back.
    let edited = Message::new(h[0].session_id, Role::User, "message 4, edited", 30);
    let resent: Vec<Message> = h[..4].iter().cloned().chain(std::iter::once(edited)).collect();
    let (prev, _) = send(&p, &resent, &[], &[], 0, CacheRule::OPENAI, &mut hashes);
    let (cur, report) = send(&p, &h, &[], &[], 1, CacheRule::OPENAI, &mut hashes);
    let (_, brk) = check(CacheRule::OPENAI, &prev, &cur, &h, &report);
    let brk = brk.unwrap();
    assert_eq!(brk.reason, BreakReason::UndoEdit);
    assert_eq!(
        brk.at,
        BreakAt::Message {
            pos: Some(5),
            message_id: Some(h[4].id)
        }
    );
}
