"""Heat's ``reshape`` through DistReshape, and a switch that makes Heat use it.

``distreshape.heat.reshape(a, *shape, **kwargs)`` takes what the installed Heat's
``heat.reshape`` takes and returns what it returns: the same global shape,
split, local shapes (``lshape_map``), dtype, device and values, and the same
``ValueError`` or ``TypeError`` for a bad shape or ``new_split``. It moves each
element once, straight to its owner, in the torch tensors' memory on the CPU:
a non-contiguous local tensor (a transpose, a slice) is read where it lies, at
its strides, not copied.

:func:`install` makes ``heat.reshape``, ``heat.core.manipulations.reshape`` and
``DNDarray.reshape`` this function for the process; :func:`uninstall` restores
Heat's. Supported: Heat 1.3 to 1.8 (the rule for ``new_split=None`` changed in
1.5, and the installed version's rule is followed); tested with Heat 1.8.0.

Heat is optional: this module imports it only when called.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional

import numpy as np
from mpi4py import MPI

from ._layout import Layout
from ._plan import Plan
from ._storage import element_strides

#: The torch dtypes the library moves (those with a NumPy and a C counterpart).
_TORCH_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8",
    "float32", "float64", "complex64", "complex128",
)

#: The first Heat version whose ``new_split=None`` gives split 0 when the number of
#: axes changes (earlier ones keep the input's split).
_SPLIT_ZERO_SINCE = (1, 5)

#: Heat's bindings that :func:`install` replaced: (owner, attribute) -> Heat's own.
_replaced: dict[tuple[Any, str], Any] = {}


def reshape(a: Any, *shape: Any, **kwargs: Any) -> Any:
    """Returns the Heat array ``a`` reshaped to ``shape``, as ``heat.reshape`` does
    (collective).

    ``shape``: separate integers, or one tuple, list, ``torch.Size`` or DNDarray
    (one ``-1`` allowed). ``new_split``: the output's split axis (negative counts
    from the end); ``None`` keeps ``a.split``, except that Heat 1.5 and later give
    split 0 when the number of axes changes (an unsplit ``a`` stays unsplit). Other
    keywords are ignored, as Heat ignores them.

    The output is balanced by Heat's formula (``balanced`` is ``True``). Unlike
    Heat 1.8's, ``a`` keeps its split (Heat resplits it to 0 in place). When no
    rank sends or receives anything the output's local tensor is ``a.larray``
    reshaped (a view when contiguous), as in Heat. A non-contiguous local tensor
    is read at its strides, with no copy. GPU arrays and dtypes with no C
    element type (float16, bfloat16) are handed to Heat's own reshape.

    Raises:
        TypeError: ``a`` is not a DNDarray, or a shape or ``new_split`` of the
            wrong type (Heat's messages).
        ValueError: a shape that does not fit ``a``'s size, or ``new_split`` out
            of range (Heat's messages).
        distreshape.Error: ranks passing different shapes or splits, or out of
            memory.

        Every rank raises: the error of the lowest rank that found one.
    """
    import heat as ht

    if not isinstance(a, ht.DNDarray):
        raise TypeError(f"'a' must be a DNDarray, currently {type(a)}")
    if not _movable(a):
        return _heat_reshape()(a, *shape, **kwargs)
    view = a.larray.detach().resolve_conj().numpy()
    storage = _Storage.of(view, a.split)
    compute = lambda: _arguments(a, shape, kwargs.get("new_split"))  # noqa: E731
    (new_shape, new_split), storages = _agreed(a.comm.handle, compute, storage)
    return _reshaped(a, view, new_shape, new_split, storage, storages)


def install() -> None:
    """Routes Heat's reshape (``heat.reshape``, ``heat.core.manipulations.reshape``,
    every other binding of that function in Heat's modules, and
    ``DNDarray.reshape``) through :func:`reshape` for the process. Calling it
    again does nothing; :func:`uninstall` restores Heat's."""
    if _replaced:
        return
    from heat.core import manipulations
    from heat.core.dndarray import DNDarray

    own = manipulations.reshape
    for owner in _heat_modules():
        if getattr(owner, "reshape", None) is own:
            _replace(owner, "reshape", reshape)
    _replace(DNDarray, "reshape", _method)


def uninstall() -> None:
    """Restores Heat's own reshape where :func:`install` replaced it (nothing when
    not installed)."""
    while _replaced:
        (owner, name), original = _replaced.popitem()
        setattr(owner, name, original)


def _method(self: Any, *shape: Any, **kwargs: Any) -> Any:
    """``DNDarray.reshape`` while installed: :func:`reshape` of ``self``."""
    return reshape(self, *shape, **kwargs)


def _replace(owner: Any, name: str, value: Any) -> None:
    _replaced[(owner, name)] = owner.__dict__[name]
    setattr(owner, name, value)


def _heat_modules() -> list[Any]:
    """Heat's imported modules."""
    return [
        module for name, module in list(sys.modules.items())
        if module is not None and (name == "heat" or name.startswith("heat."))
    ]


def _heat_reshape() -> Callable[..., Any]:
    """Heat's own reshape, also while :func:`install` has replaced it."""
    from heat.core import manipulations

    return _replaced.get((manipulations, "reshape"), manipulations.reshape)


def _movable(a: Any) -> bool:
    """Whether the library moves ``a``'s elements (on the CPU, with a C element type)."""
    local = a.larray
    return local.device.type == "cpu" and str(local.dtype).removeprefix("torch.") in _TORCH_DTYPES


class _Storage:
    """How this rank's local tensor lies, gathered from every rank by
    :func:`_agreed`: its length along the split axis (0 when not split), and its
    strides in elements when it is not C-contiguous but the library can read it
    where it lies (``None`` otherwise: C order, or copied once)."""

    def __init__(self, length: int, strides: Optional[tuple[int, ...]]) -> None:
        self.length = length
        self.strides = strides

    @classmethod
    def of(cls, view: np.ndarray, split: Optional[int]) -> "_Storage":
        """The storage of ``view``, a NumPy view of the local tensor split along ``split``."""
        length = view.shape[split] if split is not None else 0
        strides = None if view.flags.c_contiguous else element_strides(view)
        return cls(length, strides)


def _agreed(comm: MPI.Comm, compute: Callable[[], Any], mine: Any) -> tuple[Any, list[Any]]:
    """``compute()`` and every rank's ``mine`` (collective: one allgather), or on
    every rank the exception the lowest failing rank raised, so that a rank's bad
    argument leaves no rank waiting."""
    try:
        result, error = compute(), None
    except Exception as e:  # noqa: BLE001 - raised on every rank below
        result, error = None, e
    gathered = comm.allgather((error is not None, mine))
    failing = [rank for rank, (failed, _) in enumerate(gathered) if failed]
    if not failing:
        return result, [theirs for _, theirs in gathered]
    first = failing[0]
    agreed = comm.bcast(error, root=first)
    raise error if comm.rank == first else agreed


def _arguments(a: Any, shape: tuple, new_split: Any) -> tuple[tuple[int, ...], Optional[int]]:
    """The output's shape and split axis by Heat's rules, with Heat's exceptions."""
    from heat.core.stride_tricks import sanitize_axis

    new_shape = _new_shape(a.gshape, shape)
    if new_split is None:
        new_split = _default_split(a.split, a.ndim, len(new_shape), _heat_version())
    new_split = sanitize_axis(new_shape, new_split)
    if isinstance(new_split, tuple):
        raise TypeError(f"new_split must be None or an int, but was {new_split!r}")
    return new_shape, new_split


def _new_shape(gshape: tuple[int, ...], shape: tuple) -> tuple[int, ...]:
    """The shape Heat's reshape makes of its ``*shape`` arguments: a NumPy proxy of
    ``gshape`` reshaped (NumPy's rules and errors), a single tensor, DNDarray or
    other sequence coerced to a NumPy array first (as Heat does)."""
    proxy = np.lib.stride_tricks.as_strided(np.ones(1), gshape, [0] * len(gshape), writeable=False)
    try:
        return proxy.reshape(shape).shape
    except TypeError as e:
        try:
            shape = _as_numpy(shape)
        except Exception:
            raise TypeError(e) from None
    return proxy.reshape(shape).shape


def _as_numpy(shape: tuple) -> np.ndarray:
    """Heat's coercion of a shape NumPy does not take (a tensor, a DNDarray)."""
    if len(shape) == 1:
        shape = shape[0]
    if hasattr(shape, "cpu"):
        shape = shape.cpu()
    if hasattr(shape, "detach"):
        shape = shape.detach()
    return shape.numpy() if hasattr(shape, "numpy") else np.asarray(shape)


def _default_split(split: Optional[int], ndim: int, new_ndim: int, version: tuple[int, int]) -> Optional[int]:
    """The output's split for ``new_split=None`` in Heat ``version``: the input's,
    or 0 when the number of axes changes from Heat 1.5 on."""
    if split is not None and new_ndim != ndim and version >= _SPLIT_ZERO_SINCE:
        return 0
    return split


def _heat_version() -> tuple[int, int]:
    """The installed Heat's (major, minor)."""
    import heat as ht

    major, minor = ht.__version__.split(".")[:2]
    return int(major), int(minor)


def _plan(view: np.ndarray, gshape: tuple[int, ...], split: Optional[int], new_shape: tuple[int, ...],
          new_split: Optional[int], comm: MPI.Comm, storage: _Storage, storages: list[_Storage]) -> tuple[Plan, Any]:
    """The plan reshaping this rank's block ``view`` (collective), and the block
    to execute it on. When every rank's block is C-contiguous, a slab plan (as
    ``dr.reshape``); otherwise the same reshape between two layouts on a 1-d grid
    (the input in every rank's slab lengths, the output balanced), planned with
    the strides of the ranks whose blocks are not, which are read where they lie."""
    if all(theirs.strides is None for theirs in storages):
        return Plan._for_block(view, gshape, split, new_shape, new_split, comm, None)
    size = comm.Get_size()
    lengths = {split: [theirs.length for theirs in storages]} if split is not None else None
    source = Layout(gshape, (size,), _grid_axes(len(gshape), split), lengths)
    target = Layout(new_shape, (size,), _grid_axes(len(new_shape), new_split))
    plan = Plan.from_layouts(source, target, view.dtype, comm, input_strides=storage.strides)
    return plan, view


def _grid_axes(ndim: int, split: Optional[int]) -> list[Optional[int]]:
    """The axes of a slab layout: ``split`` on the 1-d grid's axis, the others
    whole (every axis whole, replicated, when ``split`` is ``None``)."""
    return [0 if axis == split else None for axis in range(ndim)]


def _reshaped(a: Any, view: np.ndarray, new_shape: tuple[int, ...], new_split: Optional[int],
              storage: _Storage, storages: list[_Storage]) -> Any:
    """``a`` (whose local tensor's NumPy view is ``view``) reshaped to
    ``new_shape`` split along ``new_split`` (collective)."""
    import heat as ht
    import torch

    local = a.larray
    plan, block = _plan(view, a.gshape, a.split, new_shape, new_split, a.comm.handle, storage, storages)
    # With a split input (or replicated input and output) and no rank sending or
    # receiving anything, every rank's output block holds exactly its input
    # elements, in the same order (both in global flat index order): the local
    # tensor reshaped (a view when contiguous), as in heat.reshape. The same
    # decision on every rank (the split and is_collective are global).
    if not plan.is_collective and (a.split is not None or new_split is None):
        output = local.reshape(plan.local_output_shape)
    else:
        # NumPy's allocation, wrapped by torch without a copy. Whether it or
        # torch.empty faults in faster at the first call is still open
        # (docs/src/performance/python.md, "On a quiet machine, P = 2").
        output = torch.from_numpy(plan.execute(block))
    return ht.DNDarray(
        output,
        gshape=plan.output_shape,
        dtype=a.dtype,
        split=new_split,
        device=a.device,
        comm=a.comm,
        balanced=True,
    )
