"""Process-grid layouts: how the blocks of a distributed array sit on the ranks."""

from __future__ import annotations

import operator
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
from mpi4py import MPI

from . import _native
from ._arguments import ArgumentError, Problem, Shape, communicator, error_of, integer, integers
from ._errors import STATUS

#: Explicit block lengths: ``{axis: lengths}``, or one entry per array axis
#: (``None`` for balanced blocks).
Lengths = Union[Mapping[int, Sequence[int]], Sequence[Optional[Sequence[int]]]]


class Layout:
    """How an array is laid out over the ranks of a communicator, as a value.

    ``Layout(shape, grid_dims, axis_grid, lengths=None)``:

    - ``shape``: the global shape (C order). The shape of an OUTPUT layout may
      hold one ``-1``, resolved as NumPy's reshape does.
    - ``grid_dims``: the process grid, whose product is the communicator's size.
      Ranks are numbered row-major over it, as ``MPI_Cart_create`` numbers a
      Cartesian communicator's ranks (see :meth:`for_cart`).
    - ``axis_grid``: for each array axis, the grid axis splitting it, or ``None``
      (not split). Each grid axis splits at most one array axis; one that splits
      none replicates: ranks that differ only in its coordinate hold the same block.
    - ``lengths``: explicit block lengths of split axes, as ``{axis: lengths}`` or
      as one entry per array axis (``None`` for balanced); an axis's lengths hold
      one length per coordinate of its grid axis, adding up to its extent (zeros
      allowed). Axes without explicit lengths are balanced (Heat's formula, as
      :func:`distreshape.balanced_slab`). Negative axes count from the end.

    A rank's block is its box (:meth:`box`), stored C-order contiguous. Layouts
    are immutable, compare and hash by value and pickle (to ``bcast`` them).
    Nothing is checked until a plan is made from the layout (or its box asked
    for), so that every rank raises the same :class:`distreshape.Error`.

    >>> # (64, 64, 64) as x-pencils on a 2 x 4 grid, and as bricks on 2 x 2 x 2:
    >>> x_pencils = Layout((64, 64, 64), (2, 4), (None, 0, 1))
    >>> bricks = Layout((64, 64, 64), (2, 2, 2), (0, 1, 2), lengths={0: (40, 24)})
    """

    __slots__ = ("_shape", "_grid_dims", "_axis_grid", "_lengths", "_problem")

    def __init__(self, shape: Shape, grid_dims: Shape, axis_grid: Sequence[Optional[int]], lengths: Optional[Lengths] = None) -> None:
        self._init(shape, grid_dims, axis_grid, lengths, None)

    def _init(self, shape, grid_dims, axis_grid, lengths, problem: Problem) -> None:
        """Sets the fields, each as read or (when it cannot be read) as given, and
        the first problem found."""
        fields = {}
        for name, value, read in (
            ("shape", shape, lambda v: tuple(integers("shape", v))),
            ("grid_dims", grid_dims, lambda v: tuple(integers("grid_dims", v, "DR_ERROR_INVALID_DISTRIBUTION"))),
            ("axis_grid", axis_grid, _grid_axes),
            ("lengths", lengths, lambda v: _block_lengths(v, fields["shape"])),
        ):
            try:
                fields[name] = read(value)
            except ArgumentError as e:
                fields[name] = value
                problem = problem or e.problem
        for name, value in fields.items():
            object.__setattr__(self, f"_{name}", value)
        object.__setattr__(self, "_problem", problem)

    @classmethod
    def for_cart(cls, shape: Shape, comm: MPI.Cartcomm, axis_grid: Sequence[Optional[int]], lengths: Optional[Lengths] = None) -> "Layout":
        """The layout whose grid is the Cartesian communicator ``comm``'s
        (``grid_dims = comm.dims``; ``comm`` from ``Create_cart``, periodic or
        not). Make plans on ``comm`` itself: its ranks are numbered row-major over
        its grid, as the layout's (also with ``reorder=True``, which renumbers the
        ranks relative to the parent communicator, not within ``comm``). A
        communicator that is not Cartesian is an error of the plan (or box) made
        from the layout, on every rank."""
        layout = cls.__new__(cls)
        if isinstance(comm, MPI.Cartcomm):
            layout._init(shape, tuple(comm.dims), axis_grid, lengths, None)
        else:
            message = f"comm = {comm!r} is not a Cartesian communicator (mpi4py.MPI.Cartcomm, from Create_cart)"
            layout._init(shape, (), axis_grid, lengths, (STATUS["DR_ERROR_INVALID_COMMUNICATOR"], message))
        return layout

    @property
    def shape(self) -> tuple[int, ...]:
        """The global shape (as given when it is not a shape)."""
        return self._shape

    @property
    def grid_dims(self) -> tuple[int, ...]:
        """The process grid (as given when it is not one)."""
        return self._grid_dims

    @property
    def axis_grid(self) -> tuple[Optional[int], ...]:
        """The grid axis splitting each array axis, ``None`` where not split."""
        return self._axis_grid

    @property
    def lengths(self) -> dict[int, tuple[int, ...]]:
        """The explicit block lengths by array axis (non-negative axes, in order;
        empty when every split axis is balanced)."""
        return dict(self._lengths) if isinstance(self._lengths, tuple) else self._lengths

    def box(self, comm: Optional[MPI.Comm] = None, *, rank: Optional[int] = None) -> tuple[slice, ...]:
        """This rank's block of the global array on ``comm`` (default
        ``MPI.COMM_WORLD``), as a tuple of slices: ``global_array[layout.box()]``
        is the block, ``layout.local_shape()`` its shape. ``rank`` asks for another
        rank's block. Local (no communication): a layout that is not one of
        ``comm``'s ranks (or has a ``-1`` in its shape, which only a plan
        resolves: :attr:`Plan.output_box`) raises :class:`distreshape.Error` on
        the ranks that ask."""
        comm = communicator(comm)
        size = comm.Get_size()
        rank = comm.Get_rank() if rank is None else _rank(rank, size)
        problem = self._problem_in("layout") or _cartesian_mismatch(self._grid_dims, comm)
        if problem is not None:
            code, message = problem
            raise error_of((code, f"{message} (rank {rank})"))
        spans = _native.layout_box(self._spec(), size, rank)
        return tuple(slice(offset, offset + length) for offset, length in spans)

    def local_shape(self, comm: Optional[MPI.Comm] = None, *, rank: Optional[int] = None) -> tuple[int, ...]:
        """The shape of this rank's block (of :meth:`box`, with the same arguments)."""
        return tuple(s.stop - s.start for s in self.box(comm, rank=rank))

    def _problem_in(self, which: str) -> Problem:
        """The first problem found reading the arguments, naming ``which`` layout."""
        if self._problem is None:
            return None
        code, message = self._problem
        return code, f"{which}: {message}"

    def _spec(self) -> Optional[dict[str, Any]]:
        """The layout as the extension takes it (``None`` when it has a problem)."""
        if self._problem is not None:
            return None
        return {
            "shape": list(self._shape),
            "grid_dims": list(self._grid_dims),
            "axis_grid": list(self._axis_grid),
            "lengths": [(axis, list(lengths)) for axis, lengths in self._lengths],
        }

    def _fields(self) -> tuple:
        return (self._shape, self._grid_dims, self._axis_grid, self._lengths)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        lengths = f", lengths={self.lengths!r}" if self._lengths else ""
        return f"Layout(shape={self._shape!r}, grid_dims={self._grid_dims!r}, axis_grid={self._axis_grid!r}{lengths})"

    def __reduce__(self):
        return (Layout, (self._shape, self._grid_dims, self._axis_grid, self.lengths))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Layout is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a Layout is immutable (cannot delete {name!r})")


def _grid_axes(axis_grid: Any) -> tuple[Optional[int], ...]:
    """``axis_grid`` as a tuple of grid axes (non-negative integers) and ``None``."""
    not_a_sequence = ArgumentError("DR_ERROR_INVALID_SPLIT", f"axis_grid = {axis_grid!r} is not a sequence of grid axes and None")
    if isinstance(axis_grid, (str, bytes, Mapping)):
        raise not_a_sequence
    try:
        entries = list(axis_grid)
    except TypeError:
        raise not_a_sequence from None
    axes = []
    for i, entry in enumerate(entries):
        if entry is None:
            axes.append(None)
            continue
        axis = integer(f"axis_grid[{i}]", entry, "DR_ERROR_INVALID_SPLIT")
        if axis < 0:
            raise ArgumentError("DR_ERROR_INVALID_SPLIT", f"axis_grid[{i}] = {axis} is neither a grid axis (0 or more) nor None")
        axes.append(axis)
    return tuple(axes)


def _block_lengths(lengths: Any, shape: Any) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """``lengths`` as ``((axis, lengths), ...)`` sorted by axis (so that equal
    layouts are equal however their lengths were given), axes non-negative."""
    if lengths is None:
        return ()
    if not isinstance(shape, tuple):
        raise ArgumentError("DR_ERROR_INVALID_DISTRIBUTION", "lengths cannot be read without a shape")
    ndim = len(shape)
    if isinstance(lengths, Mapping):
        given = list(lengths.items())
    elif isinstance(lengths, Sequence) and not isinstance(lengths, (str, bytes)):
        if len(lengths) != ndim:
            raise ArgumentError(
                "DR_ERROR_INVALID_DISTRIBUTION",
                f"lengths = {lengths!r} has {len(lengths)} entries but the shape {shape} has {ndim} axes "
                "(give one per axis, None for balanced, or {axis: lengths})",
            )
        given = [(axis, entry) for axis, entry in enumerate(lengths) if entry is not None]
    else:
        raise ArgumentError("DR_ERROR_INVALID_DISTRIBUTION", f"lengths = {lengths!r} is neither {{axis: lengths}} nor a sequence")
    read: dict[int, tuple[int, ...]] = {}
    for key, entry in given:
        if isinstance(entry, (int, np.integer)):
            raise ArgumentError(
                "DR_ERROR_INVALID_DISTRIBUTION", f"lengths[{key!r}] = {entry!r} is not a sequence of block lengths"
            )
        axis = _array_axis(key, ndim)
        if axis in read:
            raise ArgumentError("DR_ERROR_INVALID_DISTRIBUTION", f"lengths gives axis {axis} twice (as {key!r} and again)")
        read[axis] = tuple(integers(f"lengths[{key!r}]", entry, "DR_ERROR_INVALID_DISTRIBUTION"))
    return tuple(sorted(read.items()))


def _array_axis(key: Any, ndim: int) -> int:
    """``key`` of ``lengths`` as a non-negative array axis (negative ones count from
    the end; one past the end is left to the library, which reports it)."""
    try:
        axis = operator.index(key)
    except TypeError:
        raise ArgumentError("DR_ERROR_INVALID_DISTRIBUTION", f"lengths has the key {key!r}, which is not an axis") from None
    if axis not in range(-ndim, 1 << 63):
        raise ArgumentError("DR_ERROR_INVALID_DISTRIBUTION", f"lengths gives axis {axis}, out of range for the {ndim} axes")
    return axis + ndim if axis < 0 else axis


def _rank(rank: Any, size: int) -> int:
    """``rank`` as one of ``size`` ranks."""
    try:
        if operator.index(rank) in range(size):
            return operator.index(rank)
    except TypeError:
        pass
    raise error_of((STATUS["DR_ERROR_INVALID_DISTRIBUTION"], f"rank = {rank!r} is not one of the {size} ranks of comm"))


def _cartesian_mismatch(grid_dims: Any, comm: MPI.Comm) -> Problem:
    """On a Cartesian communicator, a grid with as many axes must have its dims (the
    library's rule for plans, applied to boxes)."""
    if isinstance(comm, MPI.Cartcomm) and len(comm.dims) == len(grid_dims) and tuple(comm.dims) != tuple(grid_dims):
        message = f"grid_dims = {list(grid_dims)} differ from the Cartesian communicator's dims {list(comm.dims)}"
        return STATUS["DR_ERROR_INVALID_DISTRIBUTION"], message
    return None
