//! Session open to all three real MCP servers ready (issue 12):
//! `Runtime::start_mcp` of `mcp-server-time` (Python),
//! `@modelcontextprotocol/server-everything` and
//! `@modelcontextprotocol/server-filesystem` (Node), each held by `strata
//! __supervise` as in the app, until every one has answered `initialize`
//! and `tools/list`; each server alone, for which one sets the pace; and
//! stopping the three (`McpSession::shutdown`: stdin closed, exit awaited,
//! the groups killed).
//!
//! The servers are the ones `scripts/install-mcp-servers.sh` installs
//! (missing ones skip the bench, and fail it when `CI=true`). Each start is
//! a second or so, so the groups take 10 samples of one start each; besides
//! criterion's estimate the bench prints p50 / p95 / max of those samples
//! (the first, warm-up start left out).
//!
//! Run: `cargo bench --bench mcp_start`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/support/mod.rs"]
mod support;
use support::mcp as mcp_support;
#[path = "support/stats.rs"]
mod stats;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use std::cell::RefCell;
use std::path::Path;
use std::time::{Duration, Instant};
use strata::config::{Config, McpConfig, Paths};
use strata::runtime::Runtime;

/// Tools the three servers list at the pinned versions (2 + 13 + 14).
const ALL_TOOLS: usize = 29;

/// `[mcp.servers.*]` for the servers in `only` (all three when empty),
/// the filesystem one allowed `dir`.
fn mcp_config(servers: &[std::path::PathBuf; 3], dir: &Path, only: &str) -> McpConfig {
    let [time, everything, filesystem] = servers;
    let sections = [
        ("time", format!("command = {:?}\n", time.to_str().unwrap())),
        (
            "everything",
            format!("command = {:?}\n", everything.to_str().unwrap()),
        ),
        (
            "filesystem",
            format!(
                "command = {:?}\nargs = [{:?}]\n",
                filesystem.to_str().unwrap(),
                dir.to_str().unwrap()
            ),
        ),
    ];
    let text: String = sections
        .iter()
        .filter(|(name, _)| only.is_empty() || *name == only)
        .map(|(name, body)| format!("[mcp.servers.{name}]\n{body}\n"))
        .collect();
    Config::parse(&text).unwrap().config.mcp
}

/// Prints p50 / p95 / max of `samples` in milliseconds, the first
/// (criterion's warm-up run) left out.
fn report(what: &str, samples: &RefCell<Vec<Duration>>) {
    let mut samples = samples.take();
    if samples.len() > 1 {
        samples.remove(0);
    }
    println!("{what}: {}", stats::percentiles(samples));
}

fn bench(c: &mut Criterion) {
    let Some(servers) = support::locate::mcp_servers() else {
        println!("skipped: {}", support::needs::MCP_SERVERS);
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let allowed = ws.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let mut runtime = Runtime::open(Paths::under(home.path()), Config::default()).unwrap();
    // As in the app: every server runs below `strata __supervise`.
    runtime.supervisor = Some(env!("CARGO_BIN_EXE_strata").into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let env = |name: &str| std::env::var(name).ok();

    let mut group = c.benchmark_group("mcp_start");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    for (label, only, tools) in [
        ("three_servers_ready", "", ALL_TOOLS),
        ("time_ready", "time", 2),
        ("everything_ready", "everything", 13),
        ("filesystem_ready", "filesystem", 14),
    ] {
        let config = mcp_config(&servers, &allowed, only);
        let samples = RefCell::new(Vec::new());
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    let session = rt.block_on(runtime.start_mcp(&config, ws.path(), &env)).unwrap();
                    let took = started.elapsed();
                    let listed: usize = session.groups().iter().map(|(_, t)| t.len()).sum();
                    assert_eq!(
                        (listed, session.unavailable()),
                        (tools, &[][..]),
                        "{label}: every server ready"
                    );
                    rt.block_on(session.shutdown());
                    samples.borrow_mut().push(took);
                    total += took;
                }
                total
            });
        });
        report(&format!("{label} (start until ready)"), &samples);
    }

    let config = mcp_config(&servers, &allowed, "");
    let samples = RefCell::new(Vec::new());
    group.bench_function("three_servers_stop", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let session = rt.block_on(runtime.start_mcp(&config, ws.path(), &env)).unwrap();
                let started = Instant::now();
                rt.block_on(session.shutdown());
                let took = started.elapsed();
                samples.borrow_mut().push(took);
                total += took;
            }
            total
        });
    });
    report("three_servers_stop (shutdown)", &samples);
    group.finish();
    let left = mcp_support::processes_with(allowed.to_str().unwrap());
    assert!(left.is_empty(), "servers left running: {left:?}");
}

criterion_group!(benches, bench);
criterion_main!(benches);
