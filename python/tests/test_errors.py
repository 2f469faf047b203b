"""Errors raised on every rank with the same status, whichever rank made them."""

import numpy as np
import pytest

import distreshape as dr
from helpers import WORLD, balanced, block

LAST = WORLD.size - 1


def raises_everywhere(status_name, call, match=None):
    """Runs `call`, which must raise dr.Error with `status_name` on every rank;
    returns the message."""
    with pytest.raises(dr.Error) as caught:
        call()
    error = caught.value
    statuses = WORLD.allgather((error.status, error.status_name))
    assert statuses == [(dr.STATUS[status_name], status_name)] * WORLD.size
    assert isinstance(error, RuntimeError)
    if match is not None:
        assert match in str(error)
    return str(error)


def seed_plan(dtype=np.float64):
    return dr.Plan((2 * WORLD.size, 6), 0, (6, -1), 1, dtype)


def test_bad_shape_on_one_rank():
    new_shape = (7, -1) if WORLD.rank == LAST else (6, -1)
    message = raises_everywhere(
        "DR_ERROR_INVALID_SHAPE", lambda: dr.Plan((2 * WORLD.size, 6), 0, new_shape, 1, "f8")
    )
    assert f"rank {LAST}" in message


def test_inconsistent_shapes():
    if WORLD.size == 1:
        pytest.skip("needs two ranks")
    gshape = (2 * WORLD.size, 6) if WORLD.rank else (WORLD.size, 12)
    raises_everywhere("DR_ERROR_INCONSISTENT_ARGUMENTS", lambda: dr.Plan(gshape, 0, (-1,), 0, "f8"))


@pytest.mark.parametrize("dtype", [np.float16, "U3", object, [("a", "i4"), ("b", "f8")], ">f8"])
def test_unsupported_dtype(dtype):
    raises_everywhere("DR_ERROR_INVALID_DTYPE", lambda: seed_plan(dtype), match="invalid dtype")


def test_unsupported_dtype_on_one_rank():
    dtype = np.float16 if WORLD.rank == LAST else np.float64
    local = np.zeros((2, 6), dtype)
    raises_everywhere("DR_ERROR_INVALID_DTYPE", lambda: dr.reshape(local, (2 * WORLD.size, 6), 0, (-1,), 0))


def test_not_a_dtype():
    raises_everywhere("DR_ERROR_INVALID_DTYPE", lambda: seed_plan("not a dtype"))


def test_split_out_of_range():
    raises_everywhere("DR_ERROR_INVALID_SPLIT", lambda: dr.Plan((4, 6), 2, (24,), 0, "f8"))
    raises_everywhere("DR_ERROR_INVALID_SPLIT", lambda: dr.Plan((4, 6), -3, (24,), 0, "f8"))
    raises_everywhere("DR_ERROR_INVALID_SPLIT", lambda: dr.Plan((4, 6), "0", (24,), 0, "f8"))


def test_lengths_do_not_add_up():
    raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan((4, 6), 0, (24,), 0, "f8", local_len=5))


def test_wrong_out_shape_on_one_rank():
    plan = seed_plan()
    local = block((2 * WORLD.size, 6), 0, plan.input_slab, np.float64)
    shape = plan.local_output_shape
    out = np.empty(shape[::-1] if WORLD.rank == LAST else shape)
    if WORLD.rank == LAST and shape[::-1] == shape:
        out = np.empty(shape + (1,))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(local, out), match="output array")
    # The plan still works afterwards.
    expected = block((6, 2 * WORLD.size), 1, plan.output_slab, np.float64)
    np.testing.assert_array_equal(plan.execute(local), expected)


def test_wrong_out_dtype_on_one_rank():
    plan = seed_plan()
    local = np.zeros(plan.local_input_shape)
    out = np.empty(plan.local_output_shape, np.float32 if WORLD.rank == 0 else np.float64)
    raises_everywhere("DR_ERROR_INVALID_DTYPE", lambda: plan.execute(local, out))


def test_out_not_contiguous_or_read_only():
    plan = seed_plan()
    local = np.zeros(plan.local_input_shape)
    strided = np.empty(plan.local_output_shape + (2,))[..., 0]
    if strided.size > 1:
        raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(local, strided), match="C-contiguous")
    read_only = np.empty(plan.local_output_shape)
    read_only.flags.writeable = False
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(local, read_only), match="read-only")
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(local, [0.0]), match="not a NumPy array")


def test_wrong_input_on_one_rank():
    plan = seed_plan()
    shape = plan.local_input_shape
    local = np.zeros((shape[0] + 1,) + shape[1:]) if WORLD.rank == LAST else np.zeros(shape)
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(local), match="input array")
    ragged = [[1.0], [1.0, 2.0]] if WORLD.rank == 0 else np.zeros(shape)
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(ragged))


def test_local_with_wrong_ndim():
    local = np.zeros(6) if WORLD.rank == 0 else np.zeros((2, 6))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.reshape(local, (2 * WORLD.size, 6), 0, (-1,), 0))


def test_in_place_buffer_too_small():
    plan = seed_plan()
    need = max(int(np.prod(plan.local_input_shape)), int(np.prod(plan.local_output_shape)))
    buf = np.zeros(need - 1 if WORLD.rank == LAST else need)
    raises_everywhere("DR_ERROR_BUFFER_TOO_SMALL", lambda: plan.execute_in_place(buf))


def test_execution_in_progress():
    n = 256 * WORLD.size
    plan = dr.Plan((n, 1024), 0, (1024, n), 1, np.float64)
    local = block((n, 1024), 0, plan.input_slab, np.float64)
    out = np.empty(plan.local_output_shape)
    request = plan.execute_begin(local, out)
    pending_somewhere = WORLD.allreduce(int(not request.completed))
    if pending_somewhere:
        raises_everywhere("DR_ERROR_EXECUTION_IN_PROGRESS", lambda: plan.execute(local))
    request.wait()
    np.testing.assert_array_equal(out, block((1024, n), 1, balanced(n), np.float64))
    if not pending_somewhere:
        pytest.skip("the execution completed when it started (nothing in flight to refuse)")


def test_error_attributes_survive_pickling():
    import pickle

    error = dr.Error("invalid shape: x", dr.STATUS["DR_ERROR_INVALID_SHAPE"], "DR_ERROR_INVALID_SHAPE")
    again = pickle.loads(pickle.dumps(error))
    assert (again.status, again.status_name, str(again)) == (dr.STATUS["DR_ERROR_INVALID_SHAPE"], "DR_ERROR_INVALID_SHAPE", "invalid shape: x")


def test_out_starting_where_local_starts_is_refused_everywhere():
    """An ``out`` that starts where ``local`` starts (on the last rank) would be
    taken by the library for one buffer, in place, and the input overwritten:
    refused on every rank in execute, execute_begin, a batch and the one-shot
    calls, the input unchanged."""
    plan = seed_plan(np.int64)
    gshape, new_shape = (2 * WORLD.size, 6), (6, 2 * WORLD.size)
    have = block(gshape, 0, plan.input_slab, np.int64)
    if not WORLD.allreduce(have.size > 0 and WORLD.rank == LAST):
        return
    buf = np.zeros(max(have.size, int(np.prod(plan.local_output_shape))), np.int64)

    def arrays():
        """``(local, out)``: on the last rank ``out`` starts at ``local``'s start."""
        local = buf[: have.size].reshape(have.shape)
        local[...] = have
        if WORLD.rank != LAST:
            return local.copy(), np.empty(plan.local_output_shape, np.int64)
        return local, buf[: int(np.prod(plan.local_output_shape))].reshape(plan.local_output_shape)

    calls = {
        "execute": lambda a, b: plan.execute(a, b),
        "execute_begin": lambda a, b: plan.execute_begin(a, b).wait(),
        "a batch's field": lambda a, b: plan.execute_many([a], [b]),
        "reshape": lambda a, b: dr.reshape(a, gshape, 0, new_shape, 1, out=b),
    }
    for what, call in calls.items():
        local, out = arrays()
        message = raises_everywhere("DR_ERROR_ALIASING", lambda: call(local, out))
        assert f"rank {LAST}" in message and "start at one address" in message, what
        if WORLD.rank == LAST:
            np.testing.assert_array_equal(local, have, err_msg=what)


def test_many_copied_fields_are_checked_apart_and_named():
    """2000 fields whose inputs the package copies (Fortran order) run and are
    checked against every output; one sharing memory with another field's output
    is refused on every rank, naming both fields."""
    plan = seed_plan(np.int64)
    have = block((2 * WORLD.size, 6), 0, plan.input_slab, np.int64)
    want = block((6, 2 * WORLD.size), 1, plan.output_slab, np.int64)
    fields = 2000
    locals_ = [np.asfortranarray(have + f) for f in range(fields)]
    outs = plan.execute_many(locals_)
    assert all(np.array_equal(out, want + f) for f, out in enumerate(outs))
    assert all(np.array_equal(local, have + f) for f, local in enumerate(locals_))
    if not WORLD.allreduce(have.size > 1 and want.size > 1 and min(have.shape) > 1):
        return
    shared = [np.empty(plan.local_output_shape, np.int64) for _ in range(fields)]
    if WORLD.rank == LAST:
        locals_[5] = np.asfortranarray(have)
        shared[1500] = locals_[5].T.reshape(-1)[: want.size].reshape(want.shape)
    before = locals_[5].copy()
    message = raises_everywhere("DR_ERROR_ALIASING", lambda: plan.execute_many(locals_, shared))
    np.testing.assert_array_equal(locals_[5], before)
    assert "field 5's input" in message and "field 1500's output" in message and f"rank {LAST}" in message


def test_different_element_types_name_both_ranks():
    if WORLD.size == 1:
        pytest.skip("needs two ranks")
    plan_dtype = np.float32 if WORLD.rank == LAST else np.float64
    message = raises_everywhere("DR_ERROR_INCONSISTENT_ARGUMENTS", lambda: seed_plan(plan_dtype))
    everywhere = WORLD.allgather(message.split(" (reported")[0])
    assert len(set(everywhere)) == 1 and f"rank {LAST}" in message and "rank 0" in message
