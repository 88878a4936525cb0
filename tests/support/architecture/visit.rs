//! The walk over one file's non-test code: every `use` leaf, every path in
//! an expression, type, pattern, attribute or macro call (and the paths
//! inside macro arguments) is resolved and judged against the layer rules.

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::{self, Visit};
use syn::{Item, ItemMod};

use super::Violation;
use super::files::{Krate, Source, test_only};
use super::layers::{APP_RUNTIME_DOORS, Layer, PRINT_MACROS, ROOT, layer_of};
use super::paths::{Written, name, use_leaves};
use super::scope::{Ctx, Scope, Table, Target, attrs};

/// How a path was written, which decides what is judged.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A named `use` leaf: judged even when it is one segment (`use tokio;`).
    Use,
    /// A glob `use` leaf: also denied when it opens a module holding a
    /// denied item (`use std::time::*` in the core).
    Glob,
    /// A path in code: judged from two segments on.
    Code,
}

/// The violations in `source`, a file of a module of `layer`.
pub fn check_file(table: &Table, source: &Source, layer: Layer) -> Vec<Violation> {
    let mut walker = Walker {
        table,
        source,
        layer,
        module: source.module.clone(),
        blocks: Vec::new(),
        found: Vec::new(),
    };
    if source.top == ROOT {
        walker.root_items(&source.ast.items);
    }
    walker.visit_file(&source.ast);
    walker.found
}

struct Walker<'a> {
    table: &'a Table,
    source: &'a Source,
    layer: Layer,
    module: Vec<String>,
    blocks: Vec<Scope>,
    found: Vec<Violation>,
}

impl Walker<'_> {
    /// The crate root holds module declarations only: code there would
    /// belong to no layer.
    fn root_items(&mut self, items: &[Item]) {
        for item in items {
            let declaration = matches!(item, Item::Mod(m) if m.content.is_none());
            if !declaration && !test_only(attrs(item)) {
                use syn::spanned::Spanned;
                self.found.push(Violation {
                    file: self.source.rel.clone(),
                    line: item.span().start().line,
                    from: ROOT.to_owned(),
                    to: "an item other than `mod`".to_owned(),
                    written: String::new(),
                });
            }
        }
    }

    fn check(&mut self, path: Written, line: usize, kind: Kind) {
        // A bare name in code may be a local variable shadowing a binding;
        // the `use` that bound it was judged where it is written.
        if kind == Kind::Code && path.segs.len() == 1 {
            return;
        }
        let ctx = Ctx {
            krate: self.source.krate,
            module: &self.module,
            blocks: &self.blocks,
        };
        let Some(resolved) = self.table.resolve(&ctx, &path) else {
            return;
        };
        let Some(to) = self.judge(&resolved.target, kind == Kind::Glob) else {
            return;
        };
        if let Some(via) = &resolved.via
            && self.judge(via, false).as_ref() == Some(&to)
        {
            return;
        }
        self.found.push(Violation {
            file: self.source.rel.clone(),
            line,
            from: self.source.top.clone(),
            to,
            written: path.text(),
        });
    }

    /// What `target` violates for this file's module: the module or the
    /// denied external path it reaches, `None` when allowed.
    fn judge(&self, target: &Target, glob: bool) -> Option<String> {
        let from = self.source.top.as_str();
        match target {
            Target::Local(Krate::Lib, path) => {
                let to = path.first().map_or(ROOT, String::as_str);
                if to == from {
                    return None;
                }
                match layer_of(to) {
                    Some(Layer::Runtime) if self.layer == Layer::App => {
                        let text = path.join("::");
                        let door = APP_RUNTIME_DOORS
                            .iter()
                            .any(|d| text == *d || text.starts_with(&format!("{d}::")));
                        (!door).then(|| path.iter().take(2).cloned().collect::<Vec<_>>().join("::"))
                    }
                    Some(l) if l == Layer::Root || self.layer.may_use(l) => None,
                    _ => Some(to.to_owned()),
                }
            }
            Target::Local(Krate::Bin, _) => (from != "cli").then(|| "cli".to_owned()),
            Target::Extern(path) => {
                let text = path.join("::");
                self.layer.denied().iter().find_map(|pat| {
                    let under = text == *pat || text.starts_with(&format!("{pat}::"));
                    let opens = glob && pat.starts_with(&format!("{text}::"));
                    (under || opens).then(|| (*pat).to_owned())
                })
            }
        }
    }

    /// Paths inside a macro's tokens: `a::b::c`, `::a::b`, `$crate::a`,
    /// and a bare `println!`.
    fn scan(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tts.len() {
            if let TokenTree::Group(g) = &tts[i] {
                self.scan(g.stream());
                i += 1;
                continue;
            }
            let after_name =
                i > 0 && (matches!(tts[i - 1], TokenTree::Ident(_)) || is_punct(&tts[i - 1], '>'));
            let global = colon2(&tts, i) && !after_name;
            let start = if global { i + 2 } else { i };
            let Some(TokenTree::Ident(first)) = tts.get(start) else {
                i += 1;
                continue;
            };
            let line = first.span().start().line;
            let mut segs = vec![name(first)];
            let mut j = start + 1;
            while colon2(&tts, j) {
                let Some(TokenTree::Ident(next)) = tts.get(j + 2) else {
                    break;
                };
                segs.push(name(next));
                j += 3;
            }
            let dollar = !global && start > 0 && is_punct(&tts[start - 1], '$');
            if dollar && segs[0] == "crate" {
                segs[0] = "$crate".to_owned();
            }
            let bang = tts.get(j).is_some_and(|t| is_punct(t, '!'));
            if dollar && segs[0] != "$crate" {
                // A macro variable: `$x::y` names nothing yet.
            } else if segs.len() > 1 || global {
                self.check(Written { segs, global }, line, Kind::Code);
            } else if bang {
                self.print_macro(&segs[0], line);
            }
            i = j;
        }
    }

    /// A bare `println!` (and kin) not bound by a `use` is std's.
    fn print_macro(&mut self, macro_name: &str, line: usize) {
        if PRINT_MACROS.contains(&macro_name) {
            let segs = vec!["std".to_owned(), macro_name.to_owned()];
            self.check(Written { segs, global: true }, line, Kind::Code);
        }
    }
}

fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

/// `::` at `i`.
fn colon2(tts: &[TokenTree], i: usize) -> bool {
    matches!(tts.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
        && tts.get(i + 1).is_some_and(|t| is_punct(t, ':'))
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, i: &'ast Item) {
        if !test_only(attrs(i)) {
            visit::visit_item(self, i);
        }
    }

    fn visit_item_mod(&mut self, i: &'ast ItemMod) {
        if i.content.is_none() {
            return;
        }
        self.module.push(name(&i.ident));
        let blocks = std::mem::take(&mut self.blocks);
        visit::visit_item_mod(self, i);
        self.blocks = blocks;
        self.module.pop();
    }

    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        let a = match i {
            syn::ImplItem::Const(x) => &x.attrs,
            syn::ImplItem::Fn(x) => &x.attrs,
            syn::ImplItem::Type(x) => &x.attrs,
            syn::ImplItem::Macro(x) => &x.attrs,
            _ => return visit::visit_impl_item(self, i),
        };
        if !test_only(a) {
            visit::visit_impl_item(self, i);
        }
    }

    fn visit_trait_item(&mut self, i: &'ast syn::TraitItem) {
        let a = match i {
            syn::TraitItem::Const(x) => &x.attrs,
            syn::TraitItem::Fn(x) => &x.attrs,
            syn::TraitItem::Type(x) => &x.attrs,
            syn::TraitItem::Macro(x) => &x.attrs,
            _ => return visit::visit_trait_item(self, i),
        };
        if !test_only(a) {
            visit::visit_trait_item(self, i);
        }
    }

    fn visit_arm(&mut self, i: &'ast syn::Arm) {
        if !test_only(&i.attrs) {
            visit::visit_arm(self, i);
        }
    }

    fn visit_local(&mut self, i: &'ast syn::Local) {
        if !test_only(&i.attrs) {
            visit::visit_local(self, i);
        }
    }

    fn visit_field(&mut self, i: &'ast syn::Field) {
        if !test_only(&i.attrs) {
            visit::visit_field(self, i);
        }
    }

    fn visit_variant(&mut self, i: &'ast syn::Variant) {
        if !test_only(&i.attrs) {
            visit::visit_variant(self, i);
        }
    }

    fn visit_stmt_macro(&mut self, i: &'ast syn::StmtMacro) {
        if !test_only(&i.attrs) {
            visit::visit_stmt_macro(self, i);
        }
    }

    fn visit_item_use(&mut self, i: &'ast syn::ItemUse) {
        for leaf in use_leaves(i) {
            let kind = if leaf.binding.is_none() {
                Kind::Glob
            } else {
                Kind::Use
            };
            self.check(leaf.path, leaf.line, kind);
        }
    }

    fn visit_block(&mut self, i: &'ast syn::Block) {
        let depth = self.blocks.len() + 1;
        let scope = Scope::of_block(&i.stmts, (self.source.krate, &self.module), depth);
        self.blocks.push(scope);
        visit::visit_block(self, i);
        self.blocks.pop();
    }

    fn visit_path(&mut self, i: &'ast syn::Path) {
        if let Some(first) = i.segments.first() {
            self.check(Written::of(i), first.ident.span().start().line, Kind::Code);
        }
        visit::visit_path(self, i);
    }

    fn visit_expr_path(&mut self, i: &'ast syn::ExprPath) {
        match &i.qself {
            Some(q) if q.position == 0 => qualified(self, q, &i.path),
            _ => visit::visit_expr_path(self, i),
        }
    }

    fn visit_type_path(&mut self, i: &'ast syn::TypePath) {
        match &i.qself {
            Some(q) if q.position == 0 => qualified(self, q, &i.path),
            _ => visit::visit_type_path(self, i),
        }
    }

    fn visit_macro(&mut self, i: &'ast syn::Macro) {
        visit::visit_macro(self, i);
        if let Some(ident) = i.path.get_ident() {
            self.print_macro(&name(ident), ident.span().start().line);
        }
        self.scan(i.tokens.clone());
    }
}

/// `<T>::f`: the path after `<T>` is relative to `T`; only `T` and the
/// generic arguments name anything.
fn qualified<'ast>(w: &mut Walker<'_>, q: &'ast syn::QSelf, path: &'ast syn::Path) {
    w.visit_type(&q.ty);
    for seg in &path.segments {
        w.visit_path_arguments(&seg.arguments);
    }
}
