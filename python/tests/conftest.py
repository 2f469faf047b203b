"""Runs the suite under mpiexec: every rank runs every test, and a test that fails on
one rank fails on every rank (rank 0 reports each failing rank's message).

Only rank 0 prints pytest's report (with its summary line). After each test the
ranks agree on whether it failed anywhere, with a deadline: a rank that does not
arrive in time is stuck in a collective its failing peers skipped, so the failing
rank prints its failure and aborts the whole run instead of letting it hang.
"""

import sys
import time

import numpy as np
import pytest
from mpi4py import MPI

WORLD = MPI.COMM_WORLD
#: Longest wait for the other ranks to finish a test.
AGREEMENT_SECONDS = 120.0


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if WORLD.rank != 0:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.unregister(reporter)


def _agree_on_failure(failed: bool, text: str) -> bool:
    """Whether the test failed on some rank (collective, with a deadline)."""
    mine = np.array([int(failed)], dtype=np.int64)
    anywhere = np.zeros(1, dtype=np.int64)
    request = WORLD.Iallreduce(mine, anywhere, op=MPI.MAX)
    deadline = time.monotonic() + AGREEMENT_SECONDS
    while not request.Test():
        if time.monotonic() > deadline:
            sys.stderr.write(f"rank {WORLD.rank}: the other ranks did not finish the test:\n{text}\n")
            sys.stderr.flush()
            WORLD.Abort(1)
        time.sleep(0.001)
    return bool(anywhere[0])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or WORLD.size == 1:
        return
    text = report.longreprtext if report.failed else ""
    if not _agree_on_failure(report.failed, text):
        return
    texts = WORLD.gather(text if report.failed else None, root=0)
    if WORLD.rank == 0:
        failures = [f"--- rank {r} ---\n{t}" for r, t in enumerate(texts) if t is not None]
        report.longrepr = "\n".join(failures)
    else:
        report.longrepr = "failed on another rank (see rank 0's report)"
    report.outcome = "failed"
