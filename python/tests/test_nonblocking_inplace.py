"""Non-blocking executions (begin / test / wait) and executions in place."""

import gc
import weakref

import numpy as np
import pytest

import distreshape as dr
from helpers import WORLD, balanced, block, offset, random_case
from test_reshape import expected_output, input_block


@pytest.mark.parametrize("seed", range(20))
def test_begin_test_wait(seed):
    gshape, split, lens, new_shape, new_split, new_lens = random_case(seed)
    plan = dr.Plan(gshape, split, new_shape, new_split, np.int64,
                   local_len=lens[WORLD.rank] if lens else None,
                   new_local_len=new_lens[WORLD.rank] if new_lens else None)
    local = input_block(gshape, split, lens, np.int64)
    out = np.empty(plan.local_output_shape, np.int64)
    request = plan.execute_begin(local, out)
    for _ in range(100):
        if request.test():
            break
    assert request.wait() is out
    assert request.completed and request.test()
    np.testing.assert_array_equal(out, expected_output(new_shape, new_split, new_lens, np.int64))


def test_request_keeps_arrays_and_plan_alive():
    n = 128 * WORLD.size
    plan = dr.Plan((n, 512), 0, (512, n), 1, np.float64)
    plan_ref = weakref.ref(plan)
    local = block((n, 512), 0, plan.input_slab, np.float64)
    local_ref = weakref.ref(local)
    request = plan.execute_begin(local)
    del plan, local
    gc.collect()
    assert plan_ref() is not None and local_ref() is not None
    out = request.wait()
    np.testing.assert_array_equal(out, block((512, n), 1, balanced(n), np.float64))
    del request
    gc.collect()
    assert plan_ref() is None and local_ref() is None


def test_request_dropped_in_flight_completes():
    n = 128 * WORLD.size
    plan = dr.Plan((n, 512), 0, (512, n), 1, np.float64)
    local = block((n, 512), 0, plan.input_slab, np.float64)
    out = np.empty(plan.local_output_shape)
    request = plan.execute_begin(local, out)
    del request  # waits for the execution before releasing the arrays
    np.testing.assert_array_equal(out, block((512, n), 1, balanced(n), np.float64))
    np.testing.assert_array_equal(plan.execute(local), out)


@pytest.mark.parametrize("seed", range(30))
def test_in_place_one_dimensional_buffer(seed):
    gshape, split, lens, new_shape, new_split, new_lens = random_case(seed)
    plan = dr.Plan(gshape, split, new_shape, new_split, np.float32,
                   local_len=lens[WORLD.rank] if lens else None,
                   new_local_len=new_lens[WORLD.rank] if new_lens else None)
    local = input_block(gshape, split, lens, np.float32)
    elems = max(local.size, int(np.prod(plan.local_output_shape)))
    buf = np.full(elems, -1, np.float32)
    buf[: local.size] = local.ravel()
    view = plan.execute_in_place(buf)
    assert view.shape == plan.local_output_shape
    assert np.shares_memory(view, buf) or view.size == 0
    np.testing.assert_array_equal(view, expected_output(new_shape, new_split, new_lens, np.float32))


def test_in_place_in_the_input_block():
    n = 4 * WORLD.size
    plan = dr.Plan((n, 6), 0, (6, n), 1, np.int32, local_len=4, new_local_len=4)
    local = block((n, 6), 0, offset([4] * WORLD.size, WORLD.rank), np.int32)
    view = plan.execute_in_place(local)
    np.testing.assert_array_equal(view, block((6, n), 1, offset([4] * WORLD.size, WORLD.rank), np.int32))
