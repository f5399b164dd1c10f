"""The metadata journal's format and its reader: newest valid record wins, torn or corrupt
records are skipped, foreign or incompatible directories are refused and left untouched."""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from dstream.storage.filesystem import LocalFileSystem, RenameError
from dstream.storage.journal import (
    CheckpointDirectoryError,
    CorruptRecordError,
    JournalRecord,
    MetadataJournal,
    decode_record,
    encode_record,
)

RECORD = JournalRecord(
    batch_ms=1000,
    zero_ms=0,
    generated_ms=3000,
    completed_ms=2000,
    pending_ms=(3000,),
    failed_ms=(1000,),
    graph=b"graph",
    names={0: "map#0"},
    streams={0: {"checkpoint_ms": None}},
    spark_master="local[2]",
    spark_app="app",
    spark_conf=(("spark.master", "local[2]"),),
    settings=b"settings",
    epoch=3,
)


def rec(n: int) -> JournalRecord:
    """A record told apart from others by its completed interval."""
    return replace(RECORD, completed_ms=n)


def journal(path: Path, keep: int = 3) -> MetadataJournal:
    j = MetadataJournal(LocalFileSystem(), str(path), keep=keep)
    j.check_directory(create=True)
    return j


def test_encode_decode_round_trip_and_damage_detection() -> None:
    data = encode_record(b"payload")
    assert decode_record(data) == b"payload"
    with pytest.raises(CorruptRecordError, match="torn"):
        decode_record(data[:-2])
    with pytest.raises(CorruptRecordError, match="checksum mismatch"):
        decode_record(data[:-1] + b"X")
    with pytest.raises(CorruptRecordError, match="shorter than a record header"):
        decode_record(data[:10])
    with pytest.raises(CorruptRecordError, match="not a dstream metadata record"):
        decode_record(b"Z" * 60)
    future = bytearray(data)
    future[8] = 9  # the version field
    with pytest.raises(CheckpointDirectoryError, match=r"incompatible dstream .record format 9"):
        decode_record(bytes(future))


def test_newest_record_wins_and_old_ones_are_pruned(tmp_path: Path) -> None:
    j = journal(tmp_path, keep=2)
    assert j.read_latest() is None
    for i in range(5):
        assert j.write(rec(i)) == i
    latest = j.read_latest()
    assert latest is not None and (latest.seq, latest.record) == (4, rec(4))
    assert sorted(os.listdir(tmp_path / "metadata")) == [
        "record-000000000003",
        "record-000000000004",
    ]


def test_a_torn_newest_record_falls_back_to_the_previous(tmp_path: Path) -> None:
    j = journal(tmp_path)
    j.write(rec(1))
    j.write(rec(2))
    newest = tmp_path / "metadata" / "record-000000000001"
    newest.write_bytes(newest.read_bytes()[:-3])  # torn write
    latest = journal(tmp_path).read_latest()
    assert latest is not None and latest.record == rec(1)
    # A reopened journal continues numbering after the newest file, torn or not.
    j2 = journal(tmp_path)
    j2.read_latest()
    assert j2.write(rec(3)) == 2


def test_all_records_corrupt_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    j = journal(tmp_path)
    j.write(rec(1))
    (tmp_path / "metadata" / "record-000000000000").write_bytes(b"garbage")
    with pytest.raises(CheckpointDirectoryError, match="no readable metadata record"):
        journal(tmp_path).read_latest()


def test_a_foreign_directory_is_refused_and_left_untouched(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("precious")
    with pytest.raises(
        CheckpointDirectoryError,
        match=r"is not a dstream checkpoint directory: it holds other files .data\.csv.",
    ):
        journal(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["data.csv"]


def test_an_incompatible_or_unreadable_marker_is_refused(tmp_path: Path) -> None:
    (tmp_path / "DSTREAM").write_text(json.dumps({"format": 7}))
    with pytest.raises(CheckpointDirectoryError, match="has format 7; this dstream uses format 2"):
        journal(tmp_path)
    (tmp_path / "DSTREAM").write_text("not json")
    with pytest.raises(CheckpointDirectoryError, match="DSTREAM is unreadable"):
        journal(tmp_path)


def test_a_failed_rename_is_an_error(tmp_path: Path) -> None:
    j = journal(tmp_path)
    j.write(rec(1))
    # Something else already put a file where record 1 goes: the rename must fail loudly.
    (tmp_path / "metadata" / "record-000000000001").write_text("squatter")
    with pytest.raises(RenameError, match="destination exists"):
        j.write(rec(2))
    assert (tmp_path / "metadata" / "record-000000000001").read_text() == "squatter"


def test_a_record_round_trips_with_its_types() -> None:
    assert JournalRecord.from_payload(RECORD.to_payload()) == RECORD


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("batch_ms", 0, r"field 'batch_ms' is 0"),
        ("completed_ms", "2000", r"field 'completed_ms' is '2000'"),
        ("pending_ms", [3000], r"field 'pending_ms' is \[3000\]"),
        ("names", {"0": "map#0"}, r"field 'names'"),
        ("graph", None, r"field 'graph' is None"),
        ("failed_ms", (1.5,), r"field 'failed_ms'"),
        ("spark_conf", (("a",),), r"field 'spark_conf'"),
        ("epoch", -1, r"field 'epoch' is -1"),
    ],
)
def test_a_record_with_a_field_of_the_wrong_type_is_corrupt(
    field: str, value: object, message: str
) -> None:
    raw = asdict(RECORD) | {field: value}
    with pytest.raises(CorruptRecordError, match=message):
        JournalRecord.from_payload(pickle.dumps(raw), "record-7")


def test_a_record_without_a_field_is_corrupt_and_the_reader_falls_back(tmp_path: Path) -> None:
    raw = asdict(RECORD)
    del raw["spark_app"]
    with pytest.raises(CorruptRecordError, match="record-7: the record has no field 'spark_app'"):
        JournalRecord.from_payload(pickle.dumps(raw), "record-7")
    j = journal(tmp_path)
    j.write(rec(1))
    j.write(rec(2))
    (tmp_path / "metadata" / "record-000000000001").write_bytes(encode_record(pickle.dumps(raw)))
    latest = journal(tmp_path).read_latest()
    assert latest is not None and latest.record == rec(1)


def test_a_program_set_aside_keeps_its_files_whole_and_never_mixes_with_the_new_one(
    tmp_path: Path,
) -> None:
    """MetadataJournal.set_aside: everything of the old program moves to previous/<name>/
    (metadata first), the marker, the owners' epochs and Spark's rdd-checkpoints stay; a
    record the old program's driver still writes afterwards (a driver paused between its
    lease check and its write) is numbered below the new program's, so it is never taken
    as the newest."""
    old = journal(tmp_path)
    for i in range(3):
        old.write(rec(i))
    for name in ("state-0/5000", "outputs/save-0", "quarantine", "owners", "rdd-checkpoints/x"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "state-0/5000/part-00000").write_text("old state")

    new = MetadataJournal(LocalFileSystem(), str(tmp_path))
    new.check_directory(create=True)
    assert new.holds_records()
    aside = Path(new.set_aside("before-epoch-000000000002"))
    assert aside == tmp_path / "previous" / "before-epoch-000000000002"
    assert sorted(os.listdir(tmp_path)) == [
        "DSTREAM",
        "metadata",
        "owners",
        "previous",
        "rdd-checkpoints",
    ]
    assert sorted(os.listdir(aside)) == ["metadata", "outputs", "quarantine", "state-0"]
    assert (aside / "state-0/5000/part-00000").read_text() == "old state"
    assert not new.holds_records() and new.read_latest() is None
    moved = MetadataJournal(LocalFileSystem(), str(aside)).read_latest()
    assert moved is not None and (moved.seq, moved.record) == (2, rec(2))

    old.write(rec(99))  # the old driver's one stray write, into the new metadata/
    first = new.write(replace(rec(100), epoch=4))
    assert first > 3
    latest = new.read_latest()
    assert latest is not None and latest.record == replace(rec(100), epoch=4)
