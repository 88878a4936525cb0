//! Name resolution over a parsed tree: what each module defines and
//! imports, and the absolute path a written path names, following `use`
//! bindings, globs, `self`/`super`/`crate` and re-exports across modules.

use std::collections::{HashMap, HashSet};

use syn::{Item, Stmt};

use super::files::{Krate, Source, test_only};
use super::paths::{Written, name, use_leaves};

/// Deeper chains of bindings than this are cycles (a compile error anyway).
const DEPTH: usize = 32;

/// Where a path leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// An item of one of the package's crates: its crate and absolute path
    /// (`[store, Store, open]`).
    Local(Krate, Vec<String>),
    /// An item of another crate, from the crate name on (`[std, fs, read]`).
    Extern(Vec<String>),
}

/// A `use` binding, resolved lazily where it was written.
#[derive(Clone)]
struct Import {
    krate: Krate,
    module: Vec<String>,
    /// How many enclosing block scopes it sees (0 for a module-level `use`).
    blocks: usize,
    path: Written,
}

/// What one module or block defines and imports (test-only items left out).
#[derive(Default)]
pub struct Scope {
    items: HashSet<String>,
    imports: HashMap<String, Import>,
    globs: Vec<Import>,
}

impl Scope {
    /// The scope of `items` written in `module` of `krate` under `blocks`
    /// enclosing block scopes; inline modules are returned to be filled.
    fn add<'a>(
        &mut self,
        items: impl Iterator<Item = &'a Item>,
        at: (Krate, &[String]),
        blocks: usize,
    ) -> Vec<&'a syn::ItemMod> {
        let mut inline = Vec::new();
        for item in items {
            if test_only(attrs(item)) {
                continue;
            }
            let ident = match item {
                Item::Use(u) => {
                    for leaf in use_leaves(u) {
                        let import = Import {
                            krate: at.0,
                            module: at.1.to_vec(),
                            blocks,
                            path: leaf.path,
                        };
                        match leaf.binding {
                            None => self.globs.push(import),
                            Some(b) if b == "_" => {}
                            Some(b) => {
                                self.imports.insert(b, import);
                            }
                        }
                    }
                    None
                }
                Item::ExternCrate(e) => {
                    let bound = e.rename.as_ref().map_or(&e.ident, |(_, r)| r);
                    let path = Written {
                        segs: vec![name(&e.ident)],
                        global: true,
                    };
                    let import = Import {
                        krate: at.0,
                        module: at.1.to_vec(),
                        blocks,
                        path,
                    };
                    self.imports.insert(name(bound), import);
                    None
                }
                Item::Mod(m) => {
                    if m.content.is_some() {
                        inline.push(m);
                    }
                    Some(&m.ident)
                }
                Item::Const(i) => Some(&i.ident),
                Item::Enum(i) => Some(&i.ident),
                Item::Fn(i) => Some(&i.sig.ident),
                Item::Macro(i) => i.ident.as_ref(),
                Item::Static(i) => Some(&i.ident),
                Item::Struct(i) => Some(&i.ident),
                Item::Trait(i) => Some(&i.ident),
                Item::TraitAlias(i) => Some(&i.ident),
                Item::Type(i) => Some(&i.ident),
                Item::Union(i) => Some(&i.ident),
                _ => None,
            };
            if let Some(ident) = ident {
                self.items.insert(name(ident));
            }
        }
        inline
    }

    /// The scope of a block's statements, the block being the
    /// `depth`-th enclosing one (counting from 1).
    pub fn of_block(stmts: &[Stmt], at: (Krate, &[String]), depth: usize) -> Self {
        let mut scope = Self::default();
        let items = stmts.iter().filter_map(|s| match s {
            Stmt::Item(i) => Some(i),
            _ => None,
        });
        // Modules inside function bodies are rare and unnamed from outside;
        // their names are items of the block, their contents not resolved.
        let _ = scope.add(items, at, depth);
        scope
    }
}

/// The attributes of an item.
pub fn attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Where a path is resolved: crate, module and the enclosing block scopes
/// (outermost first).
pub struct Ctx<'a> {
    pub krate: Krate,
    pub module: &'a [String],
    pub blocks: &'a [Scope],
}

/// A resolved path: its target and, when its first segment was a `use`
/// binding, that binding's target (a glob binding counts as the glob's
/// module), so a path is not blamed again for what its `use` was blamed for.
pub struct Resolved {
    pub target: Target,
    pub via: Option<Target>,
}

/// Every module's scope in the checked files.
pub struct Table {
    scopes: HashMap<(Krate, Vec<String>), Scope>,
}

impl Table {
    pub fn build(sources: &[Source]) -> Self {
        let mut scopes: HashMap<(Krate, Vec<String>), Scope> = HashMap::new();
        for s in sources.iter().filter(|s| !s.test_only) {
            let mut work: Vec<(Vec<String>, &[Item])> = vec![(s.module.clone(), &s.ast.items)];
            while let Some((module, items)) = work.pop() {
                let scope = scopes.entry((s.krate, module.clone())).or_default();
                for m in scope.add(items.iter(), (s.krate, &module), 0) {
                    if let Some((_, inner)) = &m.content {
                        let mut sub = module.clone();
                        sub.push(name(&m.ident));
                        work.push((sub, inner));
                    }
                }
            }
        }
        Self { scopes }
    }

    /// The target of `path` written in `ctx`; `None` for a path that
    /// names nothing (`super` above the root, a cycle of bindings).
    pub fn resolve(&self, ctx: &Ctx<'_>, path: &Written) -> Option<Resolved> {
        self.resolve_at(ctx, path, 0)
    }

    fn resolve_at(&self, ctx: &Ctx<'_>, path: &Written, depth: usize) -> Option<Resolved> {
        let (first, rest) = path.segs.split_first()?;
        if depth > DEPTH {
            return None;
        }
        let (mut cur, rest, via) = if path.global {
            (Target::Extern(vec![first.clone()]), rest, None)
        } else {
            match first.as_str() {
                "crate" | "$crate" => (Target::Local(ctx.krate, Vec::new()), rest, None),
                "self" | "super" => {
                    let mut module = ctx.module.to_vec();
                    let mut n = 0;
                    for seg in &path.segs {
                        match seg.as_str() {
                            "self" => {}
                            "super" => {
                                module.pop()?;
                            }
                            _ => break,
                        }
                        n += 1;
                    }
                    (Target::Local(ctx.krate, module), &path.segs[n..], None)
                }
                _ => {
                    let (target, via) = self.first(ctx, first, depth)?;
                    (target, rest, via)
                }
            }
        };
        for seg in rest {
            cur = self.step(cur, seg, depth);
        }
        Some(Resolved { target: cur, via })
    }

    /// The first segment `name`: a block's or the module's item, import or
    /// glob, else (in the binary) the library by name, else a crate.
    fn first(&self, ctx: &Ctx<'_>, name: &str, depth: usize) -> Option<(Target, Option<Target>)> {
        let own = |n: &str| {
            let mut p = ctx.module.to_vec();
            p.push(n.to_owned());
            Target::Local(ctx.krate, p)
        };
        let module_scope = self.scopes.get(&(ctx.krate, ctx.module.to_vec()));
        let scopes = ctx.blocks.iter().rev().chain(module_scope);
        for scope in scopes {
            if scope.items.contains(name) {
                return Some((own(name), None));
            }
            if let Some(import) = scope.imports.get(name).filter(|i| !names_itself(i, name)) {
                let target = self.import(import, ctx.blocks, depth)?;
                return Some((target.clone(), Some(target)));
            }
            for glob in &scope.globs {
                if let Some(t) = self.through_glob(glob, ctx.blocks, name, depth) {
                    return Some(t);
                }
            }
        }
        if ctx.krate == Krate::Bin && name == "strata" {
            return Some((Target::Local(Krate::Lib, Vec::new()), None));
        }
        Some((Target::Extern(vec![name.to_owned()]), None))
    }

    /// `name` found in the module a glob import names, with the glob's
    /// module as the binding.
    fn through_glob(
        &self,
        glob: &Import,
        blocks: &[Scope],
        name: &str,
        depth: usize,
    ) -> Option<(Target, Option<Target>)> {
        let module = self.import(glob, blocks, depth)?;
        let Target::Local(krate, path) = &module else {
            return None;
        };
        let scope = self.scopes.get(&(*krate, path.clone()))?;
        let found = if scope.items.contains(name) {
            let mut p = path.clone();
            p.push(name.to_owned());
            Target::Local(*krate, p)
        } else if let Some(import) = scope.imports.get(name).filter(|i| !names_itself(i, name)) {
            self.import(import, &[], depth + 1)?
        } else {
            scope
                .globs
                .iter()
                .find_map(|g| self.through_glob(g, &[], name, depth + 1))?
                .0
        };
        Some((found, Some(module)))
    }

    fn import(&self, import: &Import, blocks: &[Scope], depth: usize) -> Option<Target> {
        let ctx = Ctx {
            krate: import.krate,
            module: &import.module,
            blocks: &blocks[..import.blocks.min(blocks.len())],
        };
        self.resolve_at(&ctx, &import.path, depth + 1).map(|r| r.target)
    }

    /// One more segment after `cur`, through a module's items and
    /// re-exports when `cur` is a module of the package.
    fn step(&self, cur: Target, seg: &str, depth: usize) -> Target {
        match cur {
            Target::Extern(mut p) => {
                p.push(seg.to_owned());
                Target::Extern(p)
            }
            Target::Local(krate, mut p) => {
                let followed = self.scopes.get(&(krate, p.clone())).and_then(|scope| {
                    if scope.items.contains(seg) {
                        return None;
                    }
                    if let Some(import) = scope.imports.get(seg) {
                        return self.import(import, &[], depth + 1);
                    }
                    let found = scope
                        .globs
                        .iter()
                        .find_map(|g| self.through_glob(g, &[], seg, depth + 1));
                    found.map(|(t, _)| t)
                });
                followed.unwrap_or_else(|| {
                    p.push(seg.to_owned());
                    Target::Local(krate, p)
                })
            }
        }
    }
}

/// `use name;` (or `use name::{self}`) binds a crate's name to itself.
fn names_itself(import: &Import, name: &str) -> bool {
    !import.path.global && import.path.segs.len() == 1 && import.path.segs[0] == name
}
