"""Benchmark of the Python package against a hand-written mpi4py + NumPy baseline,
on the cases of the library's own benchmark (examples/bench.rs), float64.

    mpiexec -n P python python/bench/bench.py [--case NAME[,NAME...]] [--repeat N]
                                              [--json FILE] [--heat]

For every case (input value = global C-order flat index, built by broadcasting,
without materializing the global array):
- ``execute``: ``plan.execute(local, out)`` with preallocated arrays, ``repeat``
  runs after one warm-up, each between barriers; the time is the median over the
  runs of the max over ranks (as the Rust benchmark reports its ``median_s``);
  the output is verified once;
- ``baseline``: what mpi4py and NumPy do for the same data movement, by hand:
  ``Alltoallv`` of exactly the per-peer volumes the plan moves (counted from the
  two distributions) from and into contiguous buffers, plus a NumPy copy of the
  elements that stay on the rank (the Rust benchmark's baseline, from Python);
- ``ratio``: execute / baseline; with ``--heat``, ``heat.reshape`` of the same
  array (Heat installed) and ``distreshape.heat.reshape``.

Rank 0 prints one line per case and, with ``--json FILE``, one JSON object per
case and line.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
from mpi4py import MPI

import distreshape as dr

WORLD = MPI.COMM_WORLD


@dataclass(frozen=True)
class Case:
    """One case of examples/bench.rs."""

    name: str
    gshape: tuple
    split: Optional[int]
    new_shape: tuple
    new_split: Optional[int]
    #: Rank 0 holds half the rows, the others share the rest.
    unbalanced: bool = False


CASES = [
    Case("seed", (10, 10_000, 10), 1, (10, 100_000), 1),
    Case("seed_big", (10, 1_000_000, 10), 1, (10, 10_000_000), 1),
    Case("same_split_rebalance", (1000, 1000, 100), 0, (4000, 250, 100), 0),
    Case("unbalanced_rebalance", (1000, 1000, 100), 0, (4000, 250, 100), 0, True),
    Case("split_change", (1000, 1000, 100), 0, (1000, 100_000), 1),
    Case("infeasible_same_split", (100, 1000, 1000), 1, (1000, 100, 1000), 1),
    Case("flatten", (1000, 1000, 100), 1, (100_000_000,), 0),
    Case("scattered_split_change", (1000, 100, 1000), 0, (1000, 100, 1000), 2),
    Case("small_latency", (64, 64, 64), 0, (64, 64, 64), 2),
    Case("to_replicated", (1000, 1000, 10), 0, (10_000, 1000), None),
]


def slab_lengths(case: Case, size: int) -> list[int]:
    """Every rank's input rows (balanced, or half on rank 0 when unbalanced)."""
    n = case.gshape[case.split]
    if not case.unbalanced or size == 1:
        return [n // size + (r < n % size) for r in range(size)]
    first = n // 2
    rest = n - first
    return [first] + [rest // (size - 1) + (r < rest % (size - 1)) for r in range(size - 1)]


def global_index_block(shape, axis, rows: Optional[slice]) -> np.ndarray:
    """The block of the global array of `shape` (values: global C-order flat index,
    as float64) with rows `rows` of `axis`, by broadcasting."""
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    block = np.zeros((), dtype=np.float64)
    for i, extent in enumerate(shape):
        index = np.arange(extent) if i != axis else np.arange(rows.start, rows.stop)
        view = [1] * len(shape)
        view[i] = index.size
        block = block + (index * float(strides[i])).reshape(view)
    return np.ascontiguousarray(block)


def owners(shape, axis, lens, flat: np.ndarray) -> np.ndarray:
    """The rank holding each global flat index in `flat` (-1: every rank)."""
    if axis is None:
        return np.full(flat.size, -1, dtype=np.int64)
    stride = int(np.prod(shape[axis + 1:], dtype=np.int64))
    row = (flat // stride) % shape[axis]
    return np.searchsorted(np.cumsum(lens), row, side="right")


def volumes(case: Case, plan: dr.Plan, size: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Elements this rank sends to and receives from each peer, and keeps."""
    lens_in = slab_lengths(case, size)
    out_rows = WORLD.allgather(plan.output_slab)
    lens_out = None if case.new_split is None else [s.stop - s.start for s in out_rows]
    total = int(np.prod(case.gshape))
    moved = np.zeros((size, size), dtype=np.int64)
    chunk = 1 << 22
    for start in range(0, total, chunk):
        flat = np.arange(start, min(total, start + chunk), dtype=np.int64)
        source = owners(case.gshape, case.split, lens_in, flat)
        target = owners(case.new_shape, case.new_split, lens_out, flat)
        if case.new_split is None:  # replicated output: every rank receives everything
            for t in range(size):
                moved[:, t] += np.bincount(source, minlength=size)
        else:
            moved += np.bincount(source * size + target, minlength=size * size).reshape(size, size)
    rank = WORLD.rank
    kept = int(moved[rank, rank])
    sends, recvs = moved[rank].copy(), moved[:, rank].copy()
    sends[rank] = recvs[rank] = 0
    return sends, recvs, kept


def timed(run, repeat: int) -> float:
    """Median over `repeat` runs (after one warm-up) of the max over ranks."""
    run()
    times = []
    for _ in range(repeat):
        WORLD.Barrier()
        start = time.perf_counter()
        run()
        times.append(WORLD.allreduce(time.perf_counter() - start, op=MPI.MAX))
    return float(np.median(times))


def bench_case(case: Case, repeat: int, heat: bool) -> dict:
    size, rank = WORLD.size, WORLD.rank
    lens = slab_lengths(case, size)
    rows = slice(sum(lens[:rank]), sum(lens[: rank + 1]))
    start = time.perf_counter()
    plan = dr.Plan(case.gshape, case.split, case.new_shape, case.new_split, np.float64,
                   local_len=lens[rank])
    plan_s = WORLD.allreduce(time.perf_counter() - start, op=MPI.MAX)
    local = global_index_block(case.gshape, case.split, rows)
    out = np.empty(plan.local_output_shape)
    execute_s = timed(lambda: plan.execute(local, out), repeat)
    expected = global_index_block(case.new_shape, case.new_split, plan.output_slab)
    verified = WORLD.allreduce(int(np.array_equal(out, expected)), op=MPI.MIN) == 1
    del expected

    sends, recvs, kept = volumes(case, plan, size)
    send_buffer = np.empty(int(sends.sum()))
    recv_buffer = np.empty(int(recvs.sum()))
    send_offsets = np.concatenate([[0], np.cumsum(sends)[:-1]])
    recv_offsets = np.concatenate([[0], np.cumsum(recvs)[:-1]])
    stay_in = local.reshape(-1)[:kept]
    stay_out = out.reshape(-1)[:kept]

    def baseline():
        WORLD.Alltoallv([send_buffer, (sends, send_offsets), MPI.DOUBLE],
                        [recv_buffer, (recvs, recv_offsets), MPI.DOUBLE])
        np.copyto(stay_out, stay_in)

    baseline_s = timed(baseline, repeat)
    row = {
        "case": case.name, "ranks": size, "execute_s": execute_s, "baseline_s": baseline_s,
        "ratio_vs_baseline": execute_s / baseline_s if baseline_s > 0 else None,
        "plan_s": plan_s, "verified": verified, "path": plan.stats.path,
    }
    if heat:
        row.update(bench_heat(case, local, repeat))
    return row


def bench_heat(case: Case, local: np.ndarray, repeat: int) -> dict:
    """heat.reshape and distreshape.heat.reshape of the same array."""
    import heat as ht
    import torch

    from distreshape.heat import reshape as dr_reshape

    x = ht.array(torch.from_numpy(local), is_split=case.split)
    new_split = case.new_split if case.new_split is not None else case.split
    ht_s = timed(lambda: ht.reshape(x, case.new_shape, new_split=new_split), repeat)
    adapter_s = timed(lambda: dr_reshape(x, case.new_shape, new_split=new_split), repeat)
    return {"ht_reshape_s": ht_s, "heat_adapter_s": adapter_s, "heat_new_split": new_split}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default=",".join(c.name for c in CASES))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json")
    parser.add_argument("--heat", action="store_true", help="also time heat.reshape")
    args = parser.parse_args()
    names = args.case.split(",")
    rows = []
    if WORLD.rank == 0:
        print(f"{'case':<24} {'P':>2} {'execute ms':>11} {'baseline ms':>12} {'ratio':>6}  ok")
    for case in [c for c in CASES if c.name in names]:
        row = bench_case(case, args.repeat, args.heat)
        rows.append(row)
        if WORLD.rank == 0:
            ratio = row["ratio_vs_baseline"]
            heat = ""
            if args.heat:
                heat = f"  heat.reshape {row['ht_reshape_s'] * 1e3:.2f} ms, adapter {row['heat_adapter_s'] * 1e3:.2f} ms"
            print(f"{case.name:<24} {row['ranks']:>2} {row['execute_s'] * 1e3:>11.3f} "
                  f"{row['baseline_s'] * 1e3:>12.3f} {ratio if ratio is None else round(ratio, 2):>6}  "
                  f"{'yes' if row['verified'] else 'NO'}{heat}", flush=True)
    if WORLD.rank == 0 and args.json:
        with open(args.json, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
