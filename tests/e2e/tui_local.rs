//! End to end: the real `strata` binary in tmux on the embedded model (the
//! pinned GGUF copied into a temporary `STRATA_HOME`). A first message gets
//! a reply; the follow-up re-uses the evaluated prefix, which the context
//! pane shows as cached tokens. A hosted model named with `/model` is
//! refused in one sentence and the embedded model goes on answering. Slow (a real model in a debug build); the
//! waits are generous. Skipped (with a message) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::common;
use crate::support::tmux;

use common::{Sandbox, test_model};
use std::time::Duration;
use strata::provider::local::model_file::GGUF_NAME;
use tmux::Tmux;

/// A reply from the embedded model may take this long in a debug build.
const REPLY: Duration = Duration::from_secs(120);

/// The `cached N of M` figure of the context pane, once a request was made.
fn cached(screen: &str) -> Option<String> {
    let at = screen.find("cached ")?;
    let rest = &screen[at + "cached ".len()..];
    let (n, rest) = rest.split_once(' ')?;
    rest.starts_with("of ").then(|| n.to_owned())
}

/// A sandbox with the embedded model pulled, and the app started on it in
/// tmux session `name` (`None` when tmux is not installed).
async fn start_on_the_embedded_model(name: &str) -> (Sandbox, Tmux) {
    let sb = Sandbox::new();
    let models = sb.home.path().join("data/models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(test_model(), models.join(GGUF_NAME)).unwrap();
    let tmux = Tmux::private(name);
    let line = format!(
        "cd '{}' && env -i PATH=\"$PATH\" HOME='{}' STRATA_HOME='{}' TERM=xterm-256color TZ=UTC '{}' --provider local; sleep 30",
        sb.ws().display(),
        sb.home.path().display(),
        sb.home.path().display(),
        env!("CARGO_BIN_EXE_strata"),
    );
    tmux.start(name, &line);
    tmux.wait_until(name, "the embedded model", REPLY, |s| {
        s.contains("· local") && !s.contains("loading")
    })
    .await;
    (sb, tmux)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn the_follow_up_on_the_embedded_model_reuses_the_cached_prefix() {
    let (_sb, tmux) = start_on_the_embedded_model("local").await;

    tmux.keys("local", &["What is the capital of France?", "Enter"]);
    let screen = tmux
        .wait_until("local", "the first reply", REPLY, |s| {
            s.contains("assistant") && cached(s).is_some()
        })
        .await;
    let first = cached(&screen).unwrap();

    tmux.keys("local", &["And of Italy?", "Enter"]);
    let screen = tmux
        .wait_until("local", "the follow-up's usage", REPLY, |s| {
            cached(s).is_some_and(|c| c != first)
        })
        .await;
    let reused = cached(&screen).unwrap();
    eprintln!("cached tokens: {first} for the first request, {reused} for the follow-up");
    assert!(
        reused != "0" && reused != "–",
        "the follow-up re-used nothing: {reused}\n{screen}"
    );
    assert!(screen.contains("And of Italy?"), "{screen}");
    tmux.keys("local", &["C-c"]);
    tmux.keys("local", &["C-c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
async fn a_hosted_model_refused_by_the_embedded_model_leaves_it_answering() {
    let (sb, tmux) = start_on_the_embedded_model("refuse").await;
    tmux.keys("refuse", &["/model gpt-4o", "Enter"]);
    let screen = tmux
        .wait_for("refuse", "the embedded model cannot run gpt-4o")
        .await;
    let header = screen.lines().next().unwrap();
    assert!(header.contains("SmolLM2-135M-Instruct · local"), "{screen}");
    assert!(
        screen.contains("or set OPENAI_API_KEY and use --provider openai"),
        "the sentence is cut off:\n{screen}"
    );

    tmux.keys("refuse", &["What is the capital of France?", "Enter"]);
    let screen = tmux
        .wait_until("refuse", "the reply", REPLY, |s| {
            s.contains("assistant") && cached(s).is_some()
        })
        .await;
    assert!(screen.contains("SmolLM2-135M-Instruct · local"), "{screen}");
    tmux.keys("refuse", &["/reload", "Enter"]);
    tmux.wait_for("refuse", "nothing changed").await;

    let sessions = sb.json(&["sessions", "--json"]);
    let id = sessions[0]["id"].as_str().unwrap();
    let show = sb.json(&["show", id, "--json"]);
    assert_eq!(show["session"]["model"], "SmolLM2-135M-Instruct");
    let prompt = show["system_prompt"]["text"].as_str().unwrap();
    assert!(prompt.contains("Model: SmolLM2-135M-Instruct"), "{prompt}");
    assert!(!prompt.contains("gpt-4o"), "{prompt}");
    assert_eq!(show["system_prompt"]["version"], 1);
    tmux.keys("refuse", &["C-c"]);
    tmux.keys("refuse", &["C-c"]);
}
