"""saveToKafka's record identity (``dstream.record``): taken from the record's bytes, so
every order in which a partition's records come (shuffle blocks fetched in another order
on a retry) gives the same identities, each naming the same bytes."""

from __future__ import annotations

import random

from dstream.kafka.sink import named_records

PARTITION = [(b"k1", b"v1"), (b"k2", b"v2"), (b"k1", b"v1"), (None, b"v"), (b"", b"v")]


def names(pairs: list[tuple[object, object]]) -> dict[str, tuple[object, object]]:
    return {name: (key, value) for key, value, name in named_records(pairs)}


def test_any_order_of_a_partition_gives_the_same_identity_to_the_same_bytes() -> None:
    first = names(PARTITION)
    assert len(first) == len(PARTITION)  # equal records are told apart, not merged
    rng = random.Random(5)
    for _ in range(20):
        shuffled = PARTITION[:]
        rng.shuffle(shuffled)
        assert names(shuffled) == first


def test_a_position_would_not_be_an_identity() -> None:
    """What the old header (the index within the partition) did: two computations of one
    partition in different orders give one index to two different records, so a consumer
    dropping copies by it drops the wrong ones."""
    by_position = dict(enumerate(PARTITION))
    reordered = dict(enumerate(reversed(PARTITION)))
    assert by_position[0] != reordered[0]
    assert names(PARTITION) == names(list(reversed(PARTITION)))


def test_none_empty_and_str_keys_are_distinguished_as_the_wire_does() -> None:
    got = names([(None, b"v"), (b"", b"v"), (b"v", None), ("k", "v")])
    assert len(got) == 4
    # A str is written as its UTF-8 bytes: the same record as those bytes.
    assert {n.split("-")[0] for n in names([("k", "v")])} == {
        n.split("-")[0] for n in names([(b"k", b"v")])
    }
    # The key/value split is part of the identity: (b"ab", b"c") is not (b"a", b"bc").
    assert set(names([(b"ab", b"c")])) != set(names([(b"a", b"bc")]))
