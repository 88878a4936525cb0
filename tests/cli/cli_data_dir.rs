//! A data directory that cannot be written: every command that keeps
//! something refuses to start with one sentence and exit 1 (the app before
//! its screen opens), `sessions` says so instead of "no sessions", and
//! `doctor` reports every row, failing the ones that need the directory.
//! The data directory's place is taken by a regular file, so no user
//! (root included) can create it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;

use common::{Sandbox, one_line_error};

/// A sandbox whose data directory (`STRATA_HOME/data`) is a regular file.
fn unwritable() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    std::fs::write(sb.home.path().join("data"), "not a directory").unwrap();
    let home = sb.home.path().to_path_buf();
    (sb, home)
}

#[test]
fn commands_that_keep_something_refuse_an_unwritable_data_directory() {
    let (sb, home) = unwritable();
    for args in [
        &["sessions"][..],
        &["sessions", "--json"],
        &["chat", "hello"],
        // The app: refused before it asks for a terminal.
        &[],
        &["--continue"],
    ] {
        let out = sb.cmd(args).env("STRATA_HOME", &home).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "strata {args:?}");
        let said = one_line_error(&out);
        assert!(
            said.contains("data directory") && said.contains("STRATA_HOME"),
            "strata {args:?}: {said}"
        );
        if args.contains(&"--json") {
            let event: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(event["type"], "error", "{event}");
            assert_eq!(event["exit_code"], 1, "{event}");
        } else {
            assert!(out.stdout.is_empty(), "strata {args:?} printed {:?}", out.stdout);
        }
    }
}

#[test]
fn doctor_reports_every_row_and_fails_those_that_need_the_data_directory() {
    let (sb, home) = unwritable();
    let out = sb
        .cmd(&["doctor", "--json"])
        .env("STRATA_HOME", &home)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |name: &str| {
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} row: {checks}"))["status"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for name in ["data", "database", "spill", "model", "kv state"] {
        assert_eq!(status(name), "fail", "{name}: {checks}");
    }
    for name in ["config", "sandbox", "provider"] {
        assert_eq!(status(name), "ok", "{name}: {checks}");
    }
}

#[test]
fn a_file_in_the_data_directorys_place_is_named_as_such() {
    let (sb, home) = unwritable();
    let out = sb
        .cmd(&["chat", "hello"])
        .env("STRATA_HOME", &home)
        .output()
        .unwrap();
    let said = one_line_error(&out);
    assert!(
        said.contains("something that is not a directory is in its place"),
        "{said}"
    );
    assert!(!said.contains("parent is writable"), "{said}");
}

#[test]
fn a_config_file_that_cannot_be_written_is_a_failure_not_a_usage_error() {
    let sb = Sandbox::new();
    // A directory where the config file should be: it can be neither read
    // nor replaced.
    std::fs::create_dir(sb.home.path().join("config.toml")).unwrap();
    let out = sb.cmd(&["mcp", "add", "files", "--", "echo"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", one_line_error(&out));
    assert!(
        one_line_error(&out).contains("config file"),
        "{}",
        one_line_error(&out)
    );
    // A bad request stays a usage error.
    let fine = Sandbox::new();
    let out = fine.cmd(&["mcp", "remove", "nosuch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", one_line_error(&out));
}
