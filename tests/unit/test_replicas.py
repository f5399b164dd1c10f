"""The replica budget's plan (dstream.scheduler.replicas), no Spark: PPA's greedy choice by
profit density."""

from __future__ import annotations

from dstream.scheduler.replicas import Candidate, plan


def test_the_budget_goes_to_the_most_fidelity_per_byte_first() -> None:
    candidates = [
        Candidate(1, 0, 100, 2.0),  # 0.02 a byte
        Candidate(1, 1, 100, 1.0),  # 0.01
        Candidate(2, 0, 10, 0.5),  # 0.05: smallest, densest
        Candidate(2, 1, 500, 3.0),  # 0.006
    ]
    assert plan(candidates, 110) == {2: {0}, 1: {0}}
    # What no longer fits is skipped for what still does.
    assert plan(candidates, 215) == {2: {0}, 1: {0, 1}}
    assert plan(candidates, 0) == {}


def test_priorities_decide_between_two_states_of_equal_size() -> None:
    """A top-k of priority 2 over one state, a join of priority 1 over the other: a budget
    that fits one state copies the first; the same plan without priorities (every output
    weighing 1) prefers the state whose partitions are smaller per unit of rate."""
    topk = [Candidate(1, p, 100, 2 * 0.25) for p in range(4)]  # weight 2, each 1/4 of rate
    join = [Candidate(2, p, 80, 1 * 0.25) for p in range(4)]  # weight 1
    assert plan(topk + join, 400) == {1: {0, 1, 2, 3}}
    blind = [Candidate(1, p, 100, 0.25) for p in range(4)] + join
    assert plan(blind, 400) == {2: {0, 1, 2, 3}}


def test_partitions_that_carry_nothing_get_no_copy() -> None:
    assert plan([Candidate(1, 0, 10, 0.0), Candidate(1, 1, 10, 1.0)], 100) == {1: {1}}
