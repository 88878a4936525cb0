//! The layering rule of the design, checked on the source text: the pure core
//! (`tokens`, `prompt`, and later `pipeline`, `compress`, `conversation`)
//! uses no I/O, UI, clock or adapter module; the domain uses none either;
//! adapters do not use each other; `render`, a UI building block, uses UI
//! crates but no adapter, runtime, file system, network or process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// Paths that mean I/O, a clock, a process, the environment or a UI.
const IO_AND_UI: &[&str] = &[
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::io::stdin",
    "std::thread::sleep",
    "SystemTime::now",
    "Instant::now",
    "Zoned::now",
    "Timestamp::now",
    "tokio",
    "reqwest",
    "rusqlite",
    "notify::",
    "ratatui",
    "crossterm",
    "syntect",
    "println!",
    "eprintln!",
    "print!",
    "File::open",
];

/// Modules of layers above the core.
const ADAPTERS_AND_UP: &[&str] = &[
    "crate::store",
    "crate::workspace",
    "crate::config",
    "crate::provider",
    "crate::watch",
    "crate::runtime",
    "crate::tui",
];

const CORE: &[&str] = &["text", "tokens", "prompt", "pipeline", "compress", "conversation"];

/// Each `(module, forbidden)`: adapters may use the core and domain but not each other.
const ADAPTER_RULES: &[(&str, &[&str])] = &[
    (
        "store",
        &[
            "crate::workspace",
            "crate::config",
            "crate::provider",
            "crate::watch",
            "crate::runtime",
            "crate::tui",
        ],
    ),
    (
        "workspace",
        &[
            "crate::store",
            "crate::config",
            "crate::provider",
            "crate::watch",
            "crate::runtime",
            "crate::tui",
        ],
    ),
    (
        "config",
        &[
            "crate::store",
            "crate::workspace",
            "crate::provider",
            "crate::watch",
            "crate::runtime",
            "crate::tui",
        ],
    ),
];

/// The `.rs` files of module `name`: `src/name.rs` and everything under `src/name/`.
fn module_files(name: &str) -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let top = src.join(format!("{name}.rs"));
    if top.exists() {
        files.push(top);
    }
    let mut stack = vec![src.join(name)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files
}

/// Lines of `source` (outside comments and `#[cfg(test)]` modules) that
/// contain one of `forbidden`, as `(line number, pattern)`.
fn violations(source: &str, forbidden: &[&str]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let code = line.split("//").next().unwrap_or("");
        for pat in forbidden {
            if code.contains(pat) {
                found.push((i + 1, (*pat).to_owned()));
            }
        }
    }
    found
}

fn check(modules: &[&str], forbidden: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for m in modules {
        for file in module_files(m) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, pat) in violations(&text, forbidden) {
                problems.push(format!("{}:{line} uses `{pat}`", file.display()));
            }
        }
    }
    problems
}

#[test]
fn the_scanner_finds_a_planted_violation_and_ignores_comments_and_tests() {
    let planted = "use crate::store::Store;\n// std::fs in a comment\nfn f() { std::fs::read(\"x\"); }\n#[cfg(test)]\nmod tests { use std::fs; }\n";
    let found = violations(planted, &["std::fs", "crate::store"]);
    assert_eq!(
        found,
        vec![(1, "crate::store".to_owned()), (3, "std::fs".to_owned())]
    );
}

#[test]
fn core_modules_use_no_io_ui_clock_or_adapter() {
    let present: Vec<&str> = CORE
        .iter()
        .copied()
        .filter(|m| !module_files(m).is_empty())
        .collect();
    assert!(
        present.contains(&"tokens") && present.contains(&"prompt"),
        "core modules not found: {present:?}"
    );
    let mut forbidden = IO_AND_UI.to_vec();
    forbidden.extend_from_slice(ADAPTERS_AND_UP);
    let problems = check(&present, &forbidden);
    assert!(
        problems.is_empty(),
        "the core must stay pure:\n{}",
        problems.join("\n")
    );
}

#[test]
fn domain_uses_no_io_and_nothing_above_it() {
    let mut forbidden = IO_AND_UI.to_vec();
    forbidden.extend_from_slice(ADAPTERS_AND_UP);
    forbidden.extend(["crate::tokens", "crate::prompt"]);
    let problems = check(&["domain"], &forbidden);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// UI modules below the app: they may use ratatui, syntect and
/// pulldown-cmark, and threads, but reach no adapter or the runtime.
const UI_BLOCKS: &[&str] = &["render"];

const UI_BLOCK_FORBIDDEN: &[&str] = &[
    "crate::store",
    "crate::workspace",
    "crate::config",
    "crate::provider",
    "crate::watch",
    "crate::runtime",
    "crate::tui",
    "crate::cli",
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "tokio",
    "reqwest",
    "rusqlite",
    "notify::",
    "crossterm",
    "println!",
    "eprintln!",
    "File::open",
];

#[test]
fn ui_blocks_use_no_adapter_runtime_or_io() {
    for m in UI_BLOCKS {
        assert!(!module_files(m).is_empty(), "module {m} not found");
    }
    let problems = check(UI_BLOCKS, UI_BLOCK_FORBIDDEN);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn adapters_do_not_use_each_other() {
    let mut problems = Vec::new();
    for (module, forbidden) in ADAPTER_RULES {
        problems.extend(check(&[module], forbidden));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
