"""Heat's own tests that reach reshape (reshape_tests.txt), run with
distreshape.heat.install() (see reshape_suite.py). Skipped without Heat or
without a checkout of Heat's tests (DISTRESHAPE_HEAT_TESTS)."""

import pytest

pytest.importorskip("heat")

import reshape_suite  # noqa: E402

if not reshape_suite.TESTS_DIR:
    pytest.skip(
        "DISTRESHAPE_HEAT_TESTS names no checkout of Heat's tests (Heat's wheels ship none)",
        allow_module_level=True,
    )
if reshape_suite.MODE not in reshape_suite.MODES:
    raise ValueError(f"DISTRESHAPE_HEAT_SUITE = {reshape_suite.MODE!r} is none of {reshape_suite.MODES}")

globals().update(reshape_suite.test_classes())
