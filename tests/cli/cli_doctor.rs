//! `strata doctor` and a damaged database.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;

use common::Sandbox;

#[test]
fn doctor_passes_on_a_fresh_home() {
    let sb = Sandbox::new();
    let checks = sb.json(&["doctor", "--json"]);
    let names: Vec<&str> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "config", "data", "database", "log", "spill", "sandbox", "mcp", "provider", "model", "kv state"
        ]
    );
    // The sandbox line: this kernel's Landlock and what it covers.
    let sandbox = &checks[5];
    assert_eq!(sandbox["status"], "ok", "{sandbox}");
    assert!(sandbox["sandbox"]["abi"].as_u64().unwrap() >= 6, "{sandbox}");
    assert!(
        sandbox["sandbox"]["covers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "TCP bind and connect"),
        "{sandbox}"
    );
    let statuses: Vec<&str> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    // The embedded model is not downloaded in a fresh home: a warning, not a failure.
    assert_eq!(
        statuses,
        ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "warn", "ok"],
        "{checks}"
    );
    let kv_state = checks[9]["detail"].as_str().unwrap();
    assert!(
        kv_state.contains("0.0 MB in 0 saved state(s) of a 256.0 MB cap"),
        "{kv_state}"
    );
    assert!(
        checks[6]["detail"]
            .as_str()
            .unwrap()
            .starts_with("no MCP servers are configured"),
        "{checks}"
    );
}

#[test]
fn a_corrupted_database_is_reported_not_a_crash() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.db().parent().unwrap()).unwrap();
    std::fs::write(sb.db(), vec![0x5a; 64 * 1024]).unwrap();
    let before = common::file_digest(&sb.db());
    let out = sb.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FAIL  database"), "{text}");
    let out = sb.run(&["sessions"]);
    assert_eq!(out.status.code(), Some(1));
    common::one_line_error(&out);
    assert_eq!(
        before,
        common::file_digest(&sb.db()),
        "a damaged database is never rewritten"
    );
}

#[test]
fn a_hosted_provider_without_a_key_fails_the_provider_check() {
    let sb = Sandbox::new();
    let out = sb.run(&["doctor", "--provider", "anthropic"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ANTHROPIC_API_KEY"));
}

#[test]
fn an_invalid_config_is_a_failed_check_and_the_rest_still_runs() {
    let sb = Sandbox::new();
    std::fs::write(sb.home.path().join("config.toml"), "[model\n").unwrap();
    let out = sb.run(&["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(checks[0]["name"], "config");
    assert_eq!(checks[0]["status"], "fail");
    assert!(checks[0]["detail"].as_str().unwrap().contains("line 1"));
    assert_eq!(checks[2]["name"], "database");
    assert_eq!(checks[2]["status"], "ok");
    // The MCP servers live in that config: they are not said to be absent.
    let mcp = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "mcp")
        .unwrap();
    assert_eq!(mcp["status"], "warn", "{mcp}");
    assert!(
        mcp["detail"].as_str().unwrap().contains("cannot be read"),
        "{mcp}"
    );
}

#[test]
fn tools_values_that_chat_refuses_fail_the_config_check_and_useless_ones_warn() {
    let sb = Sandbox::new();
    let config = sb.home.path().join("config.toml");
    std::fs::write(&config, "[tools]\napproval = \"bogus\"\n").unwrap();
    let checks = sb.run(&["doctor", "--json"]);
    let checks: serde_json::Value = serde_json::from_slice(&checks.stdout).unwrap();
    assert_eq!(checks[0]["status"], "fail", "{checks}");
    assert!(checks[0]["detail"].as_str().unwrap().contains("[tools] approval"));

    std::fs::write(&config, "[tools]\nmax_rounds = 0\n").unwrap();
    let checks: serde_json::Value = serde_json::from_slice(&sb.run(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(checks[0]["status"], "fail");
    assert!(checks[0]["detail"].as_str().unwrap().contains("max_rounds"));

    std::fs::write(
        &config,
        "[tools]\nallow = [\"frobnicate\"]\nallow_paths = [\"relative/dir\"]\n",
    )
    .unwrap();
    let checks: serde_json::Value = serde_json::from_slice(&sb.run(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(checks[0]["status"], "warn");
    let detail = checks[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("frobnicate") && detail.contains("relative/dir"),
        "{detail}"
    );
}

#[test]
fn each_mcp_server_gets_a_line_without_being_started() {
    let sb = Sandbox::new();
    // `marker` would create a file if doctor started the server.
    let marker = sb.ws().join("started");
    std::fs::write(
        sb.home.path().join("config.toml"),
        format!(
            "[mcp.servers.good]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n\
             [mcp.servers.gone]\ncommand = \"strata-no-such-server\"\n\
             [mcp.servers.off]\ncommand = \"strata-no-such-server\"\nenabled = false\n\
             [mcp.servers.unset]\ncommand = \"sh\"\nenv = {{ HOST = \"${{STRATA_UNSET_HOST}}\" }}\n",
            marker.display()
        ),
    )
    .unwrap();

    let out = sb.run(&["doctor"]);
    assert_eq!(out.status.code(), Some(1), "a missing command fails doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    let mcp: Vec<&str> = text.lines().filter(|l| l.contains("  mcp ")).collect();
    assert_eq!(mcp.len(), 4, "one line per server:\n{text}");
    // By name: gone, good, off, unset.
    assert_eq!(
        mcp[0],
        "FAIL  mcp       The command `strata-no-such-server` of MCP server `gone` was not found on PATH; install the server or give the command's full path."
    );
    assert!(mcp[1].starts_with("ok    mcp       `good` runs /"), "{text}");
    assert!(mcp[1].ends_with("/sh (not started here)"), "{text}");
    assert!(mcp[2].starts_with("ok    mcp       `off` is disabled"), "{text}");
    assert!(
        mcp[3].starts_with(
            "FAIL  mcp       [mcp.servers.unset] env.HOST uses ${STRATA_UNSET_HOST}, which is not set;"
        ),
        "{text}"
    );
    assert!(!marker.exists(), "doctor started a server");

    let checks: serde_json::Value = serde_json::from_slice(&sb.run(&["doctor", "--json"]).stdout).unwrap();
    let mcp: Vec<(&str, &str)> = checks
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "mcp")
        .map(|c| (c["status"].as_str().unwrap(), c["detail"].as_str().unwrap()))
        .collect();
    let statuses: Vec<&str> = mcp.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, ["fail", "ok", "ok", "fail"], "{checks}");
    assert!(mcp[0].1.contains("`gone`"), "{checks}");
    assert!(mcp[1].1.starts_with("`good` runs /"), "{checks}");
    assert!(!marker.exists(), "doctor started a server");
}

#[test]
fn numbers_outside_their_range_fail_or_warn_the_config_check() {
    let sb = Sandbox::new();
    let config = sb.home.path().join("config.toml");
    let check = |text: &str| {
        std::fs::write(&config, text).unwrap();
        let out = sb.run(&["doctor", "--json"]);
        let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        checks[0].clone()
    };
    let c = check("[model]\nprovider = \"openai\"\nname = \"gpt-4o\"\nmax_tokens = 999999\n");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["detail"].as_str().unwrap().contains("max_tokens = 999999"),
        "{c}"
    );
    let c = check("[compression]\nprotect_last_n = 100\n");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["detail"].as_str().unwrap().contains("3 to 8"), "{c}");
    let c = check("[compression]\nthreshold = 2\n");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["detail"].as_str().unwrap().contains("threshold_tokens"), "{c}");
    let c = check("[tools]\nspill_max_mb = 0\n");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["detail"].as_str().unwrap().contains("spill_max_mb = 0"), "{c}");
    let c = check(
        "[model]\nprovider = \"openai\"\nname = \"gpt-4o\"\nmax_tokens = 4096\n[compression]\nprotect_last_n = 6\nthreshold = 0.8\n",
    );
    assert_eq!(c["status"], "ok", "{c}");
}
