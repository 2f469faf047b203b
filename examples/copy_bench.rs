//! Benchmark of the host's box copies (`distreshape::testing::copy_box`) against
//! `memcpy` of the same bytes.
//!
//! ```text
//! cargo run --release --features testing --example copy_bench
//! ```
//!
//! For cubes of float64 (256³, 128 MiB, and 128³): the time of a `memcpy` of the
//! box into a destination touched beforehand, then each local transpose (source in
//! C order, destination in C order of the box's axes permuted) and the copy of the
//! interior of a C-order array with a halo of 2 on every side into a contiguous
//! destination, each with its ratio to the `memcpy`. Every time is the best of 5
//! runs; every copy is verified once.

use std::time::Instant;

use distreshape::testing::{BoxCopy, copy_box};

/// The runs each time is the best of.
const RUNS: usize = 5;

/// The C-order strides of `shape`, in elements.
fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * shape[k + 1];
    }
    strides
}

/// The strides, per axis of the box, of a C-order array of the box's axes taken
/// in `order`.
fn permuted_strides(extents: &[usize], order: &[usize]) -> Vec<usize> {
    let shape: Vec<usize> = order.iter().map(|&k| extents[k]).collect();
    let stored = c_strides(&shape);
    let mut strides = vec![0; extents.len()];
    for (position, &k) in order.iter().enumerate() {
        strides[k] = stored[position];
    }
    strides
}

/// The best time of `RUNS` runs of `f`, in seconds.
fn best_of(mut f: impl FnMut()) -> f64 {
    (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Times the copy of the box `extents` from `src` (strides `src_strides`) into
/// `dst` (strides `dst_strides`), after checking it once.
fn time_copy(extents: &[usize], src: (&[f64], &[usize]), dst: (&mut [f64], &[usize])) -> f64 {
    let (src, src_strides) = src;
    let (dst, dst_strides) = dst;
    let copy = BoxCopy {
        extents,
        src_strides,
        dst_strides,
    };
    let run = |dst: &mut [f64]| {
        // SAFETY: both strides describe storages inside their buffers, and the
        // destination's do not overlap.
        unsafe { copy_box(8, copy, src.as_ptr().cast(), dst.as_mut_ptr().cast()) }
    };
    run(dst);
    verify(extents, (src, src_strides), (dst, dst_strides));
    best_of(|| run(dst))
}

/// Checks a sample of the box's elements, a prime step apart.
fn verify(extents: &[usize], src: (&[f64], &[usize]), dst: (&[f64], &[usize])) {
    let count: usize = extents.iter().product();
    for flat in (0..count).step_by(9973) {
        let mut rest = flat;
        let (mut s, mut d) = (0, 0);
        for k in (0..extents.len()).rev() {
            let i = rest % extents[k];
            rest /= extents[k];
            s += i * src.1[k];
            d += i * dst.1[k];
        }
        assert_eq!(src.0[s], dst.0[d], "element {flat} of the box");
    }
}

/// Prints the memcpy, transposes and halo copy of a cube of side `n`.
fn bench_cube(n: usize) {
    let extents = [n, n, n];
    let count = n * n * n;
    let src: Vec<f64> = (0..count).map(|i| i as f64).collect();
    let mut dst = vec![-1.0f64; count];
    let memcpy = best_of(|| dst.copy_from_slice(&src));
    let mib = (count * 8) as f64 / (1 << 20) as f64;
    println!(
        "{n}³ float64 ({mib:.0} MiB): memcpy {:.2} ms ({:.1} GB/s)",
        memcpy * 1e3,
        (count * 8) as f64 / memcpy / 1e9
    );
    let c_order = c_strides(&extents);
    for order in [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ] {
        let strides = permuted_strides(&extents, &order);
        let t = time_copy(&extents, (&src, &c_order), (&mut dst, &strides));
        println!(
            "  to order {order:?}: {:8.2} ms, {:.2}x memcpy",
            t * 1e3,
            t / memcpy
        );
    }
    let halo = [n + 4, n + 4, n + 4];
    let padded: Vec<f64> = (0..halo.iter().product()).map(|i| i as f64).collect();
    let strides = c_strides(&halo);
    let interior = 2 * (strides[0] + strides[1] + strides[2]);
    let t = time_copy(
        &extents,
        (&padded[interior..], &strides),
        (&mut dst, &c_order),
    );
    println!(
        "  halo 2 interior to contiguous: {:8.2} ms, {:.2}x memcpy",
        t * 1e3,
        t / memcpy
    );
}

fn main() {
    bench_cube(256);
    bench_cube(128);
}
