"""Per-partition merges of keyed state, run inside tasks. Pure functions, no Spark.

The state RDD of interval t and the RDDs it is built from share one partitioner, so Spark
unions them partition by partition (a narrow dependency, no shuffle) and one pass here
produces the new state partition. The inputs arrive as *sections*: the union's parents in
order, separated by one :class:`SectionMark` record each (see
:func:`dstream.operators.partitioned.sectioned_union`), so no input needs a Python pass of
its own just to be tagged — each such pass costs a PySpark task tens of milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["SectionMark", "merge_update_state", "merge_window", "sections"]


class SectionMark:
    """The record that separates two sections of a sectioned union."""

    __slots__ = ()

    def __reduce__(self) -> Any:
        return (SectionMark, ())


def sections(records: Iterable[Any], count: int) -> list[list[Any]]:
    """Split a sectioned partition into its ``count`` sections."""
    out: list[list[Any]] = [[] for _ in range(count)]
    index = 0
    current = out[0]
    for record in records:
        if type(record[1]) is SectionMark:
            index += 1
            current = out[index]
        else:
            current.append(record)
    return out


def merge_window(
    records: Iterable[Any],
    func: Callable[[Any, Any], Any],
    inv_func: Callable[[Any, Any], Any] | None,
) -> Iterator[tuple[Any, tuple[Any, int]]]:
    """New window state from three sections: the previous state ``(key, (value, count))``,
    the partials ``(key, value)`` of the intervals that enter the window, and those of the
    intervals that leave it.

    ``count`` is how many intervals inside the window contributed to the key: a key whose
    count drops to 0 has no contribution left and is removed, whatever its value (an inverse
    function alone cannot tell "0 because nothing is left" from "0 because values cancel").
    """
    state, enter, leave = sections(records, 3)
    current: dict[Any, list[Any]] = {key: [value, count] for key, (value, count) in state}
    for key, value in enter:
        slot = current.get(key)
        if slot is None:
            current[key] = [value, 1]
        else:
            slot[0] = func(slot[0], value)
            slot[1] += 1
    if leave and inv_func is None:
        raise ValueError("intervals leave the window but there is no inverse function")
    for key, value in leave:
        slot = current.get(key)
        if slot is None:
            raise ValueError(
                f"window state has no value for key {key!r} whose contribution leaves the "
                "window; the window state and its partials disagree"
            )
        slot[0] = inv_func(slot[0], value)  # type: ignore[misc]
        slot[1] -= 1
    for key, (value, count) in current.items():
        if count > 0:
            yield key, (value, count)


def merge_update_state(
    records: Iterable[Any],
    update_func: Callable[[list[Any], Any], Any],
    intervals: int = 1,
) -> Iterator[tuple[Any, Any]]:
    """``updateStateByKey`` from ``1 + intervals`` sections: the previous state
    ``(key, state)``, then the new records ``(key, ((source partition, position), value))``
    of each interval in order. For every interval and every key with a state or new values
    the new state is ``update_func(new values in input order, old state or None)``; ``None``
    drops the key. The tag puts a key's values back in input order however the shuffle
    delivered them, so a recomputed interval gives the same state.
    """
    parts = sections(records, 1 + intervals)
    states = dict(parts[0])
    for new in parts[1:]:
        news: dict[Any, list[tuple[tuple[int, int], Any]]] = {}
        for key, payload in new:
            news.setdefault(key, []).append(payload)
        for key in list(states.keys() | news.keys()):
            values = [v for _, v in sorted(news.get(key, ()), key=lambda tv: tv[0])]
            new_state = update_func(values, states.get(key))
            if new_state is None:
                states.pop(key, None)
            else:
                states[key] = new_state
    return iter(states.items())
