//! What the integration tests share: the independent oracle of which global
//! elements a rank holds ([`oracle`]), a counting global allocator ([`alloc`]),
//! and, with the `testing` feature, the kept-element copy of a rank's plan
//! ([`kept`]) and every rank's real exchange engine run over an in-memory network
//! ([`engine`]). Each test binary includes this module (`mod common;`) and uses part
//! of it, hence the `dead_code` allowance below.

#![allow(dead_code)]

pub mod alloc;
#[cfg(feature = "testing")]
pub mod engine;
#[cfg(feature = "testing")]
pub mod kept;
pub mod oracle;
