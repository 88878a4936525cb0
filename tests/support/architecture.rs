//! The layering checker behind `tests/architecture.rs`. It parses every
//! file of a `src/` tree with `syn`, resolves each `use` leaf and each path
//! in code (through `self`, `super`, `crate`, renames, globs and re-exports)
//! to the top-level module or external item it names, and reports what the
//! layer map in [`layers`] does not allow. `#[cfg(test)]` items, and files
//! loaded by a `#[cfg(test)] mod x;`, are not checked.

mod files;
mod layers;
mod paths;
mod scope;
mod visit;

use std::fmt;
use std::path::Path;

pub use layers::LAYERS;
use layers::layer_of;

/// One dependency the layer map does not allow.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    /// Path from the package root: `src/tui/worker.rs`.
    pub file: String,
    pub line: usize,
    /// The top-level module of the file (`tui`; `cli` for the binary).
    pub from: String,
    /// The module it may not use (`store`), or the denied external path
    /// (`std::fs`).
    pub to: String,
    /// The path as written (`crate::store::Store`).
    pub written: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {} uses {}", self.file, self.line, self.from, self.to)?;
        if !self.written.is_empty() {
            write!(f, " (`{}`)", self.written)?;
        }
        Ok(())
    }
}

/// What the check found in a tree.
pub struct Report {
    /// Sorted by file, line, target.
    pub violations: Vec<Violation>,
    /// Checked files whose top-level module has no layer: `(file, module)`.
    pub unlayered: Vec<(String, String)>,
    /// Files checked (test-only ones left out).
    pub checked: usize,
    /// Top-level modules seen, sorted, deduplicated.
    pub modules: Vec<String>,
}

/// Checks the package at `root` (the directory holding `src/`). Errors
/// name a file that cannot be read or parsed.
pub fn check(root: &Path) -> Result<Report, String> {
    let sources = files::read_tree(root)?;
    let table = scope::Table::build(&sources);
    let mut report = Report {
        violations: Vec::new(),
        unlayered: Vec::new(),
        checked: 0,
        modules: Vec::new(),
    };
    for source in &sources {
        report.modules.push(source.top.clone());
        if source.test_only || files::test_only(&source.ast.attrs) {
            continue;
        }
        report.checked += 1;
        match layer_of(&source.top) {
            Some(layer) => report.violations.extend(visit::check_file(&table, source, layer)),
            None => report.unlayered.push((source.rel.clone(), source.top.clone())),
        }
    }
    report.violations.sort();
    // Leaves of one `use` on one line: one report.
    report
        .violations
        .dedup_by(|a, b| (&a.file, a.line, &a.to) == (&b.file, b.line, &b.to));
    report.modules.sort();
    report.modules.dedup();
    Ok(report)
}
