//! Reading a `src/` tree: every `.rs` file parsed with `syn` and placed in
//! its crate and module by its path; the files a `#[cfg(test)] mod x;`
//! loads are marked test-only.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::punctuated::Punctuated;
use syn::{Attribute, Item, Meta, Token};

use super::layers::ROOT;

/// The two crates of the package.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Krate {
    /// `src/lib.rs` and every module under it.
    Lib,
    /// `src/main.rs` and `src/cli/`.
    Bin,
}

/// One parsed source file.
pub struct Source {
    /// Path from the package root with `/` separators: `src/tui/chat.rs`.
    pub rel: String,
    pub krate: Krate,
    /// Module path inside its crate: `["tui", "chat"]`; empty for a root.
    pub module: Vec<String>,
    /// Top-level module the file belongs to: `tui`; `cli` for the binary,
    /// [`ROOT`] for `src/lib.rs`.
    pub top: String,
    /// Loaded only by a `#[cfg(test)]` module declaration (directly or
    /// through another such file): not checked.
    pub test_only: bool,
    pub ast: syn::File,
}

/// Every `.rs` file under `root/src`, parsed and placed, sorted by path.
/// Errors name the file that cannot be read or parsed.
pub fn read_tree(root: &Path) -> Result<Vec<Source>, String> {
    let mut paths = Vec::new();
    collect(&root.join("src"), &mut paths)?;
    paths.sort();
    let mut sources = Vec::new();
    for path in &paths {
        let rel_path = path.strip_prefix(root).map_err(|e| e.to_string())?;
        let rel = slashed(rel_path);
        let text = std::fs::read_to_string(path).map_err(|e| format!("{rel}: {e}"))?;
        let ast = syn::parse_file(&text).map_err(|e| format!("{rel}:{}: {e}", e.span().start().line))?;
        let (krate, module) = module_of(rel_path);
        let top = match (krate, module.first()) {
            (Krate::Bin, _) => "cli".to_owned(),
            (Krate::Lib, None) => ROOT.to_owned(),
            (Krate::Lib, Some(first)) => first.clone(),
        };
        sources.push(Source {
            rel,
            krate,
            module,
            top,
            test_only: false,
            ast,
        });
    }
    mark_test_only(&mut sources);
    Ok(sources)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn slashed(path: &Path) -> String {
    let parts: Vec<_> = path.iter().map(|c| c.to_string_lossy()).collect();
    parts.join("/")
}

/// `src/lib.rs` → (lib, []); `src/main.rs` → (bin, []); `src/cli/x.rs` →
/// (bin, [cli, x]); `src/a/b.rs` and `src/a/b/mod.rs` → (lib, [a, b]).
fn module_of(rel: &Path) -> (Krate, Vec<String>) {
    let mut parts: Vec<String> = rel
        .iter()
        .skip(1)
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".rs").to_owned();
    }
    match parts.as_slice() {
        [only] if only == "lib" => return (Krate::Lib, Vec::new()),
        [only] if only == "main" => return (Krate::Bin, Vec::new()),
        _ => {}
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    let krate = if parts.first().is_some_and(|p| p == "cli") {
        Krate::Bin
    } else {
        Krate::Lib
    };
    (krate, parts)
}

/// Whether `attrs` hold a `#[cfg(...)]` whose predicate needs `test`:
/// `test`, `all(.., test, ..)`, or `any(..)` of such predicates.
pub fn test_only(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.parse_args::<Meta>().is_ok_and(|m| needs_test(&m)))
}

fn needs_test(meta: &Meta) -> bool {
    match meta {
        Meta::Path(p) => p.is_ident("test"),
        Meta::List(list) => {
            let Ok(args) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else {
                return false;
            };
            if list.path.is_ident("all") {
                args.iter().any(needs_test)
            } else if list.path.is_ident("any") {
                !args.is_empty() && args.iter().all(needs_test)
            } else {
                false
            }
        }
        Meta::NameValue(_) => false,
    }
}

/// Marks the files loaded by `#[cfg(test)] mod x;` (or by any `mod x;`
/// inside a test-only module or file) as test-only, to a fixpoint.
fn mark_test_only(sources: &mut [Source]) {
    let index: Vec<String> = sources.iter().map(|s| s.rel.clone()).collect();
    loop {
        let mut skipped = BTreeSet::new();
        for s in sources.iter() {
            let file = Path::new(&s.rel);
            let file_dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
            let child_dir = if ["lib.rs", "main.rs", "mod.rs"]
                .iter()
                .any(|n| file.file_name().is_some_and(|f| f == *n))
            {
                file_dir.clone()
            } else {
                file.with_extension("")
            };
            let dirs = Dirs {
                file_dir: &file_dir,
                inline: false,
            };
            declared_test_files(&s.ast.items, &child_dir, dirs, s.test_only, &mut skipped);
        }
        let mut changed = false;
        for (s, rel) in sources.iter_mut().zip(&index) {
            if !s.test_only && skipped.contains(rel) {
                s.test_only = true;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

#[derive(Clone, Copy)]
struct Dirs<'a> {
    file_dir: &'a Path,
    inline: bool,
}

fn declared_test_files(
    items: &[Item],
    dir: &Path,
    dirs: Dirs<'_>,
    under_test: bool,
    out: &mut BTreeSet<String>,
) {
    for item in items {
        let Item::Mod(m) = item else { continue };
        let test = under_test || test_only(&m.attrs);
        let name = m.ident.to_string();
        let path_attr = m.attrs.iter().find_map(|a| match &a.meta {
            Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        });
        match &m.content {
            Some((_, inner)) => {
                let sub = dir.join(path_attr.as_deref().unwrap_or(&name));
                let inner_dirs = Dirs { inline: true, ..dirs };
                declared_test_files(inner, &sub, inner_dirs, test, out);
            }
            None if test => {
                let files = match &path_attr {
                    Some(p) if dirs.inline => vec![dir.join(p)],
                    Some(p) => vec![dirs.file_dir.join(p)],
                    None => vec![dir.join(format!("{name}.rs")), dir.join(&name).join("mod.rs")],
                };
                out.extend(files.iter().map(|f| slashed(f)));
            }
            None => {}
        }
    }
}
