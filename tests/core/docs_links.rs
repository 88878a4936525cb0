//! The manual's links hold: every `docs/*.md` link in `README.md` and in
//! the help of `strata` and each of its subcommands names a page that
//! exists, and a heading on it when the link has a `#fragment`; so does
//! every relative link between the pages of `docs/`. Every visible command's
//! help names a page, and the README links every page.
//!
//! The help is rendered from the command line's own definitions: the file
//! that declares them (`src/cli/args.rs`, part of the binary, not the
//! library) is compiled into this test as a module; it uses only `clap`,
//! `std` and the library.

#[allow(dead_code)]
#[path = "../../src/cli/args.rs"]
mod args;

use clap::CommandFactory;
use regex::Regex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `docs/*.md` page, by its path from the repository root.
fn pages() -> BTreeMap<String, String> {
    let mut pages = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
            pages.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    pages
}

/// The anchors GitHub gives a page's headings: lower case, spaces become
/// `-`, punctuation other than `-` and `_` is dropped. Headings inside
/// fenced code blocks are not headings.
fn anchors(markdown: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut anchors = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        let anchor: String = heading
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        anchors.push(anchor);
    }
    anchors
}

/// `strata`'s help and each visible subcommand's, by command line.
fn help_texts() -> Vec<(String, String)> {
    fn walk(cmd: &mut clap::Command, name: String, out: &mut Vec<(String, String)>) {
        out.push((name.clone(), cmd.render_long_help().to_string()));
        for sub in cmd.get_subcommands_mut() {
            if sub.is_hide_set() || sub.get_name() == "help" {
                continue;
            }
            let sub_name = format!("{name} {}", sub.get_name());
            walk(sub, sub_name, out);
        }
    }
    let mut cli = args::Cli::command();
    cli.build();
    let mut out = Vec::new();
    walk(&mut cli, "strata".to_owned(), &mut out);
    out
}

/// The `docs/*.md` links in a text that is not Markdown-rendered (a help
/// text) or that links from the repository root (the README).
fn docs_links(text: &str) -> Vec<String> {
    let link = Regex::new(r"docs/[A-Za-z0-9_-]+\.md(#[A-Za-z0-9_-]+)?").unwrap();
    link.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

/// Whether `target` (a path from the repository root, with an optional
/// `#fragment`) names an existing file, and a heading on it.
fn check(target: &str, pages: &BTreeMap<String, String>) -> Result<(), String> {
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    let text = match pages.get(path) {
        Some(text) => text.clone(),
        None => std::fs::read_to_string(root().join(path)).map_err(|_| format!("{path} does not exist"))?,
    };
    match fragment {
        Some(fragment) if !anchors(&text).iter().any(|a| a == fragment) => {
            Err(format!("{path} has no heading #{fragment}"))
        }
        _ => Ok(()),
    }
}

/// `../README.md#set-up` from `docs/x.md` is `README.md#set-up`.
fn resolve(from_dir: &Path, link: &str) -> String {
    let mut parts: Vec<String> = from_dir
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for part in link.split('/') {
        match part {
            "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part.to_owned()),
        }
    }
    parts.join("/")
}

#[test]
fn every_docs_link_in_the_readme_exists() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let pages = pages();
    let links = docs_links(&readme);
    assert!(!links.is_empty(), "the README links no page of docs/");
    let broken: Vec<_> = links
        .iter()
        .filter_map(|l| check(l, &pages).err().map(|e| format!("README.md: {l}: {e}")))
        .collect();
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn the_readme_links_every_page_of_the_manual() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let linked: Vec<String> = docs_links(&readme)
        .into_iter()
        .map(|l| l.split('#').next().unwrap_or_default().to_owned())
        .collect();
    let missing: Vec<_> = pages().into_keys().filter(|p| !linked.contains(p)).collect();
    assert!(missing.is_empty(), "pages the README does not link: {missing:?}");
}

#[test]
fn every_command_help_names_a_page_that_exists() {
    let pages = pages();
    let helps = help_texts();
    assert!(helps.len() > 20, "{} help texts", helps.len());
    let mut broken = Vec::new();
    for (command, help) in &helps {
        let links = docs_links(help);
        if links.is_empty() {
            broken.push(format!("`{command} --help` names no page of docs/"));
        }
        for link in links {
            if let Err(e) = check(&link, &pages) {
                broken.push(format!("`{command} --help`: {link}: {e}"));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn every_relative_link_between_the_pages_exists() {
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let pages = pages();
    let mut broken = Vec::new();
    let mut count = 0;
    for (page, text) in &pages {
        for target in link.captures_iter(text).map(|c| c[1].to_owned()) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            count += 1;
            let resolved = match target.strip_prefix('#') {
                Some(fragment) => format!("{page}#{fragment}"),
                None => resolve(Path::new("docs"), &target),
            };
            if let Err(e) = check(&resolved, &pages) {
                broken.push(format!("{page}: ({target}): {e}"));
            }
        }
    }
    assert!(count > 0, "no links between the pages");
    assert!(broken.is_empty(), "{broken:#?}");
}

#[test]
fn anchors_are_the_ones_github_makes() {
    assert_eq!(
        anchors("# The prompt cache\n## strata undo-edit-message\n### A workspace's .mcp.json\n"),
        [
            "the-prompt-cache",
            "strata-undo-edit-message",
            "a-workspaces-mcpjson"
        ]
    );
    assert_eq!(anchors("```sh\n# a comment\n```\n## Set-up\n"), ["set-up"]);
}
