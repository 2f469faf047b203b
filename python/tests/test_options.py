"""Plan options: every option the library has, by name, in every constructor;
an unknown name or a value out of range raises on every rank."""

import numpy as np
import pytest

import distreshape as dr
from helpers import WORLD, balanced, block
from test_errors import LAST, raises_everywhere

SWITCHES = ("strided_sends", "strided_slots", "run_messages", "direct_reads", "sleeping_waits")


def test_every_option_of_the_library_is_named():
    assert dr.OPTIONS[:5] == ("max_message_bytes", "slot_bytes", "run_budget", "window", "in_place_budget")
    assert dr.OPTIONS[5:] == SWITCHES


@pytest.mark.parametrize("on", [True, False, None])
def test_switches_forced_or_left_to_the_default_move_every_element(on):
    # Long runs at a stride on the receiving side, with tiny slots: the ways the
    # switches choose between.
    n = 6 * WORLD.size + 1
    options = {name: on for name in SWITCHES} | {"slot_bytes": 1, "window": 1}
    local = block((n, 512), 0, balanced(n), np.float64)
    out = dr.reshape(local, (n, 512), 0, (n, 512), 1, options=options)
    np.testing.assert_array_equal(out, block((n, 512), 1, balanced(512), np.float64))
    plan = dr.Plan((n, 512), 0, (n, 512), 1, np.float64, options=options)
    buffer = np.zeros(max(local.size, out.size))
    buffer[: local.size] = local.ravel()
    np.testing.assert_array_equal(plan.execute_in_place(buffer), out)


def test_layout_plans_take_options():
    shape = (4 * WORLD.size, 6)
    rows = dr.Layout(shape, (WORLD.size,), (0, None))
    columns = dr.Layout(shape, (WORLD.size,), (None, 0))
    local = block(shape, 0, balanced(shape[0]), np.int32)
    options = {"max_message_bytes": 8, "run_messages": True}
    out = dr.redistribute(local, rows, columns, options=options)
    np.testing.assert_array_equal(out, block(shape, 1, balanced(shape[1]), np.int32))
    plan = dr.Plan.from_layouts(rows, columns, np.int32, options=options)
    np.testing.assert_array_equal(plan.execute(local), out)


def test_a_switch_out_of_range_on_one_rank_raises_everywhere():
    options = {"sleeping_waits": 2 if WORLD.rank == LAST else None}
    message = raises_everywhere(
        "DR_ERROR_INVALID_OPTION",
        lambda: dr.Plan((WORLD.size, 4), 0, (4, -1), 1, "f8", options=options),
    )
    assert "options.sleeping_waits = 2 is out of range" in message
    assert f"rank {LAST}" in message


def test_an_unknown_option_on_one_rank_raises_everywhere():
    options = {"windw": 3} if WORLD.rank == LAST else {}
    message = raises_everywhere(
        "DR_ERROR_INVALID_OPTION",
        lambda: dr.Plan.from_layouts(
            dr.Layout((WORLD.size,), (WORLD.size,), (0,)), dr.Layout((WORLD.size,), (WORLD.size,), (None,)), "f8", options=options
        ),
    )
    assert "options[\"windw\"] is not an option" in message


def test_options_that_are_not_a_mapping_or_not_integers_raise_everywhere():
    bad = [("window", 4)] if WORLD.rank == LAST else None
    raises_everywhere("DR_ERROR_INVALID_OPTION", lambda: dr.Plan((WORLD.size,), 0, (-1,), 0, "f8", options=bad))
    bad = {"window": 4.5} if WORLD.rank == LAST else {}
    message = raises_everywhere("DR_ERROR_INVALID_OPTION", lambda: dr.Plan((WORLD.size,), 0, (-1,), 0, "f8", options=bad))
    assert "options['window'] = 4.5 is not an integer" in message
