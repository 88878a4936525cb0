#![allow(clippy::unwrap_used, clippy::expect_used)]
//! One writer per session: two session services (two apps) on one
//! session, against the loopback server. The second is told who has the
//! session and writes nothing until it takes it over; the first then
//! writes nothing; a service that ends gives the session up.

use crate::support::server;
use crate::support::tool_sse;

use crate::support::service as service_support;

use server::{Reply, Server};
use service_support::{Dirs, history, recorder};
use std::sync::{Arc, Mutex};
use strata::config::Config;
use strata::runtime::service::{Command, ServiceEvent};

/// A session of two exchanges, imported, with a config pointing at
/// `server`.
fn session_on(server: &Server) -> (Dirs, Config, strata::domain::SessionId) {
    let dirs = Dirs::new();
    let text = format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n",
        server.base_url()
    );
    let config = Config::parse(&text).unwrap().config;
    let id = service_support::import(&dirs, &config, &history(2, "hello"));
    (dirs, config, id)
}

fn said(events: &Arc<Mutex<Vec<ServiceEvent>>>, what: &str) -> bool {
    events.lock().unwrap().iter().any(|e| match e {
        ServiceEvent::Notice(n) | ServiceEvent::Error(n) => n.contains(what),
        _ => false,
    })
}

fn unsent(events: &Arc<Mutex<Vec<ServiceEvent>>>, text: &str) -> bool {
    events
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, ServiceEvent::Unsent(t) if t == text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_app_on_a_session_writes_nothing_until_it_takes_the_session_over() {
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    let (dirs, config, id) = session_on(&server);
    let store = || strata::store::Store::open(dirs.paths().database()).unwrap();
    let stored = || store().messages(id, true).unwrap().len();
    let last_sent = || server.requests().last().unwrap().json()["messages"].to_string();
    let send = |text: &str| text.to_owned();

    let (sink_a, events_a) = recorder();
    let mut first = service_support::open(&dirs, config.clone(), id, true, sink_a);
    assert!(!said(&events_a, "another strata"));
    first
        .send(send("from the first"), std::future::pending())
        .await
        .unwrap();
    assert_eq!(stored(), 4);

    let (sink_b, events_b) = recorder();
    let mut second = service_support::open(&dirs, config.clone(), id, true, sink_b);
    let pid = std::process::id().to_string();
    assert!(
        said(&events_b, "this session is open in another strata (process ") && said(&events_b, &pid),
        "told who has it when it opens: {:?}",
        events_b.lock().unwrap()
    );
    assert!(said(&events_b, "/take-over takes it over"));

    // The first goes on writing while the second only reads: the second
    // sends nothing, renames nothing.
    first
        .send(send("first while the second reads"), std::future::pending())
        .await
        .unwrap();
    assert_eq!(stored(), 6);
    let refused = second.send(send("from the second"), std::future::pending()).await;
    assert!(refused.is_err());
    assert!(unsent(&events_b, "from the second"), "the text goes back");
    assert!(second.run(Command::Rename("hijacked".into())).await.is_err());
    assert_ne!(store().session(id).unwrap().unwrap().title, "hijacked");
    assert_eq!(stored(), 6, "nothing written");
    assert_eq!(server.requests().len(), 2, "nothing sent");

    // Taken over: the second sends what the first wrote after it opened.
    second.run(Command::TakeOver).await.unwrap();
    assert!(said(&events_b, "this session is yours now"));
    second
        .send(send("from the second"), std::future::pending())
        .await
        .unwrap();
    assert_eq!(stored(), 8);
    assert!(
        last_sent().contains("first while the second reads"),
        "{}",
        last_sent()
    );

    // The first lost it: it writes nothing now.
    let lost = first
        .send(send("again from the first"), std::future::pending())
        .await;
    assert!(lost.is_err());
    assert!(unsent(&events_a, "again from the first"));
    assert_eq!(stored(), 8);

    // The second ends: the session is free again, and the first sends the
    // history as stored.
    drop(second);
    first
        .send(send("again from the first"), std::future::pending())
        .await
        .unwrap();
    assert_eq!(stored(), 10);
    assert!(last_sent().contains("from the second"), "{}", last_sent());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_being_made_when_the_session_is_taken_over_stops_and_stores_nothing_more() {
    // The first app's reply starts and then waits; the second takes the
    // session over meanwhile.
    let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": "a partial"}, "finish_reason": null}]});
    let server = Server::with(move |n| match n {
        0 => Reply::sse_hold(format!("data: {chunk}\n\n")),
        _ => Reply::sse(tool_sse::openai_text("ok")),
    })
    .await;
    let (dirs, config, id) = session_on(&server);
    let store = || strata::store::Store::open(dirs.paths().database()).unwrap();
    let (sink_a, events_a) = recorder();
    let mut first = service_support::open(&dirs, config.clone(), id, true, sink_a);
    let (sink_b, events_b) = recorder();
    let mut second = service_support::open(&dirs, config.clone(), id, true, sink_b);

    let take_over = async {
        // The reply has begun and its first words are stored.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !store()
            .messages(id, true)
            .unwrap()
            .iter()
            .any(|m| m.content == "a partial")
        {
            assert!(std::time::Instant::now() < deadline, "the reply never began");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        second.run(Command::TakeOver).await.unwrap();
        store().messages(id, true).unwrap().len()
    };
    let turn = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        first.send("a long question".to_owned(), std::future::pending()),
    );
    let (ended, at_take_over) = tokio::join!(turn, take_over);
    assert!(ended.is_ok(), "the first app's turn never noticed the take-over");
    assert!(said(&events_b, "this session is yours now"));
    assert!(
        said(
            &events_a,
            "another strata took this session over during the reply"
        ),
        "{:?}",
        events_a.lock().unwrap()
    );
    assert!(said(&events_a, "/take-over takes it back"));
    let rows = store().messages(id, true).unwrap();
    assert_eq!(rows.len(), at_take_over, "no row added after the take-over");
    assert_eq!(server.requests().len(), 1, "no request sent after it");
    // The second writes on; the first stays a reader.
    second
        .send("from the second".to_owned(), std::future::pending())
        .await
        .unwrap();
    assert_eq!(store().messages(id, true).unwrap().len(), at_take_over + 2);
    assert!(
        first
            .send("again".to_owned(), std::future::pending())
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_taken_and_let_go_while_this_app_waited_is_read_again_before_it_writes() {
    let server = Server::with(|_| Reply::sse(tool_sse::openai_text("ok"))).await;
    let (dirs, config, id) = session_on(&server);
    let (sink_a, events_a) = recorder();
    let mut first = service_support::open(&dirs, config.clone(), id, true, sink_a);
    first
        .send("from the first".to_owned(), std::future::pending())
        .await
        .unwrap();

    // The second takes it over, writes, and quits; the first never tried
    // to write meanwhile.
    let (sink_b, _events_b) = recorder();
    let mut second = service_support::open(&dirs, config.clone(), id, true, sink_b);
    second.run(Command::TakeOver).await.unwrap();
    second
        .send("from the second".to_owned(), std::future::pending())
        .await
        .unwrap();
    drop(second);

    first
        .send("the first again".to_owned(), std::future::pending())
        .await
        .unwrap();
    let sent = server.requests().last().unwrap().json()["messages"].to_string();
    assert!(sent.contains("from the second"), "sent a stale history: {sent}");
    assert!(said(
        &events_a,
        "another strata wrote to this session meanwhile; it was read again"
    ));
    let shown = events_a.lock().unwrap().iter().rev().find_map(|e| match e {
        ServiceEvent::Loaded(view) => Some(view.messages.iter().any(|m| m.content == "from the second")),
        _ => None,
    });
    assert_eq!(shown, Some(true), "the app shows what the other one wrote");
}
