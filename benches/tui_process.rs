//! The full-screen app's targets (DESIGN §12, issue 5) as distributions and
//! whole-process figures, which criterion's means do not give:
//!
//! - key-to-frame with a 10,000-message session loaded: one key through
//!   `App::handle`, then one frame drawn at 120×36; p50 / p95 / p99 of 2,000
//!   keys (target p95 ≤ 8 ms);
//! - the same with the request inspector open on a 2M-token request
//!   (10,000 messages of OpenAI wire JSON, pretty-printed), paging and
//!   jumping through it, and the first frame after the request arrives;
//! - a frame of a 20,000-line reply streaming in: one delta, then the
//!   frame, 2,000 of them;
//! - the picker over 10,000 sessions: the store query the picker runs, the
//!   rows handed to the app, and the frame that shows them (target ≤ 50 ms);
//! - the real binary in tmux with a 10,000-message session: time from
//!   launch until the first frame with the session on screen (target
//!   ≤ 100 ms; tmux's own start is included), and peak RSS (target ≤ 150 MB).
//!   Skipped when tmux is not installed;
//! - the real binary in tmux opening a new session with the three real MCP
//!   servers configured (issue 12) and with none, rounds alternating: time
//!   from launch to the first frame and to the session on screen (neither
//!   may wait for the servers), and when the servers' supervisors appeared
//!   below strata. Skipped when tmux or the servers
//!   (`scripts/install-mcp-servers.sh`) are missing; missing servers fail
//!   it when `CI=true`.
//!
//! Run: `cargo bench --bench tui_process` (a plain program: it prints its
//! figures); `-- NAME...` runs only those of `keys`, `inspector`,
//! `streaming`, `picker`, `process`, `mcp`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};
use strata::domain::Role;
use strata::runtime::Op;
use strata::runtime::service::ServiceEvent;
use strata::store::{SessionQuery, Store};
use strata::tokens::TokenCounter;
use strata::tui::Effect;

#[path = "../tests/support/mod.rs"]
mod support;
use support::tui as tui_support;

use support::store as store_support;

use support::mcp as mcp_support;

const MESSAGES: usize = 10_000;
const SESSIONS: usize = 10_000;

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort_unstable();
    let at = |p: usize| samples[(samples.len() * p / 100).min(samples.len() - 1)];
    format!(
        "p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms · max {:.2} ms ({} samples)",
        at(50).as_secs_f64() * 1e3,
        at(95).as_secs_f64() * 1e3,
        at(99).as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3,
        samples.len()
    )
}

fn body(i: usize) -> String {
    format!(
        "Message {i}: the parser keeps a stack of open scopes; 日本語 text and emoji 🙂 mixed in. {}",
        "More words to wrap across several rows of the chat pane. ".repeat(1 + i % 7)
    )
}

fn key_to_frame() {
    let messages: Vec<_> = (0..MESSAGES)
        .map(|i| {
            let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
            tui_support::msg(role, &body(i), 40 + (i % 50) as u32)
        })
        .collect();
    let mut app = tui_support::app_with(120, 36, messages, None);
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    let mut samples = Vec::with_capacity(2_000);
    for n in 0..2_100u32 {
        let code = if n.is_multiple_of(20) {
            KeyCode::Backspace
        } else {
            KeyCode::Char('a')
        };
        let start = Instant::now();
        black_box(app.handle(tui_support::key(code)));
        terminal
            .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
            .unwrap();
        if n >= 100 {
            samples.push(start.elapsed());
        }
    }
    println!("key to frame, 10,000 messages, 120x36: {}", percentiles(samples));
}

fn inspector() {
    let json = tui_support::request_json(10_000);
    let bytes = json.len();
    let lines = json.lines().count();
    let tokens = strata::tokens::counter_for(strata::domain::ProviderKind::OpenAi, "gpt-4o").count(&json);
    let mut app = tui_support::inspecting(120, 36, String::new());
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    terminal
        .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
        .unwrap();
    let start = Instant::now();
    app.handle(ServiceEvent::Request(Box::new(strata::tui::RequestView {
        prepared_tokens: tokens as u64,
        json,
        report: Vec::new(),
    })));
    terminal
        .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
        .unwrap();
    let first = start.elapsed();
    let mut samples = Vec::with_capacity(2_000);
    let mut first_end = None;
    for n in 0..2_100u32 {
        let code = tui_support::inspector_key(n);
        let start = Instant::now();
        black_box(app.handle(tui_support::key(code)));
        terminal
            .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
            .unwrap();
        if code == KeyCode::End && first_end.is_none() {
            first_end = Some(start.elapsed());
        }
        if n >= 100 {
            samples.push(start.elapsed());
        }
    }
    println!(
        "request inspector, {:.1} MB / {lines} lines of JSON ({:.2}M tokens, o200k): request to first frame \
         {:.2} ms, first End {:.2} ms",
        bytes as f64 / 1e6,
        tokens as f64 / 1e6,
        first.as_secs_f64() * 1e3,
        first_end.unwrap_or_default().as_secs_f64() * 1e3
    );
    println!(
        "key to frame, request inspector, 120x36: {}",
        percentiles(samples)
    );
}

fn streaming() {
    let reply = tui_support::long_reply(20_000);
    let lines = reply.lines().count();
    let mut app = tui_support::app_with(120, 36, Vec::new(), None);
    app.handle(ServiceEvent::Delta {
        text: reply,
        now_ms: 0,
    });
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    let mut samples = Vec::with_capacity(2_000);
    for n in 0..2_100usize {
        let start = Instant::now();
        black_box(app.handle(ServiceEvent::Delta {
            text: tui_support::stream_delta(n).to_owned(),
            now_ms: n as i64,
        }));
        terminal
            .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
            .unwrap();
        if n >= 100 {
            samples.push(start.elapsed());
        }
    }
    println!(
        "delta to frame, {lines}-line reply streaming, 120x36: {}",
        percentiles(samples)
    );
}

fn picker() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("strata.db")).unwrap();
    for i in 0..SESSIONS {
        let (s, p) = store_support::session(
            &format!("/projects/p{}", i % 20),
            &format!("Session {i} about the parser"),
        );
        store.create_session(&s, &p).unwrap();
    }
    let mut app = tui_support::app_with(120, 36, Vec::new(), None);
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    let mut samples = Vec::new();
    for _ in 0..30 {
        let start = Instant::now();
        let effects = app.handle(tui_support::ctrl('o'));
        let ticket = effects
            .iter()
            .find_map(|e| match e {
                Effect::Op(Op::ListSessions { ticket, .. }) => Some(*ticket),
                _ => None,
            })
            .expect("the picker asks for sessions");
        let rows = store
            .list_sessions(&SessionQuery {
                search: None,
                workspace: None,
                limit: Some(500),
            })
            .unwrap();
        app.handle(ServiceEvent::Sessions { ticket, rows });
        terminal
            .draw(|f| strata::tui::draw(&app, f.area(), f.buffer_mut()))
            .unwrap();
        samples.push(start.elapsed());
        app.handle(tui_support::key(KeyCode::Esc));
    }
    println!(
        "picker over 10,000 sessions (query + rows + frame): {}",
        percentiles(samples)
    );
    let start = Instant::now();
    let found = store
        .list_sessions(&SessionQuery {
            search: Some("parser".into()),
            workspace: None,
            limit: Some(500),
        })
        .unwrap();
    println!(
        "picker search 'parser' over 10,000 sessions: {:.2} ms ({} rows)",
        start.elapsed().as_secs_f64() * 1e3,
        found.len()
    );
}

fn tmux(socket: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .args(["-L", socket, "-f", "/dev/null"])
        .args(args)
        .output()
        .unwrap()
}

fn peak_rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn whole_process() {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("whole-process figures skipped: tmux is not installed");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let messages: Vec<serde_json::Value> = (0..MESSAGES)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": body(i)})
        })
        .collect();
    let file = home.path().join("history.json");
    std::fs::write(&file, serde_json::to_string(&messages).unwrap()).unwrap();
    let bin = env!("CARGO_BIN_EXE_strata");
    let run = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .current_dir(ws.path())
            .env("STRATA_HOME", home.path())
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .unwrap()
    };
    let imported = run(&["--provider", "openai", "import", file.to_str().unwrap()]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let socket = format!("strata-bench-{}", std::process::id());
    let mut firsts = Vec::new();
    let mut starts = Vec::new();
    let mut rss = Vec::new();
    for round in 0..5 {
        let name = format!("s{round}");
        let command = format!(
            "cd {} && STRATA_HOME={} OPENAI_API_KEY=sk-bench {bin} --provider openai --continue",
            ws.path().display(),
            home.path().display()
        );
        let start = Instant::now();
        let out = tmux(
            &socket,
            &[
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "120",
                "-y",
                "36",
                &command,
            ],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut first = None;
        loop {
            let screen = String::from_utf8_lossy(&tmux(&socket, &["capture-pane", "-p", "-t", &name]).stdout)
                .into_owned();
            if first.is_none() && screen.contains("strata") {
                first = Some(start.elapsed());
            }
            if screen.contains("Message 9999") {
                firsts.extend(first);
                starts.push(start.elapsed());
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "no frame:\n{screen}");
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_secs(2));
        let pid =
            String::from_utf8_lossy(&tmux(&socket, &["list-panes", "-t", &name, "-F", "#{pane_pid}"]).stdout)
                .trim()
                .to_owned();
        if let Some(kib) = peak_rss_kib(&pid) {
            rss.push(kib);
        }
        tmux(&socket, &["kill-session", "-t", &name]);
    }
    tmux(&socket, &["kill-server"]);
    println!("launch to first frame (tmux included): {}", percentiles(firsts));
    println!(
        "launch until the 10,000-message session is on screen (tmux included): {}",
        percentiles(starts)
    );
    if let Some(max) = rss.iter().max() {
        println!(
            "peak RSS with it open: {:.1} MB (max of {} runs)",
            *max as f64 / 1024.0,
            rss.len()
        );
    }
}

/// Pids of the live children of `parent`.
fn children(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| mcp_support::alive(*pid))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(") ")
                    .and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// The supervisors (`strata __supervise`) below the strata of the tmux pane
/// whose shell is `shell` (strata is the shell itself when it exec'd it).
fn supervisors(shell: u32, bin: &str) -> Vec<u32> {
    let strata = if cmdline(shell).starts_with(bin) {
        Some(shell)
    } else {
        children(shell).into_iter().find(|p| cmdline(*p).starts_with(bin))
    };
    strata.map_or_else(Vec::new, |s| {
        children(s)
            .into_iter()
            .filter(|p| cmdline(*p).contains("__supervise"))
            .collect()
    })
}

/// Launch to the first frame, and to the new session on screen, with the
/// three real MCP servers configured and with none.
fn first_frame_with_servers() {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("MCP first-frame figures skipped: tmux is not installed");
        return;
    }
    let Some([time, everything, filesystem]) = support::locate::mcp_servers() else {
        println!("MCP first-frame figures skipped: the real servers are not installed");
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let allowed = ws.path().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let none = tempfile::tempdir().unwrap();
    let three = tempfile::tempdir().unwrap();
    let tools = "[tools]\nenabled = true\n";
    std::fs::write(none.path().join("config.toml"), tools).unwrap();
    std::fs::write(
        three.path().join("config.toml"),
        format!(
            "{tools}\n[mcp.servers.time]\ncommand = {:?}\n\n[mcp.servers.everything]\ncommand = {:?}\n\n\
             [mcp.servers.filesystem]\ncommand = {:?}\nargs = [{:?}]\n",
            time.to_str().unwrap(),
            everything.to_str().unwrap(),
            filesystem.to_str().unwrap(),
            allowed.to_str().unwrap()
        ),
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_strata");
    let socket = format!("strata-bench-mcp-{}", std::process::id());
    // (first frame, session on screen) per configuration; supervisors seen.
    let mut figures: [(Vec<Duration>, Vec<Duration>); 2] = Default::default();
    let mut appeared = Vec::new();
    // A session that outlives the rounds keeps the tmux server up: one that
    // exits with its last session races the next round's start.
    let keep = tmux(&socket, &["new-session", "-d", "-s", "keep", "sleep 600"]);
    assert!(keep.status.success(), "{}", String::from_utf8_lossy(&keep.stderr));
    for round in 0..16 {
        let with = round % 2;
        let home = if with == 1 { three.path() } else { none.path() };
        let name = format!("m{round}");
        let command = format!(
            "cd {} && STRATA_HOME={} OPENAI_API_KEY=sk-bench {bin} --provider openai",
            ws.path().display(),
            home.display()
        );
        let start = Instant::now();
        let out = tmux(
            &socket,
            &[
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "120",
                "-y",
                "36",
                &command,
            ],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut first = None;
        loop {
            let screen = String::from_utf8_lossy(&tmux(&socket, &["capture-pane", "-p", "-t", &name]).stdout)
                .into_owned();
            if first.is_none() && screen.contains("strata") {
                first = Some(start.elapsed());
            }
            if screen.contains("No messages yet") {
                figures[with].1.push(start.elapsed());
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "no frame:\n{screen}");
            std::thread::sleep(Duration::from_millis(2));
        }
        figures[with].0.extend(first);
        let shell: u32 =
            String::from_utf8_lossy(&tmux(&socket, &["list-panes", "-t", &name, "-F", "#{pane_pid}"]).stdout)
                .trim()
                .parse()
                .unwrap();
        if with == 1 {
            // When do the servers start (by the session's opening, or only
            // with its first turn)?
            while start.elapsed() < Duration::from_secs(3) {
                if supervisors(shell, bin).len() == 3 {
                    appeared.push(start.elapsed());
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        tmux(&socket, &["kill-session", "-t", &name]);
        let killed = Instant::now();
        while !mcp_support::processes_with(allowed.to_str().unwrap()).is_empty() {
            assert!(
                killed.elapsed() < Duration::from_secs(5),
                "the servers outlived the app"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    tmux(&socket, &["kill-server"]);
    for (label, (firsts, sessions)) in ["no MCP servers", "three MCP servers"].iter().zip(figures) {
        println!(
            "launch to first frame, {label} (tmux included): {}",
            percentiles(firsts)
        );
        println!(
            "launch to the new session on screen, {label} (tmux included): {}",
            percentiles(sessions)
        );
    }
    if appeared.is_empty() {
        println!("the servers were not started within 3 s of launch (they start with the first turn)");
    } else {
        println!(
            "launch until the three servers' supervisors run below strata ({} of 8 launches): {}",
            appeared.len(),
            percentiles(appeared)
        );
    }
}

fn main() {
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let run = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if run("keys") {
        key_to_frame();
    }
    if run("inspector") {
        inspector();
    }
    if run("streaming") {
        streaming();
    }
    if run("picker") {
        picker();
    }
    if run("process") {
        whole_process();
    }
    if run("mcp") {
        first_frame_with_servers();
    }
}
