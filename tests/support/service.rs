//! Setting up the session service the way its clients do, for the service
//! tests and benches: a temporary home and workspace, a session imported
//! from an OpenAI-format `messages` array, a service opened on it whose
//! events are recorded.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use strata::config::{Config, Paths, SelectionRequest, select_model};
use strata::domain::SessionId;
use strata::runtime::Runtime;
use strata::runtime::service::{Launch, Opening, ServiceEvent, SessionService, Sink};

/// A temporary strata home and a workspace (a git root) beside it.
pub struct Dirs {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
}

impl Dirs {
    pub fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join(".git")).unwrap();
        Self { home, ws }
    }

    pub fn paths(&self) -> Paths {
        Paths::under(self.home.path())
    }
}

/// Imports `messages` (JSON text) as a session of the config's model.
pub fn import(dirs: &Dirs, config: &Config, messages: &str) -> SessionId {
    let choice = select_model(&SelectionRequest {
        provider: None,
        model: None,
        config,
        env: &|_: &str| None,
    })
    .unwrap();
    Runtime::open(dirs.paths(), config.clone())
        .unwrap()
        .import(messages, None, dirs.ws.path(), &choice, None)
        .unwrap()
        .session
        .id
}

/// `n` alternating user and assistant messages, each `body` after its number.
pub fn history(n: usize, body: &str) -> String {
    let messages: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": format!("message {i}: {body}")})
        })
        .collect();
    serde_json::to_string(&messages).unwrap()
}

/// A sink that keeps every event, and the events it kept.
pub fn recorder() -> (Sink, Arc<Mutex<Vec<ServiceEvent>>>) {
    let events: Arc<Mutex<Vec<ServiceEvent>>> = Arc::default();
    let seen = Arc::clone(&events);
    (Arc::new(move |e| seen.lock().unwrap().push(e)), events)
}

/// A service on session `id`, opened (its rows read, connected).
pub fn open(dirs: &Dirs, config: Config, id: SessionId, interactive: bool, sink: Sink) -> SessionService {
    open_with_env(dirs, config, id, interactive, sink, Arc::new(|_: &str| None))
}

/// [`open`] with `env` as the process environment (API keys).
pub fn open_with_env(
    dirs: &Dirs,
    config: Config,
    id: SessionId,
    interactive: bool,
    sink: Sink,
    env: strata::runtime::service::EnvLookup,
) -> SessionService {
    let opening = Opening::Resume(id.to_string());
    let launch = Launch {
        paths: dirs.paths(),
        config,
        provider: None,
        model: None,
        prompt_mode: None,
        opening: opening.clone(),
        cwd: dirs.ws.path().to_path_buf(),
        env,
        interactive,
    };
    let mut service = SessionService::open(launch, sink, None).unwrap();
    service.start(opening).unwrap();
    service
}

/// A service on a new session (nothing stored until the first message),
/// started.
pub fn open_new(dirs: &Dirs, config: Config, interactive: bool, sink: Sink) -> SessionService {
    let launch = Launch {
        paths: dirs.paths(),
        config,
        provider: None,
        model: None,
        prompt_mode: None,
        opening: Opening::New,
        cwd: dirs.ws.path().to_path_buf(),
        env: Arc::new(|_: &str| None),
        interactive,
    };
    let mut service = SessionService::open(launch, sink, None).unwrap();
    service.start(Opening::New).unwrap();
    service
}

/// Held by the tests that build a token counter no other test builds and
/// by those that count the counters built (a process-wide figure), so
/// that neither sees the other's.
pub async fn counters_quiet() -> tokio::sync::MutexGuard<'static, ()> {
    static QUIET: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    QUIET.lock().await
}
