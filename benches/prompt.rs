//! Prompt assembly (DESIGN §12: ≤ 5 ms warm) with 100 skills and 10
//! instruction files: gather + assemble with a fresh skills cache (cold) and
//! with the cache present (warm), and assemble alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::fs;
use std::hint::black_box;
use std::path::Path;
use strata::domain::PromptMode;
use strata::prompt::{EnvFacts, InstructionPolicy, PromptSettings, ToolFacts, assemble};
use strata::tokens::{Encoding, TiktokenCounter, TokenCounter};
use strata::workspace::{GatherRequest, SKILLS_CACHE_FILE, gather};

const CATEGORIES: [&str; 5] = ["coding", "writing", "ops", "data", "review"];

fn instruction_text(n: usize) -> String {
    let mut s = format!("# Instructions {n}\n\n");
    for i in 0..40 {
        s.push_str(&format!(
            "- Rule {n}.{i}: keep functions small, test behaviour, and document public items.\n"
        ));
    }
    s
}

/// A home with 100 skills and a repository whose working directory sees 10
/// instruction files under the `all` policy.
fn setup(home: &Path, ws: &Path) {
    for i in 0..100 {
        let dir = home.join(format!("skills/skill-{i:03}"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:03}\ndescription: Does task number {i} carefully, with checks at each step and a summary at the end\ncategory: {}\n---\n\n# Skill {i}\n\nSteps...\n",
                CATEGORIES[i % 5]
            ),
        )
        .unwrap();
    }
    fs::write(home.join("SOUL.md"), "You are a careful assistant.").unwrap();
    fs::write(home.join("MEMORY.md"), "- Remember the build uses cargo.").unwrap();
    fs::write(home.join("USER.md"), "- The user prefers short answers.").unwrap();

    fs::create_dir_all(ws.join(".git")).unwrap();
    fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let deep = ws.join("a/b");
    fs::create_dir_all(&deep).unwrap();
    fs::create_dir_all(ws.join(".cursor/rules")).unwrap();
    let files = [
        ws.join("STRATA.md"),
        ws.join("AGENTS.md"),
        ws.join("CLAUDE.md"),
        ws.join(".cursorrules"),
        ws.join(".cursor/rules/one.mdc"),
        ws.join(".cursor/rules/two.mdc"),
        ws.join("a/AGENTS.md"),
        ws.join("a/CLAUDE.md"),
        deep.join("AGENTS.md"),
        deep.join("CLAUDE.md"),
    ];
    for (n, path) in files.iter().enumerate() {
        fs::write(path, instruction_text(n)).unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    setup(home.path(), ws.path());
    let request = GatherRequest {
        cwd: ws.path().join("a/b"),
        config_dir: home.path().to_path_buf(),
        data_dir: data.path().to_path_buf(),
        settings: PromptSettings {
            instruction_files: InstructionPolicy::All,
            ..PromptSettings::default()
        },
        mode: PromptMode::Full,
        context_window: Some(128_000),
        model: "gpt-4o".to_owned(),
        provider: "openai".to_owned(),
        session_date: "Sunday, November 29, 2026".to_owned(),
        time_zone: "UTC".to_owned(),
        interactive: true,
        env: EnvFacts::from_process(),
        tools: ToolFacts {
            enabled: true,
            native: true,
            listing: None,
        },
        ..GatherRequest::default()
    };
    let counter = TiktokenCounter::new(Encoding::O200kBase, true);
    counter.count("warm the tokenizer up");

    let first = assemble(&gather(&request), &counter);
    let project = first
        .layers
        .iter()
        .find(|l| l.name == strata::domain::LayerName::Project)
        .unwrap();
    assert_eq!(project.sources.len(), 10, "ten instruction files");
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);

    let mut group = c.benchmark_group("prompt");
    group.sample_size(20);
    group.bench_function("gather+assemble warm (100 skills, 10 files)", |b| {
        b.iter(|| black_box(assemble(&gather(&request), &counter)));
    });
    let cache = data.path().join(SKILLS_CACHE_FILE);
    group.bench_function("gather+assemble cold (100 skills, 10 files)", |b| {
        b.iter_batched(
            || {
                let _ = fs::remove_file(&cache);
            },
            |()| black_box(assemble(&gather(&request), &counter)),
            BatchSize::PerIteration,
        );
    });
    let inputs = gather(&request);
    group.bench_function("assemble only", |b| {
        b.iter(|| black_box(assemble(&inputs, &counter)));
    });
    let text = first.text.clone();
    group.bench_function(
        format!("count tokens of the prompt ({} bytes)", text.len()),
        |b| {
            b.iter(|| black_box(counter.count(&text)));
        },
    );
    group.bench_function("gather only (warm)", |b| {
        b.iter(|| black_box(gather(&request)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
