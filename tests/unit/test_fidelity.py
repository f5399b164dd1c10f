"""PPA's output fidelity over D-Stream partitions (dstream.streams.fidelity), no Spark."""

from __future__ import annotations

import pytest

from dstream.streams.fidelity import (
    Loss,
    correlated,
    mix,
    narrow,
    output_fidelity,
    union,
    window,
)


def test_a_narrow_operator_keeps_each_partitions_loss() -> None:
    state = Loss((3.0, 1.0), (0.5, 0.0))
    assert narrow(state) == state
    assert output_fidelity(state) == pytest.approx(1 - 1.5 / 4)


def test_a_shuffle_spreads_the_rate_weighted_loss_over_every_partition() -> None:
    # PPA's Fig. 2 as an independent-input operator: IL = (λ1 IL1 + λ2 IL2) / (λ1 + λ2).
    out = mix([Loss((2.0, 2.0), (0.0, 1.0)), Loss((4.0,), (0.0,))], 4)
    assert out.lost == (0.25,) * 4 and out.total == pytest.approx(8.0)
    assert output_fidelity(out) == pytest.approx(0.75)


def test_a_join_loses_an_output_partition_if_either_side_lost_its_input() -> None:
    a, b = Loss((1.0, 1.0, 1.0), (0.0, 1.0, 0.5)), Loss((1.0, 1.0, 1.0), (0.0, 0.0, 0.5))
    out = correlated([a, b])
    assert out.lost == pytest.approx((0.0, 1.0, 0.75))
    # PPA's Eq. 2 over the sides' overall losses when they are not co-partitioned.
    uneven = correlated([Loss((1.0, 1.0), (0.0, 1.0)), Loss((1.0,), (0.2,))])
    assert uneven.lost == pytest.approx((1 - 0.5 * 0.8,) * 2)


def test_a_union_and_a_window_weigh_each_part_by_its_rate() -> None:
    u = union([Loss((1.0,), (1.0,)), Loss((3.0,), (0.0,))])
    assert u.partitions == 2 and output_fidelity(u) == pytest.approx(0.75)
    w = window([Loss((1.0, 1.0), (1.0, 1.0)), Loss((2.0, 4.0), (0.0, 0.0))], 2)
    assert output_fidelity(w) == pytest.approx(6 / 8)


def test_nothing_lost_is_fidelity_one_and_empty_rates_do_not_divide_by_zero() -> None:
    assert output_fidelity(Loss.none(4)) == 1.0
    assert output_fidelity(Loss((0.0, 0.0), (1.0, 0.0))) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="2 rates for 1 losses"):
        Loss((1.0, 1.0), (0.0,))


def test_a_states_ledger_counts_only_the_intervals_up_to_the_state_asked_for() -> None:
    from dstream.streams.tentative_pass import Ledger

    ledger = Ledger()
    for t, n in ((2000, 10), (4000, 20)):
        ledger.record(t, 0, n)
    # The state of 4000 holds both intervals; 6000 is not reported yet: the recent mean.
    assert ledger.since(0, None, 4000, 2000) == 30
    assert ledger.since(0, None, 6000, 2000) == 30 + 15
    # The state of 2000 holds its own interval only, though 4000 is reported (an episode's
    # fidelity is computed while the exact pipeline moves on): a fresh-clone run's top-k
    # fidelity fell from 0.67 to 0.50 an interval later when 4000 was counted in.
    assert ledger.since(0, None, 2000, 2000) == 10
    assert ledger.since(0, 2000, 4000, 2000) == 20
