//! Gives the shared library its versioned name for the dynamic linker, and sets
//! `direct_reads` where the ranks of a node can read one another's memory.
//!
//! The name: `libdistreshape.so.ABI` as the SONAME on ELF platforms, and
//! `@rpath/libdistreshape.ABI.dylib` as the install name on macOS, so that
//! programs linked against it record the ABI they were built for. ABI is the
//! major version, or `0.MINOR` before 1.0 (where the minor version breaks the
//! ABI); CMake installs `libdistreshape.so.MAJOR.MINOR.PATCH` with the usual
//! symbolic links.
//!
//! Direct reads (`src/mpi/cross_memory.rs`) use Linux's cross-memory attach
//! (`process_vm_readv`), which only Linux and Android have. Everywhere else every
//! byte travels through MPI. `RUSTFLAGS="--cfg distreshape_no_direct_reads"`
//! builds that configuration on Linux too, which is how CI compiles and tests it.
fn main() {
    // The output depends on the version and the target only (which cargo tracks
    // anyway): without this, cargo reruns the script, and rebuilds the crate,
    // whenever any file of the package changes (README.md, CMakeLists.txt).
    println!("cargo:rerun-if-changed=build.rs");
    let os = cargo_env("CARGO_CFG_TARGET_OS");
    link_name(&os, &abi());
    println!("cargo:rustc-check-cfg=cfg(direct_reads)");
    println!("cargo:rustc-check-cfg=cfg(distreshape_no_direct_reads)");
    let left_out = std::env::var_os("CARGO_CFG_DISTRESHAPE_NO_DIRECT_READS").is_some();
    if matches!(os.as_str(), "linux" | "android") && !left_out {
        println!("cargo:rustc-cfg=direct_reads");
    }
}

/// A variable cargo always sets for build scripts.
fn cargo_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name}"))
}

/// The ABI version: the major version, or `0.MINOR` before 1.0.
fn abi() -> String {
    let major = cargo_env("CARGO_PKG_VERSION_MAJOR");
    let minor = cargo_env("CARGO_PKG_VERSION_MINOR");
    if major == "0" {
        format!("0.{minor}")
    } else {
        major
    }
}

/// Records the versioned name of the shared library for the linker of `os`.
fn link_name(os: &str, abi: &str) {
    match os {
        "macos" | "ios" => println!(
            "cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libdistreshape.{abi}.dylib"
        ),
        "windows" => {}
        _ => println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdistreshape.so.{abi}"),
    }
}
