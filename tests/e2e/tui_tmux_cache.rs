//! End to end in tmux: the real `strata` app against the local test server
//! playing a provider's cache (`support/cache_server.rs`). Each turn grows
//! the history by about 6 % of the compression threshold; the warning
//! "auto-compress in ~N turns" is not there at first, appears as the next
//! request comes within 10 % of the threshold, and is on screen the turn
//! before automatic compression fires. The pane shows the cache reads
//! after each turn.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::cache_server;
use crate::support::common;
use crate::support::server;
use crate::support::service as service_support;
use crate::support::tmux;

use cache_server::{Cache, Shape};
use common::Sandbox;
use server::Server;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tmux::Tmux;

/// `n` alternating messages of about 200 tokens each.
fn history(n: usize) -> String {
    service_support::history(
        n,
        &"the parser keeps its state in a table of rows and columns; ".repeat(16),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn the_warning_appears_the_turn_before_automatic_compression_fires() {
    let tmux = Tmux::private("cache");
    let cache = Cache::new(Shape::OpenAi);
    let script = cache.clone();
    let turn = Arc::new(AtomicUsize::new(0));
    let words = Arc::new(AtomicUsize::new(0));
    let (t, w) = (Arc::clone(&turn), Arc::clone(&words));
    let server = Server::answering(move |_, request| {
        let n = t.fetch_add(1, Ordering::SeqCst);
        let text = format!("{}reply-{n}", "word ".repeat(w.load(Ordering::SeqCst)));
        script.answer(request, &text)
    })
    .await;
    let sb = Sandbox::new();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\ncontext_window = 24000\nmax_tokens = 2000\n\
             [tools]\nenabled = false\n[compression]\nsummarizer = \"extractive\"\npreview = false\n\
             [providers.openai]\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    // The threshold this window gives, from an empty session's budget.
    let probe = sb.import(&history(2));
    let budget = sb.json(&["context", &probe, "--json"]);
    let threshold = budget["threshold"]["effective"].as_u64().unwrap();
    // A history at about 75 % of it; each turn adds about 6 %.
    let messages = (threshold * 3 / 4 / 215) as usize & !1;
    let id = sb.import(&history(messages));
    words.store((threshold * 6 / 100) as usize, Ordering::SeqCst);

    tmux.start("app", &sb.tmux_line(&format!("--resume {id}")));
    let first = tmux.wait_for("app", "gpt-4o-mini · openai").await;
    assert!(
        !first.contains("auto-compress in"),
        "no warning at 75 %:\n{first}"
    );
    let mut before = first;
    for n in 0..8 {
        tmux.keys("app", &[&format!("question {n}"), "Enter"]);
        let screen = tmux
            .wait_until("app", &format!("reply-{n}"), Duration::from_secs(30), |s| {
                s.contains(&format!("reply-{n}")) && s.contains(" idle ")
            })
            .await;
        if screen.contains("compacted auto") {
            assert!(n >= 1, "compression fired on the first turn:\n{screen}");
            assert!(
                before.contains("auto-compress in") || before.contains("over the compression threshold"),
                "the warning was not on screen the turn before compression fired:\n{before}"
            );
            assert!(before.contains("/compress now"), "{before}");
            assert!(screen.contains("cached "), "{screen}");
            return;
        }
        before = screen;
    }
    panic!("automatic compression never fired; the last screen:\n{before}");
}
