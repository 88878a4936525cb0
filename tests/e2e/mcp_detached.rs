//! An MCP server that starts a child in a session of its own (as `setsid`
//! or Node's `detached` do) and keeps running after its stdin closes: the
//! child leaves the server's process group, so killing the group misses
//! it. It must still be gone after `/mcp off`, after quitting the app and
//! after strata is killed by SIGKILL, because each server runs under a
//! supervisor that sweeps every process below it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::common;
use crate::support::mcp as mcp_support;
use crate::support::server;
use crate::support::tmux;
use crate::support::tool_sse;

use common::Sandbox;
use mcp_support::{PATIENCE, eventually, misbehaving, processes_with, python};
use server::{Reply, Server};
use tmux::Tmux;
use tool_sse::openai_text;

fn toml_string(path: &std::path::Path) -> String {
    format!("{:?}", path.to_str().unwrap())
}

/// A path in `sb` that the detached child creates and keeps in its
/// command line: no other process's child holds it.
fn marker(sb: &Sandbox, tag: &str) -> String {
    sb.home
        .path()
        .join(format!("detached-{tag}"))
        .to_string_lossy()
        .into_owned()
}

/// `[mcp.servers.NAME]`: the misbehaving server with a detached child that
/// creates `marker`, running on after stdin closes; `extra` more arguments.
fn server_config(name: &str, marker: &str, extra: &str) -> String {
    format!(
        "[mcp.servers.{name}]\ncommand = {}\nargs = [{}, \"--detached-child\", {}, \"--ignore-eof\"{extra}]\nstartup_timeout_s = 60\n",
        toml_string(&python()),
        toml_string(&misbehaving()),
        toml_string(std::path::Path::new(marker)),
    )
}

/// The live detached children of `marker` (the supervisor and the server
/// hold it in their command lines too; the child alone sleeps).
fn children(marker: &str) -> Vec<u32> {
    processes_with(marker)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("time.sleep(1000)"))
        })
        .collect()
}

/// The detached child has started: it created `marker` and runs.
fn until_detached_child_runs(marker: &str) {
    assert!(
        eventually(PATIENCE.as_secs_f64(), || {
            std::path::Path::new(marker).exists() && children(marker).len() == 1
        }),
        "the server's detached child never started: {:?}",
        children(marker)
    );
}

fn until_gone(marker: &str, after: &str) {
    assert!(
        std::path::Path::new(marker).exists(),
        "the server's detached child never started"
    );
    assert!(
        eventually(PATIENCE.as_secs_f64(), || children(marker).is_empty()),
        "the detached child of the server outlived {after}: {:?}",
        children(marker)
    );
}

fn app_config(sb: &Sandbox, server: &Server, servers: &str) {
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o-mini\"\n[providers.openai]\nbase_url = \"{}/v1\"\n\
             [tools]\nenabled = true\n\n{servers}",
            server.base_url()
        ),
    )
    .unwrap();
}

#[test]
#[cfg_attr(strata_missing_tmux, ignore = "needs tmux: apt-get install tmux")]
fn a_detached_child_of_a_server_is_stopped_by_mcp_off_and_by_quitting() {
    mcp_support::run(async {
        let tmux = Tmux::private("mcp-detached");
        let server = Server::with(|_| Reply::sse(openai_text("The servers are up."))).await;
        let sb = Sandbox::new();
        let (off, quit) = (marker(&sb, "off"), marker(&sb, "quit"));
        app_config(
            &sb,
            &server,
            &format!(
                "{}\n{}",
                server_config("first", &off, ""),
                server_config("second", &quit, "")
            ),
        );
        tmux.start("app", &sb.tmux_line(""));
        tmux.wait_for("app", "gpt-4o-mini · openai").await;
        until_detached_child_runs(&off);
        until_detached_child_runs(&quit);

        tmux.keys("app", &["hello", "Enter"]);
        tmux.wait_until("app", "the reply", PATIENCE, |s| {
            s.contains("The servers are up.")
        })
        .await;
        tmux.keys("app", &["/mcp off first", "Enter"]);
        tmux.wait_for("app", "its process and everything it started are stopped")
            .await;
        until_gone(&off, "/mcp off");
        assert_eq!(children(&quit).len(), 1, "the other server's child runs on");

        tmux.keys("app", &["C-c"]);
        tmux.wait_for("app", "press Ctrl-C again to quit").await;
        tmux.keys("app", &["C-c"]);
        until_gone(&quit, "quitting the app");
    });
}

#[test]
fn a_detached_child_of_a_server_is_stopped_when_strata_is_killed_by_sigkill() {
    let _one = mcp_support::one_at_a_time();
    for round in 0..3 {
        let sb = Sandbox::new();
        let detached = marker(&sb, &format!("kill9-{round}"));
        // The server never answers `initialize`, so `mcp list` waits.
        std::fs::write(
            sb.home.path().join("config.toml"),
            server_config("hang", &detached, ", \"--hang-initialize\""),
        )
        .unwrap();
        let mut strata = sb.cmd(&["mcp", "list"]).spawn().unwrap();
        until_detached_child_runs(&detached);
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(strata.id()).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let _ = strata.wait();
        until_gone(&detached, &format!("kill -9 of strata (round {round})"));
    }
}

#[test]
fn a_detached_child_of_a_server_is_stopped_when_a_command_ends() {
    let _one = mcp_support::one_at_a_time();
    let sb = Sandbox::new();
    let detached = marker(&sb, "list");
    std::fs::write(
        sb.home.path().join("config.toml"),
        server_config("lingers", &detached, ""),
    )
    .unwrap();
    let listed = sb.ok(&["mcp", "list"]);
    assert!(listed.contains("lingers"), "{listed}");
    until_gone(&detached, "the end of `strata mcp list`");
}
