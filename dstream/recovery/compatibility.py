"""Which recovery modes and features combine: one table, read by the api when a user adds a
mode (so the error points at the call) and once more by the engine's start(), over the
whole program and its settings (:func:`check_program`).

A row is a pair, *the one the state has* then *the one added*, both modes of
:mod:`dstream.recovery.choice` (plus ``approximate``) or features (``rescale``,
``pipelining``, ``tentative outputs``, ``replica budget``, ``elastic``). A pair not in the
table combines.
:data:`REFUSED` pairs raise the message (it names the value, the rule and the fix);
:data:`LEFT_OUT` pairs run, the feature passing over that state (why, in words)::

                 replicate replay  rescale pipelining tentative outputs replica budget elastic
    approximate  refused   refused refused refused    left out          left out       left out
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "LEFT_OUT",
    "REFUSED",
    "TABLE",
    "Rule",
    "Stateful",
    "check_program",
    "left_out",
    "refusal",
]

REFUSED = "refused"
LEFT_OUT = "left out"


@dataclass(frozen=True)
class Rule:
    verdict: str  # REFUSED or LEFT_OUT
    # REFUSED: the error, formatted with label, kind (the mode added), count, depth;
    # LEFT_OUT: why the feature passes over the state.
    text: str


_ONE_OF_THEM = (
    "approximateRecovery() of {label} restores lost partitions from its own copies; it "
    'cannot be combined with recoveryStrategy("{have}"): keep one of them'
)
_ALREADY = (
    "recoveryStrategy({kind!r}) of {label}, whose lost partitions approximateRecovery() "
    "already restores from copies; keep one of them"
)

TABLE: dict[tuple[str, str], Rule] = {
    ("replicate", "approximate"): Rule(REFUSED, _ONE_OF_THEM),
    ("replay", "approximate"): Rule(REFUSED, _ONE_OF_THEM),
    ("approximate", "replicate"): Rule(REFUSED, _ALREADY),
    ("approximate", "replay"): Rule(REFUSED, _ALREADY),
    ("approximate", "rescale"): Rule(
        REFUSED,
        "rescale({count!r}) of {label}: under approximateRecovery() each partition keeps "
        "its own copy and its own share of maxDivergence, so the partition count is fixed "
        "(numPartitions= when it is made)",
    ),
    ("approximate", "pipelining"): Rule(
        REFUSED,
        "approximateRecovery() of {label} reads each interval's state from the executors' "
        "memory once the interval before has made it, which timestep pipelining "
        "(pipelining_depth={depth}) does not wait for; run it with pipelining_depth=1",
    ),
    ("approximate", "tentative outputs"): Rule(
        LEFT_OUT, "it restores its own lost partitions from copies: nothing is recomputed"
    ),
    ("approximate", "replica budget"): Rule(
        LEFT_OUT, "its lost partitions are restored from copies, not read from a replica"
    ),
    # The elastic policy rescales every state that can: not one whose count is fixed.
    ("approximate", "elastic"): Rule(
        LEFT_OUT, "each partition keeps its own copy and share of maxDivergence"
    ),
}


def refusal(have: Iterable[str], added: str, **names: object) -> str | None:
    """The error for adding ``added`` to a state with the modes ``have`` (None: allowed)."""
    for mode in sorted(have):
        rule = TABLE.get((mode, added))
        if rule is not None and rule.verdict == REFUSED:
            return rule.text.format(**{"have": mode, "kind": added, **names})
    return None


def left_out(have: Iterable[str], feature: str) -> str | None:
    """Why ``feature`` passes over a state with the modes ``have`` (None: it does not)."""
    for mode in sorted(have):
        rule = TABLE.get((mode, feature))
        if rule is not None and rule.verdict == LEFT_OUT:
            return rule.text
    return None


class Stateful(Protocol):
    """A state as the start-time check sees it: its name and its policy's modes."""

    @property
    def label(self) -> str: ...
    @property
    def recovery_modes(self) -> frozenset[str]: ...


def check_program(states: Iterable[Stateful], *, pipelining_depth: int) -> None:
    """start(): raise the first refused pair of any state, its modes with each other and
    with the program's features (the call-time checks saw one call at a time)."""
    for state in states:
        modes = state.recovery_modes
        for mode in sorted(modes):
            message = refusal(modes - {mode}, mode, label=state.label, count=None, depth=None)
            if message is not None:
                raise ValueError(message)
        if pipelining_depth > 1:
            message = refusal(modes, "pipelining", label=state.label, depth=pipelining_depth)
            if message is not None:
                raise ValueError(message)
