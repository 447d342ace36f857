//! The workspace's crates depend only downward, one layer at a time.
//!
//! Each layer of the engine is a crate under `crates/`; Cargo refuses a cycle between crates, so
//! an import against the order does not compile. What Cargo allows and this test refuses is a
//! dependency between crates of one layer, or on a crate this list places higher: it keeps the
//! layer table of `docs/architecture.md` true. The test reads the manifests, so a crate added
//! without a place in [`LAYERS`] fails here too.

use std::path::Path;

/// The layers, lowest first: a crate may depend on crates of earlier entries only.
const LAYERS: &[&[&str]] = &[
    &["types"],
    &["scheduler", "image", "state", "channels"],
    &["checkpoint", "operators"],
    &["connectors"],
    &["runtime"],
    &["graph"],
    &["execution"],
    &["cluster"],
    &["api"],
    &["jobs"],
    &["sql"],
    &["hummer"],
];

fn level_of(krate: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&krate))
        .unwrap_or_else(|| panic!("crate '{krate}' has no place in LAYERS of tests/layering.rs"))
}

/// The workspace crates `manifest` depends on in its `[dependencies]` (not dev-dependencies:
/// a crate's doctests may use the `hummer` facade above it).
fn internal_dependencies(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).expect("read manifest");
    let mut section = "";
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[dependencies]"
            && let Some(name) = line.strip_prefix("hummer-")
        {
            let name = name.split([' ', '=', '.']).next().unwrap_or_default();
            found.push(name.to_string());
        }
    }
    found
}

#[test]
fn every_crate_depends_only_on_lower_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut manifests = vec![("hummer".to_string(), root.join("Cargo.toml"))];
    for entry in std::fs::read_dir(root.join("crates")).expect("read crates/") {
        let dir = entry.expect("dir entry").path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        manifests.push((name, dir.join("Cargo.toml")));
    }
    assert!(manifests.len() > 10, "found {} crates", manifests.len());
    let mut wrong = Vec::new();
    for (krate, manifest) in &manifests {
        let level = level_of(krate);
        for dep in internal_dependencies(manifest) {
            if level_of(&dep) >= level {
                wrong.push(format!(
                    "{krate} (layer {level}) -> {dep} (layer {})",
                    level_of(&dep)
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies against the layers: {wrong:?}"
    );
}

#[test]
fn the_dependency_reader_sees_the_engine_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = internal_dependencies(&root.join("crates/runtime/Cargo.toml"));
    assert!(runtime.contains(&"operators".to_string()), "{runtime:?}");
    let facade = internal_dependencies(&root.join("Cargo.toml"));
    assert!(facade.contains(&"jobs".to_string()), "{facade:?}");
}
