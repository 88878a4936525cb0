//! Shared helpers for the prompt tests: fixture copies in temporary
//! directories (with a `.git/` made at test time), a fixed gather request,
//! path normalisation for golden files, and the layer-table invariants.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use strata::domain::Tier;
use strata::prompt::{AssembledPrompt, EnvFacts, PromptInputs, PromptSettings, ToolFacts};
use strata::tokens::{Encoding, TiktokenCounter};
use strata::workspace::GatherRequest;
use tempfile::TempDir;

/// A home (config dir), a project (git repository) and a data dir, each in
/// its own temporary directory; paths are canonical.
pub struct Fixture {
    _dirs: Vec<TempDir>,
    pub home: PathBuf,
    pub ws: PathBuf,
    pub data: PathBuf,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn temp() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

/// Makes `dir` a git repository root on branch `main`.
pub fn make_git(dir: &Path) {
    fs::create_dir_all(dir.join(".git")).unwrap();
    fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
}

/// The fixture home and project.
pub fn fixture() -> Fixture {
    let f = empty();
    copy_dir(&fixtures().join("home"), &f.home);
    copy_dir(&fixtures().join("project"), &f.ws);
    f
}

/// An empty home and an empty git repository.
pub fn empty() -> Fixture {
    let (h, home) = temp();
    let (w, ws) = temp();
    let (d, data) = temp();
    make_git(&ws);
    Fixture {
        _dirs: vec![h, w, d],
        home,
        ws,
        data,
    }
}

/// The request every test starts from: full mode, 128k window, fixed date,
/// environment and model.
pub fn request(f: &Fixture, cwd: &str) -> GatherRequest {
    GatherRequest {
        cwd: f.ws.join(cwd),
        config_dir: f.home.clone(),
        data_dir: f.data.clone(),
        settings: PromptSettings::default(),
        mode: strata::domain::PromptMode::Full,
        context_window: Some(128_000),
        first_session: false,
        recent: Vec::new(),
        model: "gpt-4o".to_owned(),
        provider: "openai".to_owned(),
        session_date: "Sunday, November 29, 2026".to_owned(),
        time_zone: "Europe/Paris".to_owned(),
        interactive: true,
        env: EnvFacts {
            os: Some("linux (Debian GNU/Linux 12 (bookworm))".to_owned()),
            shell: Some("/bin/bash".to_owned()),
            terminal: Some("xterm-256color".to_owned()),
        },
        tools: ToolFacts::default(),
    }
}

pub fn counter() -> TiktokenCounter {
    TiktokenCounter::new(Encoding::O200kBase, true)
}

/// `inputs` with the fixture's temporary paths replaced by `[HOME]` and
/// `[WORKSPACE]`, so golden files do not depend on where the temp dirs are.
pub fn normalize(inputs: &PromptInputs, f: &Fixture) -> PromptInputs {
    let json = serde_json::to_string(inputs).unwrap();
    let json = filter_paths(&json, f);
    serde_json::from_str(&json).unwrap()
}

pub fn filter_paths(s: &str, f: &Fixture) -> String {
    s.replace(f.ws.to_str().unwrap(), "[WORKSPACE]")
        .replace(f.home.to_str().unwrap(), "[HOME]")
}

/// The text, the layer table and the warnings, for a golden file.
pub fn render(p: &AssembledPrompt) -> String {
    let mut out = String::new();
    out.push_str(&p.text);
    out.push_str("\n\n======== layers ========\n");
    for l in &p.layers {
        out.push_str(&format!(
            "{:<14} {:<8} {:>5}..{:<5} {:>5} chars {:>4} tokens\n",
            l.name.as_str(),
            format!("{:?}", l.tier).to_lowercase(),
            l.start,
            l.end,
            l.chars,
            l.tokens
        ));
        for s in &l.sources {
            out.push_str(&format!(
                "    {:<9} {:>6} -> {:<6} {}\n",
                format!("{:?}", s.status).to_lowercase(),
                s.original_chars,
                s.kept_chars,
                s.path
            ));
        }
    }
    out.push_str(&format!(
        "boundary_offset: {:?}\ntotal_tokens: {} ({})\nsha256: {}\n",
        p.boundary_offset, p.total_tokens, p.tokenizer, p.sha256
    ));
    out.push_str("======== warnings ========\n");
    for w in &p.warnings {
        out.push_str(w);
        out.push('\n');
    }
    out
}

/// The layers' byte ranges tile the text, in tier order, and the boundary
/// offset is the start of the cache-boundary layer.
pub fn assert_layer_invariants(p: &AssembledPrompt) {
    let mut at = 0;
    let mut tier = Tier::Stable;
    for l in &p.layers {
        assert_eq!(
            l.start,
            at,
            "layer {} does not start where the last ended",
            l.name.as_str()
        );
        assert!(l.end >= l.start);
        assert!(l.tier >= tier, "layer {} is out of tier order", l.name.as_str());
        assert_eq!(l.tier, l.name.tier());
        assert_eq!(l.chars, p.text[l.start..l.end].chars().count());
        tier = l.tier;
        at = l.end;
    }
    assert_eq!(at, p.text.len(), "the layers do not cover the whole text");
    let boundary = p
        .layers
        .iter()
        .find(|l| l.name == strata::domain::LayerName::CacheBoundary);
    match (boundary, p.boundary_offset) {
        (Some(b), Some(offset)) => {
            assert_eq!(b.start, offset);
            assert!(p.text[offset..].starts_with("---\nEverything above is the same"));
            let first_volatile = p.layers.iter().find(|l| l.tier == Tier::Volatile).unwrap();
            assert_eq!(first_volatile.name, strata::domain::LayerName::CacheBoundary);
        }
        (None, None) => {}
        other => panic!("boundary layer and offset disagree: {other:?}"),
    }
}

/// Whether `text` holds a time of day such as `9:05` or `23:59`.
pub fn has_time_of_day(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len()).any(|i| {
        b[i] == b':'
            && i >= 1
            && b[i - 1].is_ascii_digit()
            && b.get(i + 1).is_some_and(u8::is_ascii_digit)
            && b.get(i + 2).is_some_and(u8::is_ascii_digit)
    })
}
