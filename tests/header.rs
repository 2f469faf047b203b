//! The committed C header must be exactly what cbindgen generates from `src/ffi.rs`.
//! Regenerate it with `DISTRESHAPE_BLESS=1 cargo test --test header`.

use std::path::Path;

#[test]
fn committed_header_is_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_src(root.join("src/ffi.rs"))
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
        "include/distreshape.h is stale: run DISTRESHAPE_BLESS=1 cargo test --test header"
    );
}
