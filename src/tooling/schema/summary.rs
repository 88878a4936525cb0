//! The one-line argument summary of a tool call that the app shows next to
//! the tool's name (`src/main.rs:10+50`, `/fn main/ in src`, `cargo test`).

use serde_json::Value;

/// The most characters of a summary, the `…` included.
pub const SUMMARY_CHARS: usize = 80;

/// A one-line summary of a call's `arguments` for the UI, at most
/// [`SUMMARY_CHARS`] characters, one line, with terminal controls shown as
/// [`crate::text::visible`] shows them:
///
/// - `read_file` → `path`, `path:OFFSET`, `path:OFFSET+LIMIT` (`src/main.rs:10+50`);
/// - `list_dir` → the path (`.` by default); `glob` → `pattern in path`;
/// - `grep` → `/pattern/` (`/pattern/i` when case-insensitive), then
///   ` in path` and ` (glob)` when given;
/// - `write_file`, `edit_file` → the path; `skill_view` → the name;
/// - `shell` → the command's first line, `memory` → the note's first line;
/// - `current_time` → empty;
/// - an unknown tool, or arguments without the expected fields → the
///   compact JSON of the arguments.
///
/// Anything cut, or a first line of several, ends with `…`.
#[must_use]
pub fn summary(name: &str, arguments: &Value) -> String {
    let s = |key: &str| arguments.get(key).and_then(Value::as_str);
    let known = match name {
        "read_file" => s("path").map(|path| {
            let offset = arguments.get("offset").and_then(Value::as_u64);
            let limit = arguments.get("limit").and_then(Value::as_u64);
            match (offset, limit) {
                (None, None) => path.to_owned(),
                (Some(o), None) => format!("{path}:{o}"),
                (o, Some(l)) => format!("{path}:{}+{l}", o.unwrap_or(1)),
            }
        }),
        "list_dir" => Some(s("path").unwrap_or(".").to_owned()),
        "glob" => s("pattern").map(|p| with_path(p.to_owned(), s("path"))),
        "grep" => s("pattern").map(|p| {
            let flag = if arguments.get("case_insensitive").and_then(Value::as_bool) == Some(true) {
                "i"
            } else {
                ""
            };
            let mut out = with_path(format!("/{p}/{flag}"), s("path"));
            if let Some(glob) = s("glob") {
                out.push_str(&format!(" ({glob})"));
            }
            out
        }),
        "write_file" | "edit_file" => s("path").map(str::to_owned),
        "skill_view" => s("name").map(str::to_owned),
        "shell" => s("command").map(first_line),
        "memory" => s("text").map(first_line),
        "current_time" => Some(String::new()),
        _ => None,
    };
    let text = known.unwrap_or_else(|| arguments.to_string());
    // Shown, not dropped: `^[`, `^M` and `\u{202e}` tell the user what the
    // arguments hold; the summary stays one line.
    let shown = crate::text::visible(&text).replace('\n', "^J").replace('\t', " ");
    clip(&shown)
}

fn with_path(head: String, path: Option<&str>) -> String {
    match path {
        Some(p) => format!("{head} in {p}"),
        None => head,
    }
}

/// The first non-empty line of `text`, trimmed, with `…` when more follows.
fn first_line(text: &str) -> String {
    let text = text.trim();
    match text.split_once('\n') {
        Some((first, _)) => format!("{}…", first.trim_end()),
        None => text.to_owned(),
    }
}

/// `text` cut to [`SUMMARY_CHARS`] characters, the last one `…` when cut.
fn clip(text: &str) -> String {
    if text.chars().count() <= SUMMARY_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(SUMMARY_CHARS - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_file_shows_the_path_and_range() {
        assert_eq!(
            summary("read_file", &json!({"path": "src/main.rs"})),
            "src/main.rs"
        );
        assert_eq!(
            summary(
                "read_file",
                &json!({"path": "src/main.rs", "offset": 10, "limit": 50})
            ),
            "src/main.rs:10+50"
        );
        assert_eq!(
            summary("read_file", &json!({"path": "a.rs", "offset": 7})),
            "a.rs:7"
        );
        assert_eq!(
            summary("read_file", &json!({"path": "a.rs", "limit": 5})),
            "a.rs:1+5"
        );
    }

    #[test]
    fn search_tools_show_pattern_and_path() {
        assert_eq!(
            summary("grep", &json!({"pattern": "fn main", "path": "src"})),
            "/fn main/ in src"
        );
        assert_eq!(
            summary(
                "grep",
                &json!({"pattern": "x", "case_insensitive": true, "glob": "*.rs"})
            ),
            "/x/i (*.rs)"
        );
        assert_eq!(
            summary("glob", &json!({"pattern": "**/*.rs", "path": "src"})),
            "**/*.rs in src"
        );
        assert_eq!(summary("list_dir", &json!({})), ".");
        assert_eq!(summary("list_dir", &json!({"path": "src/tui"})), "src/tui");
    }

    #[test]
    fn file_and_misc_tools_show_their_main_argument() {
        let edit = json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(summary("edit_file", &edit), "src/lib.rs");
        assert_eq!(
            summary("write_file", &json!({"path": "新しい.txt", "content": "x"})),
            "新しい.txt"
        );
        assert_eq!(summary("skill_view", &json!({"name": "release"})), "release");
        assert_eq!(
            summary("memory", &json!({"text": "use tabs\nalways"})),
            "use tabs…"
        );
        assert_eq!(summary("current_time", &json!({})), "");
    }

    #[test]
    fn shell_shows_the_first_line_cut_to_80_chars() {
        assert_eq!(
            summary("shell", &json!({"command": "cargo test --lib"})),
            "cargo test --lib"
        );
        assert_eq!(summary("shell", &json!({"command": "cd src\nls -la"})), "cd src…");
        let long = format!("echo {}", "é".repeat(200));
        let out = summary("shell", &json!({ "command": long }));
        assert_eq!(out.chars().count(), SUMMARY_CHARS);
        assert!(out.starts_with("echo éé"));
        assert!(out.ends_with('…'));
    }

    #[test]
    fn unknown_tools_and_odd_arguments_show_compact_json() {
        assert_eq!(
            summary("srv__lookup", &json!({"q": "x", "n": 2})),
            r#"{"n":2,"q":"x"}"#
        );
        assert_eq!(summary("read_file", &json!({"file": "a"})), r#"{"file":"a"}"#);
        let big = json!({ "blob": "z".repeat(500) });
        let out = summary("srv__put", &big);
        assert_eq!(out.chars().count(), SUMMARY_CHARS);
        assert!(out.starts_with(r#"{"blob":"zzz"#));
    }

    #[test]
    fn control_characters_are_shown_and_never_reach_the_terminal() {
        let out = summary("shell", &json!({"command": "echo \u{1b}[2Jhi\u{202e}\rls"}));
        assert_eq!(out, "echo ^[[2Jhi\\u{202e}^Mls");
        let out = summary("read_file", &json!({"path": "a\nb\tc"}));
        assert_eq!(out, "a^Jb c");
    }
}
