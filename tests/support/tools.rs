//! A temporary workspace for the file tools: the root, a directory beside
//! it that the tools must not reach (with a planted file), the session's
//! spill directory and a config directory, and a [`ToolEnv`] over them.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use strata::tooling::ToolStatus;
use strata::tools::edit::ReadLog;
use strata::tools::{ShellLimits, SkillEntry, ToolEnv, ToolOutput};
use tempfile::TempDir;

/// The planted file outside the workspace, and its content.
pub const SECRET: &str = "secret.txt";
pub const SECRET_TEXT: &str = "outside-only content 7f3a\n";

pub struct Ws {
    _dir: TempDir,
    /// The workspace root (canonical).
    pub root: PathBuf,
    /// A directory beside the root, holding [`SECRET`].
    pub outside: PathBuf,
    pub env: ToolEnv,
}

/// A fresh workspace with default caps (2,000 lines, 50,000 characters).
pub fn ws() -> Ws {
    ws_with(|_| {})
}

/// A fresh workspace whose env `adjust` may change.
pub fn ws_with(adjust: impl FnOnce(&mut ToolEnv)) -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    let spill = base.join("data/spill/s1");
    for d in [&root, &outside, &spill] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(outside.join(SECRET), SECRET_TEXT).unwrap();
    let mut env = ToolEnv {
        root: root.clone(),
        allow_paths: Vec::new(),
        spill_dir: spill,
        memory_file: base.join("config/MEMORY.md"),
        session: "1a2b3c4d".to_owned(),
        skills: Vec::<SkillEntry>::new(),
        read_max_chars: 50_000,
        read_max_lines: 2_000,
        shell: ShellLimits::default(),
        reads: Mutex::new(ReadLog::default()),
        keep_chars: 50_000,
    };
    adjust(&mut env);
    Ws {
        _dir: dir,
        root,
        outside,
        env,
    }
}

impl Ws {
    /// Writes `text` to `rel` under the root, creating parents.
    pub fn put(&self, rel: &str, text: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    /// The content of `rel` under the root.
    pub fn get(&self, rel: &str) -> String {
        fs::read_to_string(self.root.join(rel)).unwrap()
    }

    /// Every file under the outside directory with its bytes.
    pub fn outside_snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        snapshot(&self.outside, &mut out);
        out
    }
}

fn snapshot(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            snapshot(&path, out);
        } else {
            out.insert(path.clone(), fs::read(&path).unwrap_or_default());
        }
    }
}

/// The text of a successful output (fails the test otherwise).
#[track_caller]
pub fn ok(out: &ToolOutput) -> String {
    assert_eq!(
        out.status,
        ToolStatus::Ok,
        "expected ok, got: {}",
        out.output.head
    );
    out.output.head.clone()
}

/// The text of a failed output (fails the test otherwise).
#[track_caller]
pub fn err(out: &ToolOutput) -> String {
    assert_eq!(
        out.status,
        ToolStatus::Error,
        "expected an error, got: {}",
        out.output.head
    );
    out.output.head.clone()
}
