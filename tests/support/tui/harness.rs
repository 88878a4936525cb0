//! The app driven with events and no terminal, for the tests: the app,
//! its real session (the handle, store, provider) in temporary
//! directories, and a mock OpenAI-compatible server on 127.0.0.1 serving
//! SSE. Included by path by the test files that drive the app.
#![allow(dead_code)]

use crate::support::server::Server;
use crate::support::tui::{key, type_text};
use crossterm::event::KeyCode;
use std::sync::Arc;
use std::time::Duration;
use strata::config::{Config, Paths};
use strata::runtime::{Op, SessionHandle};
use strata::tui::{App, AppEvent, Effect, EnvLookup, KeyMap, Launch, Opening};
use tokio::sync::mpsc;

pub fn sse(deltas: &[&str]) -> String {
    let mut body = String::new();
    for d in deltas {
        let chunk =
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": d}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    let u = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 3,
        "prompt_tokens_details": {"cached_tokens": 100}}});
    body.push_str(&format!("data: {u}\n\ndata: [DONE]\n\n"));
    body
}

pub struct Harness {
    pub app: App,
    pub handle: SessionHandle,
    pub rx: mpsc::UnboundedReceiver<AppEvent>,
    pub _home: tempfile::TempDir,
    pub _ws: tempfile::TempDir,
}

impl Harness {
    pub fn start(server: &Server) -> Self {
        Self::start_with(server, "")
    }

    pub fn start_with(server: &Server, extra_config: &str) -> Self {
        Self::from_config(&format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n{extra_config}",
            server.base_url()
        ))
    }

    pub fn from_config(text: &str) -> Self {
        Self::launch(text, Opening::New, Arc::new(|_: &str| None))
    }

    /// The app on `opening`, with `config` and the environment `env`.
    pub fn launch(text: &str, opening: Opening, env: EnvLookup) -> Self {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".git")).unwrap();
        let config = Config::parse(text).unwrap().config;
        let (tx, rx) = mpsc::unbounded_channel();
        let handle = strata::tui::open_session(
            Launch {
                paths: Paths::under(home.path()),
                config,
                provider: None,
                model: None,
                prompt_mode: None,
                opening,
                cwd: ws.path().to_path_buf(),
                env,
                interactive: true,
            },
            tx,
        );
        Self {
            app: App::new(KeyMap::default(), 120, 36),
            handle,
            rx,
            _home: home,
            _ws: ws,
        }
    }

    pub fn run(&mut self, effects: Vec<Effect>) {
        for e in effects {
            match e {
                Effect::Op(op) => self.handle.send(op),
                Effect::Quit => self.handle.send(Op::Cancel),
                // The harness has no editor.
                Effect::EditInEditor(_) => {}
            }
        }
    }

    pub fn act(&mut self, event: AppEvent) {
        let effects = self.app.handle(event);
        self.run(effects);
    }

    /// Types `line` and Enter; a command that rewrites the prompt
    /// (`/model`, `/reload` with a stale layer) asks first, with the
    /// tokens it leaves uncached, and is confirmed with a second Enter.
    pub fn command(&mut self, line: &str) {
        let effects = type_text(&mut self.app, line);
        self.run(effects);
        self.act(key(KeyCode::Enter));
        if let Some(q) = self.app.rewrite_question() {
            assert!(
                q.sentence().contains("rewrites the prompt: ~"),
                "{}",
                q.sentence()
            );
            self.act(key(KeyCode::Enter));
        }
    }

    /// Feeds background events to the app until `done` holds (10 s at most).
    pub async fn until(&mut self, what: &str, done: impl Fn(&App) -> bool) {
        self.until_within(Duration::from_secs(10), what, done).await;
    }

    /// [`Harness::until`] with another limit.
    pub async fn until_within(&mut self, limit: Duration, what: &str, done: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + limit;
        while !done(&self.app) {
            let e = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; notice: {:?}", self.app.notice()))
                .unwrap();
            self.act(e);
        }
    }

    pub async fn send(&mut self, text: &str) {
        self.command(text);
        assert!(self.app.is_busy());
        self.until("the reply", |a| !a.is_busy()).await;
    }
}
