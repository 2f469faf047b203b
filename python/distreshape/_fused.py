"""Fused plans: several plans of one communicator executed together, in one round."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from mpi4py import MPI

from . import _native
from ._arguments import Problem
from ._errors import STATUS
from ._plan import Plan, _copied, _copies_apart


class Fused:
    """Several plans of one communicator executed together, in one round.

    ``Fused([velocity, velocity, velocity, scalar])`` fuses the plans, in order
    (collective over their communicator): the x -> y transposes of a velocity
    field's three components and of a scalar with other boxes, say, then cost
    one exchange's latency rather than four. Each plan keeps its own runs and
    messages; what the fused object shares is the framing of the traffic
    between two ranks (where a pair exchanges little over all the plans, one
    message carries every plan's part). The plans may differ in layouts, dtype
    and strides; the same plan may come several times (its fields then move as
    one batch, as :meth:`Plan.execute_many` moves them).

    Every rank fuses the same plans in the same order, all made on one
    communicator: plans of two communicators raise
    ``DR_ERROR_INVALID_COMMUNICATOR``, other plans or another order
    ``DR_ERROR_INCONSISTENT_ARGUMENTS``, on every rank. The fused object keeps
    its plans alive.
    """

    def __init__(self, plans: Sequence[Plan]) -> None:
        problem: Problem = None
        try:
            given = list(plans)
        except TypeError as e:
            given = []
            problem = (STATUS["DR_ERROR_INVALID_SHAPE"], f"plans is not a sequence of plans: {e}")
        natives = []
        for i, plan in enumerate(given):
            if isinstance(plan, Plan):
                natives.append(plan._native)
            else:
                message = f"plans[{i}] = {plan!r} is not a distreshape.Plan"
                problem = problem or (STATUS["DR_ERROR_INVALID_SHAPE"], message)
        self._plans = tuple(p for p in given if isinstance(p, Plan))
        self._native = _native.NativeFused(natives, problem)

    @property
    def plans(self) -> tuple[Plan, ...]:
        """The fused plans, in order: field ``i`` of an execution is plan ``i``'s."""
        return self._plans

    @property
    def comm(self) -> MPI.Comm:
        """The communicator the plans were made on (the first plan's)."""
        return self._plans[0].comm

    @property
    def framed_pairs(self) -> int:
        """How many pairs of ranks (peer and direction) this rank's traffic with
        travels framed: one message for every plan."""
        return self._native.framed_pairs

    @property
    def framed_bytes(self) -> int:
        """Bytes of the frames' buffer on this rank (the framed traffic it sends
        and receives): the memory the fused object holds beyond its plans'."""
        return self._native.framed_bytes

    def __len__(self) -> int:
        return len(self._plans)

    def __repr__(self) -> str:
        return f"<distreshape.Fused of {len(self._plans)} plans>"

    def execute(self, locals: Sequence[Any], outs: Optional[Sequence[Optional[np.ndarray]]] = None) -> list[np.ndarray]:
        """Executes the fused plans (collective): field ``i`` from ``locals[i]``
        into ``outs[i]`` with plan ``i``, every field in one round. Each array is
        checked (and an input copied) as :meth:`Plan.execute` checks its arrays,
        strided plans included; ``outs`` defaults to new arrays, and an item of
        it may be ``None`` for a new one. Returns the outputs as a list.

        ``outs[i]`` being ``locals[i]`` is field ``i`` in place, checked as
        :meth:`Plan.execute_in_place` checks its buffer (the plans then run one
        after another); its output is returned as a view of that buffer with the
        output block's shape. A count of fields that is not the plans', an
        array's error, fields sharing memory and a plan with an execution in
        flight raise the same :class:`distreshape.Error` on every rank, the
        message naming the field and the rank."""
        problem: Problem = None
        try:
            given = list(locals)
        except TypeError as e:
            given = []
            problem = (STATUS["DR_ERROR_INVALID_SHAPE"], f"locals is not a sequence of arrays: {e}")
        if outs is None:
            targets: list = [None] * len(given)
        else:
            try:
                targets = list(outs)
            except TypeError as e:
                targets = []
                problem = problem or (STATUS["DR_ERROR_INVALID_SHAPE"], f"outs is not a sequence of arrays: {e}")
        count = len(self._plans)
        if problem is None and (len(given) != count or len(targets) != count):
            message = f"{len(given)} inputs and {len(targets)} outputs for {count} fused plans: one field per plan"
            problem = (STATUS["DR_ERROR_INVALID_SHAPE"], message)
        blocks: list = []
        results: list = []
        in_place: list[bool] = []
        for plan, local, out in zip(self._plans, given, targets):
            if out is not None and out is local:
                blocks.append(local)
                results.append(local)
                in_place.append(True)
                continue
            block, found = plan._input(local)
            problem = problem or found
            blocks.append(block)
            results.append(plan._new_output() if out is None else out)
            in_place.append(False)
        if problem is None and self._plans:
            problem = _copies_apart(given, targets, self._plans[0]._comm, True, _copied(given, blocks))
        if problem is not None:
            blocks, results, in_place = [], [], []
        self._native.execute(blocks, results, in_place, problem)
        return [
            _output_view(plan, result) if placed else result
            for plan, result, placed in zip(self._plans, results, in_place)
        ]


def _output_view(plan: Plan, buf: np.ndarray) -> np.ndarray:
    """The output block at the start of the in-place buffer ``buf``."""
    count = int(np.prod(plan.local_output_shape))
    return buf.reshape(-1)[:count].reshape(plan.local_output_shape)
