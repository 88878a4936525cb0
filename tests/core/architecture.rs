//! The layering rule of the design, checked on the parsed source. Every
//! file under `src/` belongs to a top-level module, every module to a layer
//! (`architecture_support/layers.rs`, mirrored in the `//!` doc of
//! `src/lib.rs`), and a module uses only the modules its layer allows: the
//! domain nothing but itself, the pure core the domain and the core,
//! adapters those but not each other, the runtime the adapters too, `render`
//! the domain and core, the app the runtime, `render`, domain and core, and
//! the binary everything; of the runtime the app uses only its doors (the
//! session handle, the protocol and view types). Layers 0–1 and `render`
//! also use no I/O, process,
//! environment, clock (layers 0–1) or UI crate outside their share.
//!
//! `use` trees are resolved leaf by leaf (groups, renames, globs, `self`,
//! `super`, `crate`), and so are paths in code and inside macro calls,
//! following re-exports; only `#[cfg(test)]` items and the files they load
//! are left out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::architecture as architecture_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::OnceLock;

use architecture_support::{LAYERS, Report, Violation, check};

/// Dependencies the tree has that the layer map does not allow, as
/// `(from, to, file)`: none. Kept so a move across layers can land in
/// green steps; the list may only shrink: the test fails on a violation
/// missing here and on an entry that no longer occurs.
const KNOWN_DEBT: &[(&str, &str, &str)] = &[];

/// `(from, to, file)` of a violation, the key of [`KNOWN_DEBT`].
fn key(v: &Violation) -> (String, String, String) {
    (v.from.clone(), v.to.clone(), v.file.clone())
}

/// The violations not covered by `known`, and the entries of `known` that
/// match no violation.
fn against_debt(found: &[Violation], known: &[(&str, &str, &str)]) -> (Vec<Violation>, Vec<String>) {
    let known: BTreeSet<(String, String, String)> = known
        .iter()
        .map(|(f, t, p)| ((*f).to_owned(), (*t).to_owned(), (*p).to_owned()))
        .collect();
    let found_keys: BTreeSet<_> = found.iter().map(key).collect();
    let new = found
        .iter()
        .filter(|v| !known.contains(&key(v)))
        .cloned()
        .collect();
    let stale = known
        .iter()
        .filter(|k| !found_keys.contains(*k))
        .map(|(f, t, p)| format!("{f} -> {t} in {p}"))
        .collect();
    (new, stale)
}

fn report_of(root: &Path) -> Report {
    check(root).unwrap_or_else(|e| panic!("the layering check could not read the tree: {e}"))
}

/// The package's own tree, checked once for the tests that read it.
fn real() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| report_of(Path::new(env!("CARGO_MANIFEST_DIR"))))
}

fn planted() -> Report {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/architecture/planted");
    report_of(&root)
}

fn lines(violations: &[Violation]) -> Vec<String> {
    violations.iter().map(ToString::to_string).collect()
}

#[test]
fn planted_violations_are_each_reported_and_test_code_is_not() {
    let report = planted();
    let expected = [
        "src/domain.rs:1: domain uses tokens (`crate::tokens::count`)",
        "src/domain.rs:2: domain uses std::time::SystemTime::now (`std::time`)",
        "src/lib.rs:11: lib uses an item other than `mod`",
        "src/provider/openai.rs:8: provider uses store (`crate::store::Store::open`)",
        "src/tokens.rs:4: tokens uses std::time::Instant::now (`Instant::now`)",
        "src/tokens.rs:5: tokens uses std::fs (`std::fs::read`)",
        "src/tokens.rs:26: tokens uses std::time::SystemTime::now (`std::time::SystemTime::now`)",
        "src/tui.rs:5: tui uses store (`crate::runtime::Handle`)",
        "src/tui.rs:6: tui uses store (`crate::store`)",
        "src/tui.rs:9: tui uses provider (`crate::provider::x`)",
        "src/tui.rs:12: tui uses provider (`crate::provider::openai::request_body`)",
        "src/tui.rs:26: tui uses provider (`crate::provider::openai::request_body`)",
        "src/tui.rs:27: tui uses store (`crate::Store::open`)",
        "src/tui.rs:37: tui uses runtime::Toolbox (`crate::runtime::Toolbox`)",
        "src/tui/view.rs:1: tui uses store (`super::super::store::Store`)",
        "src/tui/view.rs:6: tui uses provider (`crate::provider::openai::request_body`)",
        "src/tui/view.rs:7: tui uses store (`s::Store::open`)",
    ];
    assert_eq!(lines(&report.violations), expected);
    assert_eq!(
        report.unlayered,
        [("src/extra.rs".to_owned(), "extra".to_owned())]
    );
    // src/tui/more.rs is loaded by `#[cfg(test)] mod more;` only.
    assert_eq!(report.checked, 12);
}

#[test]
fn a_new_violation_and_a_fixed_debt_entry_both_fail_the_check() {
    let report = planted();
    let mut known: Vec<(&str, &str, &str)> = report
        .violations
        .iter()
        .map(|v| (v.from.as_str(), v.to.as_str(), v.file.as_str()))
        .collect();
    assert_eq!(against_debt(&report.violations, &known), (Vec::new(), Vec::new()));

    known.retain(|k| *k != ("tui", "provider", "src/tui/view.rs"));
    known.push(("tui", "config", "src/tui.rs"));
    let (new, stale) = against_debt(&report.violations, &known);
    assert_eq!(
        lines(&new),
        ["src/tui/view.rs:6: tui uses provider (`crate::provider::openai::request_body`)"]
    );
    assert_eq!(stale, ["tui -> config in src/tui.rs"]);
}

#[test]
fn the_tree_keeps_the_layers_except_the_known_debt() {
    let report = real();
    assert!(report.checked > 100, "only {} files checked", report.checked);
    let (new, stale) = against_debt(&report.violations, KNOWN_DEBT);
    let mut problems = Vec::new();
    if !new.is_empty() {
        problems.push(format!(
            "dependencies the layer map does not allow (see src/lib.rs):\n{}",
            lines(&new).join("\n")
        ));
    }
    if !stale.is_empty() {
        problems.push(format!(
            "KNOWN_DEBT entries that no longer occur; remove them:\n{}",
            stale.join("\n")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn every_module_has_a_layer_and_a_line_in_the_crate_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = real();
    assert!(
        report.unlayered.is_empty(),
        "modules without a layer: {:?}",
        report.unlayered
    );
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let doc: Vec<&str> = lib.lines().filter_map(|l| l.strip_prefix("//!")).collect();
    let mut missing = Vec::new();
    for module in report.modules.iter().filter(|m| *m != "lib") {
        let (_, layer) = LAYERS.iter().find(|(m, _)| m == module).unwrap();
        // `cli` is the binary's: no link from the library's doc.
        let name = if module == "cli" {
            format!("`{module}`")
        } else {
            format!("[`{module}`]")
        };
        let line = format!(" - {} {name}", layer.number());
        if !doc.iter().any(|l| l.starts_with(&line)) {
            missing.push(line);
        }
    }
    assert!(
        missing.is_empty(),
        "src/lib.rs's //! doc lacks the lines:\n{}",
        missing.join("\n")
    );
}
