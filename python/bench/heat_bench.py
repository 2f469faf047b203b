"""Benchmark of ``heat.reshape`` against ``distreshape.heat.reshape`` on Heat PR 873's
seed case: ``x = ht.array(torch.arange(N).reshape(10, -1, 10), split=1)``, then
``x.reshape(10, -1, new_split=S)`` (S = 1: nothing moves between ranks; S = 0:
data moves).

One case in one process (each case in a fresh process):

    mpiexec -n P python python/bench/heat_bench.py --impl heat|adapter --n N --new-split S

times the first call, then ``--repeat`` calls (median), each call between
barriers, its time the max over ranks, and measures each call's extra peak
memory per rank: the peak resident set during the call (``VmHWM``, reset before
it through ``/proc/self/clear_refs``) minus the resident set before it, the
max over ranks. ``x`` is made anew before every call (Heat's reshape resplits
its input to axis 0 in place) from this rank's slab alone (``is_split=1``: the
same array as the seed case's, without each rank holding all of it), and every
element of the last output is checked against its global flat index.

All cases, each in a fresh process, ``--runs`` times per rank count:

    python python/bench/heat_bench.py --all --ranks 2 4 --runs 2 [--mpiexec mpiexec.mpich]

prints one JSON object per case and run (rank 0's) and a table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

CASES = [(n, s) for n in (10**5, 10**8) for s in (1, 0)]
IMPLS = ("heat", "adapter")
MIB = 1 << 20


def rss_bytes(field: str) -> int:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak() -> None:
    """Resets ``VmHWM`` to the current resident set (Linux 4.0 and later)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def seed_array(n: int) -> Any:
    """The seed case's x: (10, n / 100, 10) split along 1, values their global flat
    index, made from this rank's balanced slab only."""
    import heat as ht
    import torch

    comm = ht.MPI_WORLD
    rows = n // 100
    start = comm.rank * (rows // comm.size) + min(comm.rank, rows % comm.size)
    stop = start + rows // comm.size + (comm.rank < rows % comm.size)
    i = torch.arange(10).reshape(10, 1, 1) * rows * 10
    j = torch.arange(start, stop).reshape(1, -1, 1) * 10
    k = torch.arange(10).reshape(1, 1, 10)
    return ht.array(i + j + k, is_split=1)


def measured_call(reshape: Callable, n: int, new_split: int) -> tuple[float, int, Any]:
    """One call on a fresh x: its time and extra peak memory (max over ranks), the output."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    x = seed_array(n)
    world.Barrier()
    before = rss_bytes("VmRSS")
    reset_peak()
    start = time.perf_counter()
    y = reshape(x, 10, -1, new_split=new_split)
    seconds = time.perf_counter() - start
    extra = rss_bytes("VmHWM") - before
    return world.allreduce(seconds, op=MPI.MAX), world.allreduce(extra, op=MPI.MAX), y


def wrong_elements(y: Any, n: int) -> int:
    """Elements of y (10, n / 10) that are not their global flat index, over all ranks."""
    import torch

    offset = int(y.lshape_map[: y.comm.rank, y.split].sum())
    rows = torch.arange(y.larray.shape[0]).reshape(-1, 1)
    cols = torch.arange(y.larray.shape[1]).reshape(1, -1)
    if y.split == 0:
        rows = rows + offset
    else:
        cols = cols + offset
    want = rows * (n // 10) + cols
    return y.comm.allreduce(int((y.larray != want).sum()))


def run_case(impl: str, n: int, new_split: int, repeat: int) -> dict:
    """The first call and the median of ``repeat`` more, in this process."""
    import heat as ht
    from mpi4py import MPI

    import distreshape.heat

    reshape = ht.reshape if impl == "heat" else distreshape.heat.reshape
    first_s, first_extra, y = measured_call(reshape, n, new_split)
    del y
    times, extras = [], []
    for _ in range(repeat):
        seconds, extra, y = measured_call(reshape, n, new_split)
        times.append(seconds)
        extras.append(extra)
    return {
        "impl": impl, "n": n, "new_split": new_split, "ranks": MPI.COMM_WORLD.size,
        "first_s": first_s, "first_extra_mib": first_extra / MIB,
        "median_s": statistics.median(times), "median_extra_mib": statistics.median(extras) / MIB,
        "max_extra_mib": max(extras) / MIB, "wrong_elements": wrong_elements(y, n),
    }


def run_all(ranks: list[int], runs: int, repeat: int, mpiexec: str) -> list[dict]:
    """Every case at every rank count, ``runs`` times, each in a fresh process."""
    rows = []
    for p in ranks:
        for run in range(runs):
            for n, new_split in CASES:
                for impl in IMPLS:
                    command = [mpiexec, "-n", str(p), sys.executable, __file__, "--impl", impl,
                               "--n", str(n), "--new-split", str(new_split), "--repeat", str(repeat)]
                    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
                    row = json.loads(output.strip().splitlines()[-1]) | {"run": run + 1}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", choices=IMPLS)
    parser.add_argument("--n", type=int)
    parser.add_argument("--new-split", type=int)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="every case, each in a fresh process")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--mpiexec", default="mpiexec")
    args = parser.parse_args()
    if args.all:
        run_all(args.ranks, args.runs, args.repeat, args.mpiexec)
        return
    from mpi4py import MPI

    row = run_case(args.impl, args.n, args.new_split, args.repeat)
    if MPI.COMM_WORLD.rank == 0:
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
