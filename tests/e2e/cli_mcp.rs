//! `strata mcp list|add|remove` end to end, with the real servers
//! (installed by `scripts/install-mcp-servers.sh`; missing ones fail in CI),
//! and `kill -9` of strata with servers running: none is left in the
//! process table. One test at a time ([`mcp_support::one_at_a_time`]).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::common;
use crate::support::mcp as mcp_support;

use common::Sandbox;
use mcp_support::{alive, descendants, eventually, misbehaving, one_at_a_time, python, real_servers};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use strata::domain::ProviderKind;
use strata::mcp::{Hub, ServerSpec};
use strata::tokens::counter_for;

fn toml_string(path: &std::path::Path) -> String {
    format!("{:?}", path.to_str().unwrap())
}

/// `[mcp.servers.*]` for the three real servers, the filesystem one allowed
/// `dir`.
fn real_config(dir: &std::path::Path) -> String {
    let [time, everything, filesystem] = real_servers();
    format!(
        "[mcp.servers.time]\ncommand = {}\n\n[mcp.servers.everything]\ncommand = {}\n\n[mcp.servers.filesystem]\ncommand = {}\nargs = [{}]\n",
        toml_string(&time),
        toml_string(&everything),
        toml_string(&filesystem),
        toml_string(dir),
    )
}

/// Each real tool's wire forms, built here from what the servers list:
/// `(openai, anthropic)` by `server__tool`.
fn wire_forms(dir: &std::path::Path) -> BTreeMap<String, (String, String)> {
    let [time, everything, filesystem] = real_servers();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let spec = |name: &str, p: &std::path::Path, args: Vec<String>| ServerSpec::new(name, p.to_string_lossy(), args);
        let hub = Hub::start([
            Ok(spec("time", &time, vec![])),
            Ok(spec("everything", &everything, vec![])),
            Ok(spec("filesystem", &filesystem, vec![dir.to_string_lossy().into_owned()])),
        ]);
        hub.wait_ready(tokio::time::Instant::now() + Duration::from_secs(60)).await;
        let forms = hub
            .tools()
            .into_iter()
            .map(|t| {
                let name = format!("{}__{}", t.server, t.name);
                let openai = json!({"type": "function", "function": {"name": name, "description": t.description, "parameters": t.input_schema}});
                let anthropic = json!({"name": name, "description": t.description, "input_schema": t.input_schema});
                (name, (openai.to_string(), anthropic.to_string()))
            })
            .collect();
        hub.shutdown().await;
        forms
    })
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn mcp_list_json_lists_the_real_servers_with_the_tokens_of_each_wire_form() {
    let _one = one_at_a_time();
    let sb = Sandbox::new();
    let allowed = sb.ws().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let mut config = real_config(&allowed);
    config.push_str("\n[mcp.servers.off]\ncommand = \"true\"\nenabled = false\n\n[mcp.servers.missing]\ncommand = \"strata-no-such-server\"\n");
    config.push_str(
        "\n[mcp.servers.everything2]\ncommand = \"strata-no-such-server-either\"\ncomand = \"typo\"\n",
    );
    std::fs::write(sb.home.path().join("config.toml"), config).unwrap();
    let forms = wire_forms(&allowed);
    assert_eq!(forms.len(), 29);

    let out = sb.run(&[
        "mcp",
        "list",
        "--json",
        "--provider",
        "openai",
        "--model",
        "gpt-4o",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(
        warnings.contains("unknown key 'mcp.servers.everything2.comand' is ignored"),
        "{warnings}"
    );
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listing["provider"], "openai");
    assert_eq!(listing["wire_form"], "openai");
    assert_eq!(listing["tokenizer"], "o200k_base");
    eprintln!("mcp list: servers settled in {} ms", listing["ready_ms"]);
    let servers = listing["servers"].as_array().unwrap();
    let by_name = |n: &str| servers.iter().find(|s| s["name"] == n).unwrap();
    let names: Vec<&str> = servers.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "everything",
            "everything2",
            "filesystem",
            "missing",
            "off",
            "time"
        ]
    );
    let counter = counter_for(ProviderKind::OpenAi, "gpt-4o");
    for (server, count) in [("time", 2), ("everything", 13), ("filesystem", 14)] {
        let s = by_name(server);
        assert_eq!(s["status"], "ready", "{s}");
        let tools = s["tools"].as_array().unwrap();
        assert_eq!(tools.len(), count, "{server}");
        let mut sum = 0;
        for t in tools {
            let wire = t["wire_name"].as_str().unwrap();
            let expected = strata::tokens::TokenCounter::count(&counter, &forms[wire].0) as u64;
            assert_eq!(t["tokens"].as_u64(), Some(expected), "{wire}");
            sum += expected;
        }
        assert_eq!(s["tokens"].as_u64(), Some(sum));
    }
    assert_eq!(by_name("time")["tools"][0]["wire_name"], "time__get_current_time");
    // The server says read-only, but it is not trusted for its annotations:
    // its tools are approved like shell.
    let now = &by_name("time")["tools"][0];
    assert_eq!(now["read_only_hint"], true);
    assert_eq!(
        (now["access"].as_str(), now["rule"].as_str()),
        (Some("run"), Some("untrusted_server"))
    );
    assert_eq!(by_name("time")["trust_annotations"], false);
    assert_eq!(by_name("off")["status"], "disabled");
    let missing = by_name("missing");
    assert_eq!(missing["status"], "unavailable");
    assert!(
        missing["why"]
            .as_str()
            .unwrap()
            .contains("`strata-no-such-server` of MCP server `missing` was not found on PATH"),
        "{missing}"
    );

    // Anthropic's tool form, with Anthropic's counter.
    let out = sb.run(&[
        "mcp",
        "list",
        "--json",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5",
    ]);
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listing["wire_form"], "anthropic");
    let counter = counter_for(ProviderKind::Anthropic, "claude-sonnet-4-5");
    let servers = listing["servers"].as_array().unwrap();
    let time = servers.iter().find(|s| s["name"] == "time").unwrap();
    for t in time["tools"].as_array().unwrap() {
        let wire = t["wire_name"].as_str().unwrap();
        let expected = strata::tokens::TokenCounter::count(&counter, &forms[wire].1) as u64;
        assert_eq!(t["tokens"].as_u64(), Some(expected), "{wire}");
    }

    let text = sb.ok(&["mcp", "list", "--provider", "openai", "--model", "gpt-4o"]);
    assert!(
        text.starts_with(
            "tokens of each tool as openai receives it (OpenAI function form), counted with o200k_base"
        ),
        "{text}"
    );
    assert!(
        text.contains("\ntime             ready        2 tools  "),
        "{text}"
    );
    assert!(text.contains("\n  time__convert_time "), "{text}");
    assert!(
        text.contains("\noff              disabled     [mcp.servers.off] enabled is false.\n"),
        "{text}"
    );
    assert!(
        mcp_support::processes_with(allowed.to_str().unwrap()).is_empty(),
        "list stops its servers"
    );
}

#[test]
fn mcp_add_and_remove_edit_the_config_and_keep_the_rest() {
    let _one = one_at_a_time();
    let sb = Sandbox::new();
    let path = sb.home.path().join("config.toml");
    let before = "# mine\n[model]\nname = \"gpt-4o\"  # usual\n";
    std::fs::write(&path, before).unwrap();
    let out = sb.run(&[
        "mcp",
        "add",
        "time",
        "--env",
        "TZ=UTC",
        "--env",
        "TOKEN=${T}",
        "--",
        "sh",
        "-c",
        "exec cat",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("added MCP server `time` to {}\n", path.display())
    );
    let after = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        after,
        format!(
            "{before}\n[mcp.servers.time]\ncommand = \"sh\"\nargs = [\"-c\", \"exec cat\"]\nenv = {{ TZ = \"UTC\", TOKEN = \"${{T}}\" }}\n"
        )
    );
    let again = sb.run(&["mcp", "add", "time", "--", "sh"]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(
        common::one_line_error(&again),
        "strata: An MCP server named `time` is in the config already; remove it first (strata mcp remove time)."
    );
    let bad = sb.run(&["mcp", "add", "x", "--env", "NOEQUALS", "--", "sh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(common::one_line_error(&bad).contains("--env NOEQUALS is not NAME=VALUE"));
    let missing = sb.run(&["mcp", "add", "gone", "--", "strata-no-such-server"]);
    assert!(missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains(
            "warning: The command `strata-no-such-server` of MCP server `gone` was not found on PATH"
        ),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    sb.ok(&["mcp", "remove", "gone"]);
    sb.ok(&["mcp", "remove", "time"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    let none = sb.run(&["mcp", "remove", "time"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(common::one_line_error(&none).contains("There is no MCP server named `time`"));
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn kill_9_of_strata_leaves_no_mcp_server_behind() {
    let _one = one_at_a_time();
    let sb = Sandbox::new();
    let allowed = sb.ws().join("allowed");
    std::fs::create_dir(&allowed).unwrap();
    let mut config = real_config(&allowed);
    // A server that never finishes starting keeps `mcp list` waiting.
    config.push_str(&format!(
        "\n[mcp.servers.hang]\ncommand = {}\nargs = [{}, \"--hang-initialize\"]\nstartup_timeout_s = 60\n",
        toml_string(&python()),
        toml_string(&misbehaving())
    ));
    std::fs::write(sb.home.path().join("config.toml"), config).unwrap();
    let mut strata = sb.cmd(&["mcp", "list"]).spawn().unwrap();
    let pid = strata.id();
    // Four supervisors, each with its server below it.
    let mut tree = Vec::new();
    let started = eventually(30.0, || {
        tree = descendants(pid);
        tree.len() >= 8
    });
    assert!(started, "{tree:?}");
    let supervised = std::fs::read(format!("/proc/{}/cmdline", tree[0])).unwrap();
    assert!(String::from_utf8_lossy(&supervised).contains("__supervise"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = strata.wait();
    assert!(
        mcp_support::gone(&tree),
        "left: {:?}",
        tree.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
    );
}
