"""The video monitor (apps/video_monitor.py) on local Spark against its oracle.

One generated run (tests/video_case.py: a burst of joins, join failures, sessions that go
silent and time out, an incident) is written as one file per interval, its start as the
file's modification time; the monitor reads it on a ManualClock. Every interval's saved
records (every metric of every group) and alerts must equal the oracle's, the incident must
be alerted within two intervals, and the ad-hoc queries (RDD and SQL) on the track stream's
state at two intervals must answer what the oracle's sessions answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import video_monitor
from video import queries
from video.events import parse_event
from video.generator import write_slices
from video.oracle import Oracle

from dstream import StreamingSettings, Time
from tests.run_app import run_app
from tests.video_case import APPS, INCIDENT, INTERVALS, MONITOR, generator_config

from .conftest import Harness

T0 = 1_700_000_000_000
QUERY_AT = (T0 + 8_000, T0 + INTERVALS * 1000)  # batch times of the ad-hoc queries
CUSTOMER = "streamco"


def read_interval(directory: Path) -> list[dict[str, Any]]:
    assert (directory / "_DSTREAM_COMMIT").exists(), f"{directory} was not committed"
    records = []
    for part in sorted(os.listdir(directory)):
        if part.startswith("part-"):
            records.extend(json.loads(line) for line in (directory / part).read_text().splitlines())
    return records


def test_every_metric_and_alert_equals_the_oracle(harness: Any, tmp_path: Path) -> None:
    incoming, out = tmp_path / "in", tmp_path / "out"
    incoming.mkdir()
    slices = write_slices(incoming, generator_config(origin_ms=T0), INTERVALS)
    # One malformed heartbeat beside slice 3 (read by the interval ending at T0 + 4 s), as
    # the app runs it: set aside, not a failure of that interval and of every later one.
    poison = incoming / "poison.txt"
    poison.write_text(f"H\t{T0 + 3500}\t2\tnot-a-number\t0\t1000\t0\n")
    os.utime(poison, ns=((T0 + 3000) * 1_000_000,) * 2)

    h: Harness = harness(start_ms=T0, settings=StreamingSettings(bad_records="quarantine"))
    events = h.ssc.textFileStream(str(incoming)).map(parse_event)
    monitor = video_monitor.build(events, MONITOR, partitions=2, group_partitions=1)
    video_monitor.save(monitor, str(out))
    answers: dict[int, dict[str, Any]] = {}

    def ask(time: Any, rdd: Any) -> None:
        if time.ms in QUERY_AT:
            from pyspark.sql import SparkSession

            spark = SparkSession.builder.getOrCreate()
            queries.register_view(spark, rdd, "sessions")
            answers[time.ms] = queries.answers(rdd, CUSTOMER)
            answers[-time.ms] = queries.sql_answers(spark, CUSTOMER)

    monitor.sessions.foreachRDD(ask)
    monitor.sessions.remember(INTERVALS)  # what the app's --history does: look back later
    h.ssc.start()
    h.run_batches(INTERVALS)

    oracle = Oracle(MONITOR)
    expected_answers = {}
    reported: dict[int, list[dict[str, Any]]] = {}
    raw: dict[int, int] = {}
    for i, events_of_slice in enumerate(slices):
        batch_ms = T0 + (i + 1) * 1000
        expected = oracle.step(batch_ms, events_of_slice)
        if batch_ms in QUERY_AT:
            expected_answers[batch_ms] = oracle.answers(CUSTOMER)
        got = read_interval(out / f"metrics-{batch_ms}")
        assert len(got) == len(expected), batch_ms
        assert {(r["dim"], r["value"]): r for r in got} == expected, batch_ms
        alerts = read_interval(out / f"alerts-{batch_ms}")
        assert alerts == Oracle.alerts(expected), batch_ms
        reported[batch_ms] = alerts
        raw[batch_ms] = sum(r["alert"] for r in expected.values())
    assert sum(oracle.timed_out) >= 20  # the run did close silent sessions

    # The incident (its first interval ends at T0 + (start + 1) s) is alerted within two.
    first = T0 + (int(INCIDENT.start_s) + 1) * 1000
    hit = {"dim": "cdn_region", "value": f"{INCIDENT.cdn}/{INCIDENT.region}"}
    alerted = [
        ms
        for ms in range(first - 5000, first + 3000, 1000)
        if any(hit.items() <= r.items() for r in read_interval(out / f"alerts-{ms}"))
    ]
    assert alerted and first <= alerted[0] <= first + 2000
    # One CDN in one region: its group is reported, on both kinds, and accounts for the
    # broader groups that alert with it (its CDN, its region, that region's ISPs...).
    name = f"{INCIDENT.cdn}/{INCIDENT.region}"
    during = [a for ms in reported for a in reported[ms] if a["value"] == name]
    assert {a["kind"] for a in during} == {"buffering", "join_failures"}
    explained = {e for a in during for e in a["explains"]}
    assert {f"cdn={INCIDENT.cdn}", f"region={INCIDENT.region}"} <= explained
    assert sum(map(len, reported.values())) < sum(raw.values())

    (bad,) = h.ssc.quarantined()
    assert bad.time.ms == T0 + 4000 and "not-a-number" in bad.record
    assert bad.error.startswith("ValueError: player event") and bad.operator.startswith("map")
    # Going back to debug: the session state of an interval long past, queried at the end.
    looked_back = queries.answers(monitor.sessions.at(Time(QUERY_AT[0])), CUSTOMER)
    assert looked_back == expected_answers[QUERY_AT[0]]
    for ms in QUERY_AT:
        assert answers[ms] == expected_answers[ms]
        assert answers[-ms] == expected_answers[ms]
        assert answers[ms]["failed_sessions"] > 0 and answers[ms]["active_sessions"] > 100
        # The paper's "how many sessions have a bitrate above X": some, not all.
        assert 0 < answers[ms]["sessions_above_bitrate"] < answers[ms]["active_sessions"]


def test_the_monitor_runs_end_to_end_on_its_generator(tmp_path: Path) -> None:
    args = ["--seconds", "5", "--out", str(tmp_path), "--sessions", "300"]
    done = run_app(APPS / "video_monitor.py", [*args, "--conf", "spark.ui.enabled=false"])
    lines = done.stdout.splitlines()
    assert any(" sessions | window: " in line for line in lines), done.stdout[-2000:]
    assert lines[-1] == "stopped cleanly"
    saved = [d for d in os.listdir(tmp_path) if d.startswith("metrics-")]
    assert len(saved) >= 3
    assert any(read_interval(tmp_path / d) for d in saved)
