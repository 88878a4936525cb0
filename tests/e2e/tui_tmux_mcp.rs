//! The real app in tmux with the three real MCP servers (installed by
//! `scripts/install-mcp-servers.sh`; missing ones fail in CI): after a
//! turn answered by the local server, the servers run below strata, and
//! quitting the app (Ctrl-C twice) stops every one of them within 2 s.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::common;
use crate::support::mcp as mcp_support;
use crate::support::server;
use crate::support::tmux;
use crate::support::tool_sse;

use common::Sandbox;
use mcp_support::{alive, descendants, process_table};
use server::{Reply, Server};
use std::time::{Duration, Instant};
use tmux::Tmux;
use tool_sse::openai_text;

/// How long quitting may take to stop every server (the bound).
const QUIT_LIMIT: Duration = Duration::from_secs(2);

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// The pid of the app: the child of the pane's shell that runs the strata
/// binary.
fn app_pid(tmux: &Tmux, pane: &str) -> u32 {
    let out = tmux.cmd(&["display-message", "-p", "-t", pane, "#{pane_pid}"]);
    let shell: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let binary = env!("CARGO_BIN_EXE_strata");
    process_table()
        .into_iter()
        .find(|(pid, ppid)| *ppid == shell && cmdline(*pid).starts_with(binary))
        .map(|(pid, _)| pid)
        .expect("strata runs in the pane")
}

fn config(sb: &Sandbox, server: &Server) {
    let [time, everything, filesystem] = mcp_support::real_servers();
    let allowed = sb.ws().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n\
             [tools]\nenabled = true\n\n\
             [mcp.servers.time]\ncommand = {:?}\n\n\
             [mcp.servers.everything]\ncommand = {:?}\n\n\
             [mcp.servers.filesystem]\ncommand = {:?}\nargs = [{:?}]\n",
            server.base_url(),
            time.to_str().unwrap(),
            everything.to_str().unwrap(),
            filesystem.to_str().unwrap(),
            allowed.to_str().unwrap()
        ),
    )
    .unwrap();
}

#[test]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn quitting_the_app_stops_its_mcp_servers_within_two_seconds() {
    mcp_support::run(quit_stops_the_servers());
}

async fn quit_stops_the_servers() {
    let tmux = Tmux::private("mcp-quit");
    let server = Server::with(|_| Reply::sse(openai_text("The servers are up."))).await;
    let sb = Sandbox::new();
    config(&sb, &server);
    tmux.start("app", &sb.tmux_line(""));
    tmux.wait_for("app", "gpt-4o-mini · openai").await;
    tmux.keys("app", &["hello", "Enter"]);
    tmux.wait_until("app", "the reply", Duration::from_secs(60), |s| {
        s.contains("The servers are up.")
    })
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let tools = requests[0].json()["tools"].to_string();
    for tool in [
        "time__get_current_time",
        "everything__echo",
        "filesystem__read_file",
    ] {
        assert!(tools.contains(tool), "the request offers {tool}: {tools}");
    }

    let strata = app_pid(&tmux, "app");
    let tree = descendants(strata);
    let lines: Vec<String> = tree.iter().map(|p| cmdline(*p)).collect();
    let supervisors = lines.iter().filter(|l| l.contains(" __supervise ")).count();
    assert_eq!(supervisors, 3, "one supervisor per server: {lines:#?}");
    for server in [
        "mcp-server-time",
        "mcp-server-everything",
        "mcp-server-filesystem",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| !l.contains("__supervise") && l.contains(server)),
            "{server} runs below strata: {lines:#?}"
        );
    }

    tmux.keys("app", &["C-c"]);
    tmux.wait_for("app", "press Ctrl-C again to quit").await;
    // Timed from before the key is sent: the app may act on it before
    // tmux's client returns.
    let quit = Instant::now();
    tmux.keys("app", &["C-c"]);
    let mut app_gone = None;
    let mut left = tree.clone();
    while !left.is_empty() || app_gone.is_none() {
        if app_gone.is_none() && !alive(strata) {
            app_gone = Some(quit.elapsed());
        }
        left.retain(|p| alive(*p));
        assert!(
            quit.elapsed() < QUIT_LIMIT,
            "{:?} after the quit key, strata {} and these are left: {:#?}",
            quit.elapsed(),
            if alive(strata) { "runs" } else { "exited" },
            left.iter().map(|p| cmdline(*p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    eprintln!(
        "quit: strata exited {:?} and its {} server processes were gone {:?} after the quit key",
        app_gone.unwrap(),
        tree.len(),
        quit.elapsed()
    );
}
