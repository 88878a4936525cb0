//! A workspace's `.mcp.json` through its decisions, on temporary
//! directories and a real store.

use super::*;
use crate::config::{Config, Paths};

const FILE: &str = r#"{"mcpServers": {
    "time": {"command": "mcp-server-time", "args": ["--local-timezone", "Europe/Paris"], "env": {"LD_PRELOAD": "/tmp/x.so"}},
    "notes": {"command": "notes server", "args": ["a b", ""]},
    "web": {"type": "http", "url": "https://example.com/mcp"}
}}"#;

struct Setup {
    _home: tempfile::TempDir,
    workspace: tempfile::TempDir,
    runtime: Runtime,
}

fn setup(config_toml: &str) -> Setup {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let config = Config::parse(config_toml).unwrap().config;
    let runtime = Runtime::open(Paths::under(home.path()), config).unwrap();
    Setup {
        _home: home,
        workspace,
        runtime,
    }
}

impl Setup {
    fn root(&self) -> PathBuf {
        self.workspace.path().to_path_buf()
    }

    fn write(&self, text: &str) {
        std::fs::write(self.root().join(FILE_NAME), text).unwrap();
    }

    fn names(&self) -> Vec<String> {
        let mcp = self.runtime.workspace_mcp(&self.root());
        mcp.config.servers.keys().cloned().collect()
    }
}

#[test]
fn a_new_file_is_pending_and_starts_nothing_until_accepted() {
    let mut s = setup("[mcp.servers.fs]\ncommand = \"mcp-server-filesystem\"\n");
    assert_eq!(s.runtime.workspace_mcp(&s.root()).pending, None, "no file");
    s.write(FILE);
    let mcp = s.runtime.workspace_mcp(&s.root());
    assert_eq!(mcp.config.servers.keys().collect::<Vec<_>>(), ["fs"]);
    assert!(mcp.warnings.is_empty(), "{:?}", mcp.warnings);
    let pending = mcp.pending.unwrap();
    assert!(!pending.changed);
    let names: Vec<&str> = pending.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["notes", "time"], "the http entry is not offered");
    assert_eq!(
        pending.servers[1].command_line(),
        "LD_PRELOAD=/tmp/x.so mcp-server-time --local-timezone Europe/Paris"
    );
    assert_eq!(pending.servers[0].command_line(), r#""notes server" "a b" """#);
    assert!(
        pending.message.contains("names the MCP servers notes (\"notes server\" \"a b\" \"\"), time (LD_PRELOAD=/tmp/x.so mcp-server-time --local-timezone Europe/Paris), which are not started until you accept it: run `strata mcp accept` in the workspace, or `/mcp accept` in the app"),
        "{}",
        pending.message
    );
    assert_eq!(pending.message.matches(". ").count(), 0, "one sentence");

    let said = s.runtime.accept_mcp_json(&s.root()).unwrap();
    assert!(
        said.starts_with("Accepted ")
            && said.contains("time (LD_PRELOAD=/tmp/x.so mcp-server-time --local-timezone Europe/Paris)"),
        "{said}"
    );
    let mcp = s.runtime.workspace_mcp(&s.root());
    assert_eq!(mcp.pending, None);
    assert_eq!(
        mcp.config.servers.keys().collect::<Vec<_>>(),
        ["fs", "notes", "time"]
    );
    assert_eq!(mcp.sources["fs"], McpSource::Config);
    assert_eq!(mcp.sources["time"], McpSource::McpJson);
    assert_eq!(
        mcp.config.servers["time"].args,
        ["--local-timezone", "Europe/Paris"]
    );
    assert_eq!(
        mcp.warnings,
        [".mcp.json: server `web` uses the `http` transport, which strata does not support; it is left out."]
    );
}

#[test]
fn acceptance_lapses_when_the_bytes_change_and_holds_for_the_same_bytes() {
    let mut s = setup("");
    s.write(FILE);
    s.runtime.accept_mcp_json(&s.root()).unwrap();
    // The same bytes written again: still accepted.
    s.write(FILE);
    assert_eq!(s.names(), ["notes", "time"]);
    s.write(&FILE.replace("Europe/Paris", "UTC"));
    let mcp = s.runtime.workspace_mcp(&s.root());
    assert!(
        mcp.config.servers.is_empty(),
        "nothing of the changed file starts"
    );
    let pending = mcp.pending.unwrap();
    assert!(pending.changed);
    assert!(
        pending.message.contains("changed since it was accepted"),
        "{}",
        pending.message
    );
    // Back to the accepted bytes: accepted again.
    s.write(FILE);
    assert_eq!(s.names(), ["notes", "time"]);
}

#[test]
fn a_declined_file_stays_quiet_until_it_changes_and_can_be_accepted_later() {
    let mut s = setup("");
    s.write(FILE);
    let said = s.runtime.decline_mcp_json(&s.root()).unwrap();
    assert!(
        said.starts_with("Declined ") && said.contains("notes, time"),
        "{said}"
    );
    let mcp = s.runtime.workspace_mcp(&s.root());
    assert_eq!((mcp.pending, mcp.warnings.len()), (None, 0), "quiet");
    assert!(mcp.config.servers.is_empty());
    s.write(
        &FILE
            .replace("UTC", "Asia/Tokyo")
            .replace("Europe/Paris", "Asia/Tokyo"),
    );
    let pending = s.runtime.workspace_mcp(&s.root()).pending.unwrap();
    assert!(!pending.changed, "it was never accepted");
    s.runtime.accept_mcp_json(&s.root()).unwrap();
    assert_eq!(s.names(), ["notes", "time"]);
    // Declining an accepted file withdraws it.
    s.runtime.decline_mcp_json(&s.root()).unwrap();
    assert!(s.names().is_empty());
}

#[test]
fn a_config_server_of_the_same_name_wins_with_a_warning() {
    let mut s = setup("[mcp.servers.time]\ncommand = \"my-time\"\n");
    s.write(FILE);
    s.runtime.accept_mcp_json(&s.root()).unwrap();
    let mcp = s.runtime.workspace_mcp(&s.root());
    assert_eq!(mcp.config.servers["time"].command, "my-time");
    assert_eq!(mcp.sources["time"], McpSource::Config);
    assert_eq!(mcp.sources["notes"], McpSource::McpJson);
    assert!(
        mcp.warnings.contains(
            &".mcp.json: server `time` is also [mcp.servers.time] in config.toml, which is the one started; rename one to use both."
                .to_owned()
        ),
        "{:?}",
        mcp.warnings
    );
}

#[test]
fn the_decision_is_per_workspace_root_by_its_canonical_path() {
    let mut s = setup("");
    s.write(FILE);
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join(FILE_NAME), FILE).unwrap();
    // The same root reached through `..`.
    let sub = s.root().join("sub");
    std::fs::create_dir(&sub).unwrap();
    s.runtime.accept_mcp_json(&sub.join("..")).unwrap();
    assert_eq!(s.names(), ["notes", "time"]);
    let there = s.runtime.workspace_mcp(other.path());
    assert!(
        there.config.servers.is_empty() && there.pending.is_some(),
        "another workspace asks for itself"
    );
}

#[test]
fn a_broken_or_missing_file_is_one_sentence_and_starts_nothing() {
    let mut s = setup("");
    let none = s.runtime.accept_mcp_json(&s.root()).unwrap_err();
    assert!(
        none.starts_with("There is no .mcp.json in ")
            && none.ends_with("nothing to accept; run this in the workspace that has one."),
        "{none}"
    );
    s.write("{\"mcpServers\": {");
    let mcp = s.runtime.workspace_mcp(&s.root());
    assert_eq!(mcp.pending, None);
    assert_eq!(mcp.warnings.len(), 1);
    assert!(
        mcp.warnings[0].contains(".mcp.json: it is not valid JSON")
            && mcp.warnings[0].ends_with("fix it or remove it; none of its servers is started."),
        "{}",
        mcp.warnings[0]
    );
    let err = s.runtime.decline_mcp_json(&s.root()).unwrap_err();
    assert!(
        err.ends_with("fix it or remove it; nothing was declined."),
        "{err}"
    );
    s.write(r#"{"mcpServers": {"web": {"type": "sse", "url": "https://x"}}}"#);
    assert_eq!(
        s.runtime.workspace_mcp(&s.root()),
        WorkspaceMcp::default(),
        "a file without stdio servers is quiet"
    );
    let err = s.runtime.accept_mcp_json(&s.root()).unwrap_err();
    assert!(
        err.contains(
            "names no stdio server strata can start (.mcp.json: server `web` uses the `sse` transport"
        ),
        "{err}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        s.write(FILE);
        let path = s.root().join(FILE_NAME);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        if std::fs::read(&path).is_err() {
            // Not root: the file cannot be read.
            let mcp = s.runtime.workspace_mcp(&s.root());
            assert!(mcp.config.servers.is_empty() && mcp.pending.is_none());
            assert!(
                mcp.warnings[0].contains("cannot be read")
                    && mcp.warnings[0].ends_with("none of its servers is started."),
                "{:?}",
                mcp.warnings
            );
        }
    }
}
