"""Reshapes of Heat arrays (``heat.DNDarray``) through DistReshape.

``distreshape.heat.reshape(x, shape, new_split)`` returns what
``heat.reshape(x, shape, new_split=new_split)`` returns (the same global shape,
split, local shapes, dtype and values; the output balanced, by Heat's formula,
which is the library's default) but moves each element once, straight to its
owner. On the CPU it works in the torch tensors' memory: a NumPy view of the
local tensor, and a new NumPy output array that becomes the output tensor
(``torch.from_numpy``), with no other copy (a local tensor that is not
contiguous is copied once). When no rank sends or receives anything, the
result is the local tensor reshaped (a view of ``x``'s memory when contiguous,
as ``heat.reshape`` gives). Arrays on a GPU, and dtypes with no C element
type (float16, bfloat16), are handed to ``heat.reshape``.

Heat is optional: this module imports it only when called.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ._plan import Plan

#: The torch dtypes the library moves (those with a NumPy and a C counterpart).
_TORCH_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8",
    "float32", "float64", "complex64", "complex128",
)


def reshape(x: Any, shape: Union[int, Sequence[int]], new_split: Optional[int] = None) -> Any:
    """Reshapes the Heat array ``x`` to global shape ``shape`` (one ``-1`` allowed)
    split along ``new_split`` (collective).

    As in ``heat.reshape``, ``new_split=None`` keeps ``x.split`` (use the library's
    :func:`distreshape.reshape` for a replicated result of a split array). Errors
    raise :class:`distreshape.Error` on every rank.
    """
    import heat as ht
    import torch

    if new_split is None:
        new_split = x.split
    local = x.larray
    supported = str(local.dtype).removeprefix("torch.") in _TORCH_DTYPES
    if local.device.type != "cpu" or not supported:
        return ht.reshape(x, shape, new_split=new_split)
    comm = x.comm.handle
    view = local.detach().resolve_conj().numpy()
    plan, block = Plan._for_block(view, x.gshape, x.split, shape, new_split, comm, None)
    # With a split input (or replicated input and output) and no rank sending or
    # receiving anything, every rank's output block holds exactly its input
    # elements, in the same order (both in global flat index order): the local
    # tensor reshaped (a view when contiguous), as in heat.reshape. The same
    # decision on every rank (the split and is_collective are global).
    if not plan.is_collective and (x.split is not None or new_split is None):
        output = local.reshape(plan.local_output_shape)
    else:
        # NumPy's allocation, wrapped by torch without a copy: NumPy asks for huge
        # pages for large arrays, so the first touch of the output (by the
        # library) costs a fraction of what torch.empty's page faults do.
        output = torch.from_numpy(plan.execute(block))
    return ht.DNDarray(
        output,
        gshape=plan.output_shape,
        dtype=x.dtype,
        split=new_split,
        device=x.device,
        comm=x.comm,
        balanced=True,
    )
