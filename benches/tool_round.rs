//! The runtime's time from a tool result to the next request (issue 11,
//! target ≤ 5 ms on a 1,000-message session, the tool's own time left
//! out), through the session service against an OpenAI-compatible server on
//! 127.0.0.1: each turn the model calls `current_time`, the call runs, and
//! the figure is from the call's end (`ToolEvent::Finished`) to the next
//! request handed to the provider (`Phase::Connecting`): the result shaped
//! and stored, the next request prepared (pipeline, preflight decision).
//!
//! Run: `cargo bench --bench tool_round` (a plain program: it prints its
//! figures).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;
use support::{server, service as service_support};
#[path = "support/stats.rs"]
mod stats;
use support::tool_sse;

use server::{Reply, Server};
use service_support::Dirs;
use stats::percentiles;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use strata::config::Config;
use strata::conversation::Phase;
use strata::runtime::service::{ServiceEvent, Sink, ToolEvent};

const MESSAGES: usize = 1_000;
const TURNS: usize = 40;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let server = Server::with(|n| {
        if n % 2 == 0 {
            Reply::sse(tool_sse::openai_calls(&[(
                &format!("t{n}"),
                "current_time",
                "{}",
            )]))
        } else {
            Reply::sse(tool_sse::openai_text("ok"))
        }
    })
    .await;
    let dirs = Dirs::new();
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\ncontext_window = 1000000\n[compression]\nenabled = false\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    );
    let config = Config::parse(&text).unwrap().config;
    let body = "The parser keeps a stack of open scopes and the tests cover each of them. ".repeat(12);
    let id = service_support::import(&dirs, &config, &service_support::history(MESSAGES, &body));
    let events: Arc<Mutex<Vec<(Instant, ServiceEvent)>>> = Arc::default();
    let seen = Arc::clone(&events);
    let sink: Sink = Arc::new(move |e| seen.lock().unwrap().push((Instant::now(), e)));
    let mut service = service_support::open(&dirs, config, id, false, sink);
    let mut samples = Vec::new();
    for n in 0..TURNS {
        events.lock().unwrap().clear();
        service
            .send(format!("what time is it? ({n})"), std::future::pending())
            .await
            .unwrap();
        let events = events.lock().unwrap();
        let finished = events
            .iter()
            .find(|(_, e)| matches!(e, ServiceEvent::Tool(ToolEvent::Finished { .. })))
            .map(|(t, _)| *t)
            .expect("the call ran");
        let next = events
            .iter()
            .filter(|(t, _)| *t >= finished)
            .find(|(_, e)| matches!(e, ServiceEvent::Phase(Phase::Connecting)))
            .map(|(t, _)| *t)
            .expect("the next request");
        if n >= 5 {
            samples.push(next - finished);
        }
    }
    println!(
        "tool result → next request handed to the provider, {MESSAGES}-message session: {}",
        percentiles(samples)
    );
}
