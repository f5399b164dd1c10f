"""The DStream class users hold. Its methods come family by family, one module each:

* :mod:`dstream.streams.base` — the mechanism (per-time RDDs, remember, persist, slice),
* :mod:`dstream.api.stateless` — map, filter, reduce, count, transform, union, ...
* :mod:`dstream.api.keyed` — reduceByKey, groupByKey, joins, cogroup, ...
* :mod:`dstream.api.outputs` — foreachRDD, pprint, saveAsTextFiles, save,
* :mod:`dstream.api.queries` — live queries: latest, at, snapshot, lookup, toDF, SQL views.
"""

from __future__ import annotations

from typing import TypeVar

from dstream.api.outputs import OutputOps
from dstream.api.queries import QueryOps

T = TypeVar("T")

__all__ = ["DStream"]


class DStream(OutputOps[T], QueryOps[T]):
    """A discretized stream: one RDD per interval, built lazily from its parents' RDDs.

    >>> counts = lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(int.__add__)
    ... # doctest: +SKIP
    """
