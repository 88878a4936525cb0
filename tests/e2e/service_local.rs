#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The embedded model's token counter is built once per process: importing
//! a session, opening it in the session service, a turn on the real model
//! and a refresh all count with the one tokenizer read from the GGUF.

use crate::support::common;

use crate::support::service as service_support;

use service_support::{Dirs, history, recorder};
use strata::config::Config;
use strata::domain::MessageStatus;
use strata::runtime::counters_built;
use strata::runtime::service::{Command, ServiceEvent};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gguf_tokenizer_is_built_once_per_process() {
    let model = common::test_model();
    let dirs = Dirs::new();
    let text = format!(
        "[model]\nprovider = \"local\"\nmax_tokens = 4\n[providers.local]\nmodel_path = {:?}\n",
        model.display().to_string()
    );
    let config = Config::parse(&text).unwrap().config;
    let before = counters_built();
    let id = service_support::import(&dirs, &config, &history(200, "keep answers short"));
    assert_eq!(
        counters_built(),
        before + 1,
        "the import counted with the GGUF's tokenizer"
    );

    let (sink, events) = recorder();
    let mut service = service_support::open(&dirs, config, id, false, sink);
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
