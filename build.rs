//! Gives the shared library a SONAME, so that programs linked against it record
//! `libdistreshape.so` rather than the path they were linked with.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdistreshape.so");
}
