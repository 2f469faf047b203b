"""Local storage of NumPy arrays for plans with strides: an array's strides in
elements when the library can move it where it lies (positive, whole elements, no
two elements at one address), and arrays allocated at a plan's strides."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

#: The candidate solutions NumPy's overlap search looks at, at most, as the
#: library's own search (past it, the arrays count as sharing memory).
_SEARCH_WORK = 1 << 16

_TooHardError = getattr(np, "exceptions", np).TooHardError

#: NumPy's byte bounds of an array (``numpy.lib.array_utils`` from NumPy 2).
_byte_bounds = getattr(getattr(np.lib, "array_utils", np), "byte_bounds")


def element_strides(array: np.ndarray) -> Optional[tuple[int, ...]]:
    """``array``'s strides in elements when the library can read or write it in
    place: every axis longer than one has a positive stride of whole elements, and
    no two elements share an address. ``None`` otherwise (negative strides, a
    broadcast's zero strides, strides that are not whole elements): the caller then
    copies once. An empty array's strides place nothing: C order is returned."""
    size = array.dtype.itemsize
    if array.size == 0:
        return c_strides(array.shape)
    long_axes = [k for k, n in enumerate(array.shape) if n > 1]
    if any(array.strides[k] <= 0 or array.strides[k] % size for k in long_axes):
        return None
    strides = tuple(s // size if n > 1 else 0 for s, n in zip(array.strides, array.shape))
    span = 1
    for k in sorted(long_axes, key=lambda k: strides[k]):
        if strides[k] < span:
            return None
        span += (array.shape[k] - 1) * strides[k]
    return strides


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides in elements of C order without gaps."""
    strides, weight = [], 1
    for extent in reversed(shape):
        strides.append(weight)
        weight *= extent
    return tuple(reversed(strides))


def negative(array: np.ndarray) -> bool:
    """Whether some axis longer than one of ``array`` runs backwards in memory."""
    return any(s < 0 and n > 1 for s, n in zip(array.strides, array.shape))


def allocate(shape: Sequence[int], strides: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """A new writable array of ``shape`` at ``strides`` (in elements): one block of
    the span's elements (from the first element to one past the last), viewed."""
    shape = tuple(shape)
    if 0 in shape:
        return np.empty(shape, dtype)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    base = np.empty(span, dtype)
    itemsize = base.dtype.itemsize
    return np.lib.stride_tricks.as_strided(base, shape, [s * itemsize for s in strides])


def first_shared(inputs: Sequence[Any], outputs: Sequence[Any]) -> Optional[tuple[int, int]]:
    """The first pair (input index, output index), by output then input, of
    NumPy arrays that share memory, an undecided pair counting as shared;
    ``None`` when no two do. Objects that are not arrays share nothing. The
    arrays' byte ranges are sorted, and only those that meet are searched: a
    batch of ``k`` arrays apart is checked in ``O(k log k)``."""
    ranges = [(*_byte_bounds(a), 0, i) for i, a in enumerate(inputs) if isinstance(a, np.ndarray) and a.size]
    ranges += [(*_byte_bounds(a), 1, j) for j, a in enumerate(outputs) if isinstance(a, np.ndarray) and a.size]
    ranges.sort()
    first: Optional[tuple[int, int]] = None
    for n, (_, end, side, index) in enumerate(ranges):
        m = n + 1
        while m < len(ranges) and ranges[m][0] < end:
            _, _, side_b, index_b = ranges[m]
            m += 1
            if side_b == side:
                continue
            i, j = (index, index_b) if side == 0 else (index_b, index)
            if (first is None or (j, i) < (first[1], first[0])) and _shares(inputs[i], outputs[j]):
                first = (i, j)
    return first


def _shares(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` share memory, an undecided search counting as
    shared."""
    try:
        return bool(np.shares_memory(a, b, max_work=_SEARCH_WORK))
    except _TooHardError:
        return True


def same_start(a: Any, b: Any) -> bool:
    """Whether the NumPy arrays ``a`` and ``b``, neither empty, start at one
    address: the library takes such an input and output for one buffer, in
    place."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.size == 0 or b.size == 0:
        return False
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
