//! The skills index: descriptions cut to 60 characters, grouping, the
//! workspace winning a name clash, broken frontmatter, and the manifest-
//! validated metadata cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::prompt as support;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::time::Duration;
use strata::domain::LayerName;
use strata::prompt::{AssembledPrompt, assemble};
use strata::workspace::{GatherRequest, SKILLS_CACHE_FILE, gather};

fn build(req: &GatherRequest) -> AssembledPrompt {
    let p = assemble(&gather(req), &support::counter());
    support::assert_layer_invariants(&p);
    p
}

fn skills_text(p: &AssembledPrompt) -> &str {
    let l = p.layers.iter().find(|l| l.name == LayerName::Skills).unwrap();
    &p.text[l.start..l.end]
}

#[test]
fn descriptions_are_cut_to_sixty_characters() {
    let f = support::fixture();
    let p = build(&support::request(&f, ""));
    let line = skills_text(&p)
        .lines()
        .find(|l| l.starts_with("- release-notes: "))
        .unwrap();
    let description = line.strip_prefix("- release-notes: ").unwrap();
    assert_eq!(description.chars().count(), 60);
    assert_eq!(
        description,
        "Drafts release notes from merged pull requests, grouped b..."
    );
    assert!(skills_text(&p).contains("- code-review: Review a diff for bugs, style and missing tests\n"));
}

#[test]
fn broken_frontmatter_keeps_the_skill_by_its_directory_name_and_warns() {
    let f = support::fixture();
    let p = build(&support::request(&f, ""));
    assert!(skills_text(&p).contains("\n- broken\n"));
    let path = f.home.join("skills/broken/SKILL.md").display().to_string();
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains(&path) && w.contains("not valid YAML")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn a_workspace_skill_wins_a_name_clash() {
    let f = support::fixture();
    let dir = f.ws.join(".strata/skills/review");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        "---\nname: code-review\ndescription: Project-specific review checklist\n---\nBody\n",
    )
    .unwrap();
    let p = build(&support::request(&f, ""));
    let text = skills_text(&p);
    assert!(text.contains("- code-review: Project-specific review checklist"));
    assert_eq!(text.matches("- code-review").count(), 1);
    let layer = p.layers.iter().find(|l| l.name == LayerName::Skills).unwrap();
    assert!(
        layer
            .sources
            .iter()
            .any(|s| s.path == dir.join("SKILL.md").display().to_string())
    );
}

#[test]
fn skills_exist_only_in_full_mode() {
    let f = support::fixture();
    let mut req = support::request(&f, "");
    req.mode = strata::domain::PromptMode::Minimal;
    let p = build(&req);
    assert!(p.layers.iter().all(|l| l.name != LayerName::Skills));
    assert!(
        !f.data.join(SKILLS_CACHE_FILE).exists(),
        "minimal mode does not look for skills"
    );
}

/// Rewrites the cached description of the skill at `path` to `text`.
fn tamper_cache(f: &support::Fixture, path: &std::path::Path, text: &str) {
    let file = f.data.join(SKILLS_CACHE_FILE);
    let mut cache: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    let path = path.display().to_string();
    let entry = cache["entries"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["path"] == path.as_str())
        .unwrap();
    entry["description"] = text.into();
    fs::write(&file, serde_json::to_vec(&cache).unwrap()).unwrap();
}

#[test]
fn the_cache_is_used_while_the_manifest_matches_and_dropped_when_it_does_not() {
    let f = support::fixture();
    let req = support::request(&f, "");
    let skill = f.home.join("skills/code-review/SKILL.md");
    build(&req);
    assert!(f.data.join(SKILLS_CACHE_FILE).exists());

    // Unchanged file: the (tampered) cached metadata is what is shown.
    tamper_cache(&f, &skill, "FROM CACHE");
    assert!(skills_text(&build(&req)).contains("- code-review: FROM CACHE"));

    // A new mtime invalidates the entry.
    let original = fs::metadata(&skill).unwrap().modified().unwrap();
    File::options()
        .write(true)
        .open(&skill)
        .unwrap()
        .set_modified(original + Duration::from_secs(5))
        .unwrap();
    let text = build(&req);
    assert!(skills_text(&text).contains("- code-review: Review a diff for bugs"));

    // So does a new size, even with the mtime put back.
    tamper_cache(&f, &skill, "FROM CACHE");
    let mtime = fs::metadata(&skill).unwrap().modified().unwrap();
    let mut file = OpenOptions::new().append(true).open(&skill).unwrap();
    file.write_all(b"\nMore steps.\n").unwrap();
    file.set_modified(mtime).unwrap();
    drop(file);
    assert_eq!(fs::metadata(&skill).unwrap().modified().unwrap(), mtime);
    assert!(skills_text(&build(&req)).contains("- code-review: Review a diff for bugs"));
}

#[test]
fn a_corrupt_cache_is_ignored_and_rewritten() {
    let f = support::fixture();
    let req = support::request(&f, "");
    let cache = f.data.join(SKILLS_CACHE_FILE);
    fs::write(&cache, "{ not json").unwrap();
    let p = build(&req);
    assert!(skills_text(&p).contains("- code-review: Review a diff"));
    let rewritten: serde_json::Value = serde_json::from_slice(&fs::read(&cache).unwrap()).unwrap();
    assert_eq!(rewritten["entries"].as_array().unwrap().len(), 3);
}

#[test]
fn a_new_skill_appears_and_a_deleted_one_goes() {
    let f = support::fixture();
    let req = support::request(&f, "");
    build(&req);
    let dir = f.home.join("skills/sql-migrations");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        "---\nname: sql-migrations\ndescription: Write reversible migrations\ncategory: coding\n---\n",
    )
    .unwrap();
    fs::remove_dir_all(f.home.join("skills/release-notes")).unwrap();
    let text = build(&req);
    let text = skills_text(&text);
    assert!(text.contains("- sql-migrations: Write reversible migrations"));
    assert!(!text.contains("release-notes"));
    assert!(!text.contains("## writing"));
}

#[test]
fn an_unwritable_cache_only_warns() {
    let f = support::fixture();
    let mut req = support::request(&f, "");
    let blocker = f.data.join("not-a-dir");
    fs::write(&blocker, "").unwrap();
    req.data_dir = blocker.join("data");
    let p = build(&req);
    assert!(skills_text(&p).contains("- code-review"));
    assert!(
        p.warnings.iter().any(|w| w.contains("skills cache")),
        "{:?}",
        p.warnings
    );
}
