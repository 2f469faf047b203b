//! Benchmark of the host's box copies (`distreshape::testing::copy_box`) against
//! `memcpy` of the same bytes.
//!
//! ```text
//! cargo run --release --features testing --example copy_bench
//! ```
//!
//! For elements of 8 bytes (float64), 16 (complex128) and 4 (float32), in cubes
//! of side 256 and 128: the time of a `memcpy` of the box into a destination
//! touched beforehand, then each local transpose (source in C order,
//! destination in C order of the box's axes permuted), the copy of the
//! interior of a C-order array with a halo of 2 on every side into a contiguous
//! destination, and the transpose of the last two axes from one field of an
//! array of 3-element structures (a step of 3) and into one of 2-element
//! structures (a step of 2), each with its ratio to the `memcpy`. Then the copies a
//! message's unpack and pack make: 4 messages of (64, 256, 64) elements, each
//! contiguous, into and out of y-fastest pencils of (64, 64, 1024) (the message
//! of rank q at y = 256 q), against a `memcpy` of all 4. Every time is the best
//! of 5 runs; every copy is verified once. `SIZES=8,4` and `SIDES=256` (for
//! example) choose the element sizes and the cubes' sides.

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

/// `count` elements of `size` bytes, each byte from its position.
fn filled(count: usize, size: usize) -> Vec<u8> {
    (0..count * size).map(|b| (b * 131 % 251) as u8).collect()
}

/// One side of a box copy: the bytes from the box's first element and the
/// box's strides in elements.
struct Side<'a, T> {
    bytes: T,
    strides: &'a [usize],
}

/// The elements of `size` bytes of a box of `extents` from `src` into `dst`.
struct Copy<'a> {
    size: usize,
    extents: &'a [usize],
}

impl Copy<'_> {
    /// Runs the copy once.
    fn run(&self, src: &Side<&[u8]>, dst: &mut Side<&mut [u8]>) {
        let copy = BoxCopy {
            extents: self.extents,
            src_strides: src.strides,
            dst_strides: dst.strides,
        };
        // SAFETY: both strides describe storages inside their buffers, and the
        // destination's do not overlap.
        unsafe { copy_box(self.size, copy, src.bytes.as_ptr(), dst.bytes.as_mut_ptr()) }
    }

    /// Checks a sample of the box's elements, a prime step apart.
    fn verify(&self, src: &Side<&[u8]>, dst: &Side<&mut [u8]>) {
        let count: usize = self.extents.iter().product();
        for flat in (0..count).step_by(997) {
            let mut rest = flat;
            let (mut s, mut d) = (0, 0);
            for k in (0..self.extents.len()).rev() {
                let i = rest % self.extents[k];
                rest /= self.extents[k];
                s += i * src.strides[k] * self.size;
                d += i * dst.strides[k] * self.size;
            }
            let size = self.size;
            assert_eq!(
                src.bytes[s..s + size],
                dst.bytes[d..d + size],
                "element {flat}"
            );
        }
    }

    /// Times the copy from `src` to `dst` at their strides, after checking it
    /// once.
    fn time(&self, src: (&[u8], &[usize]), dst: (&mut [u8], &[usize])) -> f64 {
        let (bytes, strides) = src;
        let src = Side { bytes, strides };
        let (bytes, strides) = dst;
        let mut dst = Side { bytes, strides };
        self.run(&src, &mut dst);
        self.verify(&src, &dst);
        best_of(|| self.run(&src, &mut dst))
    }
}

/// The time of a `memcpy` of `bytes` bytes into a touched destination.
fn memcpy_time(bytes: usize) -> f64 {
    let src = filled(bytes, 1);
    let mut dst = vec![0u8; bytes];
    best_of(|| dst.copy_from_slice(&src))
}

/// Prints one time and its ratio to `memcpy`.
fn report(what: &str, t: f64, memcpy: f64) {
    println!("  {what}: {:8.2} ms, {:.2}x memcpy", t * 1e3, t / memcpy);
}

/// Prints the memcpy, transposes and halo copy of a cube of side `n` of
/// elements of `size` bytes.
fn bench_cube(n: usize, size: usize) {
    let extents = [n, n, n];
    let count = n * n * n;
    let memcpy = memcpy_time(count * size);
    println!(
        "{n}³ of {size}-byte elements ({} MiB): memcpy {:.2} ms ({:.1} GB/s)",
        (count * size) >> 20,
        memcpy * 1e3,
        (count * size) as f64 / memcpy / 1e9
    );
    let input = filled(count, size);
    let mut output = vec![0u8; count * size];
    let copy = Copy {
        size,
        extents: &extents,
    };
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
        let t = copy.time((&input, &c_order), (&mut output, &strides));
        report(&format!("to order {order:?}"), t, memcpy);
    }
    drop(input);
    let halo = [n + 4, n + 4, n + 4];
    let padded = filled(halo.iter().product(), size);
    let strides = c_strides(&halo);
    let interior = 2 * (strides[0] + strides[1] + strides[2]) * size;
    let t = copy.time((&padded[interior..], &strides), (&mut output, &c_order));
    report("halo 2 interior to contiguous", t, memcpy);
    drop(padded);
    bench_fields(&copy, memcpy, &mut output);
}

/// Prints the transpose of the last two axes of `copy`'s cube from one field
/// of an array of 3-element structures into `output`, and from `output` into
/// one field of an array of 2-element structures.
fn bench_fields(copy: &Copy, memcpy: f64, output: &mut [u8]) {
    let (size, extents) = (copy.size, copy.extents);
    let count: usize = extents.iter().product();
    let stepped = |step: usize, order: &[usize]| -> Vec<usize> {
        permuted_strides(extents, order)
            .iter()
            .map(|s| s * step)
            .collect()
    };
    let structures = filled(3 * count, size);
    let (field, transposed) = (
        stepped(3, &[0, 1, 2]),
        permuted_strides(extents, &[0, 2, 1]),
    );
    let t = copy.time((&structures, &field), (output, &transposed));
    report("field of 3 to order [0, 2, 1]", t, memcpy);
    drop(structures);
    let mut pairs = vec![0u8; 2 * count * size];
    let (c_order, field) = (c_strides(extents), stepped(2, &[0, 2, 1]));
    let t = copy.time((output, &c_order), (&mut pairs, &field));
    report("to order [0, 2, 1], field of 2", t, memcpy);
}

/// Prints the unpack of 4 messages of (64, 256, 64) elements of `size` bytes
/// (axes z, y, x, contiguous) into y-fastest pencils of (64, 64, 1024) (z, x,
/// y), and their pack back.
fn bench_messages(size: usize) {
    let (peers, message) = (4, [64usize, 256, 64]);
    let elements = message.iter().product::<usize>();
    let memcpy = memcpy_time(peers * elements * size);
    println!(
        "{peers} messages of {message:?} {size}-byte elements ({} MiB): memcpy {:.2} ms",
        (peers * elements * size) >> 20,
        memcpy * 1e3
    );
    let packed = filled(peers * elements, size);
    let mut pencils = vec![0u8; peers * elements * size];
    let mut repacked = vec![0u8; peers * elements * size];
    let (contiguous, pencil) = (c_strides(&message), [64 * 1024, 1, 1024]);
    let copy = Copy {
        size,
        extents: &message,
    };
    // Each message's offset (bytes) in the packed buffer and in the pencils.
    let at = |q: usize| [q * elements * size, q * message[1] * size];
    // Copies every message from `from` to `to`, each side `(buffer, strides,
    // which offset of at)`, and checks them when `check`.
    let move_all = |from: (&[u8], &[usize], usize), to: (&mut [u8], &[usize], usize), check| {
        for q in 0..peers {
            let src = Side {
                bytes: &from.0[at(q)[from.2]..],
                strides: from.1,
            };
            let mut dst = Side {
                bytes: &mut to.0[at(q)[to.2]..],
                strides: to.1,
            };
            copy.run(&src, &mut dst);
            if check {
                copy.verify(&src, &dst);
            }
        }
    };
    let unpack = |pencils: &mut [u8], check| {
        move_all((&packed, &contiguous, 0), (pencils, &pencil, 1), check)
    };
    unpack(&mut pencils, true);
    let t = best_of(|| unpack(&mut pencils, false));
    report("unpack into y-fastest pencils", t, memcpy);
    let t = best_of(|| {
        move_all(
            (&pencils, &pencil, 1),
            (&mut repacked, &contiguous, 0),
            false,
        )
    });
    assert_eq!(packed, repacked, "the messages unpacked and packed back");
    report("pack from y-fastest pencils", t, memcpy);
}

/// The numbers listed in the environment variable `name`, comma-separated, or
/// `default`.
fn listed(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name).map_or_else(
        |_| default.to_vec(),
        |list| {
            let number = |v: &str| v.parse().expect("a list of numbers");
            list.split(',').map(number).collect()
        },
    )
}

fn main() {
    for size in listed("SIZES", &[8, 16, 4]) {
        for side in listed("SIDES", &[256, 128]) {
            bench_cube(side, size);
        }
        bench_messages(size);
    }
}
