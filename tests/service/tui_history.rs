//! The composer's history across runs: the app with the real session handle on a
//! temporary home and workspace, started twice; and the runtime's history
//! thread on its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::server;
use crate::support::tui as tui_support;

use crossterm::event::KeyCode;
use server::{Reply, Server};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strata::config::{Config, Paths};
use strata::runtime::input_history::{HISTORY_ENTRY_MAX_BYTES, HistoryEvent, spawn_input_history};
use strata::store::Store;
use strata::tui::{App, AppEvent, KeyMap, Launch, Opening};
use tokio::sync::mpsc;
use tui_support::{key, type_text};

fn sse(text: &str) -> String {
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!(
        "data: {chunk}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

/// One run of the app on `home` and `ws`.
struct Run {
    app: App,
    handle: strata::runtime::SessionHandle,
    rx: mpsc::UnboundedReceiver<AppEvent>,
}

impl Run {
    fn start(server: &Server, home: &Path, ws: &Path) -> Self {
        let text = format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        );
        let (tx, rx) = mpsc::unbounded_channel();
        let handle = strata::tui::open_session(
            Launch {
                paths: Paths::under(home),
                config: Config::parse(&text).unwrap().config,
                provider: None,
                model: None,
                prompt_mode: None,
                opening: Opening::New,
                cwd: ws.to_path_buf(),
                env: Arc::new(|_: &str| None),
                interactive: true,
            },
            tx,
        );
        Self {
            app: App::new(KeyMap::default(), 120, 36),
            handle,
            rx,
        }
    }

    fn act(&mut self, event: AppEvent) {
        for e in self.app.handle(event) {
            crate::support::tui::apply(&self.handle, e);
        }
    }

    fn enter(&mut self, line: &str) {
        for e in type_text(&mut self.app, line) {
            crate::support::tui::apply(&self.handle, e);
        }
        self.act(key(KeyCode::Enter));
    }

    async fn until(&mut self, what: &str, done: impl Fn(&App) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !done(&self.app) {
            let e = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; notice: {:?}", self.app.notice()))
                .unwrap();
            self.act(e);
        }
    }
}

/// The inputs the database under `home` holds for `ws`.
fn stored(home: &Path, ws: &Path) -> Vec<String> {
    let root = strata::workspace::workspace_root(ws)
        .to_string_lossy()
        .into_owned();
    let store = Store::open(Paths::under(home).database()).unwrap();
    store.input_history(&root, 100).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_come_back_with_up_in_the_next_run_of_the_same_workspace_only() {
    let server = Server::start(vec![Reply::sse(sse("hi"))]).await;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join(".git")).unwrap();

    let mut first = Run::start(&server, home.path(), ws.path());
    first.until("the connection", |a| a.context().is_some()).await;
    first.enter("why is the build red?");
    first.until("the reply", |a| !a.is_busy()).await;
    first.enter("/help");
    drop(first);
    assert_eq!(
        stored(home.path(), ws.path()),
        ["why is the build red?", "/help"],
        "dropping the handle waited for the writes"
    );

    let mut second = Run::start(&server, home.path(), ws.path());
    second
        .until("the earlier inputs", |a| a.history().len() == 2)
        .await;
    second.act(key(KeyCode::Up));
    assert_eq!(second.app.draft(), "/help");
    second.act(key(KeyCode::Up));
    assert_eq!(second.app.draft(), "why is the build red?");

    let mut elsewhere = Run::start(&server, home.path(), other.path());
    elsewhere.until("the connection", |a| a.context().is_some()).await;
    assert!(
        elsewhere.app.history().is_empty(),
        "another workspace has its own"
    );
    elsewhere.act(key(KeyCode::Up));
    assert_eq!(elsewhere.app.draft(), "");
}

#[test]
fn the_history_thread_loads_first_and_keeps_inputs_up_to_the_size_limit() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let db = Paths::under(home.path()).database();
    let (tx, rx) = std::sync::mpsc::channel();
    let history = spawn_input_history(db.clone(), ws.path(), move |e| {
        let _ = tx.send(e);
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        HistoryEvent::Loaded(Vec::new())
    );
    history.remember("short".into());
    history.remember("x".repeat(HISTORY_ENTRY_MAX_BYTES + 1));
    history.remember("after".into());
    drop(history);
    // Dropping the handle waited for the writes: the next start sees them.
    let (tx, rx) = std::sync::mpsc::channel();
    let _again = spawn_input_history(db, ws.path(), move |e| {
        let _ = tx.send(e);
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        HistoryEvent::Loaded(vec!["short".into(), "after".into()]),
        "the long input was not stored"
    );
}

/// Sessions of `ws` imported into the store under `home`, one per title.
fn sessions_in(home: &Path, ws: &Path, titles: &[&str]) {
    let config = Config::parse("[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n")
        .unwrap()
        .config;
    let choice = strata::config::select_model(&strata::config::SelectionRequest {
        provider: None,
        model: None,
        config: &config,
        env: &|_: &str| None,
    })
    .unwrap();
    let mut runtime = strata::runtime::Runtime::open(Paths::under(home), config).unwrap();
    for title in titles {
        let messages = serde_json::json!([{"role": "user", "content": title}]).to_string();
        runtime
            .import(&messages, Some((*title).to_owned()), ws, &choice, None)
            .unwrap();
    }
}

/// The titles the open picker lists.
fn listed(app: &App) -> Vec<String> {
    match app.overlay() {
        Some(strata::tui::Overlay::Picker(p)) => p.rows.iter().map(|r| r.title.clone()).collect(),
        other => panic!("the picker is not open: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_picker_lists_this_workspaces_sessions_until_tab_asks_for_every_one() {
    let _quiet = crate::support::service::counters_quiet().await;
    let server = Server::with(|_| Reply::sse(sse("hi"))).await;
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join(".git")).unwrap();
    sessions_in(home.path(), ws.path(), &["parser refactor"]);
    sessions_in(
        home.path(),
        other.path(),
        &["unrelated cjk test", "another elsewhere"],
    );

    let mut run = Run::start(&server, home.path(), ws.path());
    run.act(tui_support::ctrl('o'));
    let loaded = |a: &App| matches!(a.overlay(), Some(strata::tui::Overlay::Picker(p)) if p.loaded);
    run.until("this workspace's sessions", loaded).await;
    assert_eq!(listed(&run.app), ["parser refactor"]);

    run.act(key(KeyCode::Tab));
    run.until("every workspace's sessions", loaded).await;
    let mut all = listed(&run.app);
    all.sort();
    assert_eq!(
        all,
        ["another elsewhere", "parser refactor", "unrelated cjk test"]
    );

    run.act(key(KeyCode::Tab));
    run.until("this workspace's sessions again", loaded).await;
    assert_eq!(listed(&run.app), ["parser refactor"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_open_gives_a_message_back_at_once() {
    let server = Server::with(|_| Reply::sse(sse("hi"))).await;
    let home = tempfile::tempdir().unwrap();
    // The data directory's place is taken: the store cannot be opened.
    std::fs::write(home.path().join("data"), "not a directory").unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let mut run = Run::start(&server, home.path(), ws.path());
    run.until("the opening's error", |a| {
        a.notices_log().iter().any(|(n, _)| n.contains("data directory"))
    })
    .await;
    run.enter("hello?");
    assert!(run.app.is_busy());
    run.until("the turn to end", |a| !a.is_busy()).await;
    assert_eq!(run.app.draft(), "hello?", "the text came back");
    assert!(
        run.app
            .notices_log()
            .iter()
            .any(|(n, _)| n.contains("nothing was sent: ") && n.contains("data directory")),
        "{:?}",
        run.app.notices_log()
    );
    assert!(server.requests().is_empty());
}
