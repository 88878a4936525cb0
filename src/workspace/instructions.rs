//! Finding the instruction files of a workspace and choosing among their
//! families (DESIGN §4 "Instruction files"):
//!
//! 1. `.strata.md` / `STRATA.md`, the nearest one walking up from the working
//!    directory to the workspace root;
//! 2. `AGENTS.md` in every directory from the root down to the working
//!    directory, an `AGENTS.override.md` taking its place in its directory;
//! 3. `CLAUDE.md` along the same chain;
//! 4. `.cursorrules` and `.cursor/rules/*.mdc` (sorted) at the root.
//!
//! Policy `first` keeps the first family that yields text (a family whose
//! files were all skipped does not count); `all` keeps every family, ordered
//! from the root down and, within a directory, in the family order above.
//! Minimal mode reads the `AGENTS.md` family only.

use super::read::Reader;
use crate::domain::SourceStatus;
use crate::prompt::{InstructionPolicy, SourceText};
use std::fs;
use std::path::{Path, PathBuf};

/// An instruction-file family, in `first`-policy order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Strata,
    Agents,
    Claude,
    Cursor,
}

const FAMILIES: [Family; 4] = [Family::Strata, Family::Agents, Family::Claude, Family::Cursor];

fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}

/// The files of `family` in directory `dir` (in order), read.
fn read_in_dir(
    family: Family,
    dir: &Path,
    is_root: bool,
    reader: &mut Reader,
    root: &Path,
    cap: usize,
) -> Vec<SourceText> {
    let mut read = |path: PathBuf| reader.read(&path, Some(root), cap);
    match family {
        Family::Strata => [".strata.md", "STRATA.md"]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| exists(p))
            .map(&mut read)
            .into_iter()
            .collect(),
        Family::Agents => {
            let over = dir.join("AGENTS.override.md");
            let plain = dir.join("AGENTS.md");
            let mut files = Vec::new();
            if exists(&over) {
                let file = read(over);
                let usable = file.has_text();
                files.push(file);
                if usable {
                    return files;
                }
            }
            if exists(&plain) {
                files.push(read(plain));
            }
            files
        }
        Family::Claude => {
            let path = dir.join("CLAUDE.md");
            if exists(&path) {
                vec![read(path)]
            } else {
                Vec::new()
            }
        }
        Family::Cursor if is_root => {
            let mut files = Vec::new();
            let rules = dir.join(".cursorrules");
            if exists(&rules) {
                files.push(read(rules));
            }
            for path in mdc_rules(&dir.join(".cursor").join("rules")) {
                files.push(read(path));
            }
            files
        }
        Family::Cursor => Vec::new(),
    }
}

/// `*.mdc` files in `dir`, sorted by name.
fn mdc_rules(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "mdc"))
        .collect();
    paths.sort();
    paths
}

/// Every file of one family across the chain `dirs` (root first).
fn read_family(
    family: Family,
    dirs: &[PathBuf],
    reader: &mut Reader,
    root: &Path,
    cap: usize,
) -> Vec<SourceText> {
    if family == Family::Strata {
        // The nearest one, walking up from the working directory.
        return dirs
            .iter()
            .rev()
            .map(|d| read_in_dir(family, d, d == root, reader, root, cap))
            .find(|files| !files.is_empty())
            .unwrap_or_default();
    }
    dirs.iter()
        .flat_map(|d| read_in_dir(family, d, d == root, reader, root, cap))
        .collect()
}

/// The instruction files of the families minimal mode does not read
/// (`.strata.md`/`STRATA.md`, `CLAUDE.md`, Cursor rules) that exist along
/// `dirs`, root first: minimal mode names them when it leaves them out.
pub(crate) fn other_families(dirs: &[PathBuf], root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for dir in dirs {
        for name in [".strata.md", "STRATA.md", "CLAUDE.md"] {
            let path = dir.join(name);
            if exists(&path) {
                found.push(path.display().to_string());
            }
        }
    }
    let rules = root.join(".cursorrules");
    if exists(&rules) {
        found.push(rules.display().to_string());
    }
    found.extend(
        mdc_rules(&root.join(".cursor").join("rules"))
            .iter()
            .map(|p| p.display().to_string()),
    );
    found
}

/// The instruction files to assemble, in order, with the skipped and blocked
/// files of families tried on the way (so their warnings show). When no
/// instruction file exists at all, `<root>/AGENTS.md` is listed as missing.
pub(crate) fn instruction_files(
    policy: InstructionPolicy,
    agents_only: bool,
    dirs: &[PathBuf],
    root: &Path,
    reader: &mut Reader,
    cap: usize,
) -> Vec<SourceText> {
    let families: &[Family] = if agents_only { &[Family::Agents] } else { &FAMILIES };
    let mut files = Vec::new();
    match policy {
        InstructionPolicy::First => {
            for family in families {
                let found = read_family(*family, dirs, reader, root, cap);
                let yields = found.iter().any(SourceText::has_text);
                files.extend(found);
                if yields {
                    break;
                }
            }
        }
        InstructionPolicy::All => {
            for dir in dirs {
                for family in families {
                    files.extend(read_in_dir(*family, dir, dir == root, reader, root, cap));
                }
            }
        }
    }
    if files.iter().all(|f| f.status == SourceStatus::Missing) {
        files = vec![SourceText::missing(root.join("AGENTS.md").display().to_string())];
    }
    files
}
