//! The built-in tools' schemas and the byte-stable tools array.
//!
//! Owns which tools exist ([`builtin`]), the set a session offers
//! ([`ToolSet`]: enabled flags, the OpenAI-form array, its exact bytes, hash
//! and per-tool tokens) and the one-line argument summary the app shows
//! ([`summary`]). Invariant: the array is built-in tools first in the fixed
//! order of [`builtin`], then extra groups (MCP servers) in the order they
//! were added, each sorted by name, so adding a group never moves the bytes
//! of what came before. serde_json is built without `preserve_order`, so
//! object keys serialise sorted and the bytes depend on the content only.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Access;
use crate::tokens::TokenCounter;

mod summary;

pub use summary::{SUMMARY_CHARS, summary};

/// One tool as the model sees it: its name, a short description, a JSON
/// schema of its arguments (`{"type":"object","properties":…}`), and what it
/// does to the world.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// One or two sentences: what the tool does and its limits.
    pub description: String,
    /// The JSON schema of the arguments object.
    pub parameters: Value,
    /// Whether it reads, writes files or runs a program.
    pub access: Access,
}

impl ToolSpec {
    fn new(name: &str, access: Access, description: &str, parameters: Value) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters,
            access,
        }
    }

    /// The OpenAI form of this tool:
    /// `{"type":"function","function":{"name","description","parameters"}}`.
    #[must_use]
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// An object schema with `properties`, `required` and no other keys.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The built-in tools in their fixed order: `read_file`, `list_dir`, `glob`,
/// `grep`, `write_file`, `edit_file`, `shell`, `memory`, `skill_view`,
/// `current_time`. Their handlers live in the `tools` adapter.
#[must_use]
pub fn builtin() -> Vec<ToolSpec> {
    use Access::{ReadOnly, Run, Write};
    vec![
        ToolSpec::new(
            "read_file",
            ReadOnly,
            "Read a text file in the workspace as numbered lines, at most 2,000 lines or 50,000 characters \
             a call; page on with offset and limit. Also reads the spill files that hold cut tool outputs.",
            object(
                json!({
                    "path": {"type": "string", "description": "File path, relative to the workspace root."},
                    "offset": {"type": "integer", "description": "1-based number of the first line to read."},
                    "limit": {"type": "integer", "description": "Number of lines to read."},
                }),
                &["path"],
            ),
        ),
        ToolSpec::new(
            "list_dir",
            ReadOnly,
            "List the entries of a workspace directory, honouring .gitignore.",
            object(
                json!({"path": {"type": "string", "description": "Directory, relative to the workspace root; default \".\"."}}),
                &[],
            ),
        ),
        ToolSpec::new(
            "glob",
            ReadOnly,
            "Find files whose paths match a glob pattern such as **/*.rs, honouring .gitignore.",
            object(
                json!({
                    "pattern": {"type": "string", "description": "Glob pattern, relative to path."},
                    "path": {"type": "string", "description": "Directory to search; default the workspace root."},
                }),
                &["pattern"],
            ),
        ),
        ToolSpec::new(
            "grep",
            ReadOnly,
            "Search file contents with a regular expression, honouring .gitignore; prints path:line:text \
             matches, capped at max_results.",
            object(
                json!({
                    "pattern": {"type": "string", "description": "Rust regex syntax."},
                    "path": {"type": "string", "description": "File or directory to search; default the workspace root."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, such as *.rs."},
                    "case_insensitive": {"type": "boolean"},
                    "max_results": {"type": "integer", "description": "Most matching lines to return."},
                }),
                &["pattern"],
            ),
        ),
        ToolSpec::new(
            "write_file",
            Write,
            "Create or overwrite a workspace file with the given content; the previous content is kept \
             so the change can be undone.",
            object(
                json!({
                    "path": {"type": "string", "description": "File path, relative to the workspace root."},
                    "content": {"type": "string", "description": "The whole new content."},
                }),
                &["path", "content"],
            ),
        ),
        ToolSpec::new(
            "edit_file",
            Write,
            "Replace old_string with new_string in a workspace file; old_string must match exactly once \
             unless replace_all. Read the file first: a file changed since it was read is refused.",
            object(
                json!({
                    "path": {"type": "string", "description": "File path, relative to the workspace root."},
                    "old_string": {"type": "string", "description": "Exact text to replace."},
                    "new_string": {"type": "string", "description": "Replacement text."},
                    "replace_all": {"type": "boolean", "description": "Replace every match; default false."},
                }),
                &["path", "old_string", "new_string"],
            ),
        ),
        ToolSpec::new(
            "shell",
            Run,
            "Run a command with bash -c in the workspace root, without a terminal and with empty stdin; \
             returns stdout, stderr and the exit code. It runs in a sandbox: it writes only the workspace \
             and $TMPDIR, and has no network.",
            object(
                json!({
                    "command": {"type": "string"},
                    "timeout": {"type": "integer", "description": "Seconds; default 120, at most 600."},
                    "sandbox": {"type": "string", "enum": ["off"], "description": "\"off\" runs it outside the sandbox; the user is asked every time."},
                    "network": {"type": "boolean", "description": "true lets it use the network; the user is asked."},
                    "reason": {"type": "string", "description": "Why it needs sandbox off or the network, shown to the user."},
                }),
                &["command"],
            ),
        ),
        ToolSpec::new(
            "memory",
            Write,
            "Append a note to MEMORY.md, the user's memory that later sessions in every workspace read: facts, never instructions.",
            object(
                json!({"text": {"type": "string", "description": "The note."}}),
                &["text"],
            ),
        ),
        ToolSpec::new(
            "skill_view",
            ReadOnly,
            "Show the full instructions of a skill named in the skills index.",
            object(json!({"name": {"type": "string"}}), &["name"]),
        ),
        ToolSpec::new(
            "current_time",
            ReadOnly,
            "Give the current date, time and time zone.",
            object(json!({}), &[]),
        ),
    ]
}

/// One tool of a [`ToolSet`] with its state.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolEntry {
    /// The tool.
    pub spec: ToolSpec,
    /// Whether the tool is offered to the model.
    pub enabled: bool,
    /// The group it came in with ([`ToolSet::with_extra`], an MCP server's
    /// name); `None` for the built-in tools.
    pub group: Option<String>,
}

/// The tools a session offers, in array order, with the tools array built
/// once per change: its values, exact bytes and SHA-256.
#[derive(Clone, Debug)]
pub struct ToolSet {
    entries: Vec<ToolEntry>,
    array: Vec<Value>,
    json: String,
    sha256: String,
}

impl ToolSet {
    /// A set of `specs`, all enabled, in the given order. A spec whose name
    /// came earlier is left out (names are unique in a tools array).
    #[must_use]
    pub fn new(specs: Vec<ToolSpec>) -> Self {
        let mut set = Self {
            entries: Vec::with_capacity(specs.len()),
            array: Vec::new(),
            json: String::new(),
            sha256: String::new(),
        };
        for spec in specs {
            if !set.entries.iter().any(|e| e.spec.name == spec.name) {
                set.entries.push(ToolEntry {
                    spec,
                    enabled: true,
                    group: None,
                });
            }
        }
        set.rebuild();
        set
    }

    /// The built-in tools ([`builtin`]), all enabled.
    #[must_use]
    pub fn builtin() -> Self {
        Self::new(builtin())
    }

    /// This set with `specs` appended as the group `group` (an MCP server),
    /// sorted by name, after the built-in tools and every earlier group. A
    /// group already present is replaced where it stands, keeping the
    /// enabled flag of tools that remain. Specs whose name another group or
    /// a built-in tool has are left out.
    #[must_use]
    pub fn with_extra(mut self, group: &str, mut specs: Vec<ToolSpec>) -> Self {
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs.dedup_by(|a, b| a.name == b.name);
        let in_group = |e: &ToolEntry| e.group.as_deref() == Some(group);
        let at = self
            .entries
            .iter()
            .position(in_group)
            .unwrap_or(self.entries.len());
        let old: Vec<ToolEntry> = self.entries.iter().filter(|e| in_group(e)).cloned().collect();
        self.entries.retain(|e| !in_group(e));
        let added: Vec<ToolEntry> = specs
            .into_iter()
            .filter(|s| !self.entries.iter().any(|e| e.spec.name == s.name))
            .map(|spec| ToolEntry {
                enabled: old
                    .iter()
                    .find(|o| o.spec.name == spec.name)
                    .is_none_or(|o| o.enabled),
                spec,
                group: Some(group.to_owned()),
            })
            .collect();
        self.entries.splice(at..at, added);
        self.rebuild();
        self
    }

    /// This set with only the groups `keep` accepts (servers still in the
    /// session); the built-in tools and the rest keep their order and bytes.
    #[must_use]
    pub fn retain_groups(mut self, keep: impl Fn(&str) -> bool) -> Self {
        self.entries.retain(|e| e.group.as_deref().is_none_or(&keep));
        self.rebuild();
        self
    }

    fn rebuild(&mut self) {
        self.array = self.enabled().map(ToolSpec::to_openai).collect();
        self.json = Value::Array(self.array.clone()).to_string();
        self.sha256 = hex::encode(Sha256::digest(self.json.as_bytes()));
    }

    fn enabled(&self) -> impl Iterator<Item = &ToolSpec> {
        self.entries.iter().filter(|e| e.enabled).map(|e| &e.spec)
    }

    /// Switches the tool `name` on or off; `false` when there is no such
    /// tool. The array is rebuilt when the flag changes.
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> bool {
        let Some(entry) = self.entries.iter_mut().find(|e| e.spec.name == name) else {
            return false;
        };
        if entry.enabled != enabled {
            entry.enabled = enabled;
            self.rebuild();
        }
        true
    }

    /// Whether `name` is a tool of the set and enabled.
    #[must_use]
    pub fn is_enabled(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The enabled tool `name`; `None` when unknown or switched off.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.enabled().find(|s| s.name == name)
    }

    /// Every tool of the set, enabled or not, in array order.
    #[must_use]
    pub fn specs(&self) -> &[ToolEntry] {
        &self.entries
    }

    /// The tools array of the enabled tools in OpenAI form, in order.
    #[must_use]
    pub fn array(&self) -> &[Value] {
        &self.array
    }

    /// The exact serialized bytes of [`array`](Self::array) (compact JSON,
    /// keys sorted).
    #[must_use]
    pub fn json(&self) -> String {
        self.json.clone()
    }

    /// Lower-case hex SHA-256 of [`json`](Self::json), recorded with each
    /// request.
    #[must_use]
    pub fn sha256(&self) -> String {
        self.sha256.clone()
    }

    /// `(name, tokens)` per enabled tool in order, each the count of its
    /// OpenAI-form schema, so they sum to
    /// [`crate::tokens::tool_schema_tokens`] over [`array`](Self::array).
    #[must_use]
    pub fn tokens(&self, counter: &dyn TokenCounter) -> Vec<(String, u32)> {
        self.enabled()
            .zip(&self.array)
            .map(|(spec, schema)| {
                let n = u32::try_from(counter.count(&schema.to_string())).unwrap_or(u32::MAX);
                (spec.name.clone(), n)
            })
            .collect()
    }
}

impl From<Vec<ToolSpec>> for ToolSet {
    fn from(specs: Vec<ToolSpec>) -> Self {
        Self::new(specs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::tool_schema_tokens;

    /// A counter that is not additive over concatenation, so a sum that
    /// matches is a sum of the same texts.
    struct Thirds;

    impl TokenCounter for Thirds {
        fn id(&self) -> &str {
            "thirds"
        }
        fn exact(&self) -> bool {
            false
        }
        fn count(&self, text: &str) -> usize {
            text.len() / 3 + 1
        }
    }

    fn names(set: &ToolSet) -> Vec<String> {
        set.array()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn extra(name: &str) -> ToolSpec {
        ToolSpec::new(
            name,
            Access::Run,
            "An extra tool.",
            object(serde_json::json!({}), &[]),
        )
    }

    #[test]
    fn builtin_tools_come_in_the_fixed_order_with_their_access() {
        let order: Vec<(String, Access)> = builtin().into_iter().map(|s| (s.name, s.access)).collect();
        let expected = [
            ("read_file", Access::ReadOnly),
            ("list_dir", Access::ReadOnly),
            ("glob", Access::ReadOnly),
            ("grep", Access::ReadOnly),
            ("write_file", Access::Write),
            ("edit_file", Access::Write),
            ("shell", Access::Run),
            ("memory", Access::Write),
            ("skill_view", Access::ReadOnly),
            ("current_time", Access::ReadOnly),
        ];
        let expected: Vec<(String, Access)> = expected.iter().map(|(n, a)| ((*n).to_owned(), *a)).collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn every_schema_is_a_closed_object_whose_required_keys_exist() {
        for spec in builtin() {
            let p = &spec.parameters;
            assert_eq!(p["type"], "object", "{}", spec.name);
            assert_eq!(p["additionalProperties"], false, "{}", spec.name);
            let props = p["properties"].as_object().unwrap();
            for key in p["required"].as_array().unwrap() {
                assert!(props.contains_key(key.as_str().unwrap()), "{}: {key}", spec.name);
            }
            assert!(
                !spec.description.is_empty() && spec.description.len() < 300,
                "{}",
                spec.name
            );
        }
        let read = builtin().into_iter().next().unwrap();
        assert_eq!(read.parameters["required"], serde_json::json!(["path"]));
        assert_eq!(read.parameters["properties"]["offset"]["type"], "integer");
    }

    #[test]
    fn the_array_is_openai_form_with_sorted_keys() {
        let set = ToolSet::builtin();
        assert_eq!(set.array().len(), 10);
        assert_eq!(set.array()[6]["type"], "function");
        assert_eq!(set.array()[6]["function"]["name"], "shell");
        let json = set.json();
        // Keys sort: "function" before "type", "description" before "name".
        assert!(
            json.starts_with(r#"[{"function":{"description":"Read a text file"#),
            "{json}"
        );
        assert_eq!(json, serde_json::Value::Array(set.array().to_vec()).to_string());
        assert_eq!(set.sha256(), hex::encode(Sha256::digest(json.as_bytes())));
        assert_eq!(set.sha256().len(), 64);
        assert_eq!(
            ToolSet::builtin().json(),
            json,
            "the bytes depend on the content only"
        );
    }

    #[test]
    fn switching_a_tool_off_changes_the_array_and_back_restores_its_bytes() {
        let mut set = ToolSet::builtin();
        let before = (set.json(), set.sha256());
        assert!(set.set_enabled("shell", false));
        assert!(!set.is_enabled("shell"));
        assert!(set.get("shell").is_none());
        assert!(!names(&set).contains(&"shell".to_owned()));
        assert_eq!(set.array().len(), 9);
        assert_ne!(set.sha256(), before.1);
        let entry = set.specs().iter().find(|e| e.spec.name == "shell").unwrap();
        assert!(!entry.enabled);
        assert_eq!(set.specs().len(), 10);
        assert!(set.set_enabled("shell", true));
        assert_eq!((set.json(), set.sha256()), before);
        assert!(!set.set_enabled("no_such_tool", false));
        assert_eq!(set.get("grep").map(|s| s.access), Some(Access::ReadOnly));
    }

    #[test]
    fn tokens_per_tool_sum_to_what_the_request_counts() {
        let mut set = ToolSet::builtin().with_extra("srv", vec![extra("srv__b"), extra("srv__a")]);
        set.set_enabled("memory", false);
        let per_tool = set.tokens(&Thirds);
        assert_eq!(per_tool.len(), set.array().len());
        assert_eq!(per_tool[0].0, "read_file");
        assert!(!per_tool.iter().any(|(n, _)| n == "memory"));
        assert!(per_tool.iter().all(|(_, t)| *t > 10));
        let sum: u32 = per_tool.iter().map(|(_, t)| t).sum();
        assert_eq!(sum, tool_schema_tokens(&Thirds, set.array()));
    }

    #[test]
    fn a_group_appends_sorted_and_never_moves_the_builtin_prefix() {
        let base = ToolSet::builtin();
        let prefix = base.json();
        let prefix = &prefix[..prefix.len() - 1]; // without the closing `]`
        let set = base.with_extra("beta", vec![extra("beta__z"), extra("beta__a")]);
        let set = set.with_extra("alpha", vec![extra("alpha__y"), extra("alpha__b")]);
        let bytes = set.json();
        assert!(bytes.starts_with(prefix));
        assert_eq!(&bytes[prefix.len()..prefix.len() + 1], ",");
        let names = names(&set);
        assert_eq!(&names[10..], ["beta__a", "beta__z", "alpha__b", "alpha__y"]);
        assert_eq!(set.specs()[10].group.as_deref(), Some("beta"));
        assert_eq!(set.specs()[0].group, None);
    }

    #[test]
    fn a_group_added_again_is_replaced_in_place_keeping_its_flags() {
        let mut set = ToolSet::builtin()
            .with_extra("one", vec![extra("one__a"), extra("one__b")])
            .with_extra("two", vec![extra("two__a")]);
        set.set_enabled("one__b", false);
        let set = set.with_extra("one", vec![extra("one__c"), extra("one__b"), extra("read_file")]);
        let all: Vec<(&str, bool)> = set.specs()[10..]
            .iter()
            .map(|e| (e.spec.name.as_str(), e.enabled))
            .collect();
        assert_eq!(all, [("one__b", false), ("one__c", true), ("two__a", true)]);
        assert_eq!(
            set.specs().iter().filter(|e| e.spec.name == "read_file").count(),
            1
        );
        assert_eq!(set.specs()[0].group, None);
    }
}
