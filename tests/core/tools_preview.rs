//! The diff an approval shows before `write_file` or `edit_file` runs:
//! made without writing, equal to the diff of the real change, and the
//! call's own refusal when it would fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::tools as tools_support;

use serde_json::json;
use strata::tools::{edit, files};
use tools_support::{ok, ws};

#[test]
fn the_preview_is_the_diff_the_edit_makes_and_writes_nothing() {
    let w = ws();
    w.put("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    ok(&files::read_file(&w.env, &json!({"path": "src/main.rs"})));
    let args = json!({"path": "src/main.rs", "old_string": "\"hi\"", "new_string": "\"hello\""});
    let preview = edit::preview(&w.env, "edit_file", &args).unwrap();
    assert!(
        preview.contains("-    println!(\"hi\");") && preview.contains("+    println!(\"hello\");"),
        "{preview}"
    );
    assert_eq!(
        w.get("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
        "nothing written"
    );
    let out = edit::edit_file(&w.env, &args);
    ok(&out);
    assert_eq!(out.diff.as_deref(), Some(preview.as_str()));
}

#[test]
fn a_preview_of_a_call_that_would_fail_gives_its_sentence() {
    let w = ws();
    w.put("a.txt", "x\nx\n");
    let unread = edit::preview(&w.env, "write_file", &json!({"path": "a.txt", "content": "y"})).unwrap_err();
    assert!(unread.contains("read_file"), "{unread}");
    ok(&files::read_file(&w.env, &json!({"path": "a.txt"})));
    let twice = edit::preview(
        &w.env,
        "edit_file",
        &json!({"path": "a.txt", "old_string": "x", "new_string": "z"}),
    )
    .unwrap_err();
    assert!(twice.contains("2 times"), "{twice}");
    let new_file = edit::preview(
        &w.env,
        "write_file",
        &json!({"path": "new.txt", "content": "fresh\n"}),
    )
    .unwrap();
    assert!(new_file.contains("+fresh"), "{new_file}");
    assert!(!w.root.join("new.txt").exists());
    assert!(edit::preview(&w.env, "shell", &json!({"command": "ls"})).is_err());
}
