// The wrapper of the docs' Rust fragments (```rust fragment): the names a
// fragment uses without declaring them, bound before it (its own `let`s shadow
// them), in a function returning distreshape's Result so that `?` works.
// Compiled, never run.
#![allow(unused, clippy::all)]
use mpi::topology::SimpleCommunicator;

fn doc_fragment(world: SimpleCommunicator) -> distreshape::Result<()> {
    let (n, local_len, nx, ny, nz, p_row, p_col) = (0i64, 0i64, 0i64, 0i64, 0i64, 1i64, 1i64);
    let input: Vec<f64> = Vec::new();
    let mut output: Vec<f64> = Vec::new();
    let local = ndarray::ArrayD::<f64>::zeros(ndarray::IxDyn(&[0, 4]));
    let gshape = [0usize, 4];
@FRAGMENT@
    Ok(())
}

fn main() {
    let _ = doc_fragment;
}
