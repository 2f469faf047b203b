//! What the integration tests share: the independent oracle of which global
//! elements a rank holds ([`oracle`]), a counting global allocator ([`alloc`]),
//! and, with the `testing` feature, the kept-element copy of a rank's plan
//! ([`kept`]), every rank's real exchange engine run over an in-memory network
//! ([`engine`]), the byte-by-byte replay of in-place schedules ([`inplace`]), and the
//! exchange on strided storage with sentinels in every gap ([`strided`]),
//! batches of fields through one exchange ([`batch`]), and several plans'
//! exchanges fused in one execution ([`fused`]).
//! Each test binary includes this module (`mod common;`) and uses part of it, hence
//! the `dead_code` allowance below.

#![allow(dead_code)]

pub mod alloc;
#[cfg(feature = "testing")]
pub mod batch;
#[cfg(feature = "testing")]
pub mod engine;
#[cfg(feature = "testing")]
pub mod fused;
#[cfg(feature = "testing")]
pub mod inplace;
#[cfg(feature = "testing")]
pub mod kept;
pub mod oracle;
#[cfg(feature = "testing")]
pub mod strided;

/// Every way long strided runs can travel, for the simulations to draw from.
#[cfg(feature = "testing")]
pub const STRIDED_RUNS: [distreshape::testing::StridedRuns; 4] = [
    distreshape::testing::StridedRuns::StridedReceives,
    distreshape::testing::StridedRuns::StridedDatatypes,
    distreshape::testing::StridedRuns::RunMessages,
    distreshape::testing::StridedRuns::Slots,
];
