//! The `shell` tool for real: bounded capture of a 100 MB output spilled
//! whole, the timeout and a cancel killing the command with its children,
//! git without a pager or an editor, secrets kept out of the command's
//! environment, the supervisor taking the command along when its parent is
//! killed by SIGKILL, and the start-up sweep. Limits are small so the test
//! stays fast; the 1 GB figure is the ignored measurement at the end. What
//! a command leaves behind with `setsid`, `nohup` or a double fork is in
//! `tools_shell_sweep`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strata::tooling::ToolStatus;
use strata::tools::sweep::{Proc, Record, sweep};
use strata::tools::{Progress, ShellLimits, ToolEnv, ToolOutput, shell};

const STRATA: &str = env!("CARGO_BIN_EXE_strata");

/// A workspace and a data directory, with the tool environment on them.
struct Sandbox {
    dir: tempfile::TempDir,
    env: ToolEnv,
}

impl Sandbox {
    fn new(supervised: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        let root = root.canonicalize().unwrap();
        let data = dir.path().join("data");
        let env = ToolEnv {
            root,
            allow_paths: Vec::new(),
            spill_dir: data.join("spill/session"),
            memory_file: data.join("MEMORY.md"),
            session: "1a2b3c4d".to_owned(),
            skills: Vec::new(),
            read_max_chars: 50_000,
            read_max_lines: 2_000,
            shell: ShellLimits {
                default_timeout_s: 20,
                max_timeout_s: 30,
                supervisor: supervised.then(|| PathBuf::from(STRATA)),
                registry: Some(data.join("groups")),
                sandbox: None,
                hidden_env: Vec::new(),
            },
            reads: Mutex::default(),
            keep_chars: 1_000,
        };
        Self { dir, env }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    async fn run(&self, command: &str) -> ToolOutput {
        shell::run(&self.env, "call_1", &json!({ "command": command }), quiet()).await
    }

    async fn run_with(&self, command: &str, timeout: u64, progress: Progress) -> ToolOutput {
        let args = json!({ "command": command, "timeout": timeout });
        shell::run(&self.env, "call_1", &args, progress).await
    }
}

fn quiet() -> Progress {
    Arc::new(|_: &str| {})
}

fn text(out: &ToolOutput) -> String {
    format!("{}{}", out.output.head, out.output.tail)
}

/// How long a test waits for what must happen (a command started, its
/// processes gone): a bound that only keeps a broken run from hanging.
const PATIENCE: Duration = Duration::from_secs(30);

/// The pids a command wrote to `file` (it may still be writing it).
fn pids_in(file: &Path) -> Vec<Proc> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let found: Vec<i32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if !found.is_empty() {
            return found.into_iter().filter_map(Proc::of).collect();
        }
        assert!(
            Instant::now() < deadline,
            "the command wrote no pids to {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`pids_in`] while the command runs.
async fn watch(file: &Path) -> Vec<Proc> {
    let file = file.to_owned();
    tokio::task::spawn_blocking(move || pids_in(&file)).await.unwrap()
}

/// Whether every process is gone (a zombie counts as gone), waiting up to
/// [`PATIENCE`].
fn all_gone(procs: &[Proc]) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while procs.iter().any(|p| p.is_alive()) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// `(pgrp, session)` of a process, from `/proc/<pid>/stat`.
fn group_and_session(pid: i32) -> (i32, i32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
    (fields[2].parse().unwrap(), fields[3].parse().unwrap())
}

fn registry_len(sandbox: &Sandbox) -> usize {
    let registry = sandbox.env.shell.registry.as_ref().unwrap();
    std::fs::read_dir(registry).map_or(0, Iterator::count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabytes_stay_under_the_caps_and_are_spilled_whole() {
    for supervised in [false, true] {
        let sandbox = Sandbox::new(supervised);
        let out = sandbox.run("head -c 100000000 /dev/zero | tr '\\0' a").await;
        assert_eq!(out.status, ToolStatus::Ok, "{}", text(&out));
        let o = &out.output;
        assert_eq!(o.head, "a".repeat(1_000));
        assert_eq!(o.tail, format!("{}\n[exit code 0]", "a".repeat(1_000)));
        assert_eq!(o.omitted_bytes, 100_000_000 - 2_000);
        assert_eq!(o.omitted_lines, 0);
        let spilled = o.spilled_to.as_deref().unwrap();
        assert_eq!(Path::new(spilled), sandbox.env.spill_dir.join("call_1.txt"));
        // One line of 10^8 characters, folded at 2,000: 49,999 newlines more.
        assert_eq!(std::fs::metadata(spilled).unwrap().len(), 100_049_999);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_output_is_whole_with_stdout_and_stderr_in_order_and_the_exit_code() {
    for supervised in [false, true] {
        let sandbox = Sandbox::new(supervised);
        let out = sandbox.run("echo one; echo two >&2; printf three; exit 3").await;
        assert_eq!(out.status, ToolStatus::Error);
        assert_eq!(text(&out), "one\ntwo\nthree\n[exit code 3]");
        assert!(!out.output.is_elided());
        assert!(!sandbox.env.spill_dir.exists());

        let out = sandbox.run("true").await;
        assert_eq!(
            (out.status, text(&out).as_str()),
            (ToolStatus::Ok, "(no output)\n[exit code 0]")
        );

        // SIGPIPE is at its default, as in a terminal (Rust ignores it).
        let out = sandbox.run("yes | head -1; echo ${PIPESTATUS[@]}").await;
        assert_eq!(text(&out), "y\n141 0\n[exit code 0]", "supervised {supervised}");

        let out = sandbox.run("echo dying; kill -TERM $$; echo never").await;
        assert_eq!(
            text(&out),
            "dying\n[killed by signal 15 (SIGTERM)]",
            "supervised {supervised}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_runs_in_the_workspace_with_no_input_in_its_own_group() {
    for supervised in [false, true] {
        let sandbox = Sandbox::new(supervised);
        let out = sandbox.run("pwd; readlink /proc/self/fd/0; cat").await;
        let root = sandbox.env.root.display();
        assert_eq!(text(&out), format!("{root}\n/dev/null\n[exit code 0]"));
        let (test_group, test_session) = group_and_session(std::process::id() as i32);
        let out = sandbox
            .run("cut -d' ' -f5,6 /proc/$$/stat; cut -d' ' -f5,6 /proc/self/stat")
            .await;
        let text = text(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], lines[1], "children share the command's group");
        let ids: Vec<i32> = lines[0].split(' ').map(|n| n.parse().unwrap()).collect();
        let (group, session) = (ids[0], ids[1]);
        assert_ne!(group, test_group);
        if supervised {
            // A session of its own: no controlling terminal to wait on.
            assert_eq!(session, group);
        } else {
            assert_eq!(session, test_session);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_and_its_children_are_killed_at_the_timeout() {
    for supervised in [false, true] {
        let sandbox = Sandbox::new(supervised);
        let pids = sandbox.path("pids");
        let command = format!(
            "echo started; sleep 600 & echo $$ $! > {}; sleep 600",
            pids.display()
        );
        let started = Instant::now();
        let (out, procs) = tokio::join!(sandbox.run_with(&command, 1, quiet()), watch(&pids));
        let took = started.elapsed();
        assert_eq!(out.status, ToolStatus::Error);
        let text = text(&out);
        assert!(text.starts_with("started\n[timed out after 1 s: "), "{text}");
        assert!(text.contains("at most 30 s"), "{text}");
        // Ended by its 1 s timeout, not by its 600 s sleep.
        assert!(took >= Duration::from_secs(1), "took {took:?}");
        assert!(took < Duration::from_secs(60), "took {took:?}");
        assert_eq!(procs.len(), 2, "bash and its background sleep");
        assert!(all_gone(&procs), "supervised {supervised}");
        assert_eq!(registry_len(&sandbox), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_finished_command_left_in_the_background_is_killed() {
    let sandbox = Sandbox::new(false);
    let pids = sandbox.path("pids");
    let command = format!(
        "sleep 600 > /dev/null 2>&1 & echo $! > {}; echo done",
        pids.display()
    );
    let (out, procs) = tokio::join!(sandbox.run_with(&command, 10, quiet()), watch(&pids));
    assert_eq!(text(&out), "done\n[exit code 0]");
    assert_eq!(procs.len(), 1);
    assert!(all_gone(&procs));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_call_kills_the_command_and_its_children() {
    for supervised in [false, true] {
        let sandbox = Sandbox::new(supervised);
        let pids = sandbox.path("pids");
        let command = format!("sleep 600 & echo $$ $! > {}; wait", pids.display());
        // Dropped once both processes run.
        let mut call = Box::pin(sandbox.run_with(&command, 30, quiet()));
        let procs = tokio::select! {
            out = &mut call => panic!("the command ended by itself: {}", text(&out)),
            procs = watch(&pids) => procs,
        };
        drop(call);
        assert_eq!(procs.len(), 2);
        assert!(all_gone(&procs), "supervised {supervised}");
        assert_eq!(registry_len(&sandbox), 0, "the record goes with the group");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_group_is_recorded_for_the_sweep_until_it_ends() {
    let sandbox = Sandbox::new(true);
    let registry = sandbox.env.shell.registry.clone().unwrap();
    let out = sandbox
        .run(&format!("ls {}; echo $PPID", registry.display()))
        .await;
    let text = text(&out);
    let lines: Vec<&str> = text.lines().collect();
    // The record named the group: the supervisor's pid and start time.
    let (pgid, _) = lines[0].split_once('-').unwrap();
    assert_eq!(pgid, lines[1], "the group is the supervisor's");
    assert_eq!(registry_len(&sandbox), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_log_does_not_wait_for_a_pager_nor_git_commit_for_an_editor() {
    let sandbox = Sandbox::new(false);
    let root = &sandbox.env.root;
    let git = |args: &[&str]| {
        let status = Command::new("git").args(args).current_dir(root).status().unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.name", "Tester"]);
    git(&["config", "user.email", "tester@example.com"]);
    git(&["config", "core.pager", "less"]);
    let mut stream = String::new();
    for i in 1..=500 {
        let message = format!("commit number {i}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\ncommitter Tester <tester@example.com> {} +0000\ndata {}\n{message}\n",
            1_700_000_000 + i,
            message.len()
        ));
    }
    let mut import = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(root)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(import.stdin.as_mut().unwrap(), stream.as_bytes()).unwrap();
    drop(import.stdin.take());
    assert!(import.wait().unwrap().success());

    let out = sandbox
        .run_with(
            "git log | head -3; git log --oneline | wc -l; git var GIT_PAGER; git var GIT_EDITOR; git commit --allow-empty",
            30,
            quiet(),
        )
        .await;
    let text = text(&out);
    // Nothing waited for a terminal: the command ended by itself.
    assert!(!text.contains("[timed out"), "{text}");
    assert!(text.starts_with("commit "), "{text}");
    assert!(text.contains("\n500\ncat\ntrue\n"), "{text}");
    assert!(
        text.contains("Aborting commit due to empty commit message"),
        "{text}"
    );
    assert!(text.ends_with("[exit code 1]"), "{text}");
}

/// Run by [`planted_secrets_do_not_reach_the_command`] in a child process
/// whose environment holds the planted secrets; does nothing otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by planted_secrets_do_not_reach_the_command"]
async fn env_probe() {
    let Some(report) = std::env::var_os("STRATA_TEST_ENV_REPORT") else {
        return;
    };
    let planted = std::env::var("OPENAI_API_KEY").is_ok_and(|k| k.contains("planted"));
    let mut seen = format!("the probe has the key: {planted}\n");
    for supervised in [false, true] {
        let sandbox = Sandbox::new(supervised);
        seen.push_str(&text(&sandbox.run("env").await));
        seen.push('\n');
    }
    std::fs::write(report, seen).unwrap();
}

#[test]
fn planted_secrets_do_not_reach_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("env.txt");
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "tools_shell::env_probe",
            "--ignored",
            "--test-threads=1",
            "--quiet",
        ])
        .env("STRATA_TEST_ENV_REPORT", &report)
        .env("OPENAI_API_KEY", "sk-planted-1234")
        .env("MY_SECRET", "planted-secret")
        .env("github_token", "planted-token")
        .env("Db_Password", "planted-password")
        .env("PAGER", "less")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let seen = std::fs::read_to_string(&report).unwrap();
    assert!(seen.starts_with("the probe has the key: true\n"), "{seen}");
    assert!(!seen.contains("planted-"), "{seen}");
    for kept in [
        "PATH=",
        "PAGER=cat",
        "GIT_PAGER=cat",
        "GIT_EDITOR=true",
        "GIT_TERMINAL_PROMPT=0",
    ] {
        assert_eq!(seen.matches(&format!("\n{kept}")).count(), 2, "{kept} in {seen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_gets_the_latest_lines_as_they_arrive() {
    let sandbox = Sandbox::new(false);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&lines);
    let progress: Progress = Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned()));
    let started = Instant::now();
    sandbox
        .run_with(
            "for i in 1 2 3; do echo line$i; sleep 0.3; done; for i in $(seq 5000); do echo fast$i; done",
            10,
            progress,
        )
        .await;
    let took = started.elapsed().as_secs_f64();
    let lines = lines.lock().unwrap();
    assert_eq!(&lines[..3], ["line1", "line2", "line3"]);
    assert_eq!(lines.last().map(String::as_str), Some("fast5000"));
    assert!(
        lines.len() as f64 <= took * 10.0 + 2.0,
        "{} reports in {took} s",
        lines.len()
    );
}

#[test]
fn the_supervisor_runs_nothing_when_its_parent_is_already_gone() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let out = Command::new(STRATA)
        .args(strata::tools::supervisor::args(
            1,
            &format!("touch {}", marker.display()),
            false,
            None,
        ))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(i32::from(strata::tools::supervisor::SETUP_FAILED))
    );
    assert!(!marker.exists());
}

#[test]
fn a_parent_killed_by_sigkill_takes_its_supervised_command_along() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let command = format!("sleep 600 & echo $! > {}; wait", pids.display());
    // A parent that runs the supervisor the way strata does, and is then
    // killed by SIGKILL.
    let mut parent = Command::new("bash")
        .arg("-c")
        .arg(r#""$1" __supervise --parent $$ -- "$2" & wait"#)
        .args(["parent", STRATA, &command])
        .spawn()
        .unwrap();
    let sleep = pids_in(&pids);
    assert_eq!(sleep.len(), 1);
    let (group, session) = group_and_session(sleep[0].pid);
    let supervisor = Proc::of(group).unwrap();
    assert_eq!(session, group, "the supervisor made its own session");
    parent.kill().unwrap();
    parent.wait().unwrap();
    assert!(all_gone(&[sleep[0], supervisor]));
}

#[test]
fn the_sweep_kills_a_recorded_live_group_and_ignores_a_stale_record() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("groups");
    let spawn_group = || {
        use std::os::unix::process::CommandExt;
        Command::new("sleep").arg("600").process_group(0).spawn().unwrap()
    };
    let me = Proc::current().unwrap();
    // An owner that no longer runs: this pid with another start time.
    let dead_owner = Proc {
        started: me.started + 1,
        ..me
    };
    let mut live = spawn_group();
    let live_proc = Proc::of(live.id() as i32).unwrap();
    let mut other = spawn_group();
    let other_proc = Proc::of(other.id() as i32).unwrap();
    // The same pid with another start time: a group that ended, its pid reused.
    let stale = Proc {
        started: other_proc.started + 1,
        ..other_proc
    };
    let records = [
        Record::create(&registry, live_proc, dead_owner).unwrap(),
        Record::create(&registry, stale, dead_owner).unwrap(),
        Record::create(
            &registry,
            Proc {
                pid: i32::MAX - 7,
                started: 3,
            },
            dead_owner,
        )
        .unwrap(),
    ];
    assert_eq!(sweep(&registry), 1);
    assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 0);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(live.wait().unwrap().signal(), Some(9));
    assert!(other_proc.is_alive());
    other.kill().unwrap();
    other.wait().unwrap();
    drop(records);
}

/// The benchmark figure: time and peak memory while a command prints 1 GB
/// (`cargo test --release --test tools_shell -- --ignored --nocapture gigabyte`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: 1 GB through the pipe"]
async fn a_gigabyte_costs_what_the_cap_costs() {
    let mut sandbox = Sandbox::new(true);
    sandbox.env.keep_chars = 50_000;
    let peak = || {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap()
    };
    let before = peak();
    let started = Instant::now();
    let out = sandbox.run("head -c 1000000000 /dev/zero | tr '\\0' a").await;
    let took = started.elapsed();
    let grew_kb = peak().saturating_sub(before);
    eprintln!("1 GB: {took:?}, peak RSS grew {grew_kb} kB");
    assert_eq!(out.output.omitted_bytes, 1_000_000_000 - 100_000);
    assert!(grew_kb < 50 * 1024);
}
