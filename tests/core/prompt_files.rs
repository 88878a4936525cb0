//! Instruction files that are huge, binary, badly encoded, unreadable,
//! misplaced or not files at all: each gives a warning and a usable prompt,
//! never a panic; and the family rules pick the right files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::prompt as support;

use std::fs::{self, File};
use std::io::{Seek, SeekFrom, Write};
use strata::domain::{LayerName, PromptMode, SourceInfo, SourceStatus};
use strata::prompt::{AssembledPrompt, InstructionPolicy, assemble};
use strata::workspace::{GatherRequest, gather, gather_with_stats};
use support::Fixture;

fn build(req: &GatherRequest) -> AssembledPrompt {
    let p = assemble(&gather(req), &support::counter());
    support::assert_layer_invariants(&p);
    p
}

fn project_sources(p: &AssembledPrompt) -> Vec<SourceInfo> {
    p.layers
        .iter()
        .find(|l| l.name == LayerName::Project)
        .map(|l| l.sources.clone())
        .unwrap_or_default()
}

fn source(p: &AssembledPrompt, path: &std::path::Path) -> SourceInfo {
    let path = path.display().to_string();
    project_sources(p)
        .into_iter()
        .find(|s| s.path == path)
        .unwrap_or_else(|| panic!("{path} not in {:?}", project_sources(p)))
}

/// `n` characters of numbered lines, so any cut position is recognisable.
fn numbered_text(n: usize) -> String {
    let mut s = String::with_capacity(n + 32);
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("line {i:06}: keep the build green.\n"));
        i += 1;
    }
    s.truncate(n - 1);
    s.push('.'); // no trailing whitespace: the prompt trims it
    s
}

fn warning_about<'a>(p: &'a AssembledPrompt, path: &std::path::Path) -> &'a str {
    let path = path.display().to_string();
    p.warnings
        .iter()
        .find(|w| w.contains(&path))
        .unwrap_or_else(|| panic!("no warning names {path}: {:?}", p.warnings))
}

#[test]
fn a_300k_agents_md_keeps_exactly_the_head_and_tail_the_rule_gives() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    // 300,000 bytes is over 4 × the cap: read as an excerpt, sized in bytes.
    // 40,000 is under it: read whole, sized in characters. Both cut alike.
    for (size, unit) in [(300_000, "bytes"), (40_000, "characters")] {
        let text = numbered_text(size);
        fs::write(&agents, &text).unwrap();
        let p = build(&support::request(&f, ""));
        let (head, tail) = (&text[..21_504], &text[size - 6_144..]);
        let marker = format!(
            "[... strata cut the middle of this file: kept the first 21,504 and the last 6,144 of {} {unit}; read {} for the full text ...]",
            strata_digits(size),
            agents.display()
        );
        let expected = format!("{head}\n{marker}\n{tail}");
        assert!(
            p.text.contains(&expected),
            "cut is not exactly head 21,504 + tail 6,144"
        );
        let s = source(&p, &agents);
        assert_eq!(s.status, SourceStatus::Truncated);
        assert_eq!((s.original_chars, s.kept_chars), (size as u64, 27_648));
        let w = warning_about(&p, &agents);
        assert!(w.contains("over its cap of 30,720 characters"), "{w}");
        // truncation_notice = once (the default): one notice naming the file.
        assert!(p.text.contains(&format!(
            "read them in full when the missing part matters: {}.",
            agents.display()
        )));
    }
}

fn strata_digits(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn a_sparse_1_gb_agents_md_is_read_in_bounded_bytes() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    let edge = numbered_text(100_000);
    let size: u64 = 1 << 30;
    let mut file = File::create(&agents).unwrap();
    file.write_all(edge.as_bytes()).unwrap();
    file.set_len(size).unwrap();
    file.seek(SeekFrom::Start(size - edge.len() as u64)).unwrap();
    file.write_all(edge.as_bytes()).unwrap();
    drop(file);

    let (inputs, stats) = gather_with_stats(&support::request(&f, ""));
    // Cap 30,720 chars: at most 4 bytes per character of head + tail.
    let bound = 4 * (21_504 + 6_144);
    assert!(
        stats.bytes_read <= bound,
        "read {} bytes of a 1 GB file (bound {bound})",
        stats.bytes_read
    );
    let p = assemble(&inputs, &support::counter());
    support::assert_layer_invariants(&p);
    let s = source(&p, &agents);
    assert_eq!(s.status, SourceStatus::Truncated);
    assert_eq!(s.original_chars, size);
    assert!(p.text.contains(&edge[..21_504]));
    assert!(p.text.contains(&edge[edge.len() - 6_144..]));
    assert!(p.text.contains("of 1,073,741,824 bytes"));
    assert!(!p.text.contains('\0'));
    warning_about(&p, &agents);
}

#[test]
fn a_binary_agents_md_is_skipped_and_the_next_family_is_used() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    fs::write(&agents, b"\x7fELF\x02\x01\x01\x00\x00\x00binary").unwrap();
    fs::write(f.ws.join("CLAUDE.md"), "Claude rules apply.").unwrap();
    let p = build(&support::request(&f, ""));
    assert_eq!(source(&p, &agents).status, SourceStatus::Skipped);
    assert!(warning_about(&p, &agents).contains("looks binary"));
    assert!(p.text.contains("Claude rules apply."));
    assert!(!p.text.contains("ELF"));
}

#[test]
fn invalid_utf8_is_decoded_lossily_with_a_warning() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    fs::write(&agents, b"Caf\xe9 rules: use tabs.\n").unwrap();
    let p = build(&support::request(&f, ""));
    assert!(p.text.contains("Caf\u{FFFD} rules: use tabs."));
    assert_eq!(source(&p, &agents).status, SourceStatus::Found);
    assert!(warning_about(&p, &agents).contains("not valid UTF-8"));
}

#[cfg(unix)]
#[test]
fn a_symlink_leaving_the_workspace_is_never_read() {
    let f = support::empty();
    let secret = f.home.join("secret.md");
    fs::write(&secret, "TOP SECRET CONTENT").unwrap();
    let agents = f.ws.join("AGENTS.md");
    std::os::unix::fs::symlink(&secret, &agents).unwrap();
    let (inputs, stats) = gather_with_stats(&support::request(&f, ""));
    let p = assemble(&inputs, &support::counter());
    support::assert_layer_invariants(&p);
    assert!(!p.text.contains("TOP SECRET"));
    assert_eq!(source(&p, &agents).status, SourceStatus::Blocked);
    assert!(warning_about(&p, &agents).contains("outside the workspace"));
    assert_eq!(
        stats.files_read, 0,
        "only the home's missing files were looked at"
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_inside_the_workspace_is_followed() {
    let f = support::empty();
    fs::create_dir_all(f.ws.join("docs")).unwrap();
    fs::write(f.ws.join("docs/agents.md"), "Linked rules.").unwrap();
    std::os::unix::fs::symlink("docs/agents.md", f.ws.join("AGENTS.md")).unwrap();
    let p = build(&support::request(&f, ""));
    assert!(p.text.contains("Linked rules."));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[cfg(unix)]
#[test]
fn an_unreadable_file_is_skipped_with_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    fs::write(&agents, "Private rules.").unwrap();
    fs::set_permissions(&agents, fs::Permissions::from_mode(0o000)).unwrap();
    // Root (and some containers) read through mode 000; then the file is
    // simply found. Everyone else must get a skip with a warning.
    let privileged = fs::read(&agents).is_ok();
    let p = build(&support::request(&f, ""));
    if privileged {
        assert_eq!(source(&p, &agents).status, SourceStatus::Found);
        assert!(p.text.contains("Private rules."));
    } else {
        assert_eq!(source(&p, &agents).status, SourceStatus::Skipped);
        assert!(warning_about(&p, &agents).contains("permission was denied"));
        assert!(!p.text.contains("Private rules."));
    }
    fs::set_permissions(&agents, fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn a_directory_named_agents_md_is_skipped() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    fs::create_dir_all(agents.join("nested")).unwrap();
    let p = build(&support::request(&f, ""));
    assert_eq!(source(&p, &agents).status, SourceStatus::Skipped);
    assert!(warning_about(&p, &agents).contains("is a directory"));
}

#[cfg(unix)]
#[test]
fn a_symlink_loop_is_skipped() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    std::os::unix::fs::symlink("loop-b.md", &agents).unwrap();
    std::os::unix::fs::symlink("AGENTS.md", f.ws.join("loop-b.md")).unwrap();
    fs::write(f.ws.join("CLAUDE.md"), "Fallback rules.").unwrap();
    let p = build(&support::request(&f, ""));
    assert_eq!(source(&p, &agents).status, SourceStatus::Skipped);
    assert!(warning_about(&p, &agents).contains("symbolic link loop"));
    assert!(p.text.contains("Fallback rules."));
}

#[cfg(unix)]
#[test]
fn a_fifo_named_agents_md_is_skipped_without_blocking() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    let made = std::process::Command::new("mkfifo").arg(&agents).status();
    if !made.is_ok_and(|s| s.success()) {
        return; // no mkfifo here; the directory test covers non-files
    }
    let p = build(&support::request(&f, ""));
    assert!(warning_about(&p, &agents).contains("not a regular file"));
}

#[test]
fn no_instruction_file_is_listed_as_missing_without_a_warning() {
    let f = support::empty();
    let p = build(&support::request(&f, ""));
    let sources = project_sources(&p);
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].status, SourceStatus::Missing);
    assert_eq!(sources[0].path, f.ws.join("AGENTS.md").display().to_string());
    assert!(!p.text.contains("# Project instructions"));
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

fn fixture_paths(p: &AssembledPrompt, f: &Fixture) -> Vec<String> {
    project_sources(p)
        .iter()
        .map(|s| support::filter_paths(&s.path, f))
        .collect()
}

#[test]
fn policy_first_prefers_the_nearest_strata_md() {
    let f = support::fixture();
    fs::write(f.ws.join("STRATA.md"), "Root strata file.").unwrap();
    fs::write(f.ws.join("services/.strata.md"), "Services strata file.").unwrap();
    let p = build(&support::request(&f, "services/api"));
    assert_eq!(fixture_paths(&p, &f), ["[WORKSPACE]/services/.strata.md"]);
}

#[test]
fn an_unusable_override_falls_back_to_agents_md_in_its_directory() {
    let f = support::fixture();
    let over = f.ws.join("services/api/AGENTS.override.md");
    fs::remove_file(&over).unwrap();
    fs::create_dir(&over).unwrap();
    let p = build(&support::request(&f, "services/api"));
    assert!(p.text.contains("# API (replaced by AGENTS.override.md)"));
    assert_eq!(source(&p, &over).status, SourceStatus::Skipped);
}

#[test]
fn minimal_mode_reads_the_agents_family_only() {
    let f = support::fixture();
    let mut req = support::request(&f, "");
    req.mode = PromptMode::Minimal;
    req.settings.instruction_files = InstructionPolicy::All;
    let p = build(&req);
    assert_eq!(fixture_paths(&p, &f), ["[WORKSPACE]/AGENTS.md"]);
    fs::remove_file(f.ws.join("AGENTS.md")).unwrap();
    let p = build(&req);
    assert_eq!(project_sources(&p)[0].status, SourceStatus::Missing);
    assert!(!p.text.contains("Notes for Claude"));
}

#[test]
fn outside_a_repository_the_workspace_is_the_working_directory() {
    let f = support::fixture();
    fs::remove_dir_all(f.ws.join(".git")).unwrap();
    let p = build(&support::request(&f, "services"));
    let root = f.ws.join("services").display().to_string();
    assert!(p.text.contains(&format!("- Workspace root: {root}\n")));
    assert!(!p.text.contains("Git branch"));
    assert_eq!(fixture_paths(&p, &f), ["[WORKSPACE]/services/AGENTS.md"]);
}

#[test]
fn the_total_cap_bounds_many_large_files() {
    let f = support::empty();
    let mut dir = f.ws.clone();
    for i in 0..8 {
        fs::write(dir.join("AGENTS.md"), numbered_text(30_000)).unwrap();
        dir = dir.join(format!("d{i}"));
        fs::create_dir(&dir).unwrap();
    }
    let mut req = support::request(&f, "d0/d1/d2/d3/d4/d5/d6");
    req.context_window = Some(1_000_000);
    let p = build(&req);
    let kept: u64 = project_sources(&p).iter().map(|s| s.kept_chars).sum();
    assert!(kept <= 150_000, "kept {kept}");
    let statuses: Vec<SourceStatus> = project_sources(&p).iter().map(|s| s.status).collect();
    assert_eq!(statuses[..5], [SourceStatus::Found; 5]);
    assert_eq!(statuses[5..], [SourceStatus::Skipped; 3]);
}

#[test]
fn a_text_file_with_a_binary_tail_is_skipped_not_pasted() {
    let f = support::empty();
    let agents = f.ws.join("AGENTS.md");
    let mut file = File::create(&agents).unwrap();
    file.write_all("rule line text\n".repeat(1_000).as_bytes())
        .unwrap();
    file.set_len(2 << 20).unwrap(); // zeros after the text
    drop(file);
    let p = assemble(
        &gather_with_stats(&support::request(&f, "")).0,
        &support::counter(),
    );
    assert!(!p.text.contains('\0'), "NUL bytes reached the prompt");
    assert_eq!(source(&p, &agents).status, SourceStatus::Skipped);
    warning_about(&p, &agents);
}
