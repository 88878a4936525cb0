//! An MCP server in the `shell` tool's sandbox (`[mcp.servers.NAME]
//! sandbox`, `network`): the test server tries, as it starts, to write a
//! file in the workspace and one outside it and to connect to a listener on
//! 127.0.0.1, and names each outcome in its tool list, which `strata mcp
//! list` prints. Against the real kernel's Landlock and seccomp.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;
use crate::support::mcp as mcp_support;

use common::Sandbox;
use std::net::TcpListener;

/// `strata mcp list` of the test server with `settings`, and whether the
/// workspace file and the outside file were written.
fn probe(settings: &str) -> (String, bool, bool) {
    let sb = Sandbox::new();
    let inside = sb.ws().join("inside.txt");
    let outside = sb.home.path().join("outside.txt");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[mcp.servers.probe]\ncommand = {:?}\nargs = [{:?}, \"--try-write\", {:?}, \"--try-write\", {:?}, \"--try-connect\", \"{port}\"]\nstartup_timeout_s = 30\n{settings}",
            mcp_support::python().to_string_lossy(),
            mcp_support::misbehaving().to_string_lossy(),
            inside.to_string_lossy(),
            outside.to_string_lossy(),
        ),
    )
    .unwrap();
    let listed = sb.ok(&["mcp", "list"]);
    (listed, inside.exists(), outside.exists())
}

#[test]
fn a_server_without_a_sandbox_writes_anywhere_and_connects() {
    let _one = mcp_support::one_at_a_time();
    let (listed, inside, outside) = probe("");
    assert!(inside && outside, "{listed}");
    for tool in ["wrote_0", "wrote_1", "connected"] {
        assert!(listed.contains(tool), "{tool}: {listed}");
    }
}

#[test]
fn a_sandboxed_server_writes_only_the_workspace_and_without_network_cannot_connect() {
    let _one = mcp_support::one_at_a_time();
    let (listed, inside, outside) = probe("sandbox = \"workspace-write\"\nnetwork = false\n");
    assert!(inside, "the workspace is writable: {listed}");
    assert!(!outside, "nothing outside it is: {listed}");
    for tool in ["wrote_0", "cannot_write_1", "cannot_connect"] {
        assert!(listed.contains(tool), "{tool}: {listed}");
    }
}

#[test]
fn a_read_only_server_with_the_network_writes_nothing_and_connects() {
    let _one = mcp_support::one_at_a_time();
    let (listed, inside, outside) = probe("sandbox = \"read-only\"\n");
    assert!(!inside && !outside, "{listed}");
    for tool in ["cannot_write_0", "cannot_write_1", "connected"] {
        assert!(listed.contains(tool), "{tool}: {listed}");
    }
}

#[test]
fn an_unknown_sandbox_mode_is_refused_in_one_sentence() {
    let _one = mcp_support::one_at_a_time();
    let (listed, inside, _) = probe("sandbox = \"strict\"\n");
    assert!(!inside, "the server did not start: {listed}");
    assert!(listed.contains("[mcp.servers.probe] sandbox:"), "{listed}");
}
