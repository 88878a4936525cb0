//! The runtime's own time per turn on a 10,000-message session (issue 10,
//! target ≤ 10 ms), through the session service against an OpenAI-compatible
//! server on 127.0.0.1 that answers at once. The provider's part is left
//! out: a turn's own time is from `send` to the request handed to the
//! provider (storing the user's message, the pipeline, the preflight
//! decision) plus from the last reply text to the end of the turn
//! (finalising and storing the reply and its usage, the after-response
//! decision, the new context for the client). Also the time to open the
//! session in the service (its rows read once, the conversation and context
//! built), without a terminal.
//!
//! Run: `cargo bench --bench service_turn` (a plain program: it prints its
//! figures).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;
use support::{server, service as service_support};
#[path = "support/stats.rs"]
mod stats;

use server::{Reply, Server};
use service_support::Dirs;
use stats::percentiles;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use strata::config::Config;
use strata::conversation::Phase;
use strata::runtime::service::{ServiceEvent, Sink};

const MESSAGES: usize = 10_000;
const TURNS: usize = 40;

fn sse() -> String {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": null}]});
    let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 1}});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: {usage}\n\ndata: [DONE]\n\n"
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let server = Server::with(|_| Reply::sse(sse())).await;
    let dirs = Dirs::new();
    // A window that holds the whole history (about 2 M tokens) and no
    // automatic compression: the figure is the turn's, not a compaction's.
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\ncontext_window = 4000000\n[compression]\nenabled = false\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    );
    let config = Config::parse(&text).unwrap().config;
    let body = "The parser keeps a stack of open scopes and the tests cover each of them. ".repeat(12);
    let id = service_support::import(&dirs, &config, &service_support::history(MESSAGES, &body));
    let events: Arc<Mutex<Vec<(Instant, ServiceEvent)>>> = Arc::default();
    let seen = Arc::clone(&events);
    let sink: Sink = Arc::new(move |e| seen.lock().unwrap().push((Instant::now(), e)));
    let start = Instant::now();
    let mut service = service_support::open(&dirs, config, id, false, sink);
    println!(
        "open a {MESSAGES}-message session in the service (rows, conversation, context): {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let stored = events.lock().unwrap().iter().rev().find_map(|(_, e)| match e {
        ServiceEvent::Loaded(v) => v.context.as_ref().map(|c| c.stored_tokens),
        _ => None,
    });
    println!("the session's stored history: {} tokens", stored.unwrap_or(0));
    let mut own = Vec::new();
    let mut whole = Vec::new();
    for n in 0..TURNS {
        events.lock().unwrap().clear();
        let start = Instant::now();
        service
            .send(format!("question {n}"), std::future::pending())
            .await
            .unwrap();
        let end = Instant::now();
        let events = events.lock().unwrap();
        let sent = events
            .iter()
            .find(|(_, e)| matches!(e, ServiceEvent::Phase(Phase::Connecting)))
            .map(|(t, _)| *t)
            .unwrap();
        let last_text = events
            .iter()
            .rev()
            .find(|(_, e)| matches!(e, ServiceEvent::Delta { .. }))
            .map(|(t, _)| *t)
            .unwrap();
        let done = events
            .iter()
            .rev()
            .find(|(_, e)| matches!(e, ServiceEvent::TurnDone { .. }))
            .map(|(t, _)| *t)
            .unwrap();
        if n >= 5 {
            own.push((sent - start) + (done - last_text));
            whole.push(end - start);
        }
    }
    println!("the runtime's own time per turn: {}", percentiles(own));
    println!(
        "whole turn with the 127.0.0.1 server (the 2 M-token request body over loopback included): {}",
        percentiles(whole)
    );
}
