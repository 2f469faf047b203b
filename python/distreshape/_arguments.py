"""The callers' arguments as the extension's plain values, and the problems found
turning them into those: each is handed to the extension, which agrees on it with
every rank like the library's own errors, so that a bad argument on one rank never
leaves the others waiting."""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence, Union

import numpy as np
from mpi4py import MPI

from ._errors import STATUS, Error

Shape = Union[int, Sequence[int]]

#: An error found before the library runs: (status code, message).
Problem = Optional[tuple[int, str]]

#: The values the extension's 64-bit integers hold.
_INT64 = range(-(1 << 63), 1 << 63)


class ArgumentError(Exception):
    """An argument this layer cannot turn into the library's."""

    def __init__(self, status_name: str, message: str) -> None:
        super().__init__(message)
        self.problem = (STATUS[status_name], message)


def error_of(problem: tuple[int, str]) -> Error:
    """The :class:`distreshape.Error` of a problem, raised where nothing is agreed."""
    code, message = problem
    name = next(name for name, value in STATUS.items() if value == code)
    return Error(message, code, name)


def communicator(comm: Optional[MPI.Comm]) -> MPI.Comm:
    """``comm``, or ``MPI.COMM_WORLD`` when ``None``."""
    return MPI.COMM_WORLD if comm is None else comm


def integer(name: str, value: Any, status_name: str) -> int:
    """``value`` as an integer the extension takes (64-bit)."""
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentError(status_name, f"{name} = {value!r} is not an integer") from None
    if number not in _INT64:
        raise ArgumentError(status_name, f"{name} = {number} does not fit in 64 bits")
    return number


def integers(name: str, value: Any, status_name: str = "DR_ERROR_INVALID_SHAPE") -> list[int]:
    """``value`` as a list of integers (an integer is a 1-d shape, as in NumPy)."""
    if isinstance(value, (int, np.integer)):
        return [integer(name, value, status_name)]
    not_a_sequence = ArgumentError(status_name, f"{name} = {value!r} is not a sequence of integers")
    if isinstance(value, (str, bytes)):
        raise not_a_sequence
    try:
        entries = list(value)
    except TypeError:
        raise not_a_sequence from None
    return [integer(f"{name}[{i}]", entry, status_name) for i, entry in enumerate(entries)]
