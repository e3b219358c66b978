//! The layering rules of ARCHITECTURE.md, checked against the sources.
//!
//! The test reads every file under `src/`, resolves each `crate::`,
//! `super::` and `self::` path (in `use` trees and inline in code) to the
//! top-level module it names, and fails on an edge the rules do not allow:
//!
//! - `graph` imports only `dtype`, `error`, `sync`;
//! - `backend` imports `graph` only (and the leaf modules), never names an
//!   op (`crate::ops`) and never builds a node;
//! - `runtime` imports `graph`; `array` imports `graph` and `runtime`;
//! - `ops` imports `graph`, `array`, `backend` (and `runtime`, below it);
//! - `transforms` imports `ops` and what is below it;
//! - `compile` imports `transforms`, `ops`, `backend` and what is below;
//! - the namespaces on top (`linalg`, `random`, `contract`, `io`,
//!   `distributed`) may
//!   import every layer, and every top-level module is either a layer of
//!   [`ALLOWED`] or one of [`NAMESPACES`], so a new module must be placed;
//! - inside the crate a path never goes through a crate-root re-export
//!   (`crate::zeros_like`): it names the defining module.
//!
//! An edge that cannot go yet is listed in [`EXCEPTIONS`] with its reason,
//! so it stays visible; an exception that no longer matches anything fails
//! the test too, so the list can only shrink.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The leaf modules every layer may use.
const LEAVES: &[&str] = &["dtype", "error", "sync"];

/// What each top-level module may import besides itself and [`LEAVES`].
/// Modules not listed here (the namespaces on top and `lib.rs`) may import
/// every layer.
const ALLOWED: &[(&str, &[&str])] = &[
    ("dtype", &[]),
    ("error", &[]),
    ("sync", &[]),
    ("graph", &[]),
    ("runtime", &["graph"]),
    ("backend", &["graph"]),
    ("array", &["graph", "runtime"]),
    ("ops", &["graph", "array", "backend", "runtime"]),
    (
        "transforms",
        &["ops", "graph", "array", "backend", "runtime"],
    ),
    (
        "compile",
        &["transforms", "ops", "graph", "array", "backend", "runtime"],
    ),
];

/// The top-level modules that may import every layer (ARCHITECTURE.md's
/// namespaces on top); nothing below imports them, since no layer of
/// [`ALLOWED`] lists them.
const NAMESPACES: &[&str] = &["linalg", "random", "contract", "io", "distributed"];

/// Macros exported with `#[macro_export]` live at the crate root by the
/// language's rules; naming them there is not a re-export.
const ROOT_MACROS: &[&str] = &["with_dtype", "primitive_common"];

/// Edges that break the rules today, each with the reason it stays for now:
/// `(file or folder under src/, the path prefix it names, why)`. A folder
/// (ending in `/`) covers the files under it.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file: `ops/unary/kernels.rs` → `[ops, unary, kernels]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" && stem != "lib" {
            parts.push(stem);
        }
    }
    parts
}

/// Source text with comments removed (string literals are kept; the crate
/// has no `crate::` inside strings that matter), cut before a trailing
/// `#[cfg(test)]` module: tests build their inputs with the public API, so
/// they may use any layer.
fn strip_comments(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its leaf paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.len().saturating_sub(1)];
    let mut parts = vec![];
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |l| format!("{prefix}{l}")))
        .collect()
}

/// Resolves a path as written in module `module` to an absolute path
/// (`crate::a::b`), or `None` for paths outside the crate.
fn resolve(path: &str, module: &[String]) -> Option<String> {
    let path = path.trim_start_matches('$');
    let mut segs: Vec<&str> = path.split("::").collect();
    let mut base: Vec<String> = match segs.first() {
        Some(&"crate") => {
            segs.remove(0);
            vec![]
        }
        Some(&"super") | Some(&"self") => module.to_vec(),
        _ => return None,
    };
    while let Some(&s) = segs.first() {
        match s {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        segs.remove(0);
    }
    base.extend(segs.iter().map(|s| s.to_string()));
    Some(base.join("::"))
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == ':'
}

/// Every crate-relative path a file names, resolved.
fn paths_in(text: &str, module: &[String]) -> Vec<String> {
    let code = strip_comments(text);
    let mut out = vec![];
    // `use` statements (also `pub use`, `pub(crate) use`), possibly multi-line.
    let mut rest = code.as_str();
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = after.find(';') else { break };
        let tree = &after[..end];
        let t = tree.trim_start();
        if t.starts_with("crate::") || t.starts_with("super::") || t.starts_with("self::") {
            // `x as y` keeps `x`; `@` cannot occur in a path.
            for leaf in expand(&t.replace(" as ", "@")) {
                let leaf = leaf.split('@').next().unwrap_or("");
                if let Some(p) = resolve(leaf.trim_end_matches("::self"), module) {
                    out.push(p);
                }
            }
        }
    }
    // Inline paths in code.
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            let prev = code[..at].chars().last();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[at..].chars().take_while(|&c| ident_char(c)).collect();
            let path = path.trim_end_matches(':');
            if let Some(p) = resolve(path, module) {
                out.push(p);
            }
        }
    }
    out
}

fn top_modules(src: &Path) -> BTreeSet<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix("mod ")
                .map(|m| m.trim_end_matches(';').to_string())
        })
        .collect()
}

/// The rule an edge breaks, if any.
fn violation(from: &str, target: &str, top: &BTreeSet<String>) -> Option<String> {
    let first = target.split("::").next().unwrap_or("");
    if first.is_empty() {
        return None;
    }
    if !top.contains(first) {
        if ROOT_MACROS.contains(&first) {
            return None;
        }
        return Some(format!(
            "names the crate-root re-export `crate::{first}`; import it from its defining module"
        ));
    }
    if first == from || LEAVES.contains(&first) {
        return None;
    }
    let allowed = ALLOWED.iter().find(|(m, _)| *m == from)?.1;
    if allowed.contains(&first) {
        None
    } else {
        Some(format!("`{from}` may not import `{first}`"))
    }
}

#[test]
fn layers_import_only_downwards() {
    let src = src_dir();
    let top = top_modules(&src);
    let mut files = vec![];
    rust_files(&src, &mut files);
    files.sort();
    let mut errors = BTreeSet::new();
    let mut used = BTreeSet::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let rel_s = rel.to_string_lossy().replace('\\', "/");
        let module = module_of(rel);
        let from = module.first().cloned().unwrap_or_default();
        let text = fs::read_to_string(f).expect("readable source");
        for target in paths_in(&text, &module) {
            let Some(why) = violation(&from, &target, &top) else {
                continue;
            };
            let excused = EXCEPTIONS.iter().position(|(file, prefix, _)| {
                let covers = if file.ends_with('/') {
                    rel_s.starts_with(file)
                } else {
                    *file == rel_s
                };
                covers && target.starts_with(prefix)
            });
            match excused {
                Some(i) => {
                    used.insert(i);
                }
                None => {
                    errors.insert(format!("{rel_s}: crate::{target}: {why}"));
                }
            }
        }
    }
    for (i, (file, prefix, _)) in EXCEPTIONS.iter().enumerate() {
        if !used.contains(&i) {
            errors.insert(format!(
                "exception ({file}, {prefix}) matches nothing any more: delete it"
            ));
        }
    }
    assert!(
        errors.is_empty(),
        "{} forbidden import(s):\n{}",
        errors.len(),
        errors.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn every_top_module_has_a_place() {
    let top = top_modules(&src_dir());
    let unplaced: Vec<_> = top
        .iter()
        .filter(|m| !NAMESPACES.contains(&m.as_str()) && !ALLOWED.iter().any(|(a, _)| a == m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "top-level modules in neither ALLOWED nor NAMESPACES: {unplaced:?}"
    );
}

#[test]
fn backend_never_names_an_op_or_builds_a_node() {
    let src = src_dir();
    let mut files = vec![];
    rust_files(&src.join("backend"), &mut files);
    let mut errors = vec![];
    for f in &files {
        let code = strip_comments(&fs::read_to_string(f).expect("readable source"));
        for needle in ["from_op", "from_primitive", "from_op_arc", "Array"] {
            let word = |c: char| c.is_alphanumeric() || c == '_';
            let whole = code.match_indices(needle).any(|(i, _)| {
                !code[i + needle.len()..].starts_with(word) && !code[..i].ends_with(word)
            });
            if whole {
                errors.push(format!("{}: uses `{needle}`", f.display()));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn the_checker_sees_what_it_should() {
    let m = |s: &str| s.split('/').map(String::from).collect::<Vec<_>>();
    assert_eq!(
        expand("crate::a::{b, c::{d, e}}"),
        vec!["crate::a::b", "crate::a::c::d", "crate::a::c::e"]
    );
    assert_eq!(
        resolve("super::shape_rules::x", &m("ops/unary")).as_deref(),
        Some("ops::shape_rules::x")
    );
    let text = "use crate::{zeros_like, graph::array::Array};\nfn f() { crate::ops::x(); }";
    let paths = paths_in(text, &m("ops/binary"));
    assert!(paths.contains(&"zeros_like".to_string()));
    assert!(paths.contains(&"graph::array::Array".to_string()));
    assert!(paths.contains(&"ops::x".to_string()));
    let top: BTreeSet<String> = ["graph", "ops"].iter().map(|s| s.to_string()).collect();
    assert!(violation("ops", "zeros_like", &top).is_some());
    assert!(violation("graph", "ops::x", &top).is_some());
    assert!(violation("ops", "graph::array::Array", &top).is_none());
}

/// The `fn` names declared directly inside the block that starts at the
/// first line containing `header` (brace-matched).
fn fns_in_block(text: &str, header: &str) -> BTreeSet<String> {
    let code = strip_comments(text);
    let Some(start) = code.find(header) else {
        return BTreeSet::new();
    };
    let mut depth = 0usize;
    let mut names = BTreeSet::new();
    let body = &code[start..];
    let mut i = 0;
    let bytes = body.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b'f' if depth == 1 && body[i..].starts_with("fn ") => {
                let name: String = body[i + 3..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.insert(name);
            }
            _ => {}
        }
        i += 1;
    }
    names
}

/// `IsolatedOp` wraps every op of a compiled tape; a `Primitive` method it
/// does not forward would silently fall back to the default for replayed
/// ops. Every method of the trait must be forwarded.
#[test]
fn isolated_op_forwards_every_primitive_method() {
    let src = src_dir();
    let read = |p: &str| fs::read_to_string(src.join(p)).expect("readable source");
    let declared = fns_in_block(&read("graph/primitive.rs"), "pub trait Primitive");
    let forwarded = fns_in_block(
        &read("compile/isolated.rs"),
        "impl Primitive for IsolatedOp",
    );
    assert!(
        declared.contains("eval_cpu"),
        "parsed the trait: {declared:?}"
    );
    let missing: Vec<_> = declared.difference(&forwarded).collect();
    assert!(
        missing.is_empty(),
        "IsolatedOp does not forward {missing:?}"
    );
}

/// Every string a `fn name(&self) -> &'static str` (a primitive) or a
/// `fn name(self) -> &'static str` (a selector whose names primitives
/// return) gives, with the file it is in.
fn primitive_names(src: &Path) -> Vec<(String, String)> {
    let mut files = vec![];
    rust_files(src, &mut files);
    files.sort();
    let mut out = vec![];
    for f in &files {
        let code = strip_comments(&fs::read_to_string(f).expect("readable source"));
        let rel = f
            .strip_prefix(src)
            .expect("under src")
            .display()
            .to_string();
        if rel == "dtype.rs" {
            continue; // dtype names, not primitives
        }
        let headers = [
            "fn name(&self) -> &'static str {",
            "fn name(self) -> &'static str {",
        ];
        for (i, header) in headers
            .iter()
            .flat_map(|h| code.match_indices(h).map(move |(i, _)| (i, *h)))
        {
            let body = &code[i + header.len()..];
            let mut depth = 1usize;
            let end = body
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(body.len(), |(j, _)| j);
            for (k, lit) in body[..end].split('"').enumerate() {
                if k % 2 == 1 {
                    out.push((lit.to_string(), rel.clone()));
                }
            }
        }
    }
    out
}

/// A primitive's name identifies it in debug output and errors: no two
/// primitives (or selector variants) may share one.
#[test]
fn primitive_names_are_unique() {
    let names = primitive_names(&src_dir());
    assert!(
        names.iter().any(|(n, _)| n == "cholesky") && names.iter().any(|(n, _)| n == "add"),
        "parsed the names: {names:?}"
    );
    let mut seen = std::collections::BTreeMap::new();
    let mut dups = vec![];
    for (n, file) in names {
        if let Some(first) = seen.insert(n.clone(), file.clone()) {
            dups.push(format!("{n:?}: {first} and {file}"));
        }
    }
    assert!(
        dups.is_empty(),
        "duplicate primitive names:\n{}",
        dups.join("\n")
    );
}
