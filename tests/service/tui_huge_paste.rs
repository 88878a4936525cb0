//! One huge message in the app, against the loopback server with an
//! 8,192-token window: plain `/compress` after the paste shrinks the
//! request (the paste is summarised, never merged into), the preview's
//! figures are those of the request after applying, and the questions
//! around it stay in the chat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::server;
use crate::support::tui as tui_support;
use crate::support::tui::harness;

use crossterm::event::KeyCode;
use harness::{Harness, sse};
use server::{Reply, Server};
use strata::tui::{AppEvent, Overlay};
use tui_support::{draw, key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_compress_after_a_huge_paste_shrinks_the_request_it_previews() {
    let server = Server::with(|_| Reply::sse(sse(&["Noted; the workers look healthy."]))).await;
    let mut h = Harness::from_config(&format!(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\ncontext_window = 8192\nmax_tokens = 1024\n\
         [providers.openai]\nbase_url = \"{}/v1\"\n[compression]\nsummarizer = \"extractive\"\nenabled = false\n",
        server.base_url()
    ));
    h.until("the connection", |a| a.context().is_some()).await;
    h.send("what does the lexer do with tabs?").await;
    let paste: String = (0..3_000)
        .map(|i| {
            format!(
                "2026-12-06 02:00:{:02} worker-{i} processed batch {i} in {} ms\n",
                i % 60,
                i * 7
            )
        })
        .collect();
    h.act(AppEvent::Paste(paste));
    h.until("the paste's count", |a| a.draft().ends_with("tokens]"))
        .await;
    h.act(key(KeyCode::Enter));
    h.until("the question", |a| {
        a.question().is_some_and(|q| q.starts_with("message "))
    })
    .await;
    h.act(key(KeyCode::Enter));
    h.until("the reply", |a| !a.is_busy()).await;
    h.send("which worker was slowest?").await;
    let before = h.app.context().unwrap().prelimit_tokens.unwrap();

    h.command("/compress");
    h.until("the preview", |a| {
        matches!(a.overlay(), Some(Overlay::Preview(_)))
    })
    .await;
    let Some(Overlay::Preview(p)) = h.app.overlay() else {
        unreachable!()
    };
    let view = p.view.clone();
    assert_eq!(view.tokens_before, before, "the request as it is now: {view:?}");
    assert!(
        view.tokens_after * 2 < view.tokens_before,
        "the paste is summarised, not kept: {} → {}",
        view.tokens_before,
        view.tokens_after
    );
    assert!(
        view.uncached_tokens.is_some_and(|u| u <= view.tokens_after),
        "{view:?}"
    );
    // Kept verbatim: only what follows the summary (the paste's reply and
    // the last exchange), not the protected start before it.
    let kept: Vec<usize> = view.kept_verbatim.iter().map(|k| k.pos).collect();
    assert_eq!(kept, [4, 5, 6], "{kept:?}");

    h.act(tui_support::read_the_question(&h.app));
    h.act(key(KeyCode::Enter));
    h.until("the compaction", |a| {
        a.notice().is_some_and(|n| n.text.starts_with("Compressed"))
    })
    .await;
    h.until("the context after it", |a| {
        a.context().is_some_and(|c| c.last_compaction.is_some())
    })
    .await;
    let c = h.app.context().unwrap();
    assert_eq!(
        c.prelimit_tokens,
        Some(view.tokens_after),
        "the preview said the request after applying"
    );
    let screen = draw(&h.app, 120, 36);
    for question in ["what does the lexer do with tabs?", "which worker was slowest?"] {
        assert!(screen.contains(question), "{question} not in the chat:\n{screen}");
    }
    // The next request holds the summary and the first exchange.
    h.send("thanks").await;
    let sent = server.requests().last().unwrap().json()["messages"].to_string();
    assert!(
        sent.contains("what does the lexer do with tabs?") && sent.contains("[Earlier conversation"),
        "{sent:.400}"
    );
    assert!(
        !sent.contains("worker-1500 processed"),
        "the paste is no longer sent"
    );
}
