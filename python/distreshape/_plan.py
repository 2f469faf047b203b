"""Plans and one-shot reshapes of distributed NumPy arrays over mpi4py communicators."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
from mpi4py import MPI

from . import _native
from ._arguments import ArgumentError, Problem, Shape, communicator, integer, integers
from ._errors import STATUS
from ._layout import Layout
from ._storage import allocate, element_strides, first_shared, negative, same_start


@dataclass(frozen=True)
class Stats:
    """What a plan does on this rank.

    Attributes:
        path: ``"local"`` when the split axis of a slab plan survives (only rows
            that change owner move) or ``"exchange"`` (every element moves at most
            once to each rank that needs it, straight from a rank holding it).
        bytes_sent, bytes_received: bytes this rank sends and receives.
        bytes_copied_locally: bytes it copies from its input to its output.
        peers_sent, peers_received: ranks it sends to and receives from.
    """

    path: str
    bytes_sent: int
    bytes_received: int
    bytes_copied_locally: int
    peers_sent: int
    peers_received: int


def _axis(name: str, value: Optional[int], ndim: int) -> Optional[int]:
    """``value`` as a non-negative axis of an ``ndim``-d shape, counting a negative
    one from the end (-1 is the last axis); ``None`` stays not split. An axis past
    the end is left to the library, which reports it."""
    if value is None:
        return None
    try:
        axis = operator.index(value)
    except TypeError:
        raise ArgumentError(
            "DR_ERROR_INVALID_SPLIT", f"{name} = {value!r} is neither an integer nor None"
        ) from None
    if axis not in range(-ndim, 1 << 63):
        raise ArgumentError(
            "DR_ERROR_INVALID_SPLIT", f"{name} = {axis} is out of range for {ndim} axes"
        )
    return axis + ndim if axis < 0 else axis


def _length(name: str, value: Optional[int]) -> Optional[int]:
    return None if value is None else integer(name, value, "DR_ERROR_INVALID_DISTRIBUTION")


def _as_block(local: Any, order: Optional[str] = "C") -> tuple[Optional[np.ndarray], Problem]:
    """``local`` as a C-contiguous array: itself when it is one, else a copy (made
    once, here); with ``order=None``, as an array at whatever strides it has (never
    copied when it is one). ``None`` with the problem when it cannot be made."""
    try:
        return np.asarray(local, order=order), None
    except MemoryError:
        return None, (STATUS["DR_ERROR_OUT_OF_MEMORY"], "no memory for a C-contiguous copy of the input")
    except (TypeError, ValueError) as e:
        return None, (STATUS["DR_ERROR_INVALID_SHAPE"], f"the input is not an array: {e}")


def _strides_argument(name: str, value: Any, problem: Problem) -> tuple[Optional[list[int]], Problem]:
    """``value`` (``None``, or one stride in elements per axis) as the extension's
    list, or ``None`` and the first problem (``DR_ERROR_INVALID_STRIDES``)."""
    if value is None:
        return None, problem
    try:
        return integers(name, value, "DR_ERROR_INVALID_STRIDES"), problem
    except ArgumentError as e:
        return None, problem or e.problem


#: The names of a plan's options, from the library's one option table.
OPTIONS: tuple[str, ...] = tuple(_native.option_names())

#: A plan's options by name (see :data:`OPTIONS`): an integer for a size or a
#: count, ``True``/``False`` for a switch, ``None`` for the default.
Options = Optional[Mapping[str, Union[int, bool, None]]]


def _options(options: Options, problem: Problem) -> tuple[list[tuple[str, int]], Problem]:
    """``options`` as the library's ``(name, value)`` pairs (a switch 1 or 0, the
    default -1), and the first problem: an error is agreed by the plan's creation,
    on every rank."""
    if options is None:
        return [], problem
    try:
        items = list(options.items())
    except AttributeError:
        message = f"options = {options!r} is not a mapping of option names to values"
        return [], problem or (STATUS["DR_ERROR_INVALID_OPTION"], message)
    pairs = []
    for name, value in items:
        try:
            number = -1 if value is None else operator.index(value)
        except TypeError:
            number = None
        if number is None or not -(1 << 63) <= number < (1 << 63):
            message = f"options[{name!r}] = {value!r} is not an integer, a bool or None"
            problem = problem or (STATUS["DR_ERROR_INVALID_OPTION"], message)
        else:
            pairs.append((str(name), number))
    return pairs, problem


def _allocate(shape: tuple[int, ...], dtype: np.dtype) -> tuple[Optional[np.ndarray], Problem]:
    try:
        return np.empty(shape, dtype), None
    except MemoryError:
        return None, None  # the extension reports the missing output as out of memory


class Plan:
    """A reshape planned on every rank of a communicator, to execute many times.

    ``Plan(gshape, split, new_shape, new_split, dtype, comm)`` plans the reshape of
    an array of global shape ``gshape`` (C order), split along axis ``split`` (each
    rank holds a contiguous slab of it, in rank order; ``None``: every rank holds the
    whole array), into global shape ``new_shape`` (one ``-1`` allowed, as in NumPy)
    split along ``new_split`` (``None``: every rank gets the whole result). Negative
    axes count from the end as in NumPy. ``dtype`` is anything ``numpy.dtype()``
    takes: bool, int8-int64, uint8-uint64, float32, float64, complex64, complex128.

    ``local_len`` is this rank's slab length along ``split`` (default: the balanced
    distribution, Heat's, see :func:`balanced_slab`); ``new_local_len`` its length
    along ``new_split`` (default balanced; either every rank passes one, adding up
    to the extent, or none does).

    ``options`` tunes the plan: a mapping from the names in :data:`OPTIONS` to an
    integer (sizes in bytes and counts, e.g. ``{"slot_bytes": 1 << 20}``), a bool
    (the switches, e.g. ``{"sleeping_waits": False}``) or ``None`` (the default;
    for a switch, its ``DISTRESHAPE_*`` environment variable when set to 1 or 0,
    else the choice measured for the MPI library and the node). An unknown name
    or a value out of range raises ``DR_ERROR_INVALID_OPTION`` on every rank.

    Creation and executions are collective: every rank of ``comm`` (default
    ``MPI.COMM_WORLD``) calls them in the same order, and an error raises the same
    :class:`distreshape.Error` on every rank. A plan runs one execution at a time
    (threads sharing it take turns). The plan works on its own duplicate of
    ``comm``, on which the library agrees on its checks and the package's.

    :meth:`Plan.from_layouts` plans between two process-grid layouts
    (:class:`Layout`: pencils, bricks, 2-d blocks) instead of slabs.
    """

    def __init__(
        self,
        gshape: Shape,
        split: Optional[int],
        new_shape: Shape,
        new_split: Optional[int],
        dtype: Any,
        comm: Optional[MPI.Comm] = None,
        *,
        local_len: Optional[int] = None,
        new_local_len: Optional[int] = None,
        options: Options = None,
    ) -> None:
        self._create(gshape, split, new_shape, new_split, dtype, comm, local_len, new_local_len, None, options)

    def _create(self, gshape, split, new_shape, new_split, dtype, comm, local_len, new_local_len, problem: Problem, options: Options = None) -> None:
        self._comm = communicator(comm)
        self._dtype, problem = _dtype(dtype, problem)
        arguments: tuple = ([], None, 0, [], None, None)
        try:
            arguments = self._arguments(gshape, split, new_shape, new_split, local_len, new_local_len)
        except ArgumentError as e:
            problem = problem or e.problem
        pairs, problem = _options(options, problem)
        self._native = _native.NativePlan(self._comm.py2f(), *arguments, self._dtype, problem, pairs)

    @classmethod
    def from_layouts(
        cls,
        in_layout: Layout,
        out_layout: Layout,
        dtype: Any,
        comm: Optional[MPI.Comm] = None,
        *,
        input_strides: Optional[Shape] = None,
        output_strides: Optional[Shape] = None,
        options: Options = None,
    ) -> "Plan":
        """Plans the redistribution of an array from the :class:`Layout`
        ``in_layout`` to ``out_layout`` on every rank of ``comm`` (collective;
        default ``MPI.COMM_WORLD``; on a Cartesian communicator, a grid with as
        many axes as its must have its dims).

        The two grids may differ (4 x 2 -> 8, 2 x 2 x 2 -> 4 x 2, 1-d -> 2-d), and so
        may the global shapes, by NumPy's reshape rules (``out_layout.shape`` may
        hold one ``-1``; :attr:`output_shape` is the resolved one). Each element is
        sent at most once to each rank that needs it, straight from a rank holding
        it; when no element changes rank, nothing is sent. Every rank passes equal
        layouts; a bad one (a grid whose product is not the communicator's size, a
        grid axis used twice, lengths that do not add up, ...) raises the same
        :class:`distreshape.Error` on every rank. ``dtype`` and ``options`` as for
        :class:`Plan`.
        This rank's blocks are its :attr:`input_box` and :attr:`output_box`; the
        plan executes as any other (:meth:`execute`, :meth:`execute_begin`,
        :meth:`execute_in_place`).

        ``input_strides`` and ``output_strides`` give this rank's local storage of
        each side: ``None`` (C order, as by default), or one stride per axis of
        that side's box, **in elements** (NumPy's ``a.strides`` divided by
        ``a.itemsize``): the interior of an array with halos, a transposed or
        padded one, any view with positive strides. Each rank passes its own.
        Strides that put two elements at one address, or are not positive on an
        axis longer than one, raise ``DR_ERROR_INVALID_STRIDES`` on every rank.
        The arrays of a side planned with strides must lie at exactly those
        strides (:attr:`input_strides`, :attr:`output_strides`; any stride on an
        axis of extent 1): they are never copied, only their box elements are
        read or written, and the input is never written. In place is refused on
        such a plan (``DR_ERROR_INVALID_STRIDES``).
        """
        plan = cls.__new__(cls)
        plan._create_from_layouts(in_layout, out_layout, dtype, comm, None, options, input_strides, output_strides)
        return plan

    def _create_from_layouts(self, in_layout, out_layout, dtype, comm, problem: Problem, options: Options = None,
                             input_strides: Any = None, output_strides: Any = None) -> None:
        self._comm = communicator(comm)
        self._dtype, problem = _dtype(dtype, problem)
        input_strides, problem = _strides_argument("input_strides", input_strides, problem)
        output_strides, problem = _strides_argument("output_strides", output_strides, problem)
        specs = []
        for name, which, layout in (("in_layout", "input layout", in_layout), ("out_layout", "output layout", out_layout)):
            if not isinstance(layout, Layout):
                message = f"{name} = {layout!r} is not a distreshape.Layout"
                problem = problem or (STATUS["DR_ERROR_INVALID_DISTRIBUTION"], message)
                specs.append(None)
            else:
                problem = problem or layout._problem_in(which)
                specs.append(layout._spec())
        pairs, problem = _options(options, problem)
        self._native = _native.NativePlan.from_layouts(
            self._comm.py2f(), *specs, self._dtype, input_strides, output_strides, problem, pairs
        )

    def _arguments(self, gshape, split, new_shape, new_split, local_len, new_local_len) -> tuple:
        """The library's arguments: shapes as lists, axes non-negative, lengths."""
        gshape = integers("gshape", gshape)
        new_shape = integers("new_shape", new_shape)
        split = _axis("split", split, len(gshape))
        new_split = _axis("new_split", new_split, len(new_shape))
        local_len = _length("local_len", local_len)
        if local_len is None:
            local_len = 0
            if split is not None and split < len(gshape) and gshape[split] >= 0:
                size, rank = self._comm.Get_size(), self._comm.Get_rank()
                local_len = _native.balanced_slab(gshape[split], size, rank)[1]
        return gshape, split, local_len, new_shape, new_split, _length("new_local_len", new_local_len)

    @classmethod
    def _for_block(cls, local, gshape, split, new_shape, new_split, comm, new_local_len, options: Options = None) -> tuple["Plan", Any]:
        """The plan for reshaping the block ``local`` (its slab length taken from it),
        and ``local`` as an array, not copied (itself when it cannot be made one:
        the plan's execution then reports why)."""
        block, problem = _as_block(local, None)
        local_len = 0
        try:
            ndim = len(integers("gshape", gshape))
            axis = _axis("split", split, ndim)
            if block is not None and problem is None:
                if block.ndim != ndim:
                    raise ArgumentError(
                        "DR_ERROR_INVALID_SHAPE",
                        f"the input array has {block.ndim} axes but gshape has {ndim}",
                    )
                local_len = block.shape[axis] if axis is not None and axis < ndim else 0
        except ArgumentError as e:
            problem = problem or e.problem
        plan = cls.__new__(cls)
        dtype = block.dtype if block is not None else np.uint8
        plan._create(gshape, split, new_shape, new_split, dtype, comm, local_len, new_local_len, problem, options)
        return plan, (local if block is None else block)

    @property
    def comm(self) -> MPI.Comm:
        """The communicator the plan was made on."""
        return self._comm

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self._dtype

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The resolved global output shape (``-1`` inferred)."""
        return tuple(self._native.output_shape)

    @property
    def local_input_shape(self) -> tuple[int, ...]:
        """The shape of this rank's input block."""
        return tuple(self._native.local_input_shape)

    @property
    def local_output_shape(self) -> tuple[int, ...]:
        """The shape of this rank's output block."""
        return tuple(self._native.local_output_shape)

    @property
    def input_slab(self) -> Optional[slice]:
        """This rank's rows of the split axis, ``slice(offset, offset + length)``
        (``None`` when the input is not split)."""
        return _slice(self._native.input_slab)

    @property
    def output_slab(self) -> Optional[slice]:
        """This rank's rows of the new split axis (``None`` when not split)."""
        return _slice(self._native.output_slab)

    @property
    def input_box(self) -> tuple[slice, ...]:
        """This rank's input block as a tuple of slices into the global input array
        (``global_input[plan.input_box]`` is the block; a slab plan's is whole along
        every axis but the split one)."""
        return _slices(self._native.input_box)

    @property
    def output_box(self) -> tuple[slice, ...]:
        """This rank's output block as a tuple of slices into the global output
        array (of shape :attr:`output_shape`)."""
        return _slices(self._native.output_box)

    @property
    def input_strides(self) -> tuple[int, ...]:
        """This rank's input strides in elements: those the plan was made with, else
        C order's."""
        return tuple(self._native.input_strides)

    @property
    def output_strides(self) -> tuple[int, ...]:
        """This rank's output strides in elements (as :attr:`input_strides`)."""
        return tuple(self._native.output_strides)

    @property
    def stats(self) -> Stats:
        """What this rank sends, receives and copies."""
        return Stats(*self._native.stats)

    def __str__(self) -> str:
        """The library's description of the plan (path, volumes, peers)."""
        return self._native.describe()

    def __repr__(self) -> str:
        return f"<distreshape.Plan {self.local_input_shape} -> {self.local_output_shape} {self.dtype}: {self}>"

    def execute(self, local: Any, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Reshapes this rank's block ``local`` into ``out`` (collective) and returns it.

        ``local`` has this rank's input block shape and the plan's dtype; one that is
        not C-contiguous is copied once into one that is. ``out`` (default: a new
        array) must be a writable C-contiguous array of this rank's output block
        shape and the plan's dtype; it is written in place, with no other copy.

        On a side planned with strides (:meth:`from_layouts`), the array must lie
        at the plan's strides instead, and is never copied: other strides raise
        ``DR_ERROR_INVALID_STRIDES`` on every rank. The default ``out`` is then a
        new array at the plan's output strides.
        """
        block, problem = self._input(local)
        problem = problem or _apart([local], [block], [out], self._comm)
        if out is None:
            out = self._new_output()
        self._native.execute(block, out, problem)
        return out

    def _input(self, local: Any) -> tuple[Optional[np.ndarray], Problem]:
        """``local`` as the extension takes it: as it lies on a side planned with
        strides (checked there, never copied), else C-contiguous (copied once when
        it is not; see :func:`_apart`)."""
        input_strided, _ = self._native.strided
        return _as_block(local, None if input_strided else "C")

    def _new_output(self) -> Optional[np.ndarray]:
        """A new output block, at the plan's output strides when planned with them;
        ``None`` without memory (the extension reports it on every rank)."""
        _, output_strided = self._native.strided
        if not output_strided:
            return _allocate(self.local_output_shape, self._dtype)[0]
        try:
            return allocate(self.local_output_shape, self.output_strides, self._dtype)
        except MemoryError:
            return None

    def execute_begin(self, local: Any, out: Optional[np.ndarray] = None) -> "Request":
        """Starts :meth:`execute` without waiting (collective); the arrays must not
        be touched until the returned request completes (:meth:`Request.wait`). The
        request keeps the plan and both arrays alive until then. Starting another
        execution of this plan before raises ``DR_ERROR_EXECUTION_IN_PROGRESS``."""
        block, problem = self._input(local)
        problem = problem or _apart([local], [block], [out], self._comm)
        if out is None:
            out = self._new_output()
        return Request(self, self._native.begin(block, out, problem))

    def execute_many(self, locals: Sequence[Any], outs: Optional[Sequence[np.ndarray]] = None) -> list[np.ndarray]:
        """Reshapes a batch of fields (collective, every rank with as many): field
        ``i`` from ``locals[i]`` into ``outs[i]``, each array checked (and an input
        copied) as :meth:`execute` checks its arrays, strided plans included, in one
        exchange whose messages carry every field's part. Returns the outputs as a
        list (default: new arrays). ``locals`` may be one array whose first axis
        indexes the fields. A count that differs between ranks, ``locals`` and
        ``outs`` of different lengths, no fields, arrays sharing memory, and any
        array's error raise the same :class:`distreshape.Error` on every rank, the
        message naming the field and the rank."""
        blocks, outs, problem = self._fields(locals, outs)
        self._native.execute_many(blocks, outs, problem)
        return outs

    def execute_many_begin(self, locals: Sequence[Any], outs: Optional[Sequence[np.ndarray]] = None) -> "Request":
        """Starts :meth:`execute_many` without waiting (collective); the arrays must
        not be touched until the returned request completes. Its :meth:`Request.wait`
        returns the list of outputs; it keeps the plan and every array alive until
        then."""
        blocks, outs, problem = self._fields(locals, outs)
        return Request(self, self._native.begin_many(blocks, outs, problem))

    def _fields(self, locals: Any, outs: Optional[Sequence[np.ndarray]]) -> tuple[list, list, Problem]:
        """A batch's inputs as the extension takes them (see :meth:`_input`), its
        outputs (new ones by default) and the first problem found."""
        try:
            given = list(locals)
        except TypeError as e:
            return [], [], (STATUS["DR_ERROR_INVALID_SHAPE"], f"locals is not a sequence of arrays: {e}")
        problem: Problem = None
        try:
            targets = [] if outs is None else list(outs)
        except TypeError as e:
            targets, problem = [], (STATUS["DR_ERROR_INVALID_SHAPE"], f"outs is not a sequence of arrays: {e}")
        blocks = []
        for local in given:
            block, found = self._input(local)
            blocks.append(block)
            problem = problem or found
        problem = problem or _apart(given, blocks, targets, self._comm, fields=True)
        if outs is None:
            return blocks, [self._new_output() for _ in blocks], problem
        return blocks, targets, problem

    def execute_in_place(self, buf: np.ndarray) -> np.ndarray:
        """Reshapes in place (collective): ``buf``, a writable C-contiguous array of
        the plan's dtype (any shape, e.g. 1-d) holding at least as many elements as
        the larger of this rank's input and output blocks, has the input block in C
        order at its start on entry; returns a view of ``buf`` with the output
        block. Refused (``DR_ERROR_INVALID_STRIDES``) on a plan made with strides
        on some rank."""
        self._native.execute_in_place(buf)
        count = self._native.output_elems
        return buf.reshape(-1)[:count].reshape(self.local_output_shape)

    @property
    def is_collective(self) -> bool:
        """Whether the library's executions involve other ranks (some rank sends or
        receives). Executions from Python are collective either way: they agree on
        the checks of the arrays."""
        return self._native.is_collective


class Request:
    """One execution started by :meth:`Plan.execute_begin` (or a batch, by
    :meth:`Plan.execute_many_begin`)."""

    def __init__(self, plan: Plan, native: Any) -> None:
        self._plan = plan
        self._native = native

    @property
    def plan(self) -> Plan:
        """The plan executing."""
        return self._plan

    @property
    def completed(self) -> bool:
        """Whether the execution has completed on this rank, as far as the last
        call (``execute_begin``, ``test``, ``wait``) found; does not move it on."""
        return self._native.completed

    def test(self) -> bool:
        """Moves the execution on without waiting; returns whether it has completed
        on this rank. Call it between pieces of computation: MPI moves messages
        mostly inside MPI calls."""
        return self._native.test()

    def wait(self) -> np.ndarray:
        """Waits until the execution has completed on this rank; returns the output
        array (a batch's: the list of outputs). A failure (this rank's) raises
        :class:`distreshape.Error`, here and at every later call."""
        return self._native.wait()


def _dtype(dtype: Any, problem: Problem) -> tuple[np.dtype, Problem]:
    """``dtype`` as NumPy's, or a placeholder and the problem (the first one found)."""
    try:
        return np.dtype(dtype), problem
    except (TypeError, ValueError) as e:
        return np.dtype(np.uint8), problem or (STATUS["DR_ERROR_INVALID_DTYPE"], f"dtype = {dtype!r}: {e}")


def _slice(slab: Optional[tuple[int, int]]) -> Optional[slice]:
    return None if slab is None else slice(slab[0], slab[0] + slab[1])


def _slices(spans: list[tuple[int, int]]) -> tuple[slice, ...]:
    """``(offset, length)`` per axis as a tuple of slices."""
    return tuple(slice(offset, offset + length) for offset, length in spans)


def reshape(
    local: Any,
    gshape: Shape,
    split: Optional[int],
    new_shape: Shape,
    new_split: Optional[int],
    comm: Optional[MPI.Comm] = None,
    *,
    new_local_len: Optional[int] = None,
    out: Optional[np.ndarray] = None,
    options: Options = None,
) -> np.ndarray:
    """Reshapes a distributed array in one call (collective): returns this rank's
    block of the array of global shape ``new_shape`` split along ``new_split``.

    ``local`` is this rank's block of the array of global shape ``gshape`` split
    along ``split`` (its slab length is ``local.shape[split]``; with ``split=None``
    every rank holds the whole array); its dtype is the element type. The other
    arguments are those of :class:`Plan` (``options`` too); ``out`` as in
    :meth:`Plan.execute`.
    """
    plan, block = Plan._for_block(local, gshape, split, new_shape, new_split, comm, new_local_len, options)
    return plan.execute(block, out)


def redistribute(
    local: Any,
    in_layout: Layout,
    out_layout: Layout,
    comm: Optional[MPI.Comm] = None,
    *,
    out: Optional[np.ndarray] = None,
    options: Options = None,
) -> np.ndarray:
    """Redistributes (and reshapes) an array between two layouts in one call
    (collective): returns this rank's block of the array laid out as
    ``out_layout``.

    ``local`` is this rank's block of the array laid out as ``in_layout`` (its
    box, ``in_layout.box(comm)``; its dtype is the element type). The other
    arguments are those of :meth:`Plan.from_layouts` (``options`` too).

    ``local`` and ``out`` may be any NumPy views with positive strides (the
    interior of an array with halos, a transpose, a padded array): the plan is
    made with their strides and they are read and written where they lie, with
    no copy; memory around their elements is never written nor used (a direct
    read between ranks of a node may copy a short gap along with the rows
    around it and drop it: see the guide's storage page). ``out`` defaults to
    a new C-order array. An array with negative strides (``a[::-1]``) or
    overlapping elements (a broadcast) as ``local`` is copied once into C order;
    an ``out`` with negative strides is filled through one C-order array, then
    copied into (a read-only one raises ``DR_ERROR_INVALID_SHAPE`` on every rank,
    before anything moves). An ``out`` with overlapping elements raises
    ``DR_ERROR_INVALID_STRIDES`` on every rank.
    """
    block, problem = _as_block(local, None)
    input_strides = None
    if block is not None and not block.flags.c_contiguous:
        input_strides = _view_strides(block, in_layout, comm)
        if input_strides is None:
            block, problem = _as_block(block)
    output, output_strides = out, None
    if isinstance(out, np.ndarray) and not out.flags.c_contiguous:
        if negative(out):
            output, _ = _allocate(out.shape, out.dtype)
            if not out.flags.writeable:  # copied into after the collective: refused before it
                problem = problem or (STATUS["DR_ERROR_INVALID_SHAPE"], f"the output array is read-only (rank {_rank(comm)})")
        else:
            output_strides = _view_strides(out, out_layout, comm, strict=False)
            problem = problem or _whole_elements(out, comm)
    if output is not out and problem is None:
        problem = _copies_apart([local], [out], comm)
    problem = problem or _apart([local], [block], [out], comm)
    dtype = block.dtype if block is not None else np.uint8
    plan = Plan.__new__(Plan)
    plan._create_from_layouts(in_layout, out_layout, dtype, comm, problem, options, input_strides, output_strides)
    result = plan.execute(block, output)
    if out is not None and result is not out:
        np.copyto(out, result)
        return out
    return result


def _rank(comm: Any) -> int:
    """This process's rank in ``comm`` (``MPI.COMM_WORLD`` when it is not a
    communicator: the plan reports that)."""
    return (comm if isinstance(comm, MPI.Comm) else MPI.COMM_WORLD).Get_rank()


def _whole_elements(out: np.ndarray, comm: Any) -> Problem:
    """``DR_ERROR_INVALID_STRIDES`` when a stride of ``out`` (along an axis longer
    than one) is not a whole number of elements: an output is written where it
    lies, never through a copy."""
    size = out.dtype.itemsize
    if all(s % size == 0 for s, n in zip(out.strides, out.shape) if n > 1):
        return None
    return (
        STATUS["DR_ERROR_INVALID_STRIDES"],
        f"out has strides {out.strides} in bytes, not whole elements of {size} bytes (rank {_rank(comm)})",
    )


def _apart(inputs: Sequence[Any], blocks: Sequence[Any], outputs: Sequence[Any], comm: Any, fields: bool = False) -> Problem:
    """``DR_ERROR_ALIASING`` where the library cannot tell that writing an output
    writes an input: an input the package copied (``blocks[i]``, all the library
    sees) sharing memory with any output, or an output starting where its own
    field's input starts, which the library would take for one buffer, in place
    (``execute`` never runs in place: ``execute_in_place`` does). ``fields``:
    the arrays are a batch's, named by field."""
    problem = _copies_apart(inputs, outputs, comm, fields, _copied(inputs, blocks))
    if problem is not None:
        return problem
    for i, (local, out) in enumerate(zip(inputs, outputs)):
        if same_start(local, out):
            what = f"field {i}'s input and output" if fields else "local and out"
            message = f"{what} start at one address on rank {_rank(comm)}: execute reads the input and writes the output, never in place (execute_in_place reshapes in place)"
            return STATUS["DR_ERROR_ALIASING"], message
    return None


def _copies_apart(
    inputs: Sequence[Any], outputs: Sequence[Any], comm: Any, fields: bool = False, copied: Optional[Sequence[int]] = None
) -> Problem:
    """``DR_ERROR_ALIASING`` when one of ``inputs`` (those at the indices
    ``copied``, default all) shares memory with one of ``outputs``: checked where
    the package copies an input or fills an output through a new array, so that
    the library, which sees the copy, cannot tell that writing the output writes
    the input. ``fields``: the arrays are a batch's, named by field."""
    copied = range(len(inputs)) if copied is None else copied
    shared = first_shared([inputs[i] for i in copied], outputs)
    if shared is None:
        return None
    i, j = copied[shared[0]], shared[1]
    what = f"field {i}'s input (copied by the package) and field {j}'s output" if fields else "the input and the output arrays"
    return STATUS["DR_ERROR_ALIASING"], f"{what} share memory on rank {_rank(comm)}: writing the output would write the input"


def _copied(inputs: Sequence[Any], blocks: Sequence[Any]) -> list[int]:
    """The indices of the inputs the package copied (``blocks[i]``, what the
    library sees, is not ``inputs[i]``)."""
    return [i for i, (local, block) in enumerate(zip(inputs, blocks)) if block is not local]


def _view_strides(array: np.ndarray, layout: Layout, comm: Optional[MPI.Comm], strict: bool = True) -> Optional[tuple[int, ...]]:
    """The strides in elements to plan ``array``'s side of ``layout`` with, when
    it is this rank's block there (its shape is the box's: a wrong one is left to
    the execution, which names it); ``None`` otherwise, and, when ``strict``, for
    strides the library cannot use (the caller copies the array then). With
    ``strict=False`` unusable strides are passed on as they are, for the plan to
    refuse on every rank (an output is written, so it is never copied)."""
    if not isinstance(layout, Layout) or layout._problem is not None:
        return None  # the plan reports the layout
    try:
        box: Optional[tuple[int, ...]] = layout.local_shape(comm)
    except Exception:  # noqa: BLE001 - a -1 in the shape, or a layout not of comm (the plan reports it)
        box = None
    if len(array.shape) != len(layout.shape) or (box is not None and tuple(array.shape) != box):
        return None
    strides = element_strides(array)
    if strides is None and not strict:
        size = array.dtype.itemsize
        return tuple(s // size if s % size == 0 else 0 for s in array.strides)
    return strides


def balanced_slab(extent: int, nranks: int, rank: int) -> slice:
    """Rank ``rank``'s rows when ``extent`` rows are balanced over ``nranks`` ranks
    (Heat's distribution, the default of new splits): the first ``extent % nranks``
    ranks get one row more."""
    return _slice(_native.balanced_slab(extent, nranks, rank))
