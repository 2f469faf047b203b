//! The committed C header must be exactly what cbindgen generates from the crate
//! (the tables of `src/core/abi.rs` and the functions of `src/capi/`).
//! Regenerate it with `DISTRESHAPE_BLESS=1 cargo test --test header`.

use std::path::Path;

#[test]
fn committed_header_is_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(root)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let path = root.join("include/distreshape.h");
    if std::env::var_os("DISTRESHAPE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/distreshape.h");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/distreshape.h is stale: run DISTRESHAPE_BLESS=1 cargo test --test header (cbindgen reads the whole crate: constants and types that are not C ABI must not be `pub`, `pub(crate)` suffices)"
    );
}

/// `NAME = value` pairs of the `DR_` constants in `text` (C enumerators or Fortran
/// parameters), in order.
fn constants(text: &str) -> Vec<(String, i64)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("DR_") {
        rest = &rest[at..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_len);
        if let Some(value) = after.trim_start().strip_prefix('=') {
            let value = value.trim_start();
            let digits = value
                .find(|c: char| !(c.is_ascii_digit() || c == '-'))
                .unwrap_or(value.len());
            if let Ok(v) = value[..digits].parse() {
                found.push((name.to_string(), v));
            }
        }
        rest = after;
    }
    found
}

#[test]
fn fortran_constants_equal_the_c_enumerators() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).expect(p);
    let c = constants(&read("include/distreshape.h"));
    let fortran = constants(&read("fortran/distreshape.f90"));
    let families = [
        "DR_SUCCESS",
        "DR_ERROR_",
        "DR_DTYPE_",
        "DR_PATH_",
        "DR_OPTION_",
    ];
    let of_families = |list: &[(String, i64)]| -> Vec<(String, i64)> {
        let mut v: Vec<_> = list
            .iter()
            .filter(|(n, _)| families.iter().any(|f| n.starts_with(f)))
            .cloned()
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let (c, fortran) = (of_families(&c), of_families(&fortran));
    assert_eq!(c.len(), 17 + 13 + 2 + 10, "C enumerators: {c:?}");
    assert_eq!(
        fortran, c,
        "the Fortran module's constants differ from the C header's"
    );
}
