#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The session service words what it tells its client for that client: a
//! stored lockout (here in the sentence form an older strata stored, naming
//! both clients' commands) reaches the app's context pane naming the slash
//! commands and never a `strata` subcommand, and a headless client
//! (`strata chat`) naming the subcommands and no slash command.

use crate::support::service as service_support;

use service_support::{Dirs, recorder};
use strata::config::Config;
use strata::runtime::service::ServiceEvent;

const OLD_STATE: &str = r#"{"status":{"strikes":2,"fallbacks_in_row":0,"locked":"Automatic compression is paused: compressions in a row found nothing outside the protected messages; start a new session (/new, or `strata chat --new`) or compress by hand (/compress <topic>, or `strata compress ID --topic T`).","cooldown_until_ms":null},"last_reading":null,"compacted_since_reading":false,"overflow_retry_used":false}"#;

/// The blocked reason of the context the service publishes when it opens
/// a session whose stored state is [`OLD_STATE`].
fn blocked_reason(interactive: bool) -> String {
    let dirs = Dirs::new();
    // A server that is never asked: opening a session sends nothing.
    let text = "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let config = Config::parse(text).unwrap().config;
    let messages = r#"[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]"#;
    let id = service_support::import(&dirs, &config, messages);
    strata::store::Store::open(dirs.paths().database())
        .unwrap()
        .set_compression_state(id, OLD_STATE)
        .unwrap();
    let (sink, events) = recorder();
    let _service = service_support::open(&dirs, config, id, interactive, sink);

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

#[test]
fn compression_off_in_the_config_is_said_before_the_first_message() {
    let dirs = Dirs::new();
    let text = "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n[compression]\nenabled = false\n";
    let config = Config::parse(text).unwrap().config;
    let (sink, events) = recorder();
    let _service = service_support::open_new(&dirs, config, true, sink);
    let events = events.lock().unwrap();
    let blocked = events
        .iter()
        .find_map(|e| match e {
            ServiceEvent::Loaded(view) => view.context.as_ref()?.blocked_reason.clone(),
            _ => None,
        })
        .expect("a new session's pane says compression is off");
    assert!(blocked.contains("enabled"), "{blocked}");
}
