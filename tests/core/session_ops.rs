//! `/fork`, `/reload` and `/skill` through the runtime: a fork copies the
//! active history and the exact prompt bytes; a reload stores a new prompt
//! version only when the files changed (and keeps the app's guidelines); a
//! skill's body comes without its frontmatter, an unknown one names the
//! known ones.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use strata::config::{Config, ModelChoice, Paths, ProviderKind};
use strata::domain::{Message, PromptMode, Role};
use strata::prompt::EnvFacts;
use strata::runtime::{NewSession, Reloaded, Runtime, RuntimeError};
use strata::store::Store;

fn choice() -> ModelChoice {
    ModelChoice {
        provider: ProviderKind::OpenAi,
        model: "gpt-4o".to_owned(),
        context_window: 128_000,
        window_source: strata::config::WindowSource::Catalog,
        max_tokens: 4_096,
        api_key_env: None,
        base_url: None,
    }
}

struct Fixture {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let f = Fixture {
        home: tempfile::tempdir().unwrap(),
        ws: tempfile::tempdir().unwrap(),
    };
    std::fs::create_dir(f.ws.path().join(".git")).unwrap();
    std::fs::write(f.ws.path().join("AGENTS.md"), "Use tabs.\n").unwrap();
    f
}

fn open(f: &Fixture, interactive: bool) -> (Runtime, strata::domain::Session) {
    let mut rt = Runtime::open(Paths::under(f.home.path()), Config::default()).unwrap();
    let (session, _, _) = rt
        .create_session(NewSession {
            cwd: f.ws.path(),
            choice: &choice(),
            mode: PromptMode::Full,
            title: "original".into(),
            now: &jiff::Zoned::now(),
            interactive,
            env: EnvFacts::from_process(),
        })
        .unwrap();
    (rt, session)
}

#[test]
fn a_fork_copies_active_messages_and_the_prompt_bytes() {
    let f = fixture();
    let (mut rt, session) = open(&f, false);
    // The conversation's own writes, through a second connection.
    let mut store = Store::open(rt.paths.database()).unwrap();
    for (role, text) in [
        (Role::User, "hello"),
        (Role::Assistant, "hi"),
        (Role::User, "more"),
    ] {
        let mut m = Message::new(session.id, role, text, 1);
        store.append_message(&mut m).unwrap();
    }
    let fork = rt.fork_session(&session).unwrap();
    assert_eq!(fork.parent_id, Some(session.id));
    assert_eq!(fork.title, "original (fork)");
    let a = rt.messages(session.id, false).unwrap();
    let b = rt.messages(fork.id, false).unwrap();
    let text = |ms: &[Message]| ms.iter().map(|m| (m.role, m.content.clone())).collect::<Vec<_>>();
    assert_eq!(text(&a), text(&b));
    assert!(a.iter().zip(&b).all(|(x, y)| x.id != y.id));
    let pa = rt.current_prompt(session.id).unwrap().unwrap();
    let pb = rt.current_prompt(fork.id).unwrap().unwrap();
    assert_eq!(pa.text.as_bytes(), pb.text.as_bytes());
    assert_eq!(pb.version, 1);
    // The fork grows on its own.
    let mut m = Message::new(fork.id, Role::Assistant, "only in the fork", 2);
    store.append_message(&mut m).unwrap();
    assert_eq!(rt.messages(session.id, false).unwrap().len(), 3);
}

/// `/reload` as the service runs it: planned, built, stored.
fn reload(rt: &mut Runtime, session: &strata::domain::Session, cwd: &std::path::Path) -> Reloaded {
    let plan = rt.reload_plan(session, &choice(), cwd).unwrap();
    let current = plan.current.clone();
    rt.store_reload(current, plan.build()).unwrap()
}

#[test]
fn reload_stores_a_new_version_only_when_the_files_changed() {
    let f = fixture();
    let (mut rt, session) = open(&f, true);
    let before = rt.current_prompt(session.id).unwrap().unwrap();
    assert!(matches!(reload(&mut rt, &session, f.ws.path()), Reloaded::Unchanged(p) if p.id == before.id));
    std::fs::write(f.ws.path().join("AGENTS.md"), "Use spaces.\n").unwrap();
    let Reloaded::NewVersion(after) = reload(&mut rt, &session, f.ws.path()) else {
        panic!("the edit should give a new version");
    };
    assert_eq!(after.version, 2);
    assert!(after.text.contains("Use spaces."));
    assert_eq!(rt.current_prompt(session.id).unwrap().unwrap().id, after.id);
    // Built for the app, rebuilt for the app: only the edited file differs.
    assert_eq!(
        before.text.replace("Use tabs.", "Use spaces."),
        after.text,
        "nothing but the edit changed"
    );
}

#[test]
fn a_skill_body_is_sent_without_frontmatter_and_unknown_names_list_the_known() {
    let f = fixture();
    let dir = f.home.path().join("skills/review");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: review\ndescription: Review a diff\n---\nRead the diff twice.\n",
    )
    .unwrap();
    let (rt, _) = open(&f, false);
    let part = rt.skill_part(f.ws.path(), "review").unwrap();
    assert_eq!(part, "<skill name=\"review\">\nRead the diff twice.\n</skill>");
    let err = rt.skill_part(f.ws.path(), "deploy").unwrap_err();
    assert!(matches!(err, RuntimeError::UnknownSkill { .. }));
    assert!(err.to_string().contains("known: review"), "{err}");
}

#[test]
fn a_model_change_keeps_the_apps_guidelines() {
    let f = fixture();
    let (mut rt, session) = open(&f, true);
    let mut other = choice();
    other.model = "gpt-4.1".to_owned();
    let v2 = rt
        .frozen_prompt(
            &session,
            &other,
            PromptMode::Full,
            &jiff::Zoned::now(),
            EnvFacts::from_process(),
        )
        .unwrap();
    assert_eq!(v2.version, 2);
    let guidelines: Vec<&str> = v2
        .layers
        .iter()
        .flat_map(|l| &l.sources)
        .map(|s| s.path.as_str())
        .filter(|p| p.contains("guidelines"))
        .collect();
    assert!(
        guidelines
            .iter()
            .all(|p| p.ends_with("guidelines_interactive.md")),
        "{guidelines:?}"
    );
    assert!(!guidelines.is_empty());
}
