//! Import cycles between the modules of one crate: a module that imports a module that
//! imports it back, directly or through others. Imports are read from the `crate::`,
//! `super::` and `self::` paths in each module's own file (its `#[cfg(test)] mod tests` left
//! out); a path counts as an import of the longest module it names. A module and its own
//! ancestors or descendants are one family and not counted: a `mod.rs` declares its children
//! and they read what it shares.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod tokens;

/// One group of modules that import each other in a circle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The modules, sorted (`receiver::job`; the crate root is `crate`).
    pub modules: Vec<String>,
    /// The imports inside the group: (from, to, line of the first such path in `from`).
    pub imports: Vec<(String, String, usize)>,
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "modules {} import each other:", self.modules.join(", "))?;
        for (from, to, line) in &self.imports {
            writeln!(f, "  {from} -> {to} (line {line})")?;
        }
        Ok(())
    }
}

/// The cycles among the modules whose sources are under `src` (a crate's `src` folder).
pub fn cycles(src: &Path) -> std::io::Result<Vec<Cycle>> {
    let mut sources = Vec::new();
    collect(src, src, &mut sources)?;
    Ok(cycles_in(&sources))
}

/// The cycles among modules given as (module path, source text); the crate root is "".
pub fn cycles_in(sources: &[(String, String)]) -> Vec<Cycle> {
    let names: BTreeSet<&str> = sources.iter().map(|(m, _)| m.as_str()).collect();
    let mut imports: BTreeMap<&str, BTreeMap<String, usize>> = BTreeMap::new();
    for (module, text) in sources {
        let own = imports.entry(module.as_str()).or_default();
        for (path, line) in tokens::paths(own_part(text)) {
            if let Some(target) = resolve(module, &path, &names) {
                own.entry(target).or_insert(line);
            }
        }
    }
    strongly_connected(&imports)
        .into_iter()
        .map(|group| {
            let imports = group
                .iter()
                .flat_map(|from| {
                    imports[from.as_str()]
                        .iter()
                        .filter(|(to, _)| group.contains(*to))
                        .map(move |(to, line)| (shown(from), shown(to), *line))
                })
                .collect();
            Cycle {
                modules: group.iter().map(|m| shown(m)).collect(),
                imports,
            }
        })
        .collect()
}

fn shown(module: &str) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.to_owned()
    }
}

/// The module's own code: its unit tests import freely from anywhere.
fn own_part(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// The module a path names (longest prefix that is a module), unless it is `module` itself or
/// of its family.
fn resolve(module: &str, path: &[String], names: &BTreeSet<&str>) -> Option<String> {
    let mut full: Vec<&str> = if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").collect()
    };
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => full.clear(),
        Some("self") => {}
        Some("super") => {}
        _ => return None,
    }
    if rest[0] == "crate" || rest[0] == "self" {
        rest = &rest[1..];
    }
    while rest.first().map(String::as_str) == Some("super") {
        full.pop();
        rest = &rest[1..];
    }
    full.extend(rest.iter().map(String::as_str).filter(|s| *s != "self"));
    let target = (1..=full.len())
        .rev()
        .map(|k| full[..k].join("::"))
        .find(|candidate| names.contains(candidate.as_str()))?;
    let family = target == module
        || module.starts_with(&format!("{target}::"))
        || target.starts_with(&format!("{module}::"))
        || module.is_empty();
    (!family).then_some(target)
}

/// Groups of two or more modules that reach each other (Tarjan's algorithm), each sorted.
fn strongly_connected(imports: &BTreeMap<&str, BTreeMap<String, usize>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<&'a str, BTreeMap<String, usize>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        groups: Vec<Vec<String>>,
    }
    fn visit(s: &mut State<'_>, v: &str) {
        let n = s.index.len();
        s.index.insert(v.to_owned(), n);
        s.low.insert(v.to_owned(), n);
        s.stack.push(v.to_owned());
        let next: Vec<String> = s
            .graph
            .get(v)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for w in next {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.stack.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                let done = w == v;
                group.push(w);
                if done {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.groups.push(group);
            }
        }
    }
    let mut s = State {
        graph: imports,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        groups: Vec::new(),
    };
    for v in imports.keys() {
        if !s.index.contains_key(*v) {
            visit(&mut s, v);
        }
    }
    s.groups.sort();
    s.groups
}

/// Every `.rs` file under `dir` as (module path, text): `a/b.rs` and `a/b/mod.rs` are `a::b`,
/// `lib.rs` and `main.rs` the root.
fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect(root, &path, out)?;
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path).with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if matches!(parts.last().map(String::as_str), Some("mod")) {
            parts.pop();
        }
        if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
            parts.clear();
        }
        out.push((parts.join("::"), std::fs::read_to_string(&path)?));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn a_circle_through_three_modules_is_one_group() {
        let s = src(&[
            ("", "mod a; mod b; mod c;"),
            ("a", "use crate::b::Thing;"),
            ("b", "fn f() { super::c::g() }"),
            ("c", "use crate::{\n    a::{self, X},\n    d,\n};"),
            ("d", "const D: u8 = 1;"),
        ]);
        let found = cycles_in(&s);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].modules, vec!["a", "b", "c"]);
        assert_eq!(
            found[0].imports,
            vec![
                ("a".into(), "b".into(), 1),
                ("b".into(), "c".into(), 1),
                ("c".into(), "a".into(), 1)
            ]
        );
    }

    #[test]
    fn family_comments_strings_and_unit_tests_do_not_count() {
        let s = src(&[
            ("r", "mod j; use self::j::Ctx;"),
            (
                "r::j",
                "use super::Shared; // crate::x::y\nconst S: &str = \"crate::x\";",
            ),
            (
                "x",
                "fn f() {}\n#[cfg(test)]\nmod tests { use crate::r::j::Ctx; }",
            ),
            ("y", "use super::r::j::Ctx;"),
        ]);
        assert_eq!(cycles_in(&s), Vec::<Cycle>::new());
    }

    #[test]
    fn super_super_and_nested_groups_resolve() {
        let s = src(&[
            ("p::q::r", "use super::super::z::{w::{self}};"),
            ("p::z::w", "use crate::p::q::r;"),
            ("p::q", ""),
            ("p::z", ""),
        ]);
        let found = cycles_in(&s);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].modules, vec!["p::q::r", "p::z::w"]);
    }
}
