//! What the shell's supervisor costs at the end of a command that left
//! nothing behind (issue 28, target ≤ 2 ms): the sweep itself in a process
//! with no child (one `waitpid`), and the whole command `true` run through
//! `strata __supervise` against `bash -c true` run directly.
//!
//! Run: `cargo bench --bench sweep` (a plain program: it prints its
//! figures).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use strata::tools::reaper;

const SWEEPS: u32 = 10_000;
const COMMANDS: usize = 60;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn timed(mut command: impl FnMut() -> Command) -> Duration {
    let times = (0..COMMANDS)
        .map(|_| {
            let started = Instant::now();
            let status = command()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            started.elapsed()
        })
        .collect();
    median(times)
}

fn main() {
    let started = Instant::now();
    let mut killed = 0;
    for _ in 0..SWEEPS {
        killed += reaper::sweep(None);
    }
    assert_eq!(killed, 0, "the bench has no child to sweep");
    let per_sweep = started.elapsed() / SWEEPS;
    println!(
        "sweep with no descendant: {:.1} µs ({SWEEPS} sweeps)",
        per_sweep.as_secs_f64() * 1e6
    );

    let me = std::process::id().to_string();
    let supervised = timed(|| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
        c.args(["__supervise", "--parent", &me, "--", "true"]);
        c
    });
    let direct = timed(|| {
        let mut c = Command::new("bash");
        c.args(["-c", "true"]);
        c
    });
    println!(
        "`true` supervised: {:.2} ms, bash directly: {:.2} ms, the supervisor adds {:.2} ms (median of {COMMANDS})",
        supervised.as_secs_f64() * 1e3,
        direct.as_secs_f64() * 1e3,
        supervised.saturating_sub(direct).as_secs_f64() * 1e3
    );
}
