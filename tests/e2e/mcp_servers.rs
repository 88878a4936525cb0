//! The MCP hub against real servers no one here wrote (installed by
//! `scripts/install-mcp-servers.sh`; missing ones fail in CI) and against
//! the misbehaving server of `tests/fixtures/mcp/misbehaving.py`.
//!
//! The tests run one at a time ([`mcp_support::one_at_a_time`]): server
//! start-ups are heavy on two cores.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use crate::support::mcp as mcp_support;

use mcp_support::{PATIENCE, file_has_line, gone, misbehaving, python, real_servers, run};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use strata::mcp::{Hub, ImageDir, Refused, ServerSpec, Status};

fn spec(name: &str, program: &std::path::Path, args: &[&str]) -> ServerSpec {
    ServerSpec::new(
        name,
        program.to_string_lossy(),
        args.iter().map(|a| (*a).to_owned()).collect(),
    )
}

/// The misbehaving server named `name`, with `flags`.
fn bad(name: &str, flags: &[&str]) -> ServerSpec {
    let mut args = vec![misbehaving().to_string_lossy().into_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    let mut spec = ServerSpec::new(name, python().to_string_lossy(), args);
    spec.startup_timeout = Duration::from_secs(20);
    spec
}

async fn ready(hub: &Hub) {
    let statuses = hub
        .wait_ready(tokio::time::Instant::now() + Duration::from_secs(60))
        .await;
    for s in &statuses {
        assert!(
            matches!(s.status, Status::Ready { .. }),
            "{}: {:?}",
            s.name,
            s.status
        );
    }
}

fn tool_names(hub: &Hub, server: &str) -> Vec<String> {
    hub.tools()
        .into_iter()
        .filter(|t| t.server == server)
        .map(|t| t.name)
        .collect()
}

#[test]
#[cfg_attr(
    strata_missing_mcp_servers,
    ignore = "needs the real MCP servers: scripts/install-mcp-servers.sh"
)]
fn the_three_real_servers_connect_and_answer() {
    run(async {
        let [time, everything, filesystem] = real_servers();
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("allowed");
        std::fs::create_dir(&allowed).unwrap();
        let started = Instant::now();
        let hub = Hub::start([
            Ok(spec("time", &time, &[])),
            Ok(spec("everything", &everything, &[])),
            Ok(spec("filesystem", &filesystem, &[allowed.to_str().unwrap()])),
        ]);
        assert!(hub.statuses().iter().all(|s| s.status == Status::Starting));
        ready(&hub).await;
        eprintln!("three real servers ready in {} ms", started.elapsed().as_millis());
        let counts: Vec<(String, Status)> = hub.statuses().into_iter().map(|s| (s.name, s.status)).collect();
        assert_eq!(
            counts,
            [
                ("time".to_owned(), Status::Ready { tools: 2 }),
                ("everything".to_owned(), Status::Ready { tools: 13 }),
                ("filesystem".to_owned(), Status::Ready { tools: 14 }),
            ]
        );
        assert_eq!(tool_names(&hub, "time"), ["get_current_time", "convert_time"]);
        let tools = hub.tools();
        let find = |server: &str, name: &str| {
            tools
                .iter()
                .find(|t| t.server == server && t.name == name)
                .unwrap()
        };
        assert!(find("time", "convert_time").read_only_hint);
        assert!(find("filesystem", "read_text_file").read_only_hint);
        assert!(!find("filesystem", "write_file").read_only_hint);
        assert_eq!(find("everything", "echo").input_schema["type"], "object");
        assert!(!find("everything", "echo").description.is_empty());

        let cjk = "日本語のテキスト、中文文本、한국어 텍스트 ✓";
        let echo = hub
            .call("everything", "echo", json!({"message": cjk}), None, None)
            .await
            .unwrap();
        assert_eq!(echo.text, format!("Echo: {cjk}"));
        assert!(!echo.is_error);

        let now = hub
            .call("time", "get_current_time", json!({"timezone": "UTC"}), None, None)
            .await
            .unwrap();
        let answer: Value = serde_json::from_str(&now.text).unwrap();
        assert_eq!(answer["timezone"], "UTC");
        let year: i32 = answer["datetime"].as_str().unwrap()[..4].parse().unwrap();
        assert!(year >= 2025, "{}", now.text);

        let outside = root.path().join("outside.txt");
        let refused = hub
            .call(
                "filesystem",
                "write_file",
                json!({"path": outside.to_str().unwrap(), "content": "no"}),
                None,
                None,
            )
            .await
            .unwrap();
        assert!(refused.is_error, "{refused:?}");
        assert!(
            refused.text.contains("outside allowed directories"),
            "{}",
            refused.text
        );
        assert!(!outside.exists());
        let inside = allowed.join("in.txt");
        let wrote = hub
            .call(
                "filesystem",
                "write_file",
                json!({"path": inside.to_str().unwrap(), "content": "yes"}),
                None,
                None,
            )
            .await
            .unwrap();
        assert!(!wrote.is_error, "{wrote:?}");
        assert_eq!(wrote.text, format!("Successfully wrote to {}", inside.display()));
        assert_eq!(std::fs::read_to_string(&inside).unwrap(), "yes");

        let spill = ImageDir {
            dir: root.path().join("spill"),
            stem: "call_7".to_owned(),
        };
        let image = hub
            .call("everything", "get-tiny-image", json!({}), None, Some(&spill))
            .await
            .unwrap();
        assert_eq!(image.files, [spill.dir.join("call_7-1.png")]);
        assert!(std::fs::read(&image.files[0]).unwrap().starts_with(b"\x89PNG"));
        assert!(image.text.contains("[image (image/png, "), "{}", image.text);

        // The server answers a tool it does not have with an error result
        // (not a JSON-RPC error): the model reads it.
        let unknown = hub
            .call("everything", "no-such-tool", json!({}), None, None)
            .await
            .unwrap();
        assert!(unknown.is_error, "{unknown:?}");
        assert_eq!(unknown.text, "MCP error -32602: Tool no-such-tool not found");

        // How fast they stop is `benches/mcp_start.rs`'s `three_servers_stop`.
        let pids: Vec<u32> = hub.statuses().iter().filter_map(|s| s.pid).collect();
        assert_eq!(pids.len(), 3);
        hub.shutdown().await;
        assert!(gone(&pids), "{pids:?}");
    });
}

#[test]
fn garbage_on_stdout_is_skipped_and_every_page_of_tools_is_listed() {
    run(async {
        let hub = Hub::start([Ok(bad("bad", &["--page-size", "2"]))]);
        ready(&hub).await;
        let names = tool_names(&hub, "bad");
        assert_eq!(names.len(), 12, "{names:?}");
        assert_eq!(names[0], "echo");
        assert_eq!(names[11], "cancelled");
        assert!(hub.tools()[0].read_only_hint);
        assert!(!hub.tools()[1].read_only_hint);
        let out = hub.call("bad", "garbage", Value::Null, None, None).await.unwrap();
        assert_eq!(out.text, "answered after garbage");
        let out = hub
            .call("bad", "echo", json!({"text": "still here"}), None, None)
            .await
            .unwrap();
        assert_eq!(out.text, "still here");
    });
}

/// A result under `MEMORY_CAP` arrives in memory, whole; a 50 MB one is
/// read as it streams into a file and handed over as that file.
#[test]
fn a_result_of_any_size_arrives_whole_and_a_long_one_as_a_file() {
    run(async {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = bad("bad", &[]);
        spec.large_dir = dir.path().join("large");
        let hub = Hub::start([Ok(spec)]);
        ready(&hub).await;
        let out = hub
            .call("bad", "big", json!({"mb": 3}), None, None)
            .await
            .unwrap();
        const { assert!(3 * 1024 * 1024 < strata::mcp::MEMORY_CAP) };
        assert_eq!(out.text.len(), 3 * 1024 * 1024);
        assert!(out.large.is_none());

        let started = Instant::now();
        let out = hub
            .call("bad", "big", json!({"mb": 50}), None, None)
            .await
            .unwrap();
        eprintln!("50 MB result in {} ms", started.elapsed().as_millis());
        assert!(out.text.is_empty(), "the text is in the file");
        let large = out.large.unwrap();
        assert_eq!(large.bytes, 50 * 1024 * 1024);
        assert!(large.message_bytes > large.bytes, "the JSON around it");
        let text = std::fs::read(&large.file).unwrap();
        assert_eq!(text.len(), 50 * 1024 * 1024);
        assert!(text.starts_with(b"0123456789abcdef"));
        assert!(large.file.starts_with(dir.path().join("large")));
        // The spooled message is gone; only the handed-over text is left.
        let left: Vec<_> = std::fs::read_dir(dir.path().join("large"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(left, std::slice::from_ref(&large.file));

        let out = hub
            .call("bad", "echo", json!({"text": "after"}), None, None)
            .await
            .unwrap();
        assert_eq!(out.text, "after");
    });
}

/// A server that closes its output in the middle of an answer and runs
/// on: the call ends at once with what happened, not after its timeout —
/// also under the supervisor, which lets go of its copy of the pipe.
#[test]
fn an_output_closed_mid_message_is_a_broken_connection_not_a_timeout() {
    for supervised in [false, true] {
        closed_mid_message(supervised);
    }
}

fn closed_mid_message(supervised: bool) {
    run(async {
        let mut spec = bad("bad", &[]);
        if supervised {
            spec.supervisor = Some(env!("CARGO_BIN_EXE_strata").into());
        }
        let hub = Hub::start([Ok(spec)]);
        ready(&hub).await;
        let started = Instant::now();
        let err = hub
            .call(
                "bad",
                "big",
                json!({"cut": true}),
                Some(Duration::from_secs(60)),
                None,
            )
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        assert!(
            err.contains("broke during the call to `big`: it closed its output in the middle of a message"),
            "{err}"
        );
        assert!(!err.contains("did not answer"), "{err}");
        // Started again on the next use.
        let out = hub
            .call("bad", "echo", json!({"text": "again"}), None, None)
            .await
            .unwrap();
        assert_eq!(out.text, "again");
    });
}

#[test]
fn a_hung_call_times_out_and_the_server_is_started_again_on_next_use() {
    run(async {
        let hub = Hub::start([Ok(bad("bad", &[]))]);
        ready(&hub).await;
        let first = hub.statuses()[0].pid.unwrap();
        let started = Instant::now();
        let err = tokio::time::timeout(
            PATIENCE,
            hub.call("bad", "hang", json!({}), Some(Duration::from_secs(1)), None),
        )
        .await
        .expect("the call's timeout never ended it")
        .unwrap_err();
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "it gave up before its timeout: {:?}",
            started.elapsed()
        );
        assert_eq!(
            err,
            "`hang` on MCP server `bad` did not answer within 1 s, so the call was cancelled; try again with a smaller request, or do without it."
        );
        let status = hub.statuses().remove(0);
        let Status::Unavailable { why, stderr_tail } = status.status else {
            panic!("{status:?}");
        };
        assert!(why.contains("stopped answering"), "{why}");
        assert!(
            stderr_tail.iter().any(|l| l == "hanging on purpose"),
            "{stderr_tail:?}"
        );
        assert!(gone(&[first]));
        let out = hub
            .call("bad", "echo", json!({"text": "back"}), None, None)
            .await
            .unwrap();
        assert_eq!(out.text, "back");
        let status = hub.statuses().remove(0);
        assert_eq!(status.restarts, 1);
        assert_ne!(status.pid, Some(first));
    });
}

#[test]
fn an_exit_mid_call_is_an_error_and_restarts_stop_after_three() {
    run(async {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let hub = Hub::start([Ok(bad("bad", &["--pid-file", pids.to_str().unwrap()]))]);
        ready(&hub).await;
        for round in 0..4u32 {
            let err = hub
                .call("bad", "exit", json!({"code": 3}), None, None)
                .await
                .unwrap_err();
            assert!(
                err.starts_with("The MCP server `bad` stopped during the call to `exit` (The MCP server `bad` exited with code 3;"),
                "round {round}: {err}"
            );
            assert_eq!(hub.statuses()[0].restarts, round);
        }
        let err = hub
            .call("bad", "echo", json!({"text": "x"}), None, None)
            .await
            .unwrap_err();
        assert!(
            err.starts_with("The MCP server `bad` cannot be used in this session: it was restarted 3 times"),
            "{err}"
        );
        assert!(
            !err.contains("started again on its next use"),
            "no promise it breaks: {err}"
        );
        let started: Vec<u32> = std::fs::read_to_string(&pids)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(started.len(), 4, "one start and three restarts");
        assert!(gone(&started), "{started:?}");
        let Status::Unavailable { stderr_tail, .. } = hub.statuses().remove(0).status else {
            panic!()
        };
        assert!(
            stderr_tail.iter().any(|l| l == "exiting in the middle of a call"),
            "{stderr_tail:?}"
        );
    });
}

#[test]
fn errors_refusals_and_bad_arguments_come_back_distinctly() {
    run(async {
        let hub = Hub::start([Ok(bad("bad", &[]))]);
        ready(&hub).await;
        let err = hub.call("bad", "fail", json!({}), None, None).await.unwrap_err();
        assert_eq!(
            err,
            "The MCP server `bad` refused the call to `fail`: the tool failed on purpose (JSON-RPC error -32000); check the tool name and the arguments against its schema."
        );
        let refused = hub.call("bad", "refuse", json!({}), None, None).await.unwrap();
        assert!(refused.is_error);
        assert_eq!(
            refused.text,
            "refused: the path is outside the allowed directories"
        );
        let err = hub
            .call("bad", "echo", json!(["x"]), None, None)
            .await
            .unwrap_err();
        assert!(
            err.starts_with("The arguments of `echo` must be a JSON object"),
            "{err}"
        );
        let err = hub.call("nope", "echo", json!({}), None, None).await.unwrap_err();
        assert_eq!(err, "There is no MCP server named `nope`; the servers are: bad.");
        assert!(matches!(hub.statuses()[0].status, Status::Ready { .. }));
    });
}

#[test]
fn a_dropped_or_timed_out_call_sends_cancelled() {
    run(async {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        let hub = Hub::start([Ok(bad("bad", &["--calls-file", calls.to_str().unwrap()]))]);
        ready(&hub).await;
        let err = hub
            .call(
                "bad",
                "slow",
                json!({"seconds": 3}),
                Some(Duration::from_millis(300)),
                None,
            )
            .await
            .unwrap_err();
        assert!(err.contains("did not answer within 0.3 s"), "{err}");
        // The second call is dropped once the server has it.
        let twice = calls.clone();
        let arrived = tokio::task::spawn_blocking(move || {
            mcp_support::eventually(PATIENCE.as_secs_f64(), || {
                std::fs::read_to_string(&twice).is_ok_and(|c| c.lines().filter(|l| *l == "slow").count() == 2)
            })
        });
        tokio::select! {
            _ = hub.call("bad", "slow", json!({"seconds": 30}), None, None) => panic!("it should still be running"),
            arrived = arrived => assert!(arrived.unwrap(), "the second call never arrived"),
        }
        let cancelled = eventually_async(|| async {
            let out = hub.call("bad", "cancelled", json!({}), None, None).await.unwrap();
            let ids: Vec<Value> = serde_json::from_str(&out.text).unwrap();
            (ids.len() == 2).then_some(ids)
        })
        .await;
        assert!(cancelled.is_some(), "both calls were cancelled");
        assert!(
            matches!(hub.statuses()[0].status, Status::Ready { .. }),
            "a live server stays ready"
        );
    });
}

/// Checks every 50 ms until `check` gives a value, for at most [`PATIENCE`].
async fn eventually_async<T, F: std::future::Future<Output = Option<T>>>(
    mut check: impl FnMut() -> F,
) -> Option<T> {
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        if let Some(v) = check().await {
            return Some(v);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

#[test]
fn list_changed_refreshes_the_tools() {
    run(async {
        let hub = Hub::start([Ok(bad("bad", &[]))]);
        ready(&hub).await;
        assert!(!tool_names(&hub, "bad").contains(&"extra".to_owned()));
        let mut changes = hub.changes();
        changes.borrow_and_update();
        hub.call("bad", "add_tool", json!({}), None, None).await.unwrap();
        let refreshed = tokio::time::timeout(PATIENCE, async {
            loop {
                if tool_names(&hub, "bad").contains(&"extra".to_owned()) {
                    return;
                }
                changes.changed().await.unwrap();
            }
        })
        .await;
        assert!(refreshed.is_ok(), "{:?}", tool_names(&hub, "bad"));
        assert_eq!(hub.statuses()[0].status, Status::Ready { tools: 13 });
    });
}

#[test]
fn failed_starts_are_one_sentence_with_the_stderr_tail() {
    run(async {
        let mut hanging = bad("hanging", &["--hang-initialize"]);
        hanging.startup_timeout = Duration::from_secs(1);
        let hub = Hub::start([
            Ok(bad("exits", &["--exit-at-start", "7"])),
            Ok(hanging),
            Ok(ServerSpec::new("missing", "strata-no-such-mcp-server", vec![])),
            Err(Refused {
                name: "refused".to_owned(),
                why: "`${GITHUB_TOKEN}` is not set.".to_owned(),
            }),
        ]);
        // The wait ends when every start has failed, not at its deadline.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        let statuses = hub.wait_ready(deadline).await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited until the deadline: {statuses:?}"
        );
        let why = |i: usize| match &statuses[i].status {
            Status::Unavailable { why, stderr_tail } => (why.clone(), stderr_tail.clone()),
            other => panic!("{other:?}"),
        };
        let (exits, tail) = why(0);
        assert_eq!(
            exits,
            "The MCP server `exits` exited with code 7 during start-up; check its command and arguments (its last stderr lines say why)."
        );
        assert_eq!(
            tail,
            ["misbehaving server starting", "failing at start on purpose"]
        );
        let (hangs, tail) = why(1);
        assert!(
            hangs.starts_with(
                "The MCP server `hanging` did not answer `initialize` and `tools/list` within 1 s"
            ),
            "{hangs}"
        );
        assert!(
            tail.contains(&"never answering initialize".to_owned()),
            "{tail:?}"
        );
        assert!(
            why(2)
                .0
                .contains("`strata-no-such-mcp-server` of MCP server `missing` was not found on PATH")
        );
        assert_eq!(why(3).0, "`${GITHUB_TOKEN}` is not set.");
        let err = hub.call("refused", "x", json!({}), None, None).await.unwrap_err();
        assert_eq!(err, "`${GITHUB_TOKEN}` is not set.");
        assert!(hub.tools().is_empty());
    });
}

#[test]
fn an_invalid_tool_in_tools_list_is_said_as_such_not_as_an_exit() {
    run(async {
        let hub = Hub::start([Ok(bad("broken", &["--bad-tool"]))]);
        hub.wait_ready(tokio::time::Instant::now() + Duration::from_secs(20))
            .await;
        let Status::Unavailable { why, .. } = &hub.statuses()[0].status else {
            panic!("{:?}", hub.statuses());
        };
        assert!(why.contains("failed the MCP handshake"), "{why}");
        assert!(why.contains("a name and an inputSchema object"), "{why}");
        assert!(!why.contains("exited"), "{why}");
    });
}

#[test]
fn a_server_gets_the_minimal_environment_plus_what_it_names() {
    run(async {
        let mut spec = bad("bad", &[]);
        spec.env = vec![("TZ".to_owned(), "UTC".to_owned())];
        spec.inherit = vec!["CARGO_PKG_NAME".to_owned()];
        let cwd = tempfile::tempdir().unwrap();
        spec.cwd = Some(cwd.path().to_path_buf());
        let hub = Hub::start([Ok(spec)]);
        ready(&hub).await;
        let out = hub.call("bad", "env", json!({}), None, None).await.unwrap();
        let env: std::collections::BTreeMap<String, String> = serde_json::from_str(&out.text).unwrap();
        assert_eq!(env.get("TZ").map(String::as_str), Some("UTC"));
        assert_eq!(env.get("CARGO_PKG_NAME").map(String::as_str), Some("strata"));
        assert_eq!(env.get("PATH"), std::env::var("PATH").ok().as_ref());
        assert!(!env.contains_key("CARGO_MANIFEST_DIR"), "{env:?}");
        assert!(
            !env.contains_key("RUST_TEST_THREADS") && !env.contains_key("CARGO"),
            "{env:?}"
        );
        let allowed = [
            "PATH",
            "HOME",
            "USER",
            "LANG",
            "TERM",
            "TMPDIR",
            "TZ",
            "CARGO_PKG_NAME",
            "LC_CTYPE",
        ];
        for name in env.keys() {
            assert!(
                allowed.contains(&name.as_str()) || name.starts_with("LC_"),
                "{name} was passed"
            );
        }
    });
}

#[test]
fn shutdown_stops_every_server_even_one_hung_in_a_call_and_ends_the_call() {
    run(async {
        let dir = tempfile::tempdir().unwrap();
        let calls = dir.path().join("calls");
        let hub = Hub::start([
            Ok(bad("a", &[])),
            Ok(bad("b", &["--calls-file", calls.to_str().unwrap()])),
            Ok(bad("c", &[])),
        ]);
        ready(&hub).await;
        let pids: Vec<u32> = hub.statuses().iter().filter_map(|s| s.pid).collect();
        assert_eq!(pids.len(), 3);
        let hung = hub.clone();
        let call = tokio::spawn(async move { hung.call("b", "hang", json!({}), None, None).await });
        let arrived = calls.clone();
        let arrived = tokio::task::spawn_blocking(move || file_has_line(&arrived, "hang"));
        assert!(arrived.await.unwrap(), "the hanging call never arrived");
        // How long shutdown takes with a hung server is not measured here
        // (it waits for exits, then kills the groups).
        tokio::time::timeout(PATIENCE, hub.shutdown())
            .await
            .expect("shutdown never returned");
        assert!(gone(&pids), "{pids:?}");
        let err = call.await.unwrap().unwrap_err();
        assert!(err.contains("stopped during the call to `hang`"), "{err}");
        let err = hub
            .call("a", "echo", json!({"text": "x"}), None, None)
            .await
            .unwrap_err();
        assert!(err.contains("the session is closing"), "{err}");
    });
}

#[test]
fn dropping_the_hub_kills_every_server() {
    run(async {
        let hub = Hub::start([Ok(bad("a", &[])), Ok(bad("b", &[]))]);
        ready(&hub).await;
        let pids: Vec<u32> = hub.statuses().iter().filter_map(|s| s.pid).collect();
        drop(hub);
        assert!(gone(&pids), "{pids:?}");
    });
}

#[test]
fn a_supervised_server_talks_through_the_supervisor_and_dies_with_its_group() {
    run(async {
        let mut spec = bad("bad", &[]);
        spec.supervisor = Some(env!("CARGO_BIN_EXE_strata").into());
        let hub = Hub::start([Ok(spec)]);
        ready(&hub).await;
        let supervisor = hub.statuses()[0].pid.unwrap();
        let cmdline = std::fs::read(format!("/proc/{supervisor}/cmdline")).unwrap();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(
            cmdline.contains(&format!(
                "__supervise --parent {} -- exec -- '",
                std::process::id()
            )),
            "{cmdline}"
        );
        let server = mcp_support::processes_with("misbehaving.py")
            .into_iter()
            .find(|p| {
                let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap();
                let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
                fields[1] == supervisor.to_string() && fields[2] == supervisor.to_string()
            })
            .expect("the server runs under the supervisor, in its group");
        let out = hub
            .call("bad", "echo", json!({"text": "through"}), None, None)
            .await
            .unwrap();
        assert_eq!(out.text, "through");
        let err = hub
            .call("bad", "exit", json!({"code": 5}), None, None)
            .await
            .unwrap_err();
        assert!(
            err.contains("exited with code 5"),
            "the supervisor passes the exit code on: {err}"
        );
        let Status::Unavailable { stderr_tail, .. } = hub.statuses().remove(0).status else {
            panic!()
        };
        assert_eq!(
            stderr_tail.first().map(String::as_str),
            Some("misbehaving server starting")
        );
        assert!(gone(&[server, supervisor]));
        let out = hub
            .call("bad", "echo", json!({"text": "again"}), None, None)
            .await
            .unwrap();
        assert_eq!(out.text, "again");
        let restarted = hub.statuses()[0].pid.unwrap();
        drop(hub);
        assert!(gone(&[restarted]));
        // No test of this binary leaves a server behind (killing takes a
        // moment: the previous test's may still be going).
        assert!(mcp_support::eventually(PATIENCE.as_secs_f64(), || {
            mcp_support::processes_with("misbehaving.py").is_empty()
        }));
    });
}
