#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Prompt-cache forensics through the session service, against the local
//! test server playing a provider's cache (`support/cache_server.rs`):
//! plain turns predict what the provider reads (OpenAI's `cached_tokens`,
//! Anthropic's `cache_read_input_tokens`) and report no break; `/reload`
//! after an AGENTS.md edit breaks at the `project` layer; an exclusion at
//! that message; a tool switched off at the tools array; identical bytes
//! with nothing read are a provider-side miss; a prompt under 1,024 tokens
//! predicts 0 on the OpenAI shape. `strata context --json` carries the same
//! figures and the session's series, read by the next process.

use crate::support::cache_server;
use crate::support::server;

use crate::support::service as service_support;

use cache_server::{Cache, Shape};
use server::Server;
use service_support::{Dirs, history, import, recorder};
use std::sync::{Arc, Mutex};
use strata::config::Config;
use strata::domain::{BreakAt, BreakReason, CacheCheck, LayerName, PromptMode, SessionId};
use strata::runtime::service::{Command, ServiceEvent, SessionService};

struct Setup {
    service: SessionService,
    events: Arc<Mutex<Vec<ServiceEvent>>>,
    cache: Cache,
    server: Server,
    dirs: Dirs,
    id: SessionId,
}

fn config_text(shape: Shape, server: &Server, extra: &str) -> String {
    match shape {
        Shape::OpenAi => format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n{extra}\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
        Shape::Anthropic => format!(
            "[model]\nprovider = \"anthropic\"\nname = \"claude-sonnet-4-5\"\n{extra}\n[providers.anthropic]\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    }
}

/// A session of `messages` messages (about 30 tokens each) in a workspace
/// holding `agents` as AGENTS.md, opened in the service, talking to a
/// server that plays `shape`'s cache.
async fn setup(shape: Shape, messages: usize, agents: &str, extra: &str, mode: Option<PromptMode>) -> Setup {
    let cache = Cache::new(shape);
    let script = cache.clone();
    let server = Server::answering(move |_, request| script.answer(request, "Noted.")).await;
    let dirs = Dirs::new();
    std::fs::write(dirs.ws.path().join("AGENTS.md"), agents).unwrap();
    let config = Config::parse(&config_text(shape, &server, extra)).unwrap().config;
    let id = if mode.is_some() {
        let choice = strata::config::select_model(&strata::config::SelectionRequest {
            provider: None,
            model: None,
            config: &config,
            env: &|_: &str| None,
        })
        .unwrap();
        strata::runtime::Runtime::open(dirs.paths(), config.clone())
            .unwrap()
            .import(
                &history(messages, "the parser keeps its state in a table of rows"),
                None,
                dirs.ws.path(),
                &choice,
                mode,
            )
            .unwrap()
            .session
            .id
    } else {
        import(
            &dirs,
            &config,
            &history(messages, "the parser keeps its state in a table of rows"),
        )
    };
    let (sink, events) = recorder();
    let env: strata::runtime::service::EnvLookup =
        Arc::new(|name: &str| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-test".to_owned()));
    let service = service_support::open_with_env(&dirs, config, id, true, sink, env);
    Setup {
        service,
        events,
        cache,
        server,
        dirs,
        id,
    }
}

impl Setup {
    /// The newest event `pick` finds something in.
    fn last<T>(&self, pick: impl Fn(&ServiceEvent) -> Option<T>) -> Option<T> {
        self.events.lock().unwrap().iter().rev().find_map(pick)
    }

    /// Sends `text`; the check of the request, and what the server reported.
    async fn turn(&mut self, text: &str) -> (CacheCheck, u64) {
        self.events.lock().unwrap().clear();
        self.service
            .send(text.into(), std::future::pending())
            .await
            .unwrap();
        let usage = self
            .last(|e| match e {
                ServiceEvent::Context(c) => c.last_usage.clone(),
                _ => None,
            })
            .expect("the context after the turn");
        let reported = self.cache.reported.lock().unwrap().last().copied().unwrap().1;
        assert_eq!(
            usage.cache_read_tokens,
            Some(reported),
            "the reported reads are stored"
        );
        (usage.cache.expect("every request is checked"), reported)
    }

    async fn run(&mut self, command: Command) {
        self.service.run(command).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_plain_turns_predict_what_openai_reads_and_report_no_break() {
    let mut s = setup(Shape::OpenAi, 24, "Run the tests.\n", "", None).await;
    for n in 0..10 {
        let (check, reported) = s.turn(&format!("question {n}")).await;
        assert_eq!(check.cache_break, None, "turn {n}");
        assert_eq!(check.predicted_cached_tokens, reported, "turn {n}: {check:?}");
        // The shared prefix itself, before OpenAI's 128-token steps hide
        // a difference of a few tokens.
        let shared = *s.cache.shared.lock().unwrap().last().unwrap();
        if n > 0 {
            assert_eq!(check.shared_tokens, shared, "turn {n}: {check:?}");
            assert!(
                reported > 1_024,
                "turn {n} reads the previous request: {reported}"
            );
        }
    }
    assert_eq!(s.server.requests().len(), 10);

    // The next process reads the same figures, and the series.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["context", &s.id.to_string(), "--json"])
        .env("STRATA_HOME", s.dirs.home.path())
        .current_dir(s.dirs.ws.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let last = *s.cache.reported.lock().unwrap().last().unwrap();
    assert_eq!(json["cache"]["predicted_cached_tokens"], last.1);
    assert_eq!(json["cache"]["reported_cached_tokens"], last.1);
    assert!(json["cache"]["break"].is_null(), "{}", json["cache"]);
    let requests = json["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 10);
    assert_eq!(requests[9]["prompt_tokens"], last.0);
    assert_eq!(requests[9]["cached_tokens"], last.1);
    assert!(requests.iter().all(|r| r["break"].is_null()));

    // A compression's preview says what the next request will not read
    // from the cache: what follows the protected head.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "compress",
            &s.id.to_string(),
            "--preview",
            "--json",
            "--summarizer",
            "extractive",
        ])
        .env("STRATA_HOME", s.dirs.home.path())
        .current_dir(s.dirs.ws.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let preview: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let after = preview["tokens_after"].as_u64().unwrap();
    let uncached = preview["uncached_tokens_next_request"].as_u64().unwrap();
    assert!(uncached > 0 && uncached < after, "{preview}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_turns_predict_what_anthropic_reads() {
    // Tools off: the server counts no tools array, as strata's estimate of
    // Anthropic's tool format would not match its own.
    let mut s = setup(
        Shape::Anthropic,
        40,
        "Run the tests.\n",
        "[tools]\nenabled = false\n",
        None,
    )
    .await;
    for n in 0..4 {
        let (check, reported) = s.turn(&format!("question {n}")).await;
        assert_eq!(check.cache_break, None, "turn {n}");
        assert_eq!(check.predicted_cached_tokens, reported, "turn {n}: {check:?}");
        if n > 0 {
            assert!(reported > 1_024, "turn {n}: {reported}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_after_an_agents_edit_breaks_at_the_project_layer() {
    let mut s = setup(Shape::OpenAi, 24, "Run the tests.\n", "", None).await;
    s.turn("first").await;
    std::fs::write(s.dirs.ws.path().join("AGENTS.md"), "Run the tests twice.\n").unwrap();
    s.run(Command::Reload).await;
    let (check, reported) = s.turn("second").await;
    let brk = check.cache_break.clone().expect("a break");
    assert_eq!(
        brk.at,
        BreakAt::System {
            layer: Some(LayerName::Project)
        }
    );
    assert_eq!(brk.reason, BreakReason::Reload);
    assert!(
        check.predicted_cached_tokens <= reported + 128,
        "{check:?} vs {reported}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exclusion_breaks_at_that_message() {
    let mut s = setup(Shape::OpenAi, 24, "Run the tests.\n", "", None).await;
    s.turn("first").await;
    let store = strata::store::Store::open(s.dirs.paths().database()).unwrap();
    let third = store.messages(s.id, false).unwrap()[2].id;
    drop(store);
    // The context list says what excluding it will cost before it is done.
    s.run(Command::ContextList).await;
    let foretold = s
        .last(|e| match e {
            ServiceEvent::ContextList(rows) => rows.iter().find(|r| r.message_id == third).cloned(),
            _ => None,
        })
        .and_then(|r| r.uncached_if_toggled)
        .expect("the row's cost");
    s.run(Command::Exclude {
        message: third,
        on: true,
    })
    .await;
    let (check, reported) = s.turn("second").await;
    let brk = check.cache_break.clone().expect("a break");
    assert_eq!(
        brk.at,
        BreakAt::Message {
            pos: Some(3),
            message_id: Some(third)
        }
    );
    assert_eq!(brk.reason, BreakReason::Exclusion);
    assert_eq!(check.predicted_cached_tokens, reported, "{check:?}");
    // What the list foretold, against what went uncached: apart from the
    // new message and the provider's 128-token steps.
    let total = s.cache.reported.lock().unwrap().last().unwrap().0;
    let uncached = total - reported;
    assert!(
        foretold.abs_diff(uncached) <= 160,
        "foretold {foretold}, uncached {uncached}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_automatic_compression_blocks_it_for_the_session_until_resumed() {
    let mut s = setup(Shape::OpenAi, 4, "Run the tests.\n", "", None).await;
    s.turn("first").await;
    let blocked = |s: &Setup| {
        s.last(|e| match e {
            ServiceEvent::Context(c) => Some(c.blocked_reason.clone()),
            _ => None,
        })
    };
    s.events.lock().unwrap().clear();
    s.run(Command::AutoCompress(false)).await;
    let reason = blocked(&s).flatten().expect("blocked while paused");
    assert!(reason.contains("paused"), "{reason}");
    s.events.lock().unwrap().clear();
    s.run(Command::AutoCompress(true)).await;
    assert_eq!(blocked(&s), Some(None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_switched_off_breaks_at_the_tools_array() {
    let mut s = setup(Shape::OpenAi, 24, "Run the tests.\n", "", None).await;
    s.turn("first").await;
    s.run(Command::ToggleTool {
        name: "grep".into(),
        on: false,
    })
    .await;
    let (check, reported) = s.turn("second").await;
    let brk = check.cache_break.clone().expect("a break");
    assert_eq!((brk.at, brk.reason), (BreakAt::Tools, BreakReason::ToolSet));
    assert_eq!((check.predicted_cached_tokens, reported), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_bytes_with_nothing_read_are_a_provider_side_miss() {
    let mut s = setup(Shape::OpenAi, 24, "Run the tests.\n", "", None).await;
    s.turn("first").await;
    s.cache.forget();
    let (check, reported) = s.turn("second").await;
    assert_eq!(reported, 0);
    assert!(check.predicted_cached_tokens > 1_024, "{check:?}");
    let brk = check.cache_break.clone().expect("a break");
    assert_eq!(
        (brk.at, brk.reason),
        (BreakAt::Provider, BreakReason::ProviderMiss)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_under_1024_tokens_predicts_nothing_on_the_openai_shape() {
    let mut s = setup(
        Shape::OpenAi,
        2,
        "",
        "[tools]\nenabled = false\n",
        Some(PromptMode::None),
    )
    .await;
    s.turn("first").await;
    let (check, reported) = s.turn("second").await;
    let total = s.cache.reported.lock().unwrap().last().unwrap().0;
    assert!(total < 1_024, "the prompt is small: {total}");
    assert!(check.shared_tokens > 0, "{check:?}");
    assert_eq!((check.predicted_cached_tokens, reported), (0, 0));
    assert_eq!(check.cache_break, None);
}
