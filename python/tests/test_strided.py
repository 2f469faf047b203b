"""Strided local storage: plans made with each side's strides (in elements), and
`dr.redistribute` on NumPy views (halo interiors, transposes, padded last axes,
`out=` inside a bigger array), read and written where they lie. Every element is
checked, and so are sentinels in every gap (halos, padding): never read into the
output, never written. Refused strides and arrays at other strides raise the same
error on every rank."""

import numpy as np
import pytest
from mpi4py import MPI

import distreshape as dr
from distreshape._storage import negative
from distreshape.heat import _agreed, _plan, _Storage
from helpers import WORLD, balanced, global_values, grid_box
from test_errors import raises_everywhere

P = WORLD.size
LAST = P - 1
SHAPE = (7, 10, 6)
#: Halo layers around each block.
HALO = 2
SENTINEL = -123  # no value of the global index in any dtype (int8 wraps to 0..127)


def dims(ndim):
    return MPI.Compute_dims(P, ndim)


def pencils(axis_grid, shape=SHAPE):
    """The layout and this rank's box (computed independently) of pencils on a 2-d grid."""
    grid = dims(2)
    return dr.Layout(shape, grid, axis_grid), grid_box(shape, grid, axis_grid, {}, WORLD.rank)


def expected(box, shape=SHAPE, dtype=np.int64):
    return global_values(shape, dtype)[box]


def haloed(block, halo=HALO):
    """`block` inside a padded array of sentinels: `(padded, interior view)`."""
    padded = np.full(tuple(n + 2 * halo for n in block.shape), SENTINEL, block.dtype)
    interior = padded[tuple(slice(halo, halo + n) for n in block.shape)]
    interior[...] = block
    return padded, interior


def check_halo(padded, halo=HALO):
    """Every element of `padded` outside its interior is still the sentinel."""
    mask = np.ones(padded.shape, bool)
    mask[tuple(slice(halo, n - halo) for n in padded.shape)] = False
    assert (padded[mask] == SENTINEL).all()


def element_strides(view):
    return tuple(s // view.itemsize for s in view.strides)


def test_halo_interiors_both_sides():
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    source, local = haloed(expected(x_box))
    before = source.copy()
    target, out = haloed(np.full(expected(y_box).shape, SENTINEL, np.int64))
    result = dr.redistribute(local, x, y, out=out)
    assert result is out
    np.testing.assert_array_equal(out, expected(y_box))
    check_halo(target)
    np.testing.assert_array_equal(source, before)
    # The same through a plan made with the strides, executed twice.
    plan = dr.Plan.from_layouts(x, y, np.int64, input_strides=element_strides(local),
                                output_strides=element_strides(out))
    assert plan.input_strides == element_strides(local) or local.size == 0
    for _ in range(2):
        out[...] = 0
        assert plan.execute(local, out) is out
        np.testing.assert_array_equal(out, expected(y_box))
        check_halo(target)
    np.testing.assert_array_equal(source, before)


def test_transposed_output_stored_y_fastest():
    """y-pencils stored with axis 1 fastest: a base array of the permuted shape,
    passed as its transpose (the box's shape, permuted strides)."""
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    local = expected(x_box)
    n0, n1, n2 = expected(y_box).shape
    base = np.full((n0, n2, n1), SENTINEL, np.int64)  # axis 1 of the box last
    view = base.transpose(0, 2, 1)
    assert view.shape == (n0, n1, n2)
    dr.redistribute(local, x, y, out=view)
    np.testing.assert_array_equal(base, expected(y_box).transpose(0, 2, 1))
    # And back: the transposed storage as the input, into a C-order output.
    back = dr.redistribute(view, y, x)
    assert back.flags.c_contiguous
    np.testing.assert_array_equal(back, local)


def test_transposed_input_base_array_with_permuted_layout():
    """`a.transpose(1, 0, 2)` of a C-order base: the block of a layout of the
    permuted shape, moved as its transpose."""
    x, x_box = pencils((None, 0, 1))
    z, z_box = pencils((0, 1, None))
    block = expected(x_box)
    base = np.ascontiguousarray(block.transpose(1, 0, 2))
    view = base.transpose(1, 0, 2)
    assert not view.flags.c_contiguous or view.size <= 1
    plan = dr.Plan.from_layouts(x, z, np.int64, input_strides=element_strides(view))
    np.testing.assert_array_equal(plan.execute(view), expected(z_box))


def test_padded_last_axis():
    """The last axis padded to 2 (n // 2 + 1), as real-to-complex FFT codes store it."""
    shape = (6, 5, 9)
    x, x_box = pencils((None, 0, 1), shape)
    z, z_box = pencils((0, 1, None), shape)
    local = expected(x_box, shape, np.float64)
    out_shape = expected(z_box, shape).shape
    padded = np.full(out_shape[:-1] + (2 * (out_shape[-1] // 2 + 1),), SENTINEL, np.float64)
    out = padded[..., : out_shape[-1]]
    dr.redistribute(local, x, z, out=out)
    np.testing.assert_array_equal(out, expected(z_box, shape, np.float64))
    assert (padded[..., out_shape[-1]:] == SENTINEL).all()


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.complex128])
def test_out_inside_a_bigger_array_and_every_dtype_width(dtype):
    x, x_box = pencils((None, 0, 1))
    bricks_grid = dims(3)
    bricks = dr.Layout(SHAPE, bricks_grid, (0, 1, 2))
    b_box = grid_box(SHAPE, bricks_grid, (0, 1, 2), {}, WORLD.rank)
    want = expected(b_box, dtype=dtype)
    big = np.full(tuple(2 * n + 3 for n in want.shape), SENTINEL, dtype)
    out = big[1 : 1 + 2 * want.shape[0] : 2, 2 : 2 + want.shape[1], ::2][:, :, : want.shape[2]]
    touched = np.zeros(big.shape, bool)
    touched[1 : 1 + 2 * want.shape[0] : 2, 2 : 2 + want.shape[1], ::2][:, :, : want.shape[2]] = True
    _, local = haloed(expected(x_box, dtype=dtype), halo=1)
    dr.redistribute(local, x, bricks, out=out)
    np.testing.assert_array_equal(out, want)
    assert (big[~touched] == SENTINEL).all()


def test_negative_strides_are_copied_once():
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    block = expected(x_box)
    backwards = np.ascontiguousarray(block[::-1, :, ::-1])[::-1, :, ::-1]
    np.testing.assert_array_equal(dr.redistribute(backwards, x, y), expected(y_box))
    target = np.zeros(expected(y_box).shape, np.int64)
    out = target[:, ::-1]
    assert dr.redistribute(block, x, y, out=out) is out
    np.testing.assert_array_equal(out, expected(y_box))


def test_read_only_out_with_negative_strides_is_refused_everywhere():
    # Such an out is filled through a C-order array after the collective, so it
    # must be refused before it, on every rank, and left untouched.
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    target = np.zeros(expected(y_box).shape, np.int64)
    out = target[:, ::-1]
    if WORLD.rank == 0:
        out.flags.writeable = False
    # Rank 0's out runs backwards unless its box is empty (then C-contiguous).
    if WORLD.bcast(not out.flags.c_contiguous and negative(out), root=0):
        message = raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.redistribute(expected(x_box), x, y, out=out),
                                    match="read-only")
        assert "rank 0" in message
        assert (target == 0).all()


def test_non_blocking_on_views():
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    source, local = haloed(expected(x_box))
    target, out = haloed(np.zeros(expected(y_box).shape, np.int64))
    plan = dr.Plan.from_layouts(x, y, np.int64, input_strides=element_strides(local),
                                output_strides=element_strides(out))
    request = plan.execute_begin(local, out)
    assert request.wait() is out
    np.testing.assert_array_equal(out, expected(y_box))
    check_halo(target)
    # The default output lies at the plan's output strides.
    fresh = plan.execute(local)
    assert element_strides(fresh) == element_strides(out) or fresh.size <= 1
    np.testing.assert_array_equal(fresh, expected(y_box))


def test_refused_strides_are_agreed():
    x, x_box = pencils((None, 0, 1))
    y, _ = pencils((0, None, 1))
    n = expected(x_box).shape
    good = (n[1] * n[2], n[2], 1)
    overlapping = (1, 1, 1) if WORLD.rank == LAST else good
    if max(n) > 1:  # an axis longer than one makes (1, 1, 1) overlap on the last rank
        message = raises_everywhere(
            "DR_ERROR_INVALID_STRIDES",
            lambda: dr.Plan.from_layouts(x, y, np.float64, input_strides=overlapping),
        )
        assert f"rank {LAST}" in message
    wrong_count = good[:2] if WORLD.rank == 0 else good
    raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: dr.Plan.from_layouts(x, y, np.float64, input_strides=wrong_count))
    not_integers = ("a", 1, 1) if WORLD.rank == 0 else good
    raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: dr.Plan.from_layouts(x, y, np.float64, output_strides=not_integers))
    negative = (-good[0], good[1], good[2]) if WORLD.rank == LAST else good
    if n[0] > 1:
        raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: dr.Plan.from_layouts(x, y, np.float64, input_strides=negative))


def test_overlapping_out_is_refused_everywhere():
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    shape = expected(y_box).shape
    if WORLD.rank == 0 and shape[0] > 1:
        out = np.broadcast_to(np.zeros((1,) + shape[1:]), shape)
        out = np.lib.stride_tricks.as_strided(np.zeros(int(np.prod(shape[1:])) or 1), shape, out.strides, writeable=True)
    else:
        out = np.zeros(shape)
    if WORLD.allreduce(WORLD.rank == 0 and shape[0] > 1, op=MPI.LOR):
        raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: dr.redistribute(expected(x_box, dtype=np.float64), x, y, out=out))


def test_input_and_output_interleaved_in_one_array():
    """The input in the even and the output in the odd elements along the last
    axis of one array (as the real and imaginary parts of complex numbers lie):
    they share no element, so both are read and written where they lie."""
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    have, want = expected(x_box), expected(y_box)
    n = tuple(max(a, b) for a, b in zip(have.shape, want.shape))
    both = np.full((n[0], n[1], 2 * n[2]), SENTINEL, np.int64)
    local = both[: have.shape[0], : have.shape[1], 0 : 2 * have.shape[2] : 2]
    out_index = (slice(want.shape[0]), slice(want.shape[1]), slice(1, 2 * want.shape[2], 2))
    out = both[out_index]
    local[...] = have
    before = both.copy()
    assert dr.redistribute(local, x, y, out=out) is out
    np.testing.assert_array_equal(out, want)
    rest = np.ones(both.shape, bool)
    rest[out_index] = False
    np.testing.assert_array_equal(both[rest], before[rest])


def test_copied_arrays_sharing_memory_are_refused_everywhere():
    """Where the package copies the input (negative strides, or not C-contiguous
    on a plan without strides) or fills the output through a new array (negative
    strides), the library sees the copy: the package itself refuses arrays that
    share memory, on every rank, and writes nothing."""
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    have, want = expected(x_box), expected(y_box)
    if not WORLD.allreduce(WORLD.rank == LAST and have.size > 1 and want.size > 1 and min(have.shape) > 0, op=MPI.LOR):
        return
    dense = dr.Plan.from_layouts(x, y, np.int64)

    def arrays(local_backwards=False, out_backwards=False, local_transposed=False):
        """The input and the output, sharing `base` on the last rank; `(base, local, out)`."""
        base = np.full(have.size + want.size, SENTINEL, np.int64)
        if WORLD.rank != LAST:
            return base, have.copy(), np.zeros(want.shape, np.int64)
        flat = base[: have.size]
        if local_backwards:
            local = flat[::-1].reshape(have.shape)
        elif local_transposed:
            local = flat.reshape(have.shape[::-1]).T
        else:
            local = flat.reshape(have.shape)
        local[...] = have
        out_flat = base[: want.size]
        out = (out_flat[::-1] if out_backwards else out_flat).reshape(want.shape)
        return base, local, out

    cases = {
        "an input copied for its negative strides": (dict(local_backwards=True), lambda a, b: dr.redistribute(a, x, y, out=b)),
        "an output filled through a new array": (dict(out_backwards=True), lambda a, b: dr.redistribute(a, x, y, out=b)),
        "an input copied into C order": (dict(local_transposed=True), lambda a, b: dense.execute(a, b)),
        "a batch's input copied into C order": (dict(local_transposed=True), lambda a, b: dense.execute_many([a], [b])),
        "an input copied, begun": (dict(local_transposed=True), lambda a, b: dense.execute_begin(a, b).wait()),
        "a fused field's input copied": (dict(local_transposed=True), lambda a, b: dr.Fused([dense]).execute([a], [b])),
    }
    for what, (how, call) in cases.items():
        base, local, out = arrays(**how)
        before = base.copy()
        message = raises_everywhere("DR_ERROR_ALIASING", lambda: call(local, out))
        assert f"rank {LAST}" in message, what
        np.testing.assert_array_equal(base, before, err_msg=what)


def test_out_strides_of_partial_elements_are_named():
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    shape = expected(y_box).shape
    if WORLD.rank == 0:
        records = np.zeros(shape, [("x", "f8"), ("t", "i4")])
        out = records["x"]
    else:
        out = np.zeros(shape)
    if WORLD.bcast(max(shape) > 1, root=0):
        message = raises_everywhere(
            "DR_ERROR_INVALID_STRIDES",
            lambda: dr.redistribute(expected(x_box, dtype=np.float64), x, y, out=out),
            match="not whole elements of 8 bytes",
        )
        assert "rank 0" in message
        if WORLD.rank == 0:
            assert (records["x"] == 0).all() and (records["t"] == 0).all()


def test_arrays_at_other_strides_are_refused_on_every_rank():
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    source, local = haloed(expected(x_box))
    target, out = haloed(np.zeros(expected(y_box).shape, np.int64))
    plan = dr.Plan.from_layouts(x, y, np.int64, input_strides=element_strides(local),
                                output_strides=element_strides(out))
    # A C-contiguous copy of the input differs from the plan's strides (no silent copy).
    contiguous = np.ascontiguousarray(local) if WORLD.rank == LAST else local
    if WORLD.allreduce(WORLD.rank == LAST and min(local.shape) > 1, op=MPI.LOR):
        raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: plan.execute(contiguous, out), match="input array")
        dense_out = np.zeros(out.shape, np.int64) if WORLD.rank == LAST else out
        raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: plan.execute(local, dense_out), match="output array")
        raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: plan.execute(local[::-1] if WORLD.rank == LAST else local, out))
    wrong_shape = local[:-1] if WORLD.rank == 0 else local
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(wrong_shape, out))
    # The plan still works, and in place is refused on it.
    np.testing.assert_array_equal(plan.execute(local, out), expected(y_box))
    check_halo(target)
    buffer = np.zeros(max(local.size, out.size) + 1, np.int64)
    raises_everywhere("DR_ERROR_INVALID_STRIDES", lambda: plan.execute_in_place(buffer))


def test_dense_plans_keep_copying_non_contiguous_inputs():
    """A plan made without strides copies a non-contiguous input once, as before,
    and refuses a non-contiguous output."""
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    plan = dr.Plan.from_layouts(x, y, np.int64)
    n = expected(x_box).shape
    assert plan.input_strides == (n[1] * n[2], n[2], 1)
    _, local = haloed(expected(x_box))
    np.testing.assert_array_equal(plan.execute(local), expected(y_box))
    _, out = haloed(np.zeros(expected(y_box).shape, np.int64))
    if WORLD.allreduce(not out.flags.c_contiguous, op=MPI.LOR):
        raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute(local, out), match="C-contiguous")


@pytest.mark.parametrize("transposed_ranks", ["all", "some", "none"])
def test_heat_adapter_reads_non_contiguous_blocks_where_they_lie(transposed_ranks):
    """The Heat adapter's planning on NumPy views of local tensors (Heat itself is
    not needed): slabs of uneven lengths, some stored transposed, to another split."""
    lens = [(r % 3) + 1 for r in range(P)]
    gshape = (sum(lens), 4, 6)
    rows = slice(sum(lens[: WORLD.rank]), sum(lens[: WORLD.rank + 1]))
    block = global_values(gshape, np.float64)[rows]
    transposed = transposed_ranks == "all" or (transposed_ranks == "some" and WORLD.rank % 2 == 1)
    view = np.ascontiguousarray(block.transpose(2, 1, 0)).transpose(2, 1, 0) if transposed else block
    storage = _Storage.of(view, 0)
    new_shape, new_split = (4, gshape[0] * 6), 1
    result, storages = _agreed(WORLD, lambda: (new_shape, new_split), storage)
    assert result == (new_shape, new_split)
    assert [s.length for s in storages] == lens
    plan, local = _plan(view, gshape, 0, new_shape, new_split, WORLD, storage, storages)
    assert local is view  # never copied
    out = plan.execute(local)
    want = global_values(gshape, np.float64).reshape(new_shape)[:, balanced(new_shape[1])]
    np.testing.assert_array_equal(out, want)
