#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The file tools for real on a temporary workspace: reading and paging,
//! listing, globbing and grepping with `.gitignore`, writing and editing
//! with the changed-since-read check and undo, memory, skills and the
//! clock, CJK names, and confinement (nothing outside is read or written).

use crate::support::tools as tools_support;

use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;
use strata::tools::edit::{self, sha256_hex, undo};
use strata::tools::paths::{Intent, resolve};
use strata::tools::{SkillEntry, files, search};
use tools_support::{SECRET, SECRET_TEXT, err, ok, ws, ws_with};

// ---- read_file ----------------------------------------------------------

#[test]
fn read_file_numbers_lines_and_says_it_reached_the_end() {
    let w = ws();
    w.put("src/a.txt", "alpha\r\nbeta\n\tgamma");
    let out = files::read_file(&w.env, &json!({"path": "src/a.txt"}));
    assert!(out.paged);
    assert_eq!(
        ok(&out),
        "     1\talpha\n     2\tbeta\n     3\t\tgamma\n[`src/a.txt`: lines 1–3 of 3; end of file]"
    );
    // The last line has no line break: it is still a line, and paging reaches it.
    assert_eq!(
        ok(&files::read_file(
            &w.env,
            &json!({"path": "src/a.txt", "offset": 3})
        )),
        "     3\t\tgamma\n[`src/a.txt`: lines 3–3 of 3; end of file]"
    );
    let e = err(&files::read_file(
        &w.env,
        &json!({"path": "src/a.txt", "offset": 4}),
    ));
    assert!(e.contains("has 3 lines, so offset=4 is past its end"), "{e}");
}

#[test]
fn read_file_pages_with_offset_and_limit_and_says_how_to_read_on() {
    let w = ws_with(|env| env.read_max_lines = 10);
    let text: String = (1..=25).map(|n| format!("line {n}\n")).collect();
    w.put("big.txt", &text);

    let page = ok(&files::read_file(
        &w.env,
        &json!({"path": "big.txt", "offset": 5, "limit": 3}),
    ));
    assert_eq!(
        page,
        "     5\tline 5\n     6\tline 6\n     7\tline 7\n[`big.txt`: lines 5–7 of 25 shown; read on with offset=8]"
    );
    // The line cap wins over a larger limit, and says so.
    let page = ok(&files::read_file(
        &w.env,
        &json!({"path": "big.txt", "limit": 500}),
    ));
    assert_eq!(page.lines().count(), 11);
    assert!(
        page.ends_with(
            "[`big.txt`: lines 1–10 of 25 shown (at most 10 lines a call); read on with offset=11]"
        )
    );
    // The last page ends the file.
    let page = ok(&files::read_file(
        &w.env,
        &json!({"path": "big.txt", "offset": "21"}),
    ));
    assert!(page.starts_with("    21\tline 21\n"));
    assert!(page.ends_with("[`big.txt`: lines 21–25 of 25; end of file]"));
    // Past the end.
    let e = err(&files::read_file(
        &w.env,
        &json!({"path": "big.txt", "offset": 26}),
    ));
    assert!(e.contains("has 25 lines") && e.contains("from 1 to 25"), "{e}");
}

#[test]
fn read_file_stops_at_the_character_cap_and_cuts_long_lines() {
    let w = ws_with(|env| env.read_max_chars = 1_000);
    let text: String = (1..=100)
        .map(|n| format!("{n:03} {}\n", "x".repeat(96)))
        .collect();
    w.put("wide.txt", &text);
    let page = ok(&files::read_file(&w.env, &json!({"path": "wide.txt"})));
    assert!(page.chars().count() <= 1_000, "{} chars", page.chars().count());
    let shown = page.lines().count() - 1;
    assert!((5..10).contains(&shown), "{shown} lines shown");
    assert!(
        page.ends_with(&format!(
            "[`wide.txt`: lines 1–{shown} of 100 shown (at most 1,000 characters a call); read on with offset={}]",
            shown + 1
        )),
        "{page}"
    );

    // A line longer than 2,000 characters is cut with a marker; a single
    // huge line is not held whole.
    let w = ws();
    let long = "é".repeat(3_000);
    let huge = "y".repeat(5_000_000);
    w.put("long.txt", format!("{long}\nshort\n{huge}\n"));
    let page = ok(&files::read_file(&w.env, &json!({"path": "long.txt"})));
    let lines: Vec<&str> = page.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "     1\t{} … [line cut after 2,000 characters; it has 6,000 bytes]",
            "é".repeat(2_000)
        )
    );
    assert_eq!(lines[1], "     2\tshort");
    assert!(lines[2].ends_with("… [line cut after 2,000 characters; it has 5,000,000 bytes]"));
    assert_eq!(lines[3], "[`long.txt`: lines 1–3 of 3; end of file]");
}

#[test]
fn read_file_refuses_binary_and_non_utf8_files_naming_their_size() {
    let w = ws();
    let mut bin = b"PK\x03\x04".to_vec();
    bin.extend_from_slice(&[0u8; 1_230]);
    w.put("a.zip", &bin);
    let e = err(&files::read_file(&w.env, &json!({"path": "a.zip"})));
    assert!(
        e.contains("`a.zip` is a binary or non-UTF-8 file (1,234 bytes)"),
        "{e}"
    );

    w.put("latin1.txt", b"caf\xe9 au lait\n");
    let e = err(&files::read_file(&w.env, &json!({"path": "latin1.txt"})));
    assert!(e.contains("(13 bytes)"), "{e}");

    // Invalid UTF-8 after the probe is found when the line is shown.
    let mut late = "ok\n".repeat(4_000).into_bytes();
    late.extend_from_slice(b"bad \xff\n");
    w.put("late.txt", &late);
    let e = err(&files::read_file(
        &w.env,
        &json!({"path": "late.txt", "offset": 3_990}),
    ));
    assert!(e.contains("binary or non-UTF-8"), "{e}");
}

#[test]
fn read_file_of_a_directory_points_to_list_dir_and_bad_arguments_show_the_shape() {
    let w = ws();
    fs::create_dir(w.root.join("docs")).unwrap();
    let e = err(&files::read_file(&w.env, &json!({"path": "docs"})));
    assert!(e.contains("is a directory") && e.contains("list_dir"), "{e}");
    let e = err(&files::read_file(&w.env, &json!({})));
    assert!(
        e.starts_with("`path` is missing; call read_file as {\"path\""),
        "{e}"
    );
    let e = err(&files::read_file(&w.env, &json!({"path": 7})));
    assert!(
        e.starts_with("`path` must be a string; call read_file as {\"path\""),
        "{e}"
    );
    let e = err(&files::read_file(&w.env, &json!({"path": "docs", "offset": 0})));
    assert!(e.starts_with("`offset` must be a positive whole number"), "{e}");
    let e = err(&files::read_file(&w.env, &json!("docs")));
    assert!(e.starts_with("The arguments must be a JSON object"), "{e}");
    // A pipe is refused before it is opened (opening would wait for a writer).
    let status = std::process::Command::new("mkfifo")
        .arg(w.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let e = err(&files::read_file(&w.env, &json!({"path": "pipe"})));
    assert!(e.contains("is not a regular file"), "{e}");
    let e = err(&edit::write_file(
        &w.env,
        &json!({"path": "pipe", "content": "x"}),
    ));
    assert!(e.contains("is not a regular file"), "{e}");
    let e = err(&files::read_file(&w.env, &json!({"path": "nope.txt"})));
    assert!(e.contains("`nope.txt` does not exist"), "{e}");
    assert_eq!(
        ok(&files::read_file(
            &w.env,
            &json!({"path": w.put("empty", "").to_str().unwrap()})
        )),
        "`empty` is empty (0 bytes)."
    );
}

#[test]
fn read_file_pages_a_spill_file_which_cannot_be_written() {
    let w = ws();
    let spill = w.env.spill_dir.join("call_1.txt");
    let text: String = (1..=3_000).map(|n| format!("out {n}\n")).collect();
    fs::write(&spill, &text).unwrap();
    let spill_str = spill.to_str().unwrap();
    let page = ok(&files::read_file(
        &w.env,
        &json!({"path": spill_str, "offset": 2_001}),
    ));
    assert!(page.starts_with("  2001\tout 2001\n"));
    assert!(page.ends_with(&format!(
        "[`{spill_str}`: lines 2,001–3,000 of 3,000; end of file]"
    )));
    let e = err(&edit::write_file(
        &w.env,
        &json!({"path": spill_str, "content": "x"}),
    ));
    assert!(e.contains("outside the workspace"), "{e}");
    assert_eq!(fs::read_to_string(&spill).unwrap(), text);
}

// ---- list_dir, glob, grep -----------------------------------------------

#[test]
fn list_dir_sorts_marks_directories_gives_sizes_and_honours_gitignore() {
    let w = ws();
    w.put(".gitignore", "target/\n*.log\n");
    w.put("b.txt", "12345");
    w.put("a.rs", "");
    w.put("debug.log", "noise");
    w.put(".env.example", "K=V\n");
    w.put("src/main.rs", "fn main() {}\n");
    w.put("target/out", "x");
    w.put(".git/HEAD", "ref: refs/heads/main\n");
    symlink("src", w.root.join("s")).unwrap();
    let text = ok(&files::list_dir(&w.env, &json!({})));
    assert_eq!(
        text,
        "`.` (6 entries):\n.env.example  (4 bytes)\n.gitignore  (14 bytes)\na.rs  (0 bytes)\nb.txt  (5 bytes)\ns -> src\nsrc/\n"
    );
    let e = err(&files::list_dir(&w.env, &json!({"path": "b.txt"})));
    assert!(e.contains("read_file"), "{e}");
}

#[test]
fn list_dir_caps_at_a_thousand_entries_and_counts_the_rest() {
    let w = ws();
    for i in 0..1_005 {
        w.put(&format!("many/f{i:04}"), "");
    }
    let text = ok(&files::list_dir(&w.env, &json!({"path": "many"})));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "`many` (1,005 entries):");
    assert_eq!(lines[1], "f0000  (0 bytes)");
    assert_eq!(lines[1_000], "f0999  (0 bytes)");
    assert_eq!(
        lines[1_001],
        "… and 5 more entries; use glob with a pattern to narrow the list."
    );
}

#[test]
fn glob_matches_names_and_paths_sorted_and_honours_gitignore() {
    let w = ws();
    w.put(".gitignore", "gen/\n");
    w.put("src/lib.rs", "");
    w.put("src/tools/a.rs", "");
    w.put("README.md", "");
    w.put("build.rs", "");
    w.put("gen/out.rs", "");
    w.put(".github/ci.yml", "");
    assert_eq!(
        ok(&search::glob(&w.env, &json!({"pattern": "*.rs"}))),
        "build.rs\nsrc/lib.rs\nsrc/tools/a.rs\n"
    );
    assert_eq!(
        ok(&search::glob(&w.env, &json!({"pattern": "src/*.rs"}))),
        "src/lib.rs\n"
    );
    assert_eq!(
        ok(&search::glob(
            &w.env,
            &json!({"pattern": "**/*.rs", "path": "src"})
        )),
        "src/lib.rs\nsrc/tools/a.rs\n"
    );
    assert_eq!(
        ok(&search::glob(&w.env, &json!({"pattern": "*.yml"}))),
        ".github/ci.yml\n"
    );
    let none = ok(&search::glob(&w.env, &json!({"pattern": "tools/*.rs"})));
    assert!(
        none.contains("No files under `.` match") && none.contains("try `**/tools/*.rs`"),
        "{none}"
    );
    let e = err(&search::glob(&w.env, &json!({"pattern": "src/[a"})));
    assert!(e.starts_with("`pattern` is not a valid glob"), "{e}");
}

#[test]
fn glob_caps_at_a_thousand_paths() {
    let w = ws();
    for i in 0..1_002 {
        w.put(&format!("d/{i:04}.txt"), "");
    }
    let text = ok(&search::glob(&w.env, &json!({"pattern": "*.txt"})));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1_001);
    assert_eq!(lines[999], "d/0999.txt");
    assert_eq!(
        lines[1_000],
        "[1,000 of 1,002 matching files shown; narrow the pattern or the path to see the rest]"
    );
}

#[test]
fn grep_leaves_out_credentials_by_name_and_by_a_key_far_into_a_file_and_says_so() {
    let w = ws();
    w.put("ok.txt", "FAKE_TOKEN visible\n");
    w.put(".env", "API_KEY=FAKE_TOKEN_ENV\n");
    w.put(".aws/credentials", "aws_secret_access_key = FAKE_TOKEN_AWS\n");
    // A private key below 9 KB of ordinary text.
    let notes = format!(
        "{}-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE_TOKEN_KEY\n-----END OPENSSH PRIVATE KEY-----\n",
        "notes line\n".repeat(900)
    );
    w.put("notes.txt", notes);
    let out = ok(&search::grep(&w.env, &json!({"pattern": "FAKE_TOKEN"})));
    assert_eq!(
        out,
        "ok.txt:1:FAKE_TOKEN visible\n[1 matching line in 1 file]\n\
         [3 files with matches that look like credentials left out; read_file asks the user for one]\n"
    );
    let only = ok(&search::grep(&w.env, &json!({"pattern": "FAKE_TOKEN_ENV"})));
    assert_eq!(
        only,
        "No lines under `.` match `FAKE_TOKEN_ENV`.\n\
         [1 file with matches that look like credentials left out; read_file asks the user for one]\n"
    );
}

#[test]
fn grep_finds_lines_sorted_by_path_and_line_and_skips_ignored_and_binary_files() {
    let w = ws();
    w.put(".gitignore", "vendor/\n");
    w.put("src/b.rs", "fn beta() {}\n// TODO: two\nlet todo = 1;\n");
    w.put("src/a.rs", "// TODO: one\n");
    w.put("vendor/x.rs", "// TODO: vendored\n");
    w.put("notes.md", "TODO in markdown\n");
    let mut bin = b"TODO\n".to_vec();
    bin.extend_from_slice(&[0, 1, 2, 3]);
    w.put("blob.bin", &bin);
    assert_eq!(
        ok(&search::grep(&w.env, &json!({"pattern": "TODO"}))),
        "notes.md:1:TODO in markdown\nsrc/a.rs:1:// TODO: one\nsrc/b.rs:2:// TODO: two\n[3 matching lines in 3 files]\n"
    );
    assert_eq!(
        ok(&search::grep(
            &w.env,
            &json!({"pattern": "todo", "glob": "*.rs", "case_insensitive": true})
        )),
        "src/a.rs:1:// TODO: one\nsrc/b.rs:2:// TODO: two\nsrc/b.rs:3:let todo = 1;\n[3 matching lines in 2 files]\n"
    );
    assert_eq!(
        ok(&search::grep(
            &w.env,
            &json!({"pattern": "fn \\w+\\(", "path": "src/b.rs"})
        )),
        "src/b.rs:1:fn beta() {}\n[1 matching line in 1 file]\n"
    );
    let none = ok(&search::grep(&w.env, &json!({"pattern": "vendored"})));
    assert_eq!(none, "No lines under `.` match `vendored`.");
    let e = err(&search::grep(&w.env, &json!({"pattern": "fn (beta"})));
    assert!(
        e.starts_with("The pattern is not a valid regular expression (unclosed group)"),
        "{e}"
    );
    let e = err(&search::grep(
        &w.env,
        &json!({"pattern": "x", "max_results": "many"}),
    ));
    assert!(e.contains("`max_results` must be a positive whole number"), "{e}");
}

#[test]
fn grep_caps_results_deterministically_and_cuts_long_lines() {
    let w = ws();
    for f in 0..30 {
        let text: String = (0..10).map(|l| format!("hit {f} {l}\n")).collect();
        w.put(&format!("d/{f:02}.txt"), text);
    }
    w.put("wide.txt", format!("hit {}\n", "w".repeat(2_000)));
    let first = ok(&search::grep(
        &w.env,
        &json!({"pattern": "hit", "max_results": 15}),
    ));
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 16);
    assert_eq!(lines[0], "d/00.txt:1:hit 0 0");
    assert_eq!(lines[10], "d/01.txt:1:hit 1 0");
    assert_eq!(lines[14], "d/01.txt:5:hit 1 4");
    assert_eq!(
        lines[15],
        "[15 of 301 matching lines in 31 files shown; narrow the pattern, path or glob, or raise max_results (at most 1,000)]"
    );
    for _ in 0..3 {
        assert_eq!(
            ok(&search::grep(
                &w.env,
                &json!({"pattern": "hit", "max_results": 15})
            )),
            first
        );
    }
    let wide = ok(&search::grep(
        &w.env,
        &json!({"pattern": "hit w", "path": "wide.txt"}),
    ));
    let line = wide.lines().next().unwrap();
    assert_eq!(line, format!("wide.txt:1:hit {} …", "w".repeat(496)));
}

// ---- write_file, edit_file, undo ----------------------------------------

#[test]
fn write_file_creates_parents_and_undo_removes_the_new_file() {
    let w = ws();
    let out = edit::write_file(
        &w.env,
        &json!({"path": "new/deep/f.txt", "content": "one\ntwo\n"}),
    );
    assert_eq!(ok(&out), "Created `new/deep/f.txt` (2 lines, 8 bytes).");
    assert_eq!(w.get("new/deep/f.txt"), "one\ntwo\n");
    assert!(
        out.diff
            .as_deref()
            .unwrap()
            .contains("+++ b/new/deep/f.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n")
    );
    let change = out.change.unwrap();
    assert_eq!(change.path, w.root.join("new/deep/f.txt"));
    assert_eq!(change.before, None);
    assert_eq!(change.after_sha256, sha256_hex(b"one\ntwo\n"));
    // Written counts as seen: an edit follows without a read.
    ok(&edit::edit_file(
        &w.env,
        &json!({"path": "new/deep/f.txt", "old_string": "two", "new_string": "2"}),
    ));
    assert_eq!(w.get("new/deep/f.txt"), "one\n2\n");
    // The undo of the creation is refused now, the file holds the edit.
    let e = undo(&change).unwrap_err();
    assert!(e.contains("has changed since this change was made"), "{e}");
    assert_eq!(w.get("new/deep/f.txt"), "one\n2\n");
}

#[test]
fn write_then_undo_restores_and_undo_is_refused_after_the_file_changed() {
    let w = ws();
    w.put("conf.toml", "a = 1\n");
    let e = err(&edit::write_file(
        &w.env,
        &json!({"path": "conf.toml", "content": "a = 2\n"}),
    ));
    assert!(
        e.contains("has not been read since strata started (reads are not remembered across runs); call read_file on it first"),
        "{e}"
    );
    assert_eq!(w.get("conf.toml"), "a = 1\n");

    ok(&files::read_file(&w.env, &json!({"path": "conf.toml"})));
    let out = edit::write_file(&w.env, &json!({"path": "conf.toml", "content": "a = 2\nb = 3\n"}));
    assert_eq!(
        ok(&out),
        "Wrote `conf.toml` (2 lines, 12 bytes), replacing its previous 6 bytes."
    );
    assert_eq!(
        out.diff.as_deref().unwrap(),
        "--- a/conf.toml\n+++ b/conf.toml\n@@ -1 +1,2 @@\n-a = 1\n+a = 2\n+b = 3\n"
    );
    let change = out.change.unwrap();
    assert_eq!(change.before.as_deref(), Some(&b"a = 1\n"[..]));
    assert_eq!(
        undo(&change).unwrap(),
        format!(
            "Restored {} to its content before the change (6 bytes).",
            change.path.display()
        )
    );
    assert_eq!(w.get("conf.toml"), "a = 1\n");

    // Changed by someone else after the write: undo refuses and leaves it.
    ok(&files::read_file(&w.env, &json!({"path": "conf.toml"})));
    let change = edit::write_file(&w.env, &json!({"path": "conf.toml", "content": "a = 9\n"}))
        .change
        .unwrap();
    w.put("conf.toml", "a = 9\n# by hand\n");
    assert!(undo(&change).unwrap_err().contains("has changed since"));
    assert_eq!(w.get("conf.toml"), "a = 9\n# by hand\n");
    fs::remove_file(w.root.join("conf.toml")).unwrap();
    assert!(undo(&change).unwrap_err().contains("no longer exists"));
}

#[test]
fn edit_file_replaces_once_shows_the_diff_and_refuses_ambiguous_or_missing_text() {
    let w = ws();
    w.put("m.rs", "let a = 1;\nlet b = 1;\nlet c = 2;\n");
    let e = err(&edit::edit_file(
        &w.env,
        &json!({"path": "m.rs", "old_string": "= 2", "new_string": "= 3"}),
    ));
    assert!(e.contains("has not been read"), "{e}");
    ok(&files::read_file(&w.env, &json!({"path": "m.rs", "limit": 1})));

    let e = err(&edit::edit_file(
        &w.env,
        &json!({"path": "m.rs", "old_string": "= 1;", "new_string": "= 5;"}),
    ));
    assert!(
        e.contains("occurs 2 times in `m.rs`") && e.contains("replace_all"),
        "{e}"
    );
    let e = err(&edit::edit_file(
        &w.env,
        &json!({"path": "m.rs", "old_string": "let  c", "new_string": "x"}),
    ));
    assert!(
        e.contains("does not occur in `m.rs`") && e.contains("read_file"),
        "{e}"
    );
    assert_eq!(w.get("m.rs"), "let a = 1;\nlet b = 1;\nlet c = 2;\n");

    let out = edit::edit_file(
        &w.env,
        &json!({"path": "m.rs", "old_string": "c = 2", "new_string": "c = 3"}),
    );
    let diff =
        "--- a/m.rs\n+++ b/m.rs\n@@ -1,3 +1,3 @@\n let a = 1;\n let b = 1;\n-let c = 2;\n+let c = 3;\n";
    assert_eq!(
        ok(&out),
        format!("Edited `m.rs`: replaced 1 occurrence.\n\n{diff}")
    );
    assert_eq!(out.diff.as_deref(), Some(diff));
    let change = out.change.unwrap();
    assert_eq!(
        change.before.as_deref(),
        Some(&b"let a = 1;\nlet b = 1;\nlet c = 2;\n"[..])
    );

    let out = edit::edit_file(
        &w.env,
        &json!({"path": "m.rs", "old_string": "= 1;", "new_string": "= 0;", "replace_all": true}),
    );
    assert!(ok(&out).starts_with("Edited `m.rs`: replaced 2 occurrences."));
    assert_eq!(w.get("m.rs"), "let a = 0;\nlet b = 0;\nlet c = 3;\n");
    // Undo the later change, then the earlier one.
    undo(&out.change.unwrap()).unwrap();
    undo(&change).unwrap();
    assert_eq!(w.get("m.rs"), "let a = 1;\nlet b = 1;\nlet c = 2;\n");
}

#[test]
fn edit_file_is_refused_when_the_file_changed_on_disk_since_it_was_read() {
    let w = ws();
    w.put("n.txt", "first\n");
    ok(&files::read_file(&w.env, &json!({"path": "n.txt"})));
    // Same size, new content: caught by the hash, not the size.
    w.put("n.txt", "FIRST\n");
    let e = err(&edit::edit_file(
        &w.env,
        &json!({"path": "n.txt", "old_string": "FIRST", "new_string": "x"}),
    ));
    assert!(
        e.contains("changed on disk since it was last read; call read_file on it again"),
        "{e}"
    );
    let e = err(&edit::write_file(
        &w.env,
        &json!({"path": "n.txt", "content": "x"}),
    ));
    assert!(e.contains("changed on disk"), "{e}");
    assert_eq!(w.get("n.txt"), "FIRST\n");
    ok(&files::read_file(&w.env, &json!({"path": "n.txt"})));
    ok(&edit::edit_file(
        &w.env,
        &json!({"path": "n.txt", "old_string": "FIRST", "new_string": "x"}),
    ));
    assert_eq!(w.get("n.txt"), "x\n");
}

#[test]
fn edit_file_keeps_crlf_line_breaks() {
    let w = ws();
    w.put("win.txt", "one\r\ntwo\r\nthree\r\n");
    ok(&files::read_file(&w.env, &json!({"path": "win.txt"})));
    ok(&edit::edit_file(
        &w.env,
        &json!({"path": "win.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
    ));
    assert_eq!(w.get("win.txt"), "1\r\n2\r\nthree\r\n");
}

// ---- CJK names ----------------------------------------------------------

#[test]
fn cjk_file_and_directory_names_work_in_every_tool() {
    let w = ws();
    w.put("文档/笔记.txt", "第一行\n你好，世界\n");
    let page = ok(&files::read_file(&w.env, &json!({"path": "文档/笔记.txt"})));
    assert_eq!(
        page,
        "     1\t第一行\n     2\t你好，世界\n[`文档/笔记.txt`: lines 1–2 of 2; end of file]"
    );
    assert_eq!(
        ok(&files::list_dir(&w.env, &json!({}))),
        "`.` (1 entry):\n文档/\n"
    );
    assert_eq!(
        ok(&search::glob(&w.env, &json!({"pattern": "文档/*.txt"}))),
        "文档/笔记.txt\n"
    );
    assert_eq!(
        ok(&search::grep(
            &w.env,
            &json!({"pattern": "世界", "glob": "笔记*"})
        )),
        "文档/笔记.txt:2:你好，世界\n[1 matching line in 1 file]\n"
    );
    let out = edit::edit_file(
        &w.env,
        &json!({"path": "文档/笔记.txt", "old_string": "世界", "new_string": "地球"}),
    );
    assert!(ok(&out).contains("-你好，世界\n+你好，地球\n"));
    assert_eq!(w.get("文档/笔记.txt"), "第一行\n你好，地球\n");
    ok(&edit::write_file(
        &w.env,
        &json!({"path": "新目录/文件.md", "content": "内容\n"}),
    ));
    assert_eq!(w.get("新目录/文件.md"), "内容\n");
}

// ---- confinement ----------------------------------------------------------

#[test]
fn escapes_are_refused_and_nothing_outside_is_read_or_written() {
    let w = ws();
    w.put("src/keep.txt", "inside\n");
    let before = w.outside_snapshot();
    let secret = w.outside.join(SECRET);
    let secret_abs = secret.to_str().unwrap().to_owned();
    symlink(&secret, w.root.join("link.txt")).unwrap();
    symlink(&w.outside, w.root.join("linkdir")).unwrap();
    symlink(w.outside.join("new_by_link.txt"), w.root.join("dangling.txt")).unwrap();

    let reads = [
        "../outside/secret.txt".to_owned(),
        secret_abs.clone(),
        "link.txt".to_owned(),
        "linkdir/secret.txt".to_owned(),
        "src/../../outside/secret.txt".to_owned(),
    ];
    for path in &reads {
        let e = err(&files::read_file(&w.env, &json!({"path": path})));
        assert!(
            e.starts_with(&format!("`{path}` "))
                && e.contains("file tools only reach files under the workspace root"),
            "{path}: {e}"
        );
        assert!(!e.contains(SECRET_TEXT.trim()), "{e}");
    }
    let e = err(&files::read_file(&w.env, &json!({"path": "link.txt"})));
    assert!(e.contains("through a symbolic link"), "{e}");
    let e = err(&files::read_file(
        &w.env,
        &json!({"path": "../outside/secret.txt"}),
    ));
    assert!(e.contains("is outside the workspace"), "{e}");
    err(&files::list_dir(&w.env, &json!({"path": "linkdir"})));
    err(&files::list_dir(&w.env, &json!({"path": ".."})));
    err(&search::grep(
        &w.env,
        &json!({"pattern": "outside", "path": "linkdir"}),
    ));
    err(&search::glob(
        &w.env,
        &json!({"pattern": "*", "path": "../outside"}),
    ));
    // A walk of the root does not follow the links out.
    let grep = ok(&search::grep(&w.env, &json!({"pattern": "outside-only"})));
    assert!(grep.starts_with("No lines"), "{grep}");
    assert_eq!(
        ok(&search::glob(&w.env, &json!({"pattern": "*.txt"}))),
        "src/keep.txt\n"
    );

    let writes = [
        "../outside/secret.txt",
        "../outside/planted.txt",
        &secret_abs,
        "link.txt",
        "linkdir/secret.txt",
        "linkdir/new.txt",
        "linkdir/sub/new.txt",
        "dangling.txt",
        "nope/../../outside/planted.txt",
    ];
    for path in writes {
        // Read first where possible, so only confinement can refuse.
        let _ = files::read_file(&w.env, &json!({"path": path}));
        let e = err(&edit::write_file(
            &w.env,
            &json!({"path": path, "content": "pwned\n"}),
        ));
        assert!(!e.is_empty());
        let e = err(&edit::edit_file(
            &w.env,
            &json!({"path": path, "old_string": "outside-only", "new_string": "pwned"}),
        ));
        assert!(!e.is_empty());
    }
    assert_eq!(
        w.outside_snapshot(),
        before,
        "nothing outside changed or appeared"
    );
    assert!(!w.root.join("nope").exists());
}

#[test]
fn resolve_accepts_paths_inside_allow_paths_and_new_files_under_the_root() {
    let w = ws();
    let outside = w.outside.clone();
    // A second workspace whose allow_paths holds the first one's outside directory.
    let allowed = ws_with(|env| env.allow_paths = vec![outside.clone()]);
    let page = ok(&files::read_file(
        &allowed.env,
        &json!({"path": outside.join(SECRET).to_str().unwrap()}),
    ));
    assert!(page.contains(SECRET_TEXT.trim()));
    assert!(resolve(&w.env, outside.join(SECRET).to_str().unwrap(), Intent::Read).is_err());
    // The same directory written relative to this process's directory is
    // ignored (as `doctor` says), not resolved against wherever strata runs.
    let cwd = std::env::current_dir().unwrap();
    let up = "../".repeat(cwd.components().count() - 1);
    let relative = std::path::PathBuf::from(up).join(outside.strip_prefix("/").unwrap());
    assert!(
        relative.is_relative()
            && std::fs::canonicalize(&relative).unwrap() == std::fs::canonicalize(&outside).unwrap()
    );
    let relative_only = ws_with(|env| env.allow_paths = vec![relative.clone()]);
    assert!(
        resolve(
            &relative_only.env,
            outside.join(SECRET).to_str().unwrap(),
            Intent::Read
        )
        .is_err(),
        "a relative allow_paths entry allows nothing"
    );

    assert_eq!(
        resolve(&w.env, "a/b/c.txt", Intent::Write).unwrap(),
        w.root.join("a/b/c.txt")
    );
    assert_eq!(
        resolve(&w.env, "./y.txt", Intent::Write).unwrap(),
        w.root.join("y.txt")
    );
    let e = resolve(&w.env, "x/../y.txt", Intent::Write).unwrap_err();
    assert!(e.contains("`..` after a directory that does not exist"), "{e}");
    w.put("file", "x");
    let e = resolve(&w.env, "file/inner.txt", Intent::Write).unwrap_err();
    assert!(e.contains("which is a file, not a directory"), "{e}");
    // The spill directory is readable, not writable.
    let spill = w.env.spill_dir.join("x.txt");
    assert!(resolve(&w.env, spill.to_str().unwrap(), Intent::Read).is_ok());
    assert!(resolve(&w.env, spill.to_str().unwrap(), Intent::Write).is_err());
}

// ---- memory, skill_view, current_time -----------------------------------

#[test]
fn skill_view_returns_the_body_and_lists_known_names_for_an_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("release/SKILL.md");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        &path,
        "---\nname: release\ndescription: Cut a release\n---\n\n1. Bump the version.\n",
    )
    .unwrap();
    let skills = vec![
        SkillEntry {
            name: "release".into(),
            path: path.clone(),
        },
        SkillEntry {
            name: "triage".into(),
            path: dir.path().join("triage/SKILL.md"),
        },
    ];
    let w = ws_with(|env| env.skills = skills);
    assert_eq!(
        ok(&files::skill_view(&w.env, &json!({"name": "release"}))),
        format!("Skill `release` ({}):\n\n1. Bump the version.\n", path.display())
    );
    let e = err(&files::skill_view(&w.env, &json!({"name": "deploy"})));
    assert_eq!(
        e,
        "There is no skill named `deploy`; call skill_view with one of `release`, `triage`."
    );
}

#[test]
fn current_time_gives_rfc3339_with_offset_weekday_and_zone() {
    let w = ws();
    let text = ok(&files::current_time(&w.env, &json!({})));
    let rfc = text.lines().find_map(|l| l.strip_prefix("RFC 3339: ")).unwrap();
    let at: jiff::Timestamp = rfc.parse().unwrap();
    let now = jiff::Timestamp::now();
    assert!((now.as_second() - at.as_second()).abs() <= 5, "{text}");
    let weekday = jiff::Zoned::now().strftime("%A").to_string();
    assert!(text.starts_with(&weekday), "{text}");
    // The offset is the system zone's at that instant, in words and in the
    // RFC 3339 form alike.
    let offset = at
        .to_zoned(jiff::tz::TimeZone::system())
        .strftime("%:z")
        .to_string();
    assert!(rfc.ends_with(&offset), "{offset}: {text}");
    assert!(text.contains(&format!("(UTC{offset})")), "{offset}: {text}");
    assert!(text.contains("time zone "), "{text}");
}
