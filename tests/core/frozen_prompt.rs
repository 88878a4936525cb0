//! A session's prompt is frozen: built once, reused byte for byte after a
//! restart and after instruction files change, rebuilt as a new version only
//! when the fingerprint (provider, model, mode) changes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use strata::config::{Config, ModelChoice, Paths, ProviderKind};
use strata::domain::PromptMode;
use strata::prompt::EnvFacts;
use strata::runtime::{NewSession, Runtime};
use strata::store::Store;

fn choice(model: &str) -> ModelChoice {
    ModelChoice {
        provider: ProviderKind::OpenAi,
        model: model.to_owned(),
        context_window: 128_000,
        window_source: strata::config::WindowSource::Catalog,
        max_tokens: 4_096,
        api_key_env: None,
        base_url: None,
    }
}

fn env() -> EnvFacts {
    EnvFacts {
        os: Some("linux".into()),
        shell: Some("/bin/sh".into()),
        terminal: Some("xterm".into()),
    }
}

#[test]
fn prompt_is_frozen_until_the_fingerprint_changes() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    std::fs::write(ws.path().join("AGENTS.md"), "Always answer in French.\n").unwrap();
    let paths = Paths::under(home.path());
    let now = jiff::Zoned::now();

    let mut rt = Runtime::open(paths.clone(), Config::default()).unwrap();
    let (session, v1, _) = rt
        .create_session(NewSession {
            cwd: ws.path(),
            choice: &choice("gpt-4o"),
            mode: PromptMode::Full,
            title: "t".into(),
            now: &now,
            interactive: false,
            env: env(),
        })
        .unwrap();
    assert_eq!(v1.version, 1);
    assert!(v1.text.contains("Always answer in French."));
    drop(rt);

    // Restart, edit the instruction file: the same bytes come back.
    std::fs::write(ws.path().join("AGENTS.md"), "Always answer in German.\n").unwrap();
    let mut rt = Runtime::open(paths.clone(), Config::default()).unwrap();
    let again = rt
        .frozen_prompt(&session, &choice("gpt-4o"), PromptMode::Full, &now, env())
        .unwrap();
    assert_eq!(again.id, v1.id);
    assert_eq!(again.text.as_bytes(), v1.text.as_bytes());
    assert_eq!(again.sha256, v1.sha256);

    // Another model: version 2, built fresh (so it sees the edit), and the session follows.
    let v2 = rt
        .frozen_prompt(&session, &choice("gpt-4.1"), PromptMode::Full, &now, env())
        .unwrap();
    assert_eq!(v2.version, 2);
    assert_ne!(v2.id, v1.id);
    assert!(v2.text.contains("Always answer in German."));
    let reloaded = rt.find_session(&session.id.to_string()).unwrap();
    assert_eq!(reloaded.model, "gpt-4.1");
    assert_eq!(reloaded.current_prompt_id, Some(v2.id));
    let versions = Store::open(paths.database())
        .unwrap()
        .prompt_versions(session.id)
        .unwrap();
    assert_eq!(versions.len(), 2);

    // And it stays at version 2 for that model.
    let same = rt
        .frozen_prompt(&reloaded, &choice("gpt-4.1"), PromptMode::Full, &now, env())
        .unwrap();
    assert_eq!(same.id, v2.id);

    // A mode change is a fingerprint change too.
    let v3 = rt
        .frozen_prompt(&reloaded, &choice("gpt-4.1"), PromptMode::Minimal, &now, env())
        .unwrap();
    assert_eq!(v3.version, 3);
}
