//! Paths as written: a `syn` path or a `use` tree flattened into leaves of
//! plain segments, before any resolution.

use syn::spanned::Spanned;
use syn::{ItemUse, UseTree};

/// A path as written: its segments, and whether it began with `::`.
#[derive(Clone, Debug)]
pub struct Written {
    pub segs: Vec<String>,
    pub global: bool,
}

impl Written {
    /// The segments of `path`, generic arguments left out.
    pub fn of(path: &syn::Path) -> Self {
        Self {
            segs: path.segments.iter().map(|s| name(&s.ident)).collect(),
            global: path.leading_colon.is_some(),
        }
    }

    /// The path as it reads in the source: `crate::store::Store`.
    pub fn text(&self) -> String {
        let joined = self.segs.join("::");
        if self.global {
            format!("::{joined}")
        } else {
            joined
        }
    }
}

/// An identifier without its `r#`.
pub fn name(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_owned).unwrap_or(s)
}

/// One leaf of a `use` tree: `use a::{b as c, d::*}` has `a::b` bound to
/// `c` and the glob `a::d`.
pub struct UseLeaf {
    pub path: Written,
    /// The name it binds; `None` for a glob, `_` for an anonymous import.
    pub binding: Option<String>,
    pub line: usize,
}

/// The leaves of `item`'s tree, in order.
pub fn use_leaves(item: &ItemUse) -> Vec<UseLeaf> {
    let mut out = Vec::new();
    let global = item.leading_colon.is_some();
    flatten(&item.tree, &mut Vec::new(), global, &mut out);
    out
}

fn flatten(tree: &UseTree, prefix: &mut Vec<String>, global: bool, out: &mut Vec<UseLeaf>) {
    let line = tree.span().start().line;
    let mut leaf = |ident: &syn::Ident, bound: &syn::Ident, prefix: &Vec<String>| {
        let mut segs = prefix.clone();
        if ident != "self" {
            segs.push(name(ident));
        }
        let binding = if bound == "self" {
            segs.last().cloned()
        } else {
            Some(name(bound))
        };
        out.push(UseLeaf {
            path: Written { segs, global },
            binding,
            line,
        });
    };
    match tree {
        UseTree::Path(p) => {
            prefix.push(name(&p.ident));
            flatten(&p.tree, prefix, global, out);
            prefix.pop();
        }
        UseTree::Name(n) => leaf(&n.ident, &n.ident, prefix),
        UseTree::Rename(r) => leaf(&r.ident, &r.rename, prefix),
        UseTree::Glob(_) => out.push(UseLeaf {
            path: Written {
                segs: prefix.clone(),
                global,
            },
            binding: None,
            line,
        }),
        UseTree::Group(g) => {
            for t in &g.items {
                flatten(t, prefix, global, out);
            }
        }
    }
}
