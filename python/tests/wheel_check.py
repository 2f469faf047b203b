"""The check of a built wheel installed into a fresh virtual environment, run
under mpiexec by ctest's python_wheel_test (cmake/PythonWheelTest.cmake):

    mpiexec -n 2 VENV/bin/python wheel_check.py WHEEL

- the wheel holds no MPI library (maturin's auditwheel repair would have copied
  libmpich into it, renamed);
- the process has loaded one MPI library, from outside the package: the
  system's, which mpi4py uses too;
- a reshape of (6, 10 P, 4) split along 1 to (-1, 4) split along 0 gives every
  element its global C-order flat index.
"""

from __future__ import annotations

import os
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
from mpi4py import MPI

import distreshape as dr

WORLD = MPI.COMM_WORLD
#: A shared MPI library's file name (MPICH's libmpich, Open MPI's libmpi, renamed copies).
MPI_LIBRARY = re.compile(r"lib(mpi|mpich)([-_.][^/]*)?\.so")


def mpi_files_in_wheel(wheel: str) -> list[str]:
    """The wheel's entries that are MPI libraries or libraries vendored by a repair."""
    names = zipfile.ZipFile(wheel).namelist()
    return [n for n in names if MPI_LIBRARY.search(Path(n).name) or ".libs/" in n]


def loaded_mpi_libraries() -> set[str]:
    """The MPI libraries mapped into this process (real paths)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    return {os.path.realpath(p) for p in paths if MPI_LIBRARY.match(Path(p).name)}


def wrong_elements() -> int:
    """Elements of the reshape that are not their global flat index, over all ranks."""
    size, rank = WORLD.size, WORLD.rank
    gshape = (6, 10 * size, 4)
    index = np.arange(np.prod(gshape), dtype=np.int64).reshape(gshape)
    local = np.ascontiguousarray(index[:, 10 * rank: 10 * (rank + 1), :])
    plan = dr.Plan(gshape, 1, (-1, 4), 0, np.int64)
    out = plan.execute(local)
    want = index.reshape(-1, 4)[plan.output_slab]
    return WORLD.allreduce(int(out.shape != want.shape or np.count_nonzero(out != want)))


def main() -> None:
    problems = []
    if WORLD.rank == 0 and mpi_files_in_wheel(sys.argv[1]):
        problems.append(f"the wheel carries MPI libraries: {mpi_files_in_wheel(sys.argv[1])}")
    package = Path(dr.__file__).resolve().parent
    loaded = loaded_mpi_libraries()
    if len(loaded) != 1 or any(Path(p).is_relative_to(package.parent) for p in loaded):
        problems.append(f"expected one system MPI library loaded, found {sorted(loaded)}")
    try:
        if wrong_elements():
            problems.append("the reshape gave wrong elements")
    except dr.Error as e:  # raised on every rank alike
        problems.append(f"the reshape failed: {e}")
    problems = WORLD.allgather(problems)
    if WORLD.rank == 0:
        for rank, found in enumerate(problems):
            for problem in found:
                print(f"rank {rank}: {problem}")
        print(f"{dr.__file__} with {sorted(loaded)}: {'FAILED' if any(problems) else 'ok'}")
    sys.exit(1 if any(problems) else 0)


if __name__ == "__main__":
    main()
