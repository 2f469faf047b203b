//! Gives the shared library a versioned SONAME, `libdistreshape.so.MAJOR`, so that
//! programs linked against it record the ABI they were built for (CMake installs
//! `libdistreshape.so.MAJOR.MINOR.PATCH` with the usual symbolic links).
fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets the version");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdistreshape.so.{major}");
}
