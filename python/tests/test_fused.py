"""Fused plans: `distreshape.Fused` executing several plans of one communicator
in one round. The x -> y pencil transpose of a velocity field (float64, one plan
fused three times) with the y -> x transpose of a scalar (float32) of other
extents; the same plan three times; a plan on strided storage (halo interiors)
with a dense one and a plan that sends nothing; in place on one rank and on
every rank; plans let go of before the fused object. Field f holds the global
C-order indices plus f * FIELD_SHIFT; every element is checked, every halo and
a sentinel after each output, the inputs unchanged. Refusals (a count of fields
that is not the plans', an array of another dtype, shape or strides on one
rank, fields sharing memory, another order, plans of two communicators, an item
that is not a plan) raise the same error on every rank, nothing written."""

import gc

import numpy as np
import pytest
from mpi4py import MPI

import distreshape as dr
from helpers import WORLD, grid_box
from test_errors import raises_everywhere

P = WORLD.size
LAST = P - 1
GRID = tuple(MPI.Compute_dims(P, 2))
FIELD_SHIFT = 1000
SENTINEL = -7

VELOCITY = (7, 6, 5)
SCALAR = (9, 4, 3)
STILL = (5, 8, 3)


def layout(shape, axis_grid):
    """The layout of `shape` on the 2-d grid and this rank's box, computed here."""
    return dr.Layout(shape, GRID, axis_grid), grid_box(shape, GRID, axis_grid, {}, WORLD.rank)


X, Y = (None, 0, 1), (0, None, 1)


def field(shape, f, dtype):
    """The global array of `shape` of field f."""
    return (np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) + f * FIELD_SHIFT).astype(dtype)


class Planned:
    """A plan of `dtype` from `shape`'s `src` layout to its `dst` layout, and the boxes."""

    def __init__(self, shape, src, dst, dtype, **strides):
        (self.x, self.x_box), (self.y, self.y_box) = layout(shape, src), layout(shape, dst)
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.plan = dr.Plan.from_layouts(self.x, self.y, dtype, **strides)
        assert self.plan.input_box == self.x_box and self.plan.output_box == self.y_box

    def input(self, f):
        return np.ascontiguousarray(field(self.shape, f, self.dtype)[self.x_box])

    def output(self, f):
        return field(self.shape, f, self.dtype)[self.y_box]

    def with_sentinel(self):
        """`(buffer, out)`: an output array at the start of a buffer one element
        longer, that element (and every other) a sentinel."""
        n = int(np.prod(self.plan.local_output_shape))
        buffer = np.full(n + 1, SENTINEL, self.dtype)
        return buffer, buffer[:n].reshape(self.plan.local_output_shape)


@pytest.fixture(scope="module")
def velocity():
    return Planned(VELOCITY, X, Y, np.float64)


@pytest.fixture(scope="module")
def scalar():
    return Planned(SCALAR, Y, X, np.float32)


def test_velocity_and_scalar(velocity, scalar):
    fused = dr.Fused([velocity.plan, velocity.plan, velocity.plan, scalar.plan])
    assert fused.plans == (velocity.plan,) * 3 + (scalar.plan,) and len(fused) == 4
    assert fused.comm is velocity.plan.comm
    sides = [velocity] * 3 + [scalar]
    locals_ = [side.input(f) for f, side in enumerate(sides)]
    before = [a.copy() for a in locals_]
    buffers, outs = zip(*(side.with_sentinel() for side in sides))
    for _ in range(2):
        result = fused.execute(locals_, outs)
        assert all(r is o for r, o in zip(result, outs))
        for f, side in enumerate(sides):
            np.testing.assert_array_equal(outs[f], side.output(f))
            assert buffers[f][-1] == SENTINEL
            np.testing.assert_array_equal(locals_[f], before[f])
    # New outputs by default, and inputs that are not C-contiguous copied once.
    fortran = [np.asfortranarray(a) for a in locals_]
    for f, (side, out) in enumerate(zip(sides, fused.execute(fortran))):
        assert out.dtype == side.dtype
        np.testing.assert_array_equal(out, side.output(f))
    # The pairs whose traffic over the plans is latency-bound travel framed
    # (here some pair on some rank as soon as the ranks exchange); none alone.
    framed = WORLD.allreduce(fused.framed_pairs, op=MPI.MAX)
    assert (framed > 0) == (P > 1) and (fused.framed_bytes > 0) == (fused.framed_pairs > 0)


def test_the_same_plan_three_times(velocity):
    fused = dr.Fused([velocity.plan] * 3)
    outs = fused.execute([velocity.input(f) for f in range(3)])
    for f, out in enumerate(outs):
        np.testing.assert_array_equal(out, velocity.output(f))


def haloed(block, halo=1):
    """`block` inside a padded array of sentinels: `(padded, interior view)`."""
    padded = np.full(tuple(n + 2 * halo for n in block.shape), SENTINEL, block.dtype)
    interior = padded[tuple(slice(halo, halo + n) for n in block.shape)]
    interior[...] = block
    return padded, interior


def element_strides(view):
    return tuple(s // view.itemsize for s in view.strides)


def test_strided_with_dense_and_nothing_to_send(velocity, scalar):
    padded, local = haloed(velocity.input(0))
    before = padded.copy()
    halo = Planned(VELOCITY, X, Y, np.float64, input_strides=element_strides(local))
    still = Planned(STILL, X, X, np.int64)
    stats = still.plan.stats
    assert stats.bytes_sent == stats.bytes_received == 0
    fused = dr.Fused([halo.plan, scalar.plan, still.plan, velocity.plan])
    outs = fused.execute([local, scalar.input(1), still.input(2), velocity.input(3)])
    for f, (side, out) in enumerate(zip([halo, scalar, still, velocity], outs)):
        np.testing.assert_array_equal(out, side.output(f))
    np.testing.assert_array_equal(padded, before)
    # The strided field at other strides on the last rank: refused everywhere
    # (unless its box is empty there, when no stride is looked at).
    if not WORLD.allreduce(WORLD.rank == LAST and local.size > 0, op=MPI.LOR):
        return
    given = [local, scalar.input(1), still.input(2), velocity.input(3)]
    if WORLD.rank == LAST:
        given[0] = np.ascontiguousarray(local)
    fresh = [np.zeros(side.plan.local_output_shape, side.dtype) for side in (halo, scalar, still, velocity)]
    message = raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: fused.execute(given, fresh))
    assert "field 0" in message and f"rank {LAST}" in message
    assert all((out == 0).all() for out in fresh)


@pytest.mark.parametrize("everywhere", [False, True])
def test_in_place(velocity, scalar, everywhere):
    fused = dr.Fused([velocity.plan, scalar.plan])
    here = everywhere or WORLD.rank == LAST
    buffers = []
    for f, side in enumerate((velocity, scalar)):
        room = max(int(np.prod(side.plan.local_input_shape)), int(np.prod(side.plan.local_output_shape)))
        buffer = np.full(room, SENTINEL, side.dtype)
        buffer[:side.input(f).size] = side.input(f).reshape(-1)
        buffers.append(buffer)
    if here:
        outs = fused.execute(buffers, buffers)
    else:
        outs = fused.execute([velocity.input(0), scalar.input(1)])
    for f, (side, out) in enumerate(zip((velocity, scalar), outs)):
        np.testing.assert_array_equal(out, side.output(f))
        assert out.shape == side.plan.local_output_shape


def test_the_fused_object_keeps_its_plans():
    velocity, scalar = Planned(VELOCITY, X, Y, np.float64), Planned(SCALAR, Y, X, np.float32)
    fused = dr.Fused([velocity.plan, scalar.plan])
    locals_ = [velocity.input(0), scalar.input(1)]
    expected = [velocity.output(0), scalar.output(1)]
    del velocity, scalar
    gc.collect()
    for want, out in zip(expected, fused.execute(locals_)):
        np.testing.assert_array_equal(out, want)


def test_refusals_agreed(velocity, scalar):
    fused = dr.Fused([velocity.plan, velocity.plan, scalar.plan])
    locals_ = [velocity.input(0), velocity.input(1), scalar.input(2)]
    outs = [np.zeros(side.plan.local_output_shape, side.dtype) for side in (velocity, velocity, scalar)]
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: fused.execute(locals_[:2], outs[:2]),
                      match="fused plans")
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: fused.execute(locals_, outs[:2]))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: fused.execute(5))
    wrong = list(locals_)
    if WORLD.rank == 0:
        wrong[1] = wrong[1].astype(np.float32)
    message = raises_everywhere("DR_ERROR_INVALID_DTYPE", lambda: fused.execute(wrong, outs))
    assert "field 1" in message and "rank 0" in message
    wrong = list(locals_)
    if WORLD.rank == LAST:
        wrong[2] = np.zeros(tuple(n + 1 for n in scalar.plan.local_input_shape), np.float32)
    message = raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: fused.execute(wrong, outs))
    assert "field 2" in message and f"rank {LAST}" in message
    if WORLD.allreduce(outs[0].size > 0, op=MPI.LOR):
        shared = [outs[0], outs[0], outs[2]]
        raises_everywhere("DR_ERROR_ALIASING", lambda: fused.execute(locals_, shared))
    assert all((out == 0).all() for out in outs)
    # The fused object still works after every refusal.
    for f, (side, out) in enumerate(zip((velocity, velocity, scalar), fused.execute(locals_, outs))):
        np.testing.assert_array_equal(out, side.output(f))


def test_creation_refusals(velocity, scalar):
    if P > 1:
        order = [scalar.plan, velocity.plan] if WORLD.rank == 0 else [velocity.plan, scalar.plan]
        raises_everywhere("DR_ERROR_INCONSISTENT_ARGUMENTS", lambda: dr.Fused(order))
    dup = WORLD.Dup()
    try:
        other = dr.Plan.from_layouts(scalar.x, scalar.y, np.float32, dup)
        message = raises_everywhere("DR_ERROR_INVALID_COMMUNICATOR",
                                    lambda: dr.Fused([velocity.plan, other]))
        assert "plans[1]" in message
        del other
        gc.collect()
    finally:
        dup.Free()
    given = [velocity.plan, "not a plan" if WORLD.rank == LAST else scalar.plan]
    message = raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.Fused(given))
    assert "plans[1]" in message and f"rank {LAST}" in message
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.Fused([]))
