"""Benchmark of strided local storage from Python (issue 37's Python row): the
x -> y pencil transpose of an N^3 float64 array on a 2-d process grid, each
rank's pencils the interiors of arrays with a halo of ``--halo`` cells on every
axis (both sides).

    mpiexec -n P python python/bench/strided_bench.py [--n N[,N...]] [--halo H]
                                                      [--repeat R] [--json FILE]

Variants, each timed ``repeat`` times after one warm-up, each run between
barriers; the time is the median over the runs of the max over ranks:
- ``views``: ``plan.execute(interior_in, interior_out)``, a plan made with the
  views' strides (``Plan.from_layouts(..., input_strides=, output_strides=)``):
  the halo'd arrays are read and written where they lie, no copy;
- ``copies``: what a caller does without strides: ``np.ascontiguousarray`` of
  the input interior, the library's contiguous transpose into a preallocated
  contiguous block, then a copy back into the output interior;
- ``contiguous``: the library's contiguous transpose of the same boxes without
  halos (the reference the views aim to match);
- ``mpi4py_fft``: mpi4py-fft's ``Pencil.transfer(...).forward`` (an
  ``Alltoallw`` of subarray datatypes) on contiguous pencils without halos,
  which it needs (it takes no strided arrays);
- ``mpi4py_fft_halo``: the same with the halo interiors copied out and back, as
  a caller holding halos must.
The ratios are views / each other variant, from the same run. Every output is
checked once against the global index (mpi4py-fft's too, its boxes being the
same as the library's for the sizes used).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Callable

import numpy as np
from mpi4py import MPI

import distreshape as dr

WORLD = MPI.COMM_WORLD


def timed(run: Callable[[], None], repeat: int) -> float:
    """The median over `repeat` runs (after one warm-up) of the max over ranks."""
    run()
    times = []
    for _ in range(repeat):
        WORLD.Barrier()
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        times.append(WORLD.allreduce(elapsed, op=MPI.MAX))
    return float(np.median(times))


def haloed(shape: tuple[int, ...], halo: int) -> tuple[np.ndarray, np.ndarray]:
    """An array of `shape` plus `halo` cells of -1 on each side of every axis, and
    its interior view."""
    padded = np.full(tuple(n + 2 * halo for n in shape), -1.0)
    return padded, padded[tuple(slice(halo, halo + n) for n in shape)]


def global_index(box: tuple[slice, ...], n: int) -> np.ndarray:
    i, j, k = np.ogrid[box]
    return ((i * n + j) * n + k).astype(np.float64)


def element_strides(view: np.ndarray) -> tuple[int, ...]:
    return tuple(s // view.itemsize for s in view.strides)


def bench(n: int, halo: int, repeat: int) -> dict:
    shape = (n, n, n)
    cart = WORLD.Create_cart(MPI.Compute_dims(WORLD.size, 2))
    x = dr.Layout.for_cart(shape, cart, (None, 0, 1))
    y = dr.Layout.for_cart(shape, cart, (0, None, 1))
    x_box, y_box = x.box(cart), y.box(cart)
    source, local = haloed(x.local_shape(cart), halo)
    target, out = haloed(y.local_shape(cart), halo)
    local[...] = global_index(x_box, n)
    want = global_index(y_box, n)

    strided = dr.Plan.from_layouts(x, y, np.float64, cart, input_strides=element_strides(local),
                                   output_strides=element_strides(out))
    dense = dr.Plan.from_layouts(x, y, np.float64, cart)
    contiguous_in = np.ascontiguousarray(local)
    contiguous_out = np.empty(y.local_shape(cart))

    def views() -> None:
        strided.execute(local, out)

    def copies() -> None:
        dense.execute(np.ascontiguousarray(local), contiguous_out)
        out[...] = contiguous_out

    def contiguous() -> None:
        dense.execute(contiguous_in, contiguous_out)

    results = {"n": n, "P": WORLD.size, "grid": list(cart.dims), "halo": halo, "repeat": repeat}
    for name, run in (("views", views), ("copies", copies), ("contiguous", contiguous)):
        out[...] = 0
        contiguous_out[...] = 0
        results[name] = timed(run, repeat)
        got = out if name != "contiguous" else contiguous_out
        assert np.array_equal(got, want), name
    halos = np.ones(target.shape, bool)
    halos[tuple(slice(halo, halo + m) for m in out.shape)] = False
    assert np.all(target[halos] == -1.0), "a halo cell was written"

    try:
        from mpi4py_fft.pencil import Pencil, Subcomm
    except ImportError as e:
        results["mpi4py_fft"] = results["mpi4py_fft_halo"] = f"not installed: {e}"
    else:
        subcomm = Subcomm(WORLD, [1, 0, 0])
        px = Pencil(subcomm, shape, axis=0)
        py_ = px.pencil(1)
        transfer = px.transfer(py_, np.float64)
        # The same boxes as the library's for the sizes benchmarked (checked).
        assert tuple(px.subshape) == x.local_shape(cart) and tuple(py_.subshape) == y.local_shape(cart)
        a = np.ascontiguousarray(local)
        b = np.empty(py_.subshape)

        def fft_contiguous() -> None:
            transfer.forward(a, b)

        def fft_halo() -> None:
            transfer.forward(np.ascontiguousarray(local), b)
            out[...] = b

        for name, run in (("mpi4py_fft", fft_contiguous), ("mpi4py_fft_halo", fft_halo)):
            b[...] = 0
            results[name] = timed(run, repeat)
            # Its boxes follow its own Cartesian communicator, which may place ranks
            # differently: check against its own offsets.
            starts = [int(s) for s in py_.substart]
            box = tuple(slice(s, s + m) for s, m in zip(starts, py_.subshape))
            assert np.array_equal(b, global_index(box, n)), name
    for other in ("copies", "contiguous", "mpi4py_fft", "mpi4py_fft_halo"):
        if isinstance(results[other], float):
            results[f"views/{other}"] = results["views"] / results[other]
    cart.Free()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="128,256", help="global extents N (N^3 float64), comma-separated")
    parser.add_argument("--halo", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", help="append one JSON object per size to this file")
    args = parser.parse_args()
    for n in (int(v) for v in args.n.split(",")):
        results = bench(n, args.halo, args.repeat)
        if WORLD.rank == 0:
            shown = ", ".join(
                f"{key} {value * 1e3:.2f} ms" if key in ("views", "copies", "contiguous", "mpi4py_fft", "mpi4py_fft_halo")
                and isinstance(value, float) else f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
                for key, value in results.items()
            )
            print(shown, flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
