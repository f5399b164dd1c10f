"""The test broker's KRaft cluster id: one random id in 64 starts with "-", which the
storage tool's argument parser read as an option, failing every Kafka test of a run."""

from __future__ import annotations

import base64

from testbed.kafka import cluster_id


def test_cluster_ids_are_uuids_that_never_start_with_a_dash() -> None:
    ids = [cluster_id() for _ in range(2000)]  # without the check, ~31 would start with "-"
    assert not [i for i in ids if i.startswith("-")]
    assert len(set(ids)) == len(ids)
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
