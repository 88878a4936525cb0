//! The headless session commands, run as a user would: import, list, search,
//! show, export, and the frozen prompt across restarts and file edits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::common;

use common::{Sandbox, file_digest, one_line_error};

const SMALL: &str = r#"[
  {"role": "system", "content": "Imported instructions."},
  {"role": "user", "content": "Please list the files in src"},
  {"role": "assistant", "content": null, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{\"dir\":\"src\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "lib.rs\nmain.rs"},
  {"role": "assistant", "content": "There are two files: lib.rs and main.rs."}
]"#;

#[test]
fn import_then_list_show_and_export_round_trip() {
    let sb = Sandbox::new();
    let id = sb.import(SMALL);
    let list = sb.json(&["sessions", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    let row = &list[0];
    assert_eq!(row["id"], id.as_str());
    assert_eq!(row["short_id"], &id[id.len() - 8..]);
    assert_eq!(row["title"], "Please list the files in src");
    assert_eq!(row["messages"], 5);
    assert!(row["tokens"].as_u64().unwrap() > 20, "counted at import: {row}");
    for key in [
        "workspace",
        "model",
        "provider",
        "tokens",
        "created_at",
        "updated_at",
    ] {
        assert!(row.get(key).is_some(), "missing {key}");
    }

    let show = sb.json(&["show", &id, "--json"]);
    assert_eq!(show["system_prompt"]["version"], 1);
    let messages = show["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[2]["tool_calls"][0]["name"], "ls");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
    assert!(messages.iter().all(|m| m["tokens"].as_u64().unwrap() > 0));
    let seqs: Vec<u64> = messages.iter().map(|m| m["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5]);

    // The JSON export imports back to the same messages.
    let exported = sb.ok(&["export", &id, "--format", "json"]);
    let again = sb.import(&exported);
    let show2 = sb.json(&["show", &again, "--json"]);
    let strip = |v: &serde_json::Value| {
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["role"].clone(),
                    m["content"].clone(),
                    m["tool_calls"].clone(),
                    m["tool_call_id"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&show), strip(&show2));

    let md = sb.ok(&["export", &id, "--format", "md"]);
    assert!(md.starts_with("# Please list the files in src"));
    assert!(md.contains("Tool call `ls`"));
}

#[test]
fn search_finds_sessions_by_message_text_and_tolerates_punctuation() {
    let sb = Sandbox::new();
    let id = sb.import(SMALL);
    sb.import(r#"[{"role":"user","content":"something unrelated"}]"#);
    let hits = sb.json(&["sessions", "--search", "main.rs", "--json"]);
    assert_eq!(hits.as_array().unwrap().len(), 1);
    assert_eq!(hits[0]["id"], id.as_str());
    for odd in ["foo\"bar", "AND(", "*", "-x", "NEAR/2"] {
        let out = sb.run(&["sessions", "--search", odd, "--json"]);
        assert!(
            out.status.success(),
            "search {odd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn frozen_prompt_survives_restart_and_instruction_file_edits() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws().join("AGENTS.md"), "Use tabs.\n").unwrap();
    let id = sb.import(SMALL);
    let first = sb.json(&["show", &id, "--json"]);
    assert!(
        first["system_prompt"]["text"]
            .as_str()
            .unwrap()
            .contains("Use tabs.")
    );
    std::fs::write(sb.ws().join("AGENTS.md"), "Use spaces.\n").unwrap();
    let second = sb.json(&["show", &id, "--json"]);
    assert_eq!(first["system_prompt"], second["system_prompt"]);
    // A new session picks up the edit.
    let fresh = sb.json(&["prompt", "--json"]);
    assert!(fresh["text"].as_str().unwrap().contains("Use spaces."));
}

#[test]
fn missing_session_is_one_clear_sentence_and_changes_nothing() {
    let sb = Sandbox::new();
    sb.import(SMALL);
    let before = file_digest(&sb.db());
    for args in [
        &["show", "0000ffff"][..],
        &["export", "nope-nope", "--format", "md"],
        &["context", "abcdef12"],
    ] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = one_line_error(&out);
        assert!(err.contains("session"), "{err}");
    }
    assert_eq!(before, file_digest(&sb.db()));
}

#[test]
fn a_session_id_too_short_to_look_up_is_a_usage_error() {
    let sb = Sandbox::new();
    sb.import(SMALL);
    for args in [&["show", "ab"][..], &["compress", "a", "--dry-run"]] {
        let out = sb.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = one_line_error(&out);
        assert!(err.contains("too short"), "{err}");
    }
}

#[test]
fn malformed_import_files_are_refused_and_change_nothing() {
    let sb = Sandbox::new();
    sb.import(SMALL);
    let before = file_digest(&sb.db());
    let cases = [
        ("invalid", "{this is not json"),
        ("truncated", r#"[{"role":"user","content":"hel"#),
        ("not-array", r#""just a string""#),
        ("unknown-role", r#"[{"role":"wizard","content":"x"}]"#),
        ("no-content", r#"[{"role":"assistant"}]"#),
    ];
    for (name, text) in cases {
        let file = sb.home.path().join(format!("{name}.json"));
        std::fs::write(&file, text).unwrap();
        let out = sb.run(&["import", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}: {:?}", out.status);
        let err = one_line_error(&out);
        assert!(err.starts_with("strata: "), "{name}: {err}");
        assert_eq!(before, file_digest(&sb.db()), "{name} changed the database");
    }
    let out = sb.run(&["import", "/definitely/not/here.json"]);
    assert_eq!(out.status.code(), Some(1));
    one_line_error(&out);
}

#[test]
fn orphan_tool_result_and_huge_message_are_accepted_with_warnings() {
    let sb = Sandbox::new();
    let huge = "y".repeat(50 * 1024 * 1024);
    let text = format!(
        r#"[{{"role":"user","content":"start"}},{{"role":"tool","tool_call_id":"ghost","content":"orphan"}},{{"role":"user","content":"{huge}"}}]"#
    );
    let file = sb.home.path().join("big.json");
    std::fs::write(&file, text).unwrap();
    let out = sb.run(&["import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("message 2 is a tool result"), "{err}");
    assert!(err.contains("message 3 (user) is 52428800 characters"), "{err}");
}

#[test]
fn unwritable_data_directory_is_a_clear_error() {
    let sb = Sandbox::new();
    // A regular file where the data directory should be: no permission trick
    // needed, so this holds even when the tests run as root.
    std::fs::write(sb.home.path().join("data"), "not a directory").unwrap();
    let file = sb.home.path().join("in.json");
    std::fs::write(&file, SMALL).unwrap();
    let out = sb.run(&["import", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = one_line_error(&out);
    assert!(err.contains("data"), "{err}");
}

#[test]
fn ten_thousand_messages_import_and_are_searchable() {
    let sb = Sandbox::new();
    let messages: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let word = if i == 7_777 { " zanzibarite" } else { "" };
            serde_json::json!({"role": role, "content": format!("message number {i}{word}")})
        })
        .collect();
    let id = sb.import(&serde_json::to_string(&messages).unwrap());
    let hits = sb.json(&["sessions", "--search", "zanzibarite", "--json"]);
    assert_eq!(hits[0]["id"], id.as_str());
    assert_eq!(hits[0]["messages"], 10_000);
}

#[test]
fn usage_errors_exit_with_code_two() {
    let sb = Sandbox::new();
    let out = sb.run(&["export", "x", "--format", "pdf"]);
    assert_eq!(out.status.code(), Some(2));
    let out = sb.run(&["prompt", "--workspace", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(2));
    one_line_error(&out);
}

#[test]
fn ids_shown_by_the_session_list_can_be_typed_back() {
    let sb = Sandbox::new();
    let a = sb.import(SMALL);
    let b = sb.import(r#"[{"role":"user","content":"second \u001b[31mred\u001b[0m"}]"#);
    let table = sb.ok(&["sessions"]);
    assert!(
        !table.contains('\u{1b}'),
        "escape sequences must not reach the terminal: {table:?}"
    );
    let shown: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let full: Vec<String> = shown
        .iter()
        .map(|id| {
            sb.json(&["show", id, "--json"])["session"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(full, [b, a], "newest first, each typed back to its session");
}

#[test]
fn a_hosted_model_name_on_the_local_provider_is_refused() {
    let sb = Sandbox::new();
    let out = sb.run(&["chat", "--provider", "local", "--model", "gpt-4o", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::one_line_error(&out);
    assert!(err.contains("gpt-4o") && err.contains("--model-path"), "{err}");
    let list = sb.json(&["sessions", "--json"]);
    assert!(
        list.as_array().unwrap().is_empty(),
        "a refused chat must not leave a session: {list}"
    );
}

#[test]
fn an_import_file_starting_with_a_byte_order_mark_is_read() {
    let sb = Sandbox::new();
    let id = sb.import(&format!("\u{feff}{SMALL}"));
    let show = sb.json(&["show", &id, "--json"]);
    assert_eq!(show["messages"].as_array().unwrap().len(), 5);
}

/// `strata --resume ID` run without a terminal (stdin, stdout and stderr
/// are pipes): a bad id must fail before the app would need one.
fn resume(sb: &Sandbox, id: &str) -> std::process::Output {
    sb.cmd(&["--resume", id])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn resume_with_an_unknown_or_ambiguous_id_exits_two_before_the_app_opens() {
    let sb = Sandbox::new();
    // No database yet: the lookup does not create one.
    let out = resume(&sb, "nosuchid");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        one_line_error(&out),
        "strata: no session matches 'nosuchid'; run `strata sessions` to list them"
    );
    assert!(out.stdout.is_empty(), "the screen was touched: {:?}", out.stdout);
    assert!(!sb.db().exists());

    let a = sb.import(SMALL);
    let b = sb.import(SMALL);
    let before = file_digest(&sb.db());
    let shared: String = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    assert!(
        shared.len() >= 4,
        "ids made together share their time prefix: {a} {b}"
    );
    let cases = [
        ("0000ffff", "no session matches '0000ffff'"),
        (shared.as_str(), "matches 2 sessions"),
        ("ab", "is too short"),
    ];
    for (id, says) in cases {
        let out = resume(&sb, id);
        assert_eq!(out.status.code(), Some(2), "{id}");
        let err = one_line_error(&out);
        assert!(err.contains(says), "{id}: {err}");
        assert!(out.stdout.is_empty(), "{id}: the screen was touched");
    }
    assert_eq!(before, file_digest(&sb.db()));
}

#[test]
fn an_unknown_provider_stops_the_app_before_it_opens() {
    let sb = Sandbox::new();
    let out = sb
        .cmd(&["--provider", "gemini"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line_error(&out).contains("gemini"));
    assert!(out.stdout.is_empty());
}

#[test]
fn the_short_id_is_listed_shown_and_accepted_where_an_id_is() {
    let sb = Sandbox::new();
    let a = sb.import(SMALL);
    let b = sb.import(SMALL);
    let short = |id: &str| id[id.len() - 8..].to_owned();
    let (sa, sb_) = (short(&a), short(&b));
    assert_ne!(sa, sb_);

    let table = sb.ok(&["sessions"]);
    let first: Vec<&str> = table
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(first, ["id", sb_.as_str(), sa.as_str()], "{table}");

    for (short, full) in [(&sa, &a), (&sb_, &b)] {
        let show = sb.json(&["show", short, "--json"]);
        assert_eq!(show["session"]["id"], full.as_str());
        assert_eq!(show["short_id"], short.as_str());
        let text = sb.ok(&["show", short]);
        assert!(text.contains(&format!("(short id `{short}`)")), "{text}");
        let context = sb.json(&["context", short, "--json"]);
        assert!(context["input_tokens"].as_u64().unwrap() > 0, "{context}");
        // A prefix of the short id works as well as one of the full id.
        assert_eq!(
            sb.json(&["show", &short[..5], "--json"])["session"]["id"],
            full.as_str()
        );
        assert_eq!(
            sb.json(&["show", &full[..30], "--json"])["session"]["id"],
            full.as_str()
        );
    }
    let dry = sb.json(&["compress", &sa, "--dry-run", "--json"]);
    assert!(dry.get("noop").is_some(), "{dry}");
    // `--resume SHORT` finds the session: what stops it is the missing terminal.
    let out = resume(&sb, &sa);
    assert_eq!(out.status.code(), Some(1));
    assert!(one_line_error(&out).contains("needs a terminal"));

    // The shared time prefix is ambiguous, and the sentence names both.
    let shared: String = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect();
    let out = sb.run(&["show", &shared[..8]]);
    assert_eq!(out.status.code(), Some(2));
    let err = one_line_error(&out);
    assert!(
        err.contains("matches 2 sessions") && err.contains(&sa) && err.contains(&sb_),
        "{err}"
    );
    // `import` prints the short id too.
    let c = sb.import_short(SMALL);
    assert_eq!(c.len(), 8, "{c}");
    let full = sb.json(&["show", &c, "--json"])["session"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(full.ends_with(&c), "{full} {c}");
}

#[test]
fn show_gives_each_message_s_token_count() {
    let sb = Sandbox::new();
    let id = sb.import(SMALL);
    let counts: Vec<u64> = sb.json(&["show", &id, "--json"])["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .collect();
    let text = sb.ok(&["show", &id]);
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(headings.len(), counts.len(), "{text}");
    for (heading, n) in headings.iter().zip(&counts) {
        assert!(
            heading.ends_with(&format!(" · {n} tokens")),
            "{heading} should end with {n} tokens"
        );
    }
    let total: u64 = counts.iter().sum();
    assert!(
        text.contains(&format!("- messages: 5 · {total} tokens")),
        "{text}"
    );
}

#[test]
fn the_session_table_aligns_wide_titles_and_long_model_names() {
    let sb = Sandbox::new();
    let file = sb.home.path().join("one.json");
    std::fs::write(&file, r#"[{"role":"user","content":"日本語のタイトル 👍"}]"#).unwrap();
    let file = file.to_str().unwrap();
    sb.ok(&["import", file, "--provider", "openai", "--model", "gpt-4o"]);
    sb.ok(&[
        "import",
        file,
        "--provider",
        "openai",
        "--model",
        "a-much-longer-model-name-than-twenty-four",
    ]);
    sb.ok(&["import", file, "--title", "plain"]);
    let table = sb.ok(&["sessions"]);
    let lines: Vec<&str> = table.lines().collect();
    // Every column starts at the same cell on every line: where the
    // header's "title" starts, each row's title starts.
    let at = lines[0].find("title").unwrap();
    let mut titles = Vec::new();
    for line in &lines[1..] {
        let (before, title) = line.split_at(line.char_indices().nth(at).unwrap().0);
        assert!(before.ends_with("  ") && !title.starts_with(' '), "{table}");
        titles.push(title);
        // The time column is whole.
        let time = line.split("  ").nth(1).unwrap();
        assert_eq!(time.len(), 16, "{table}");
    }
    assert_eq!(
        titles,
        ["plain", "日本語のタイトル 👍", "日本語のタイトル 👍"],
        "newest first:\n{table}"
    );
}

#[test]
fn errors_under_json_are_json_on_stdout_once_and_a_sentence_on_stderr() {
    let sb = Sandbox::new();
    for args in [
        &["show", "ffffffff", "--json"][..],
        &["context", "ffffffff", "--json"][..],
        &["compress", "ffffffff", "--json", "--dry-run"][..],
    ] {
        let out = sb.run(args);
        assert!(!out.status.success(), "{args:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {stdout}");
        let error: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(error["type"], "error", "{args:?}");
        assert_eq!(error["exit_code"].as_i64(), out.status.code().map(i64::from));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("strata: ") && stderr.contains(error["message"].as_str().unwrap()),
            "{stderr}"
        );
    }
    // Without --json, stdout stays empty.
    let out = sb.run(&["show", "ffffffff"]);
    assert!(out.stdout.is_empty());
}

#[test]
fn export_shows_escape_sequences_unless_raw_and_show_does_the_same() {
    let sb = Sandbox::new();
    let id = sb.import(
        r#"[
  {"role": "user", "content": "run it"},
  {"role": "assistant", "content": null, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"cat notes\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "\u001b]0;owned\u0007\u001b[2Jdone \u202eevil\u009b1m"}
]"#,
    );
    for args in [&["export", &id, "--format", "md"][..], &["show", &id][..]] {
        let out = sb.ok(args);
        assert!(!out.contains('\u{1b}'), "no ESC byte from {args:?}: {out:?}");
        assert!(!out.contains('\u{9b}') && !out.contains('\u{202e}'), "{out:?}");
        assert!(
            out.contains("^[]0;owned^G^[[2Jdone \\u{202e}evil\\u{9b}1m"),
            "{out}"
        );
    }
    let raw = sb.ok(&["export", &id, "--format", "md", "--raw"]);
    assert!(raw.contains("\u{1b}]0;owned\u{7}\u{1b}[2Jdone"), "{raw:?}");
}
