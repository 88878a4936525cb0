//! The prompt-cache bookkeeping per request on a 2 M-token session (issue
//! "cache forensics", target ≤ 1 ms): 2,000 messages of about 1,000
//! tokens each behind a layered system prompt and a tools array.
//!
//! - `warm`: one request's blocks (every message hashed before, as a live
//!   conversation has them), its prediction against the previous request
//!   and the break's reason: what each request costs;
//! - `cold`: the same with nothing hashed yet (the first request after a
//!   process starts).
//!
//! Run: `cargo bench --bench prompt_cache` (add `-- --quick` for a fast pass).

#![allow(clippy::print_stderr)]

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use strata::domain::{
    CacheRule, ChatRequest, Fingerprint, LayerInfo, LayerName, Message, PromptId, PromptMode, ProviderKind,
    RequestMessage, RequestSystem, Role, SessionId, SystemPrompt,
};
use strata::pipeline::{Action, ReportEntry};
use strata::prompt_cache::{BlockHashes, Changes, SnapshotInput, predict, reason, snapshot};

const MESSAGES: usize = 2_000;
/// About 1,000 o200k tokens of prose.
const BODY_BYTES: usize = 4_200;

struct Session {
    prompt: SystemPrompt,
    messages: Vec<Message>,
    report: Vec<ReportEntry>,
    request: ChatRequest,
    sources: Vec<std::ops::Range<usize>>,
}

fn session() -> Session {
    let id = SessionId::new();
    let text = "You are a careful assistant. ".repeat(200);
    let cut = text.len() / 2;
    let layer = |name: LayerName, start, end| LayerInfo {
        name,
        tier: name.tier(),
        start,
        end,
        chars: end - start,
        tokens: (end - start) / 4,
        sources: Vec::new(),
    };
    let prompt = SystemPrompt {
        id: PromptId::new(),
        session_id: id,
        version: 1,
        layers: vec![
            layer(LayerName::Identity, 0, cut),
            layer(LayerName::Project, cut, text.len()),
        ],
        boundary_offset: Some(text.len()),
        text: text.clone(),
        sha256: String::new(),
        fingerprint: Fingerprint {
            provider: ProviderKind::OpenAi,
            model: "gpt-4o".into(),
            mode: PromptMode::Full,
            tool_set_hash: String::new(),
            template_version: 1,
        },
        created_at: 0,
    };
    let body = "the parser keeps its state in a table of rows; ".repeat(BODY_BYTES / 48);
    let messages: Vec<Message> = (0..MESSAGES)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            Message::new(id, role, format!("{i}: {body}"), i as i64)
        })
        .collect();
    let report = messages
        .iter()
        .map(|m| ReportEntry {
            message_id: m.id,
            action: Action::Kept,
            tokens_before: 1_000,
            tokens_after: 1_000,
        })
        .collect();
    let request = ChatRequest {
        model: "gpt-4o".into(),
        system: RequestSystem {
            text,
            boundary_offset: prompt.boundary_offset,
        },
        messages: messages
            .iter()
            .map(|m| RequestMessage {
                role: m.role,
                content: m.content.clone(),
                tool_calls: Vec::new(),
                tool_call_id: None,
            })
            .collect(),
        max_tokens: 4_096,
        tools: vec![
            serde_json::json!({"type": "function", "function": {"name": "read_file", "parameters": {}}});
            20
        ],
        temperature: None,
    };
    let sources = (0..MESSAGES).map(|i| i..i + 1).collect();
    Session {
        prompt,
        messages,
        report,
        request,
        sources,
    }
}

fn bench(c: &mut Criterion) {
    let s = session();
    let input = SnapshotInput {
        request: &s.request,
        report: &s.report,
        sources: &s.sources,
        messages: &s.messages,
        prompt: &s.prompt,
        tool_tokens: 2_000,
        system_tokens: 1_500,
        rule: CacheRule::OPENAI,
        now_ms: 1,
    };
    let mut hashes = BlockHashes::new();
    let prev = snapshot(&input, &mut hashes);
    let changes = Changes {
        messages: &s.messages,
        report: &s.report,
    };
    let total = prev.tokens();
    eprintln!("session: {MESSAGES} messages, {total} tokens in blocks");
    c.bench_function("prompt_cache/warm", |b| {
        b.iter(|| {
            let cur = snapshot(black_box(&input), &mut hashes);
            let p = predict(CacheRule::OPENAI, Some(&prev), &cur, 1.0);
            black_box(reason(&p, Some(&prev), &cur, &changes))
        });
    });
    c.bench_function("prompt_cache/cold", |b| {
        b.iter(|| {
            let mut fresh = BlockHashes::new();
            let cur = snapshot(black_box(&input), &mut fresh);
            black_box(predict(CacheRule::OPENAI, Some(&prev), &cur, 1.0))
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
