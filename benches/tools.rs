//! The built-in tools under load (issue 11): `grep` over a generated
//! 100,000-file tree against `rg` on the same tree (target ≥ 0.5× its
//! speed), and the peak RSS of strata while `shell` captures a command that
//! prints 1 GB (target ≤ 50 MB above idle).
//!
//! Run: `cargo bench --bench tools` (a plain program: it prints its
//! figures). `rg` is compared with when it is on `PATH`; the tree is
//! built once in a temporary directory (about 400 MB).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strata::tools::edit::ReadLog;
use strata::tools::{ShellLimits, ToolEnv};

const FILES: usize = 100_000;
const RUNS: usize = 5;

fn env(root: &Path, spill: &Path) -> ToolEnv {
    ToolEnv {
        root: root.to_path_buf(),
        allow_paths: Vec::new(),
        spill_dir: spill.to_path_buf(),
        memory_file: spill.join("MEMORY.md"),
        session: "1a2b3c4d".to_owned(),
        skills: Vec::new(),
        read_max_chars: 50_000,
        read_max_lines: 2_000,
        shell: ShellLimits::default(),
        reads: Mutex::new(ReadLog::default()),
        keep_chars: 50_000,
    }
}

/// 100,000 source-like files of about 4 KB in 1,000 directories; one line
/// in 97 files holds the needle.
fn build_tree(root: &Path) {
    let filler: String = (0..60)
        .map(|i| format!("    let value_{i} = compute(input, {i}); // keeps the parser honest\n"))
        .collect();
    for d in 0..1_000 {
        let dir = root.join(format!("module_{d:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES / 1_000 {
            let n = d * 100 + f;
            let needle = if n % 97 == 0 {
                "    // FIXME_NEEDLE: revisit\n"
            } else {
                ""
            };
            std::fs::write(
                dir.join(format!("file_{f:03}.rs")),
                format!("fn f{n}() {{\n{filler}{needle}}}\n"),
            )
            .unwrap();
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("tree");
    let spill = dir.path().join("spill");
    std::fs::create_dir_all(&spill).unwrap();
    let started = Instant::now();
    build_tree(&root);
    println!("built {FILES} files in {:.1} s", started.elapsed().as_secs_f64());
    let env = Arc::new(env(&root, &spill));

    // grep: ours through the tool's handler, rg as a process, alternating.
    let args = json!({"pattern": "FIXME_NEEDLE", "max_results": 1000});
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let rg = std::process::Command::new("rg").arg("--version").output().is_ok();
    for _ in 0..RUNS {
        let t = Instant::now();
        let out = strata::tools::search::grep(&env, &args);
        ours.push(t.elapsed());
        assert!(out.output.head.contains("FIXME_NEEDLE"));
        if rg {
            let t = Instant::now();
            let out = std::process::Command::new("rg")
                .args(["-n", "FIXME_NEEDLE"])
                .current_dir(&root)
                .output()
                .unwrap();
            theirs.push(t.elapsed());
            assert!(out.status.success());
        }
    }
    let ours = median(ours);
    println!(
        "grep over {FILES} files: median {:.0} ms",
        ours.as_secs_f64() * 1e3
    );
    if rg {
        let theirs = median(theirs);
        println!(
            "rg -n over the same tree: median {:.0} ms → strata at {:.2}× rg's speed",
            theirs.as_secs_f64() * 1e3,
            theirs.as_secs_f64() / ours.as_secs_f64()
        );
    } else {
        println!("rg is not on PATH: no comparison");
    }

    // shell printing 1 GB: the capture keeps head and tail, spills the rest.
    let idle = peak_rss_kb();
    let t = Instant::now();
    let progress: strata::tools::Progress = Arc::new(|_: &str| {});
    let out = strata::tools::run(
        Arc::clone(&env),
        "gigabyte".into(),
        "shell".into(),
        json!({"command": "head -c 1000000000 /dev/zero | tr '\\0' a", "timeout": 600}),
        progress,
    )
    .await;
    let took = t.elapsed();
    let grew = peak_rss_kb().saturating_sub(idle);
    let spilled = out
        .output
        .spilled_to
        .as_deref()
        .map_or(0, |p| std::fs::metadata(p).map_or(0, |m| m.len()));
    println!(
        "shell printing 1 GB: {:.1} s, spilled {} bytes, peak RSS {:.1} MB above idle ({:.1} MB)",
        took.as_secs_f64(),
        spilled,
        grew as f64 / 1024.0,
        idle as f64 / 1024.0
    );
}
