"""Which recovery modes and features combine: one table (dstream.recovery.compatibility),
read when a user adds a mode and once more at start(). Pure logic, no Spark."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dstream.recovery.approximate_policy import ApproximatePolicy, approx_spec
from dstream.recovery.choice import KINDS, policy_for
from dstream.recovery.compatibility import (
    LEFT_OUT,
    REFUSED,
    TABLE,
    check_program,
    left_out,
    refusal,
)
from dstream.time import Duration

MODES = (*KINDS, "approximate")
FEATURES = ("rescale", "pipelining", "tentative outputs", "replica budget", "elastic")


@pytest.mark.parametrize(
    ("have", "added", "verdict", "message"),
    [
        # approximateRecovery restores from its own copies: one way to recover at a time.
        ({"replicate"}, "approximate", REFUSED, 'combined with recoveryStrategy\\("replicate"\\)'),
        ({"replay"}, "approximate", REFUSED, 'combined with recoveryStrategy\\("replay"\\)'),
        ({"checkpoint", "approximate"}, "replicate", REFUSED, "already restores from copies"),
        ({"auto", "approximate"}, "replay", REFUSED, "already restores from copies"),
        ({"approximate"}, "rescale", REFUSED, "partition count is fixed"),
        ({"approximate"}, "pipelining", REFUSED, "pipelining_depth=1"),
        ({"checkpoint"}, "approximate", None, None),
        ({"auto"}, "approximate", None, None),
        ({"approximate"}, "auto", None, None),
        ({"approximate"}, "checkpoint", None, None),
        *[({m}, f, None, None) for m in KINDS for f in FEATURES],
        *[({a}, b, None, None) for a in KINDS for b in KINDS],
        ({"approximate"}, "tentative outputs", LEFT_OUT, "restores its own lost partitions"),
        ({"approximate"}, "replica budget", LEFT_OUT, "restored from copies"),
        ({"auto", "approximate"}, "elastic", LEFT_OUT, "share of maxDivergence"),
    ],
)
def test_the_table(have: set[str], added: str, verdict: str | None, message: str | None) -> None:
    refused = refusal(have, added, label="updateStateByKey#3", kind=added, count=4, depth=2)
    passed_over = left_out(have, added)
    if verdict == REFUSED:
        assert refused is not None and passed_over is None
        assert "updateStateByKey#3" in refused  # the errors name the state...
        assert "keep one of them" in refused or "fixed" in refused or "=1" in refused  # ...the fix
    else:
        assert refused is None
    if verdict == LEFT_OUT:
        assert passed_over is not None
    else:
        assert passed_over is None
    if message is not None:
        import re

        assert re.search(message, refused or passed_over or "")


def test_the_table_names_only_known_modes_and_features() -> None:
    for (have, added), rule in TABLE.items():
        assert have in MODES and added in (*MODES, *FEATURES)
        assert rule.verdict in (REFUSED, LEFT_OUT)
        if rule.verdict == REFUSED and added in MODES:  # a pair of modes: both orders
            assert (added, have) in TABLE


@dataclass
class _State:
    label: str
    recovery_modes: frozenset[str]


def test_start_checks_each_state_against_the_program() -> None:
    exact = _State("reduceByKeyAndWindow#2", frozenset({"replay"}))
    approximate = _State("updateStateByKey#3", frozenset({"checkpoint", "approximate"}))
    check_program([exact, approximate], pipelining_depth=1)
    check_program([exact], pipelining_depth=3)
    with pytest.raises(ValueError, match=r"updateStateByKey#3.*pipelining_depth=3.*=1"):
        check_program([exact, approximate], pipelining_depth=3)
    both = _State("updateStateByKey#5", frozenset({"replicate", "approximate"}))
    with pytest.raises(ValueError, match="updateStateByKey#5"):
        check_program([both], pipelining_depth=1)


def test_an_approximate_policy_keeps_its_layer_over_a_new_mode() -> None:
    slide = Duration(1000)
    base = policy_for("checkpoint", slide=slide, window=None, unbounded="u", label="s")
    policy = ApproximatePolicy(base, approx_spec(10, "l1", "s"))
    assert policy.modes == {"checkpoint", "approximate"}
    auto = policy.rebased(policy_for("auto", slide=slide, window=None, unbounded="u", label="s"))
    assert auto.modes == {"auto", "approximate"} and auto.approximate is policy.spec
    again = ApproximatePolicy(policy, approx_spec(5, "l1", "s"))  # asked again: a new bound
    assert again.modes == policy.modes and again.approximate.max_divergence == 5
    assert again.persistence(1).disk and again.steps_from_blocks
