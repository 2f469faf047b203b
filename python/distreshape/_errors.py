"""The exception of DistReshape and its status codes (the C ABI's ``dr_status``)."""

from __future__ import annotations

from . import _native

#: Every error status of the library by its C enumerator name
#: (``STATUS["DR_ERROR_INVALID_SHAPE"] == 3``), from the extension's one table.
STATUS: dict[str, int] = {name: code for code, name in _native.status_names().items()}


class Error(RuntimeError):
    """An error of DistReshape.

    A collective call raises it on every rank alike: the error the lowest failing
    rank found, with that rank's message (which names the rank), so that no rank is
    left waiting for the others.

    Attributes:
        status: the C ABI's status code (``dr_status``), e.g. 3.
        status_name: its C enumerator name, e.g. ``"DR_ERROR_INVALID_SHAPE"``.
    """

    status: int
    status_name: str

    def __init__(self, message: str, status: int, status_name: str) -> None:
        super().__init__(message)
        self.status = status
        self.status_name = status_name

    def __reduce__(self):  # keeps the attributes when pickled (mpi4py, multiprocessing)
        return (type(self), (str(self), self.status, self.status_name))
