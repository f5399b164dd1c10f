"""key_hash is PySpark's portable_hash, value for value (the engine's shuffles and PySpark's
must put every key in the same partition). No Spark."""

from __future__ import annotations

import collections
from typing import Any

import pytest

from dstream.streams.copartitioned import key_hash

Point = collections.namedtuple("Point", "x y")

KEYS: list[Any] = [
    None,
    0,
    1,
    -1,
    -2,
    2**63 + 5,
    -(2**70),
    3.5,
    -0.0,
    float("inf"),
    True,
    "",
    "kato",
    "ß und 字",
    b"bytes",
    frozenset({"a", 1}),
    (),
    (None,),
    (None, 1),
    ("a", ("b", (None, 2.5)), -7),
    Point(1, "y"),
    ((),),
]


def key_id(key: Any) -> str:
    """A test id that is the same in every process (a set's repr follows string hashes, which
    differ between processes: two pytest-xdist workers must collect the same ids)."""
    if isinstance(key, frozenset):
        return f"frozenset({sorted(map(repr, key))})"
    return repr(key)


@pytest.mark.parametrize("key", KEYS, ids=key_id)
def test_key_hash_is_portable_hash(key: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.rdd import portable_hash

    monkeypatch.setenv("PYTHONHASHSEED", "0")  # portable_hash refuses to run without it
    assert key_hash(key) == portable_hash(key)
    assert key_hash(key) % 7 == portable_hash(key) % 7
