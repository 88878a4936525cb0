//! One context computation: the app's pane (the service's `Context`
//! event), `strata context --json` and compression read the same figures
//! for one session.

use crate::support::server::{Reply, Server};
use crate::support::service::{Dirs, import, open, recorder};
use crate::support::tool_sse;
use serde_json::Value;
use strata::config::Config;
use strata::runtime::service::ServiceEvent;

/// A model strata does not know, on a window small enough that the
/// pipeline leaves older messages out, with tools on.
fn config_text(server: &Server) -> String {
    format!(
        "[model]\nprovider = \"openai\"\nname = \"agreement-test\"\ncontext_window = 6000\nmax_tokens = 1000\n[providers.openai]\nbase_url = \"{}/v1\"\n[tools]\nenabled = true\n[compression]\nsummarizer = \"extractive\"\n",
        server.base_url()
    )
}

/// Twelve messages of ~700 tokens each: more than the window holds.
fn long_history() -> String {
    let messages: Vec<Value> = (0..12)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let body = format!("message {i}: ") + &"the parser keeps a table of spans ".repeat(100);
            serde_json::json!({"role": role, "content": body})
        })
        .collect();
    serde_json::to_string(&messages).unwrap()
}

fn strata(dirs: &Dirs, args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .current_dir(dirs.ws.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dirs.home.path())
        .env("STRATA_HOME", dirs.home.path())
        .env("OPENAI_API_KEY", "test-key")
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "strata {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pane_strata_context_and_compression_read_the_same_figures() {
    // Its model's counter is built by no other test.
    let _quiet = crate::support::service::counters_quiet().await;
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    let dirs = Dirs::new();
    let text = config_text(&server);
    std::fs::write(dirs.home.path().join("config.toml"), &text).unwrap();
    let config = Config::parse(&text).unwrap().config;
    let id = import(&dirs, &config, &long_history());

    let (sink, events) = recorder();
    let service = open(&dirs, config, id, true, sink);
    let pane = events
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find_map(|e| match e {
            ServiceEvent::Context(c) => Some(c.clone()),
            _ => None,
        })
        .expect("the pane's context");
    drop(service);
    let cli = strata(&dirs, &["context", &id.to_string(), "--json", "--no-mcp"]);
    let compress = strata(&dirs, &["compress", &id.to_string(), "--dry-run", "--json"]);

    // Some messages are left out: the three figures differ, and each agrees.
    let prepared = pane.prepared_tokens.expect("the next request can be prepared");
    let prelimit = pane.prelimit_tokens.expect("a pre-limit figure");
    assert!(
        prepared < prelimit && prelimit <= pane.stored_tokens + 1000,
        "{prepared} {prelimit}"
    );
    assert!(
        pane.report.iter().any(|r| r.tokens_after == 0),
        "some messages are left out"
    );
    assert_eq!(cli["prepared_tokens"].as_u64(), Some(prepared));
    assert_eq!(cli["prelimit_tokens"].as_u64(), Some(prelimit));
    assert_eq!(cli["stored_tokens"].as_u64(), Some(pane.stored_tokens));
    assert_eq!(cli["input_tokens"].as_u64(), Some(pane.budget.input_tokens()));
    for (name, category) in [
        ("stable", &pane.budget.categories.stable),
        ("context", &pane.budget.categories.context),
        ("volatile", &pane.budget.categories.volatile),
        ("tools", &pane.budget.categories.tools),
        ("history", &pane.budget.categories.history),
        ("free", &pane.budget.categories.free),
    ] {
        assert_eq!(
            cli["categories"][name]["tokens"].as_u64(),
            Some(category.tokens),
            "{name}"
        );
    }
    let rows: Vec<(u64, u64)> = pane
        .report
        .iter()
        .map(|r| (u64::from(r.tokens_before), u64::from(r.tokens_after)))
        .collect();
    let cli_rows: Vec<(u64, u64)> = cli["report"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["tokens_before"].as_u64().unwrap(),
                r["tokens_after"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(cli_rows, rows, "each message's figures");
    // Compression starts from the stored history as both show it.
    assert_eq!(compress["tokens_before"].as_u64(), Some(pane.stored_tokens));
}
