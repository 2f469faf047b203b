"""Plans over communicators other than MPI.COMM_WORLD."""

import numpy as np
from mpi4py import MPI

import distreshape as dr
from helpers import WORLD, balanced, block


def test_split_communicator():
    half = WORLD.Split(color=WORLD.rank % 2, key=WORLD.rank)
    try:
        n = 3 * half.size + 1
        rows = balanced(n, half.rank, half.size)
        local = block((n, 5), 0, rows, np.float64)
        out = dr.reshape(local, (n, 5), 0, (5, n), 1, half)
        np.testing.assert_array_equal(out, block((5, n), 1, balanced(n, half.rank, half.size), np.float64))
        plan = dr.Plan((n, 5), 0, (5, n), 1, np.float64, half)
        assert plan.comm is half
        np.testing.assert_array_equal(plan.execute(local), out)
    finally:
        half.Free()


def test_self_communicator():
    local = block((4, 6), None, None, np.int8)
    out = dr.reshape(local, (4, 6), 0, (3, 8), 1, MPI.COMM_SELF)
    np.testing.assert_array_equal(out, local.reshape(3, 8))
