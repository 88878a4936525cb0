//! The shell's sandbox (issue 27): what it adds to each command, from the
//! supervisor's start to bash's end (`strata __supervise … -- true`, with
//! and without `--sandbox`; target ≤ 5 ms added), the protected-file check
//! on a workspace with 50 hooks and the instruction files (a snapshot and
//! the restore that finds nothing to do; target ≤ 5 ms), and a cargo build
//! of a zero-dependency crate inside the sandbox with the default
//! `CARGO_HOME` (`~/.cargo/registry` and `~/.cargo/git` writable, as
//! docs/sandbox.md says).
//!
//! Run: `cargo bench --bench sandbox` (a plain program: it prints its
//! figures). Needs Landlock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use strata::tooling::sandbox::Mode;
use strata::tools::protect::Snapshot;
use strata::tools::sandbox::Spec;

const STRATA: &str = env!("CARGO_BIN_EXE_strata");
const RUNS: usize = 40;

fn supervised(spec: Option<&Spec>, command: &str, cwd: &Path) -> Duration {
    let started = Instant::now();
    let out = Command::new(STRATA)
        .args(strata::tools::supervisor::args(
            std::process::id(),
            command,
            false,
            spec,
        ))
        .current_dir(cwd)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn spec(root: &Path, tmp: &Path, extra: &[PathBuf]) -> Spec {
    let mut writable = vec![
        root.to_path_buf(),
        tmp.to_path_buf(),
        "/dev/shm".into(),
        "/dev/null".into(),
    ];
    writable.extend(extra.iter().cloned());
    Spec {
        mode: Mode::WorkspaceWrite,
        network: false,
        required: true,
        writable,
        protect: Some(root.to_path_buf()),
    }
}

fn workspace_with_hooks(root: &Path) {
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    for i in 0..50 {
        std::fs::write(
            root.join(format!(".git/hooks/hook-{i:02}.sample")),
            "#!/bin/sh\n# a sample hook of about a kilobyte\n".repeat(25),
        )
        .unwrap();
    }
    for name in strata::prompt::INSTRUCTION_FILE_NAMES {
        std::fs::write(root.join(name), "Instructions.\n".repeat(200)).unwrap();
    }
    std::fs::write(root.join(".mcp.json"), "{\"mcpServers\":{}}").unwrap();
    std::fs::create_dir_all(root.join(".strata")).unwrap();
    std::fs::write(root.join(".strata/notes.md"), "x").unwrap();
}

fn main() {
    assert!(
        strata::tools::sandbox::support().available(),
        "this kernel has no Landlock"
    );
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    workspace_with_hooks(&root);

    // Warm the page cache and the binary.
    let confined = spec(&root, &tmp, &[]);
    for _ in 0..5 {
        supervised(None, "true", &root);
        supervised(Some(&confined), "true", &root);
    }
    let plain = median((0..RUNS).map(|_| supervised(None, "true", &root)).collect());
    let sandboxed = median(
        (0..RUNS)
            .map(|_| supervised(Some(&confined), "true", &root))
            .collect(),
    );
    println!(
        "supervisor start to bash end (`true`, median of {RUNS}): without sandbox {:.2} ms, with sandbox {:.2} ms (incl. the protected-file check), added {:.2} ms (target <= 5 ms)",
        plain.as_secs_f64() * 1e3,
        sandboxed.as_secs_f64() * 1e3,
        (sandboxed.as_secs_f64() - plain.as_secs_f64()) * 1e3
    );

    let mut checks = Vec::new();
    let mut entries = 0;
    for _ in 0..100 {
        let started = Instant::now();
        let snapshot = Snapshot::take(&root);
        let restored = snapshot.restore();
        checks.push(started.elapsed());
        assert!(restored.is_empty());
        entries = snapshot.len();
    }
    println!(
        "protected-file check, 50 hooks + {} instruction files ({entries} paths), snapshot + restore: median {:.3} ms (target <= 5 ms)",
        strata::prompt::INSTRUCTION_FILE_NAMES.len(),
        median(checks).as_secs_f64() * 1e3
    );

    // A zero-dependency crate built inside the sandbox.
    let Some(home) = dirs::home_dir() else { return };
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(|| home.join(".cargo"), PathBuf::from);
    let krate = root.join("hello");
    let made = Command::new("cargo")
        .args(["new", "--quiet", "--vcs", "none"])
        .arg(&krate)
        .status();
    if !made.is_ok_and(|s| s.success()) {
        println!("cargo build in the sandbox: skipped (no cargo on PATH)");
        return;
    }
    let writable = [cargo_home.join("registry"), cargo_home.join("git")];
    let build = spec(&root, &tmp, &writable);
    let started = Instant::now();
    let out = Command::new(STRATA)
        .args(strata::tools::supervisor::args(
            std::process::id(),
            "cargo build --quiet --offline && ./target/debug/hello",
            false,
            Some(&build),
        ))
        .current_dir(&krate)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    println!(
        "cargo build of a zero-dependency crate in the sandbox (writable: {}/registry, {}/git): {} in {:.2} s{}",
        cargo_home.display(),
        cargo_home.display(),
        if out.status.success() { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64(),
        if out.status.success() {
            String::new()
        } else {
            format!(": {}", String::from_utf8_lossy(&out.stderr).trim())
        }
    );
}
