//! The crate's layers depend only downward.
//!
//! Every top-level module of `src/` has a place in [`LAYERS`]; a module may import (`crate::…`,
//! in `use` declarations or in paths) only from modules in earlier layers, or from its own.
//! Comments (and so doc links) are ignored. The test reads the sources, so the structure stays
//! true as the code grows: an import against the order fails here with the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, lowest first. Modules in one entry are on the same level and must not import
/// each other.
///
/// The entries follow the real imports between top-level modules (`crate::<module>` outside
/// comments, as `imports` reads them), each module in the lowest entry its imports allow:
///
/// ```text
/// error      -> (nothing)
/// types      -> error
/// scheduler  -> error
/// image      -> error
/// state      -> error, types
/// channels   -> error, types
/// checkpoint -> error, types, state
/// operators  -> error, types, state
/// connectors -> error, types, state, operators
/// runtime    -> error, types, state, channels, checkpoint, operators, connectors
/// graph      -> error, types, scheduler, channels, checkpoint, runtime
/// execution  -> error, types, state, channels, checkpoint, operators, connectors, runtime,
///               graph
/// cluster    -> error, types, scheduler, state, channels, checkpoint, connectors, graph,
///               execution
/// api        -> error, types, state, channels, checkpoint, operators, connectors, runtime,
///               graph, execution, cluster
/// jobs       -> error, types, state, operators, connectors, api
/// ```
///
/// The longest chain (`error` -> `types` -> `state` -> `operators` -> `connectors` ->
/// `runtime` -> `graph` -> `execution` -> `cluster` -> `api` -> `jobs`) has eleven modules, so
/// there are eleven entries; `scheduler` and `image` (which import only `error`), `channels`
/// and `checkpoint` could sit higher without breaking the order.
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["types", "scheduler", "image"],
    &["state", "channels"],
    &["checkpoint", "operators"],
    &["connectors"],
    &["runtime"],
    &["graph"],
    &["execution"],
    &["cluster"],
    &["api"],
    &["jobs"],
];

/// Items `lib.rs` re-exports at the crate root, and the module each comes from.
const ROOT_ITEMS: &[(&str, &str)] = &[("HummerError", "error"), ("Result", "error")];

fn level_of(module: &str) -> Option<usize> {
    let module = ROOT_ITEMS
        .iter()
        .find(|(item, _)| *item == module)
        .map_or(module, |(_, from)| from);
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without comments: `//` to the end of the line and `/* … */` (nested), keeping
/// line breaks so that line numbers stay right. String literals are kept.
fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut depth, mut in_str) = (0, 0usize, false);
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        if depth > 0 {
            if c == b'*' && next == Some(b'/') {
                depth -= 1;
                i += 2;
            } else if c == b'/' && next == Some(b'*') {
                depth += 1;
                i += 2;
            } else {
                if c == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            continue;
        }
        if in_str {
            if c == b'\\' {
                out.push_str(&text[i..i + 2.min(bytes.len() - i)]);
                i += 2;
                continue;
            }
            if c == b'"' {
                in_str = false;
            }
            out.push(c as char);
            i += 1;
            continue;
        }
        match (c, next) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                depth = 1;
                i += 2;
            }
            (b'"', _) => {
                in_str = true;
                out.push('"');
                i += 1;
            }
            (b'\'', _) => {
                // A char literal such as '"' must not open a string; a lifetime is left alone.
                if bytes.get(i + 2) == Some(&b'\'') {
                    out.push_str(&text[i..i + 3]);
                    i += 3;
                } else if next == Some(b'\\') {
                    let end = text[i + 2..].find('\'').map_or(bytes.len(), |e| i + 3 + e);
                    out.push_str(&text[i..end]);
                    i = end;
                } else {
                    out.push('\'');
                    i += 1;
                }
            }
            _ => {
                let ch = text[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// The top-level modules a source names after `crate::`, with the line of each mention;
/// `crate::{a::x, b}` names `a` and `b`.
fn imports(code: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(pos) = code[from..].find("crate::") {
        let start = from + pos;
        from = start + 7;
        let boundary =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if !boundary {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of a group: depth-1 identifiers that start an item.
            let (mut depth, mut expect_name, mut name) = (1, true, String::new());
            for ch in group.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        expect_name = false;
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            if !name.is_empty() {
                                found.push((std::mem::take(&mut name), line));
                            }
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        if !name.is_empty() {
                            found.push((std::mem::take(&mut name), line));
                        }
                        expect_name = true;
                        continue;
                    }
                    _ => {}
                }
                if depth == 1 && expect_name {
                    if ch.is_alphanumeric() || ch == '_' {
                        name.push(ch);
                    } else if !name.is_empty() {
                        found.push((std::mem::take(&mut name), line));
                        expect_name = false;
                    }
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push((name, line));
        }
    }
    found
}

#[test]
fn imports_point_only_to_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = Vec::new();
    let mut unknown = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("a component");
        let first = first.as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs");
        if matches!(module, "lib" | "bin" | "main") {
            continue;
        }
        let Some(own) = level_of(module) else {
            unknown.insert(module.to_string(), rel.display().to_string());
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read source");
        for (target, line) in imports(&strip_comments(&text)) {
            if target == module || target == "self" || target == "super" {
                continue;
            }
            match level_of(&target) {
                Some(level) if level < own => {}
                Some(_) => violations.push(format!(
                    "{}:{line}: `{module}` imports `crate::{target}`, which is not below it",
                    rel.display()
                )),
                None => {
                    unknown.insert(target.clone(), format!("{}:{line}", rel.display()));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "modules without a layer in tests/layering.rs (add them to LAYERS): {unknown:?}"
    );
    assert!(
        violations.is_empty(),
        "{} imports against the layer order {LAYERS:?}:\n{}",
        violations.len(),
        violations.join("\n")
    );
}

#[test]
fn the_checker_sees_grouped_and_plain_imports_and_skips_comments() {
    let code = strip_comments(
        "use crate::a::X;\n// use crate::hidden;\n/* crate::gone */ use crate::{b::Y, c, d::{e, f}};\nlet s = \"//\"; crate::g::h();\n",
    );
    let names: Vec<String> = imports(&code).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a", "b", "c", "d", "g"]);
}
