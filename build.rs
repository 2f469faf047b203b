//! Gives the shared library a versioned SONAME, `libdistreshape.so.ABI`, so that
//! programs linked against it record the ABI they were built for. ABI is the major
//! version, or `0.MINOR` before 1.0 (where the minor version breaks the ABI); CMake
//! installs `libdistreshape.so.MAJOR.MINOR.PATCH` with the usual symbolic links.
fn main() {
    // The output depends on the version only (Cargo.toml, which cargo tracks
    // anyway): without this, cargo reruns the script, and rebuilds the crate,
    // whenever any file of the package changes (README.md, CMakeLists.txt).
    println!("cargo:rerun-if-changed=build.rs");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets the version");
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").expect("cargo sets the version");
    let abi = if major == "0" {
        format!("0.{minor}")
    } else {
        major
    };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdistreshape.so.{abi}");
}
