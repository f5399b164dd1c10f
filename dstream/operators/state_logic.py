"""Per-partition merges of keyed state, run inside tasks. Pure functions, no Spark.

The state RDD of interval t and the RDDs it is built from share one partitioner, so Spark
unions them partition by partition (a narrow dependency, no shuffle) and one pass here
produces the new state partition. Every input record is tagged with where it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["ENTER", "LEAVE", "NEW", "STATE", "merge_update_state", "merge_window"]

STATE, ENTER, LEAVE, NEW = 0, 1, 2, 3


def merge_window(
    records: Iterable[tuple[Any, tuple[int, Any, int]]],
    func: Callable[[Any, Any], Any],
    inv_func: Callable[[Any, Any], Any] | None,
) -> Iterator[tuple[Any, tuple[Any, int]]]:
    """New window state from ``(key, (tag, value, count))`` records.

    ``STATE`` is the previous window's ``(value, count)`` of a key, ``ENTER`` a partial
    value of one interval that enters the window, ``LEAVE`` one that leaves it. ``count`` is
    how many intervals inside the window contributed to the key: a key whose count drops to
    0 has no contribution left and is removed, whatever its value (an inverse function alone
    cannot tell "0 because nothing is left" from "0 because values cancel").
    """
    current: dict[Any, list[Any]] = {}
    leaving: dict[Any, list[Any]] = {}
    for key, (tag, value, count) in records:
        if tag == LEAVE:
            slot = leaving.get(key)
            if slot is None:
                leaving[key] = [value, count]
            else:
                slot[0] = func(slot[0], value)
                slot[1] += count
            continue
        slot = current.get(key)
        if slot is None:
            current[key] = [value, count]
        else:
            slot[0] = func(slot[0], value)
            slot[1] += count
    for key, (value, count) in leaving.items():
        slot = current.get(key)
        if slot is None:
            raise ValueError(
                f"window state has no value for key {key!r} whose contribution leaves the "
                "window; the window state and its partials disagree"
            )
        assert inv_func is not None  # LEAVE records exist only with an inverse function
        slot[0] = inv_func(slot[0], value)
        slot[1] -= count
    for key, (value, count) in current.items():
        if count > 0:
            yield key, (value, count)


def merge_update_state(
    records: Iterable[tuple[Any, tuple[int, Any]]],
    update_func: Callable[[list[Any], Any], Any],
) -> Iterator[tuple[Any, Any]]:
    """``updateStateByKey``: for every key with a state or new values, the new state is
    ``update_func(new values in input order, old state or None)``; ``None`` drops the key.

    ``NEW`` records carry ``((source partition, position), value)`` so the values of a key
    are handed over in the same order however the shuffle delivered them.
    """
    states: dict[Any, Any] = {}
    news: dict[Any, list[tuple[tuple[int, int], Any]]] = {}
    for key, (tag, payload) in records:
        if tag == STATE:
            states[key] = payload
        else:
            news.setdefault(key, []).append(payload)
    for key in list(states.keys() | news.keys()):
        values = [v for _, v in sorted(news.get(key, ()), key=lambda tv: tv[0])]
        new_state = update_func(values, states.get(key))
        if new_state is not None:
            yield key, new_state
