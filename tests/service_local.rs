#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The embedded model's token counter is built once per process: importing
//! a session, opening it in the session service, a turn on the real model
//! and a refresh all count with the one tokenizer read from the GGUF.

mod common;

use std::sync::{Arc, Mutex};
use strata::config::{Config, Paths, SelectionRequest, select_model};
use strata::domain::MessageStatus;
use strata::runtime::service::{Command, Launch, Opening, ServiceEvent, SessionService, Sink};
use strata::runtime::{Runtime, counters_built};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gguf_tokenizer_is_built_once_per_process() {
    let model = common::test_model();
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let text = format!(
        "[model]\nprovider = \"local\"\nmax_tokens = 4\n[providers.local]\nmodel_path = {:?}\n",
        model.display().to_string()
    );
    let config = Config::parse(&text).unwrap().config;
    let paths = Paths::under(home.path());
    let before = counters_built();
    let history: Vec<serde_json::Value> = (0..200)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": format!("note {i}: keep answers short")})
        })
        .collect();
    let id = {
        let choice = select_model(&SelectionRequest {
            provider: None,
            model: None,
            config: &config,
            env: &|_: &str| None,
        })
        .unwrap();
        let mut runtime = Runtime::open(paths.clone(), config.clone()).unwrap();
        let imported = runtime
            .import(
                &serde_json::to_string(&history).unwrap(),
                None,
                ws.path(),
                &choice,
                None,
            )
            .unwrap();
        imported.session.id
    };
    assert_eq!(
        counters_built(),
        before + 1,
        "the import counted with the GGUF's tokenizer"
    );

    let events: Arc<Mutex<Vec<ServiceEvent>>> = Arc::default();
    let seen = Arc::clone(&events);
    let sink: Sink = Arc::new(move |e| seen.lock().unwrap().push(e));
    let launch = Launch {
        paths,
        config,
        provider: None,
        model: None,
        prompt_mode: None,
        opening: Opening::Resume(id.to_string()),
        cwd: ws.path().to_path_buf(),
        env: Arc::new(|_: &str| None),
        interactive: false,
    };
    let mut service = SessionService::open(launch, sink, None).unwrap();
    service.start(Opening::Resume(id.to_string())).unwrap();
    service
        .send("hello".into(), std::future::pending())
        .await
        .unwrap();
    service.run(Command::Rename("renamed".into())).await.unwrap();
    assert_eq!(
        counters_built(),
        before + 1,
        "opening, a turn and a refresh reuse the process's counter"
    );
    let done = events.lock().unwrap().iter().find_map(|e| match e {
        ServiceEvent::TurnDone { status } => Some(*status),
        _ => None,
    });
    assert_eq!(done, Some(MessageStatus::Complete));
}
