"""Heat's own tests that reach ``reshape``, collected from a checkout of Heat's
tests, and the counter that proves where their reshape calls went.

Heat's wheels ship no tests: ``DISTRESHAPE_HEAT_TESTS`` names the ``tests``
directory of Heat's repository at the installed version's tag (e.g.
``git clone --depth 1 -b v1.8.0 https://github.com/helmholtz-analytics/heat``,
then ``heat/tests``). ``DISTRESHAPE_HEAT_SUITE`` picks what runs:

- ``adapter`` (default): the listed tests with :func:`distreshape.heat.install`
  active; a test fails if it enters Heat's own reshape other than through the
  adapter's hand-over (GPU arrays, float16), and the summary gives the counts;
- ``heat``: the listed tests with Heat's own reshape (the baseline);
- ``discover``: every test of Heat's tests, with Heat's own reshape, tracing
  which reach it; rank 0 writes their ids to ``DISTRESHAPE_HEAT_DISCOVERED``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import unittest
from pathlib import Path
from typing import Any, Optional

#: The ids of the tests that reach reshape (``core/test_manipulations.py::Class::test``).
LISTED = Path(__file__).with_name("reshape_tests.txt")
TESTS_DIR = os.environ.get("DISTRESHAPE_HEAT_TESTS")
MODE = os.environ.get("DISTRESHAPE_HEAT_SUITE", "adapter")
MODES = ("adapter", "heat", "discover")
#: Listed tests that crash the interpreter with Heat's own reshape as well: id ->
#: (the smallest rank count it crashes at, why). Skipped there, not run.
CRASHING = {
    "core/test_io.py::TestIO::test_save_csv": (
        2, "Heat 1.8.0's save_csv segfaults in MPI-IO with MPICH at P >= 2, with Heat's own reshape too"
    ),
}


def listed_ids() -> set[str]:
    """The test ids of :data:`LISTED` (comments and blank lines left out)."""
    lines = LISTED.read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_files() -> list[Path]:
    """The Heat test files to load: every one when discovering, else the listed ones'."""
    root = Path(TESTS_DIR)
    if MODE == "discover":
        return sorted(root.rglob("test_*.py"))
    return sorted({root / test_id.split("::")[0] for test_id in listed_ids()})


def test_classes() -> dict[str, type]:
    """Heat's unittest classes of :func:`test_files`, each under a name unique over
    the files (``Class__core_test_manipulations``)."""
    classes = {}
    for path in test_files():
        relative = path.relative_to(TESTS_DIR).with_suffix("")
        module = _load(path, "heat_tests_" + "_".join(relative.parts))
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, unittest.TestCase) and value.__module__ == module.__name__:
                value.heat_file = path.relative_to(TESTS_DIR).as_posix()
                classes[f"{name}__{'_'.join(relative.parts)}"] = value
    return classes


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def heat_id(item: Any) -> Optional[str]:
    """The Heat test id of a collected item (None for items of other files)."""
    cls = getattr(item, "cls", None)
    file = getattr(cls, "heat_file", None)
    return None if file is None else f"{file}::{cls.__name__}::{item.name}"


class ReshapeCalls:
    """Counts, while active, the entries into the adapter, into Heat's own reshape
    and into the adapter's hand-over to it, by tracing every Python call (so a call
    reaching Heat's reshape through any binding is counted)."""

    def __init__(self) -> None:
        import distreshape.heat as adapter

        own = adapter._heat_reshape()
        self._names = {
            adapter.reshape.__code__: "adapter",
            own.__code__: "heat",
            adapter._heat_reshape.__code__: "handed_to_heat",
        }
        self.counts = dict.fromkeys(self._names.values(), 0)

    def _trace(self, frame, event, arg):
        if event == "call":
            name = self._names.get(frame.f_code)
            if name is not None:
                self.counts[name] += 1

    def __enter__(self) -> "ReshapeCalls":
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(None)

    def problems(self, mode: str) -> list[str]:
        """What contradicts ``mode``: with the adapter installed, Heat's reshape is
        entered only through the adapter's hand-over; with Heat's own, the adapter
        is never entered. (Whether a test reaches reshape at all depends on the
        rank count: some reach it only at P >= 2.)"""
        counts = self.counts
        if mode == "adapter" and counts["heat"] != counts["handed_to_heat"]:
            bypassed = counts["heat"] - counts["handed_to_heat"]
            return [f"{bypassed} calls reached Heat's reshape bypassing the adapter ({counts})"]
        if mode == "heat" and counts["adapter"]:
            return [f"the adapter was called with Heat's own reshape in place ({counts})"]
        return []
