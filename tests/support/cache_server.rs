//! A provider's prompt cache, played by the local test server: each request
//! body is counted as the provider counts it — `o200k_base` through the
//! tokenizer crate directly (checked against Python tiktoken by
//! `core::tokens_reference`) and OpenAI's published message framing, spelt
//! out here: nothing of `strata::tokens` — and compared with the previous
//! body, element by element — the tools array, the system prompt,
//! each message — the way the provider matches a cached prefix. The reply
//! reports `prompt_tokens` and the cached tokens the provider's documented
//! rule gives: OpenAI's (at least 1,024 tokens, 128-token steps, in
//! `prompt_tokens_details.cached_tokens`) or Anthropic's (the previous
//! request read whole up to its last marker, `cache_read_input_tokens`).
//! `forget()` makes it report 0 (an eviction).
#![allow(dead_code, clippy::unwrap_used)]

use crate::support::server::{Recorded, Reply};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The wire a cache speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    OpenAi,
    Anthropic,
}

/// One request as the cache saw it: its elements and their tokens.
#[derive(Clone, Debug, Default)]
struct Seen {
    elements: Vec<(String, u64)>,
    /// The system prompt's text, when the request has one.
    system: Option<String>,
    total: u64,
}

/// Tokens of the prefix `cur` shares with `prev`: whole elements while
/// they agree; where the system prompt differs, the tokens of the text
/// both start with (a provider caches tokens, not messages).
fn shared_tokens(prev: &Seen, cur: &Seen) -> u64 {
    let mut shared = 0;
    for (a, b) in prev.elements.iter().zip(&cur.elements) {
        if a.0 == b.0 {
            shared += b.1;
            continue;
        }
        if let (Some(x), Some(y)) = (&prev.system, &cur.system)
            && a.0.contains("\"role\":\"system\"")
            && b.0.contains("\"role\":\"system\"")
        {
            let common: String = x
                .chars()
                .zip(y.chars())
                .take_while(|(p, q)| p == q)
                .map(|(p, _)| p)
                .collect();
            shared += count(&common);
        }
        break;
    }
    shared
}

/// The cache's state, shared with the server's script.
#[derive(Clone)]
pub struct Cache {
    shape: Shape,
    last: Arc<Mutex<Option<Seen>>>,
    evicted: Arc<AtomicBool>,
    /// `(prompt_tokens, cached_tokens)` of each reply, in order.
    pub reported: Arc<Mutex<Vec<(u64, u64)>>>,
    /// The tokens each request shared with the one before, before the
    /// provider's rule (minimum, steps) applied, in order.
    pub shared: Arc<Mutex<Vec<u64>>>,
}

impl Cache {
    pub fn new(shape: Shape) -> Self {
        Self {
            shape,
            last: Arc::default(),
            evicted: Arc::default(),
            reported: Arc::default(),
            shared: Arc::default(),
        }
    }

    /// From now on nothing is read from the cache.
    pub fn forget(&self) {
        self.evicted.store(true, Ordering::SeqCst);
    }

    /// The reply to `request`: `text` streamed, with usage.
    pub fn answer(&self, request: &Recorded, text: &str) -> Reply {
        let body = request.json();
        let seen = match self.shape {
            Shape::OpenAi => openai_elements(&body),
            Shape::Anthropic => anthropic_elements(&body),
        };
        let mut last = self.last.lock().unwrap();
        let shared: u64 = last.as_ref().map_or(0, |prev| shared_tokens(prev, &seen));
        let cached = match (self.shape, last.as_ref()) {
            _ if self.evicted.load(Ordering::SeqCst) => 0,
            (_, None) => 0,
            (Shape::OpenAi, Some(prev)) => {
                if shared >= 1_024 && prev.total >= 1_024 && seen.total >= 1_024 {
                    shared / 128 * 128
                } else {
                    0
                }
            }
            (Shape::Anthropic, Some(prev)) => {
                let whole: u64 = prev.elements.iter().map(|e| e.1).sum();
                let prefix = prev.elements.len() <= seen.elements.len()
                    && prev.elements.iter().zip(&seen.elements).all(|(a, b)| a.0 == b.0);
                if prefix && whole >= 1_024 { whole } else { 0 }
            }
        };
        self.reported.lock().unwrap().push((seen.total, cached));
        self.shared.lock().unwrap().push(shared);
        *last = Some(seen.clone());
        match self.shape {
            Shape::OpenAi => Reply::sse(openai_sse(text, seen.total, cached)),
            Shape::Anthropic => Reply::sse(anthropic_sse(text, seen.total, cached)),
        }
    }
}

/// Tokens of `text` in `o200k_base`.
fn count(text: &str) -> u64 {
    bpe_openai::o200k_base().count(text) as u64
}

/// OpenAI's framing (the cookbook's `num_tokens_from_messages`): every
/// message costs 3 tokens besides its role and content, and 3 more prime
/// the reply.
const PER_MESSAGE: u64 = 3;
const REPLY_PRIMING: u64 = 3;
/// A tool call besides its name and arguments: the `harmony` rendering's
/// fixed 14 tokens (`<|start|>assistant<|channel|>commentary
/// to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>`) less the 4
/// of a message's own framing and role.
const PER_TOOL_CALL: u64 = 10;

/// One wire message of the OpenAI shape: framing, role, content, each tool
/// call, and a tool result's `tool_call_id`.
fn openai_message_tokens(m: &Value) -> u64 {
    let role = m["role"].as_str().unwrap();
    let mut n = PER_MESSAGE + count(role) + count(m["content"].as_str().unwrap_or_default());
    for call in m["tool_calls"].as_array().into_iter().flatten() {
        n += PER_TOOL_CALL
            + count(call["function"]["name"].as_str().unwrap())
            + count(call["function"]["arguments"].as_str().unwrap());
    }
    if let Some(id) = m["tool_call_id"].as_str() {
        n += count(id);
    }
    n
}

fn openai_elements(body: &Value) -> Seen {
    let mut elements = Vec::new();
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    if !tools.is_empty() {
        // Each tool definition as the JSON text it arrived as.
        let tokens = tools.iter().map(|t| count(&t.to_string())).sum();
        elements.push((Value::Array(tools).to_string(), tokens));
    }
    for m in body["messages"].as_array().unwrap() {
        elements.push((m.to_string(), openai_message_tokens(m)));
    }
    let total = elements.iter().map(|e| e.1).sum::<u64>() + REPLY_PRIMING;
    let system = body["messages"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .map(str::to_owned);
    Seen {
        elements,
        system,
        total,
    }
}

fn anthropic_elements(body: &Value) -> Seen {
    let mut elements = Vec::new();
    let system: String = body["system"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default();
    if !system.is_empty() {
        let tokens = PER_MESSAGE + count("system") + count(&system);
        elements.push((system, tokens));
    }
    for m in body["messages"].as_array().unwrap() {
        let role = m["role"].as_str().unwrap();
        let text: String = m["content"]
            .as_array()
            .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect())
            .unwrap_or_else(|| m["content"].as_str().unwrap_or_default().to_owned());
        // Where the markers sit is not content: compare without them.
        let mut plain = m.clone();
        strip_markers(&mut plain);
        elements.push((plain.to_string(), PER_MESSAGE + count(role) + count(&text)));
    }
    let total = elements.iter().map(|e| e.1).sum::<u64>() + REPLY_PRIMING;
    Seen {
        elements,
        system: None,
        total,
    }
}

fn strip_markers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_markers);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_markers),
        _ => {}
    }
}

fn openai_sse(text: &str, prompt: u64, cached: u64) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let stop = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let usage = json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": cached}}});
    format!("data: {chunk}\n\ndata: {stop}\n\ndata: {usage}\n\ndata: [DONE]\n\n")
}

fn anthropic_sse(text: &str, prompt: u64, cached: u64) -> String {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
                "usage": {"input_tokens": prompt - cached, "cache_read_input_tokens": cached,
                          "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}
