//! The app follows the files its session's prompt is built from: a file
//! changed while the session is open, or while it was closed, marks its
//! layer stale until `/reload`; `/fork` and `/skill` work from the app.
//! Driven with events, no terminal, against a mock server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::server;
use crate::support::tui::harness;

use harness::{Harness, sse};
use server::{Reply, Server};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_instruction_file_marks_the_project_layer_stale_until_reload() {
    use strata::domain::LayerName;
    let server = Server::start(vec![Reply::sse(sse(&["ok"]))]).await;
    let mut h = Harness::start(&server);
    let ws = h._ws.path().to_path_buf();
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("hello").await;
    assert!(h.app.stale().is_empty());

    // The watch starts with the stored session; a file created now is a
    // change to the project layer.
    std::fs::write(ws.join("AGENTS.md"), "Answer in haiku.\n").unwrap();
    h.until_within(Duration::from_secs(60), "the stale mark", |a| {
        a.stale().contains(&LayerName::Project)
    })
    .await;
    assert_eq!(h.app.stale(), [LayerName::Project]);

    h.command("/reload");
    h.until("the new version", |a| {
        a.notice().is_some_and(|n| n.text.contains("version 2"))
    })
    .await;
    assert!(h.app.stale().is_empty(), "{:?}", h.app.stale());

    // The rebuilt prompt is watched in turn; /new stops the watch and
    // clears the mark.
    std::fs::write(ws.join("AGENTS.md"), "Answer in prose.\n").unwrap();
    h.until_within(Duration::from_secs(60), "the second stale mark", |a| {
        a.stale().contains(&LayerName::Project)
    })
    .await;
    h.command("/new");
    h.until("the new session", |a| {
        a.session().is_none() && a.stale().is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instruction_file_edited_while_a_session_was_closed_marks_it_stale_when_reopened() {
    use strata::domain::LayerName;
    let server = Server::start(vec![Reply::sse(sse(&["one"])), Reply::sse(sse(&["two"]))]).await;
    let mut h = Harness::start(&server);
    let ws = h._ws.path().to_path_buf();
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("first").await;
    let first = h.app.session().unwrap().id;
    h.command("/new");
    h.until("the new session", |a| a.session().is_none()).await;
    h.send("second").await;
    let second = h.app.session().unwrap().id;

    // Reopened with its files as they were: nothing is stale.
    h.command(&format!("/resume {first}"));
    h.until("the first session", |a| {
        a.session().is_some_and(|s| s.id == first)
    })
    .await;
    assert!(h.app.stale().is_empty(), "{:?}", h.app.stale());

    // AGENTS.md appears while the second session is open (and watched).
    h.command(&format!("/resume {second}"));
    h.until("the second session", |a| {
        a.session().is_some_and(|s| s.id == second)
    })
    .await;
    std::fs::write(ws.join("AGENTS.md"), "Answer in haiku.\n").unwrap();
    h.until_within(Duration::from_secs(60), "the second session's stale mark", |a| {
        a.stale().contains(&LayerName::Project)
    })
    .await;

    // The first session never saw the edit happen, and is stale all the same.
    h.command(&format!("/resume {first}"));
    h.until("the first session's stale mark", |a| {
        a.session().is_some_and(|s| s.id == first) && a.stale().contains(&LayerName::Project)
    })
    .await;
    assert_eq!(h.app.stale(), [LayerName::Project]);
    h.command("/reload");
    h.until("the new version", |a| {
        a.notice().is_some_and(|n| n.text.contains("version 2"))
    })
    .await;
    assert!(h.app.stale().is_empty(), "{:?}", h.app.stale());
    assert!(h.app.context().unwrap().prompt.text.contains("Answer in haiku."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_skill_and_reload_work_from_the_app() {
    let server = Server::start(vec![
        Reply::sse(sse(&["first answer"])),
        Reply::sse(sse(&["second answer"])),
    ])
    .await;
    let mut h = Harness::start(&server);
    let home = h._home.path().to_path_buf();
    let ws = h._ws.path().to_path_buf();
    std::fs::create_dir_all(home.join("skills/review")).unwrap();
    std::fs::write(
        home.join("skills/review/SKILL.md"),
        "---\nname: review\ndescription: Review a diff\n---\nRead the diff twice.\n",
    )
    .unwrap();
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("hello").await;
    let original = h.app.session().unwrap().id;

    // /reload with unchanged files changes nothing; after an edit it
    // builds a new version.
    h.command("/reload");
    h.until("the reload", |a| {
        a.notice().is_some_and(|n| n.text.contains("nothing changed"))
    })
    .await;
    std::fs::write(ws.join("AGENTS.md"), "Answer in haiku.\n").unwrap();
    h.command("/reload");
    h.until("the new version", |a| {
        a.notice().is_some_and(|n| n.text.contains("version 2"))
    })
    .await;

    // /fork moves to a copy; /skill rides on the next message.
    h.command("/fork");
    h.until("the fork", |a| a.session().is_some_and(|s| s.id != original))
        .await;
    assert!(h.app.session().unwrap().title.ends_with("(fork)"));
    assert_eq!(h.app.messages().len(), 2);
    h.command("/skill review");
    h.until("the skill", |a| {
        a.notice().is_some_and(|n| n.text.contains("next message"))
    })
    .await;
    h.send("check this").await;
    let body = server.requests()[1].json();
    let messages = body["messages"].as_array().unwrap();
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("Answer in haiku.")
    );
    let last = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        last.starts_with("check this\n\n<skill name=\"review\">\nRead the diff twice.\n</skill>"),
        "{last}"
    );

    h.command("/skill nope");
    h.until("the error", |a| {
        a.notice().is_some_and(|n| n.text.contains("known: review"))
    })
    .await;
}
