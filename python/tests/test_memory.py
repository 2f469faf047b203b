"""Reusing a plan does not grow the process's memory."""

import resource

import numpy as np

import distreshape as dr
from helpers import WORLD, balanced, block


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def test_plan_reused_1000_times():
    n = 64 * WORLD.size
    plan = dr.Plan((n, 64), 0, (64, n), 1, np.float64)
    local = block((n, 64), 0, plan.input_slab, np.float64)
    out = np.empty(plan.local_output_shape)
    for _ in range(50):
        plan.execute(local, out)
    before = resident_bytes()
    for _ in range(1000):
        plan.execute(local, out)
        request = plan.execute_begin(local, out)
        request.wait()
    grown = resident_bytes() - before
    np.testing.assert_array_equal(out, block((64, n), 1, balanced(n), np.float64))
    assert grown < 4 << 20, f"the resident set grew by {grown} bytes over 1000 executions"


def test_one_shot_reshapes_do_not_leak():
    local = np.arange(24.0).reshape(4, 6)
    for _ in range(50):
        dr.reshape(local, (4, 6), None, (6, 4), 0)
    before = resident_bytes()
    for _ in range(500):
        dr.reshape(local, (4, 6), None, (6, 4), 0)
    grown = resident_bytes() - before
    assert grown < 4 << 20, f"the resident set grew by {grown} bytes over 500 reshapes"
