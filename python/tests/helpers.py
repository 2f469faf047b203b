"""Oracles and random cases shared by the tests."""

from __future__ import annotations

from typing import Optional

import numpy as np
from mpi4py import MPI

WORLD = MPI.COMM_WORLD

#: Every dtype with a C element type.
DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64,
    np.float32, np.float64, np.complex64, np.complex128,
]


def as_values(indices: np.ndarray, dtype) -> np.ndarray:
    """Global flat indices as values of `dtype` (wrapped to its range, parity for bool)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return (indices % 2).astype(np.bool_)
    if dtype.kind in "iu":
        return (indices % (1 << min(8 * dtype.itemsize - 1, 62))).astype(dtype)
    if dtype.kind == "c":
        return (indices + 1j * (indices % 7)).astype(dtype)
    return indices.astype(dtype)


def block(shape, axis: Optional[int], rows: Optional[slice], dtype) -> np.ndarray:
    """The block of the global array of `shape` whose elements are their global
    C-order flat index, with rows `rows` of `axis` (all of it when not split)."""
    indices = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    if axis is not None:
        index = [slice(None)] * len(shape)
        index[axis] = rows
        indices = indices[tuple(index)]
    return np.ascontiguousarray(as_values(indices, dtype))


def partition(n: int, parts: int, rng: np.random.Generator) -> list[int]:
    """A random split of `n` rows into `parts` lengths (some may be 0)."""
    cuts = np.sort(rng.integers(0, n + 1, size=parts - 1))
    edges = np.concatenate([[0], cuts, [n]])
    return [int(b - a) for a, b in zip(edges[:-1], edges[1:])]


def factorization(total: int, ndim: int, rng: np.random.Generator) -> list[int]:
    """A random shape of `ndim` extents whose product is `total`."""
    shape = [1] * ndim
    remaining = total
    for p in _prime_factors(total):
        shape[int(rng.integers(ndim))] *= p
        remaining //= p
    return shape


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors + ([n] if n > 1 else [])


def random_case(seed: int):
    """The same random reshape on every rank: `(gshape, split, lens, new_shape,
    new_split, new_lens)`, each split None (replicated) now and then, `lens` every
    rank's slab length (some 0) and `new_lens` explicit output lengths or None."""
    rng = np.random.default_rng(seed)
    total = int(rng.choice([0, 1, 6, 24, 60, 210, 360, 720]))
    gshape = factorization(total, int(rng.integers(1, 5)), rng)
    new_shape = factorization(total, int(rng.integers(1, 5)), rng)
    split = int(rng.integers(len(gshape))) if rng.random() < 0.85 else None
    new_split = int(rng.integers(len(new_shape))) if rng.random() < 0.85 else None
    lens = partition(gshape[split], WORLD.size, rng) if split is not None else None
    new_lens = None
    if new_split is not None and rng.random() < 0.4:
        new_lens = partition(new_shape[new_split], WORLD.size, rng)
    return gshape, split, lens, new_shape, new_split, new_lens


def balanced(n: int, rank: int = WORLD.rank, size: int = WORLD.size) -> slice:
    """Heat's balanced rows of rank `rank`, computed here independently."""
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (rank < extra))


def offset(lens: list[int], rank: int) -> slice:
    start = sum(lens[:rank])
    return slice(start, start + lens[rank])


def global_values(shape, dtype=np.int64) -> np.ndarray:
    """The global array of `shape` whose elements are their C-order flat index."""
    return as_values(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape), dtype)


def grid_box(shape, grid_dims, axis_grid, lengths, rank: int) -> tuple:
    """Rank `rank`'s box, computed here independently: its row-major grid
    coordinates, then per axis all of it, its explicit block, or Heat's balanced one."""
    coords = np.unravel_index(rank, grid_dims)
    box = []
    for axis, extent in enumerate(shape):
        g = axis_grid[axis]
        if g is None:
            box.append(slice(0, extent))
        elif axis in lengths:
            box.append(offset(list(lengths[axis]), int(coords[g])))
        else:
            box.append(balanced(extent, int(coords[g]), grid_dims[g]))
    return tuple(box)


def random_layout(shape, rng: np.random.Generator, size: int = WORLD.size) -> tuple:
    """`(grid_dims, axis_grid, lengths)` of a random layout of `shape` on `size`
    ranks: a grid of 1-3 axes, each splitting a random array axis or (now and
    then) none, replicating; some split axes in random explicit blocks (some 0)."""
    grid_dims = factorization(size, int(rng.integers(1, 4)), rng)
    axis_grid = [None] * len(shape)
    array_axes = [int(a) for a in rng.permutation(len(shape))]
    for g, axis in zip(rng.permutation(len(grid_dims)), array_axes):
        if rng.random() < 0.8:
            axis_grid[axis] = int(g)
    lengths = {
        axis: partition(shape[axis], grid_dims[g], rng)
        for axis, g in enumerate(axis_grid)
        if g is not None and rng.random() < 0.4
    }
    return grid_dims, axis_grid, lengths
