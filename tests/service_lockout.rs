#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The session service words what it tells its client for that client: a
//! stored lockout (here in the sentence form an older strata stored, naming
//! both clients' commands) reaches the app's context pane naming the slash
//! commands and never a `strata` subcommand, and a headless client
//! (`strata chat`) naming the subcommands and no slash command.

use std::sync::{Arc, Mutex};
use strata::config::{Config, Paths, SelectionRequest, select_model};
use strata::runtime::Runtime;
use strata::runtime::service::{Launch, Opening, ServiceEvent, SessionService, Sink};

const OLD_STATE: &str = r#"{"status":{"strikes":2,"fallbacks_in_row":0,"locked":"Automatic compression is paused: compressions in a row found nothing outside the protected messages; start a new session (/new, or `strata chat --new`) or compress by hand (/compress <topic>, or `strata compress ID --topic T`).","cooldown_until_ms":null},"last_reading":null,"compacted_since_reading":false,"overflow_retry_used":false}"#;

/// The blocked reason of the context the service publishes when it opens
/// a session whose stored state is [`OLD_STATE`].
fn blocked_reason(interactive: bool) -> String {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    // A server that is never asked: opening a session sends nothing.
    let text = "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let config = Config::parse(text).unwrap().config;
    let paths = Paths::under(home.path());
    let choice = select_model(&SelectionRequest {
        provider: None,
        model: None,
        config: &config,
        env: &|_: &str| None,
    })
    .unwrap();
    let id = {
        let mut runtime = Runtime::open(paths.clone(), config.clone()).unwrap();
        let messages = r#"[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]"#;
        let id = runtime
            .import(messages, None, ws.path(), &choice, None)
            .unwrap()
            .session
            .id;
        strata::store::Store::open(paths.database())
            .unwrap()
            .set_compression_state(id, OLD_STATE)
            .unwrap();
        id
    };

    let events: Arc<Mutex<Vec<ServiceEvent>>> = Arc::default();
    let seen = Arc::clone(&events);
    let sink: Sink = Arc::new(move |e| seen.lock().unwrap().push(e));
    let opening = Opening::Resume(id.to_string());
    let mut service = SessionService::open(
        Launch {
            paths,
            config,
            provider: None,
            model: None,
            prompt_mode: None,
            opening: opening.clone(),
            cwd: ws.path().to_path_buf(),
            env: Arc::new(|_: &str| None),
            interactive,
        },
        sink,
        None,
    )
    .unwrap();
    service.start(opening).unwrap();

    let events = events.lock().unwrap();
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            ServiceEvent::Loaded(view) => view.context.as_ref()?.blocked_reason.clone(),
            ServiceEvent::Context(c) => c.blocked_reason.clone(),
            _ => None,
        })
        .expect("the stored lockout reaches the client")
}

#[test]
fn the_apps_context_pane_gives_the_lockout_in_slash_commands() {
    let blocked = blocked_reason(true);
    assert_eq!(
        blocked,
        "Automatic compression is paused: compressions in a row found nothing outside the protected messages; start a new session (/new) or compress by hand (/compress <topic>)."
    );
    assert!(!blocked.contains("strata"), "{blocked}");
}

#[test]
fn a_headless_client_gets_the_lockout_in_subcommands() {
    let blocked = blocked_reason(false);
    assert!(
        blocked.contains("(`strata chat --new`)") && blocked.contains("(`strata compress ID --topic T`)"),
        "{blocked}"
    );
    assert!(
        !blocked.contains("/compress") && !blocked.contains("/new"),
        "{blocked}"
    );
}
