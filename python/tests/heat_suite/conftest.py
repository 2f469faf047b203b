"""Runs Heat's reshape-reaching tests (reshape_suite.py) with the adapter installed
around each test's call, and fails a test whose reshape calls did not go where
the mode says (a failure of the call phase, so the ranks agree on it)."""

from __future__ import annotations

import os

import pytest
from mpi4py import MPI

import reshape_suite

#: This rank's reshape calls over the session, by where they went, and the tests
#: that made any.
_totals = {"adapter": 0, "heat": 0, "handed_to_heat": 0, "tests_reaching": 0, "tests": 0}

def pytest_collection_modifyitems(config, items):
    """Deselects Heat's tests that are not listed (none when discovering) and skips
    those that crash at this rank count."""
    ids = [reshape_suite.heat_id(item) for item in items]
    if reshape_suite.MODE == "discover" or all(test_id is None for test_id in ids):
        return
    listed = reshape_suite.listed_ids()
    kept = [item for item, test_id in zip(items, ids) if test_id is None or test_id in listed]
    for item, test_id in zip(items, ids):
        ranks, why = reshape_suite.CRASHING.get(test_id, (None, ""))
        if ranks is not None and MPI.COMM_WORLD.size >= ranks:
            item.add_marker(pytest.mark.skip(reason=why))
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    test_id = reshape_suite.heat_id(item)
    if test_id is None:
        return (yield)
    import distreshape.heat as adapter

    mode = reshape_suite.MODE
    if mode == "adapter":
        adapter.install()
    calls = reshape_suite.ReshapeCalls()
    try:
        with calls:
            result = yield
    finally:
        adapter.uninstall()
        if mode == "discover" and calls.counts["heat"]:
            _record(test_id)
    if mode == "discover":
        return result
    _add(calls.counts)
    problems = calls.problems(mode)
    assert not problems, "; ".join(problems)
    return result


def _record(test_id: str) -> None:
    """Discover mode: rank 0 appends the id of a test that reached Heat's reshape to
    DISTRESHAPE_HEAT_DISCOVERED at once (a later test crashing the run loses nothing)."""
    if MPI.COMM_WORLD.rank == 0:
        with open(os.environ["DISTRESHAPE_HEAT_DISCOVERED"], "a") as f:
            f.write(test_id + "\n")


def _add(counts: dict) -> None:
    for name, count in counts.items():
        _totals[name] += count
    _totals["tests_reaching"] += counts["adapter"] + counts["heat"] > 0
    _totals["tests"] += 1


def pytest_terminal_summary(terminalreporter):
    """Rank 0's counts: every reshape call of the run, and where it went."""
    if reshape_suite.MODE == "discover" or not _totals["tests"]:
        return
    terminalreporter.write_line(
        f"reshape calls (rank 0, {reshape_suite.MODE}): adapter {_totals['adapter']} "
        f"(handed to Heat's {_totals['handed_to_heat']}), Heat's own reshape entered {_totals['heat']} "
        f"times; {_totals['tests_reaching']} of {_totals['tests']} tests called reshape"
    )
