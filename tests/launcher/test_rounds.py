"""The pure rules of the rendezvous: the ready rule, sticky ranks, and when a new round is due."""

from __future__ import annotations

import pytest

from caldera.launcher.records import Round
from caldera.launcher.rounds import (
    DEFAULT_ELASTIC_TIMEOUT,
    Limits,
    Readiness,
    assign_ranks,
    desired_size,
    judge,
    readiness,
)

FT3 = Limits(lo=3, hi=3, max_restarts=3, elastic_timeout=30.0)
ELASTIC = Limits(lo=2, hi=4, max_restarts=3, elastic_timeout=30.0)
UNCONFIGURED = Limits(lo=2, hi=4, max_restarts=3, elastic_timeout=None)  # --np 2:4 without --elastic-timeout


@pytest.mark.parametrize(
    ("np", "lo", "hi", "want"),
    [(None, 2, 4, 4), (3, 2, 4, 3), (1, 2, 4, 2), (9, 2, 4, 4), (None, 3, 3, 3), (2, 3, 3, 3)],
    ids=["no-np-means-max", "np-inside", "np-below-min", "np-above-max", "ft", "ft-ignores-np"],
)
def test_desired_size_clamps_np_to_the_range(np, lo, hi, want):
    assert desired_size(np, lo, hi) == want


@pytest.mark.parametrize(
    ("alive", "desired", "stable_for", "want"),
    [
        (4, 4, 0.0, Readiness(4)),
        (5, 4, 0.0, Readiness(4)),
        (3, 4, 0.0, Readiness(None, 30.0)),
        (3, 4, 12.5, Readiness(None, 17.5)),
        (3, 4, 30.0, Readiness(3)),
        (2, 4, 31.0, Readiness(2)),
        (1, 4, 99.0, Readiness(None)),
        (0, 4, 99.0, Readiness(None)),
    ],
    ids=["exact", "more-than-wanted", "settling", "settling-later", "settled", "settled-at-min", "below-min", "none"],
)
def test_ready_rule(alive, desired, stable_for, want):
    assert readiness(alive, desired, lo=2, stable_for=stable_for, timeout=30.0) == want


@pytest.mark.parametrize(
    ("previous", "alive", "size", "want"),
    [
        ((), ("a", "b", "c"), 3, ("a", "b", "c")),
        ((), ("a", "b", "c", "d"), 2, ("a", "b")),
        (("a", "b", "c"), ("a", "b", "c"), 3, ("a", "b", "c")),
        (("a", "b", "c"), ("a", "c", "d"), 3, ("a", "d", "c")),
        (("a", "b", "c"), ("b", "c", "d"), 3, ("b", "d", "c")),
        (("a", "b"), ("b", "d", "e"), 3, ("b", "d", "e")),
        (("a", "b", "c", "d"), ("b", "c", "d"), 3, ("d", "b", "c")),
        (("a", "b", "c"), ("a", "b", "c"), 2, ("a", "b")),
        (("a", "b", "c", "d"), ("a", "c", "d"), 2, ("a", "c")),
        (("a", "b"), ("a", "b", "x", "y"), 4, ("a", "b", "x", "y")),
        (("a", "b"), ("y", "a", "x", "b"), 3, ("a", "b", "y")),
        (("a", "b", "c"), ("a", "c", "e", "d"), 3, ("a", "e", "c")),
    ],
    ids=[
        "first-round-join-order",
        "first-round-extra-nodes-are-spares",
        "unchanged",
        "newcomer-fills-the-hole",
        "rank-0-gone-a-survivor-takes-it-not-the-newcomer",
        "rank-0-gone-the-lowest-survivor-takes-it",
        "scale-in-high-rank-moves-down-paddle-example",
        "scale-in-drops-highest",
        "scale-in-with-hole-mover-first",
        "scale-out-newcomers-append",
        "scale-out-join-order-decides",
        "newcomers-in-join-order",
    ],
)
def test_ranks_are_sticky(previous, alive, size, want):
    assert assign_ranks(previous, alive, size) == want


def test_ranks_need_enough_alive_nodes():
    with pytest.raises(ValueError, match="cannot form a round of 3 from 2"):
        assign_ranks((), ("a", "b"), 3)


def test_first_round_forms_when_enough_nodes_joined():
    assert judge(None, ["a", "b"], set(), None, FT3, 0.0).proposal is None
    v = judge(None, ["a", "b", "c"], set(), None, FT3, 0.0)
    assert v.proposal == Round(0, ("a", "b", "c"), 0)


def test_waiting_reports_wanted_and_have():
    v = judge(None, ["a"], set(), None, FT3, 100.0)
    assert (v.proposal, v.wanted, v.have, v.wait_s) == (None, 3, 1, None)


def test_a_healthy_round_is_kept_and_spares_wait():
    current = Round(4, ("a", "b", "c"), 1)
    v = judge(current, ["a", "b", "c", "d"], set(), None, FT3, 100.0)
    assert v.broken is None and v.proposal is None and v.wanted is None


def test_fault_tolerance_member_left_waits_for_a_replacement_then_keeps_ranks():
    current = Round(0, ("a", "b", "c"))
    v = judge(current, ["a", "c"], set(), None, FT3, 0.0)
    assert v.broken == "member left" and v.proposal is None and (v.wanted, v.have) == (3, 2)
    v = judge(current, ["a", "c", "d"], set(), None, FT3, 0.0)
    assert v.proposal == Round(1, ("a", "d", "c"), 0)


def test_elastic_member_left_reforms_smaller_after_the_timeout():
    current = Round(2, ("a", "b", "c"))
    v = judge(current, ["a", "c"], set(), None, ELASTIC, 5.0)
    assert v.broken == "member left" and v.proposal is None and v.wait_s == pytest.approx(25.0)
    v = judge(current, ["a", "c"], set(), None, ELASTIC, 30.0)
    assert v.proposal == Round(3, ("a", "c"), 0)


def test_np_scale_in_is_immediate_and_keeps_low_ranks():
    current = Round(0, ("a", "b", "c"))
    v = judge(current, ["a", "b", "c"], set(), 2, ELASTIC, 0.0)
    assert v.broken is None and v.proposal == Round(1, ("a", "b"), 0)


def test_np_scale_out_takes_spares_at_once():
    current = Round(1, ("a", "b"))
    v = judge(current, ["a", "b", "c"], set(), 3, ELASTIC, 0.0)
    assert v.proposal == Round(2, ("a", "b", "c"), 0)


def test_a_newcomer_below_the_wanted_size_joins_after_the_settle_time():
    current = Round(0, ("a", "b"))
    v = judge(current, ["a", "b", "c"], set(), None, ELASTIC, 1.0)
    assert v.broken is None and v.proposal is None and v.wait_s == pytest.approx(29.0)
    assert judge(current, ["a", "b", "c"], set(), None, ELASTIC, 30.0).proposal == Round(1, ("a", "b", "c"), 0)


def test_a_stable_round_below_the_wanted_size_is_not_reformed_with_the_same_members():
    current = Round(0, ("a", "b"))
    v = judge(current, ["a", "b"], set(), None, ELASTIC, 1000.0)
    assert v == judge(current, ["a", "b"], set(), None, ELASTIC, 1000.0)
    assert v.proposal is None and v.broken is None


def test_failures_count_while_members_are_unchanged():
    current = Round(5, ("a", "b", "c"), 2)
    v = judge(current, ["a", "b", "c"], {"b"}, None, FT3, 0.0)
    assert v.broken == "a member's workers failed" and v.proposal == Round(6, ("a", "b", "c"), 3)


def test_failures_reset_when_members_change():
    current = Round(5, ("a", "b", "c"), 2)
    v = judge(current, ["a", "c", "d"], {"a"}, None, FT3, 0.0)
    assert v.broken == "member left" and v.proposal == Round(6, ("a", "d", "c"), 0)


def test_failure_keys_of_non_members_do_not_break_the_round():
    current = Round(1, ("a", "b", "c"))
    assert judge(current, ["a", "b", "c", "d"], {"d"}, None, FT3, 0.0).broken is None


def test_an_exhausted_round_proposes_nothing():
    limits = Limits(lo=3, hi=3, max_restarts=1, elastic_timeout=30.0)
    current = Round(3, ("a", "b", "c"), 2)
    v = judge(current, ["a", "b", "c"], set(), None, limits, 0.0)
    assert v.proposal is None and v.broken == "restart budget used up"


# ---- waiting only for a size someone asked for (`--np MIN:MAX` without --elastic-timeout)


def test_unannounced_a_member_left_re_forms_with_the_survivors_at_once():
    current = Round(2, ("a", "b", "c"))
    v = judge(current, ["a", "c"], set(), None, UNCONFIGURED, 0.0)
    assert v.broken == "member left" and v.proposal == Round(3, ("a", "c"), 0)


def test_unannounced_a_newcomer_makes_the_group_grow_at_once():
    current = Round(3, ("a", "c"))
    v = judge(current, ["a", "c", "d"], set(), None, UNCONFIGURED, 0.0)
    assert v.broken is None and v.proposal == Round(4, ("a", "c", "d"), 0)


def test_unannounced_the_first_round_forms_with_min_and_never_below():
    v = judge(None, ["a"], set(), None, UNCONFIGURED, 99.0)
    assert v.proposal is None and (v.wanted, v.have) == (2, 1)  # waiting for MIN, not MAX
    assert judge(None, ["a", "b"], set(), None, UNCONFIGURED, 0.0).proposal == Round(0, ("a", "b"), 0)


def test_an_announced_size_is_waited_for_the_default_timeout():
    current = Round(2, ("a", "b", "c"))
    v = judge(current, ["a", "c"], set(), 3, UNCONFIGURED, 5.0)
    assert v.proposal is None and v.wait_s == pytest.approx(DEFAULT_ELASTIC_TIMEOUT - 5.0) and v.wanted == 3
    v = judge(current, ["a", "c"], set(), 3, UNCONFIGURED, DEFAULT_ELASTIC_TIMEOUT)
    assert v.proposal == Round(3, ("a", "c"), 0)


def test_a_fixed_size_waits_for_a_replacement_whatever_the_timeout():
    limits = Limits(lo=3, hi=3, max_restarts=3, elastic_timeout=None)
    v = judge(Round(0, ("a", "b", "c")), ["a", "c"], set(), None, limits, 1000.0)
    assert v.broken == "member left" and v.proposal is None and (v.wanted, v.have) == (3, 2)
