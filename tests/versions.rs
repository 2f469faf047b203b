//! The Python package cannot drift from the library's version: maturin takes the
//! package's version from `python/Cargo.toml` (`dynamic = ["version"]` in
//! `python/pyproject.toml`), which must say the library's `Cargo.toml` version.

use std::path::Path;

/// The text of `path`, relative to the repository root.
fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The value of the first `key = "value"` line of the `[section]` of `toml`.
fn value<'a>(toml: &'a str, section: &str, key: &str) -> Option<&'a str> {
    let header = format!("[{section}]");
    let body = toml.split_once(&header)?.1;
    let body = body.split("\n[").next().unwrap_or(body);
    body.lines().find_map(|line| {
        let (name, value) = line.split_once('=')?;
        (name.trim() == key).then(|| value.trim().trim_matches('"'))
    })
}

#[test]
fn the_python_package_has_the_library_version() {
    let python = read("python/Cargo.toml");
    assert_eq!(
        value(&python, "package", "version"),
        Some(env!("CARGO_PKG_VERSION")),
        "python/Cargo.toml's version (the Python package's) must be the library's"
    );
}

#[test]
fn pyproject_takes_its_version_from_cargo() {
    let pyproject = read("python/pyproject.toml");
    assert_eq!(
        value(&pyproject, "project", "dynamic"),
        Some(r#"["version"]"#),
        "python/pyproject.toml must take its version from python/Cargo.toml"
    );
    assert_eq!(value(&pyproject, "project", "version"), None);
}
