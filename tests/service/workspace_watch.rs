//! The workspace watcher on a real temporary workspace: edits to the files a
//! prompt was built from, and new instruction files, are reported with the
//! layer they feed; unrelated files are not. Waits use generous timeouts
//! and assert nothing about timing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::prompt as support;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use strata::domain::LayerName;
use strata::prompt::{AssembledPrompt, assemble};
use strata::workspace::{LayerChange, WatchDirs, WatchEvent, WatchPlan, WorkspaceWatcher, gather};
use support::Fixture;

const PATIENCE: Duration = Duration::from_secs(20);

fn prompt(f: &Fixture, cwd: &str) -> AssembledPrompt {
    assemble(&gather(&support::request(f, cwd)), &support::counter())
}

fn watch(f: &Fixture, cwd: &str) -> (WorkspaceWatcher, Receiver<WatchEvent>) {
    let p = prompt(f, cwd);
    let dirs = WatchDirs {
        root: f.ws.clone(),
        cwd: f.ws.join(cwd),
        config_dir: f.home.clone(),
    };
    let plan = WatchPlan::new(&p.layers, strata::domain::PromptMode::Full, &dirs);
    WorkspaceWatcher::with_channel(plan).unwrap()
}

/// Changes received until one names `path`, within [`PATIENCE`].
fn until_named(rx: &Receiver<WatchEvent>, path: &Path) -> Vec<LayerChange> {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(WatchEvent::Changed(change)) => {
                let done = change.paths.iter().any(|p| p == path);
                seen.push(change);
                if done {
                    return seen;
                }
            }
            Ok(WatchEvent::Failed(e)) => panic!("watcher failed: {e}"),
            Err(_) => break,
        }
    }
    panic!(
        "no change naming {} within {PATIENCE:?}; saw {seen:?}",
        path.display()
    );
}

fn layers_of(changes: &[LayerChange], path: &Path) -> Vec<LayerName> {
    changes
        .iter()
        .filter(|c| c.paths.iter().any(|p| p == path))
        .flat_map(|c| c.layers.iter().copied())
        .collect()
}

#[test]
fn editing_agents_md_marks_the_project_layer() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    fs::write(&agents, "Use tabs.\n").unwrap();
    let (watcher, rx) = watch(&f, "");
    assert!(watcher.watched().contains(&f.ws), "{:?}", watcher.watched());
    fs::write(&agents, "Use spaces.\n").unwrap();
    let changes = until_named(&rx, &agents);
    assert_eq!(layers_of(&changes, &agents), vec![LayerName::Project]);
}

#[test]
fn a_new_instruction_file_below_the_root_is_noticed() {
    let f = support::empty();
    fs::create_dir_all(f.ws.join("crates/core")).unwrap();
    let (_watcher, rx) = watch(&f, "crates/core");
    let claude = f.ws.join("crates/core/CLAUDE.md");
    fs::write(&claude, "Run the tests.\n").unwrap();
    let changes = until_named(&rx, &claude);
    assert_eq!(layers_of(&changes, &claude), vec![LayerName::Project]);
}

#[test]
fn memory_and_skills_edits_name_their_layers() {
    let f = support::empty();
    fs::create_dir_all(f.home.join("skills")).unwrap();
    let (_watcher, rx) = watch(&f, "");
    let memory = f.home.join("MEMORY.md");
    fs::write(&memory, "- The user prefers short answers.\n").unwrap();
    assert_eq!(
        layers_of(&until_named(&rx, &memory), &memory),
        vec![LayerName::Memory]
    );
    let skill_dir = f.home.join("skills/deploy");
    fs::create_dir_all(&skill_dir).unwrap();
    let skill = skill_dir.join("SKILL.md");
    fs::write(&skill, "---\nname: deploy\ndescription: Ship it.\n---\nSteps.\n").unwrap();
    // The new skill's directory is reported; the file inside it may be too,
    // when the recursive watch is on it before the file is written.
    let changes = until_named(&rx, &skill_dir);
    assert_eq!(layers_of(&changes, &skill_dir), vec![LayerName::Skills]);
}

#[test]
fn unrelated_files_are_never_reported() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    fs::write(&agents, "Be brief.\n").unwrap();
    let (_watcher, rx) = watch(&f, "");
    let unrelated: Vec<PathBuf> = vec![
        f.ws.join("README.md"),
        f.ws.join("notes.txt"),
        f.home.join("config.toml"),
    ];
    for path in &unrelated {
        fs::write(path, "not part of the prompt\n").unwrap();
    }
    // Reading a watched file is not a change either.
    let _ = fs::read_to_string(&agents).unwrap();
    // A relevant edit afterwards: every batch up to it must be free of the
    // unrelated paths.
    fs::write(&agents, "Be thorough.\n").unwrap();
    let changes = until_named(&rx, &agents);
    for change in &changes {
        for path in &unrelated {
            assert!(
                !change.paths.contains(path),
                "{} was reported: {change:?}",
                path.display()
            );
        }
        assert_eq!(
            change.layers.iter().copied().collect::<Vec<_>>(),
            vec![LayerName::Project]
        );
    }
}
