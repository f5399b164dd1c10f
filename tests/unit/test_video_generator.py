"""The video event generator: deterministic, sliced by event time, realistic sessions, and
files that a file stream (or a replay by modification time) assigns to the right interval."""

from __future__ import annotations

import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

import pytest
from video.events import ERROR, EXIT, HEARTBEAT, JOIN, format_event, parse_event
from video.generator import (
    JOIN_ERRORS,
    EventGenerator,
    GeneratorConfig,
    Incident,
    LiveWriter,
    slice_file_name,
    write_slices,
)

from tests.video_case import generator_config


def sessions_of(slices: list[list[tuple]]) -> dict[int, list[tuple]]:
    by_sid: dict[int, list[tuple]] = defaultdict(list)
    for events in slices:
        for e in events:
            by_sid[e[2]].append(e)
    return by_sid


def test_the_same_seed_gives_the_same_events_and_another_seed_others() -> None:
    a = EventGenerator(generator_config(seed=3)).slices(15)
    b = EventGenerator(generator_config(seed=3)).slices(15)
    c = EventGenerator(generator_config(seed=4)).slices(15)
    assert a == b
    assert a != c
    assert sum(map(len, a)) > 1000


def test_slices_hold_the_events_of_their_time_in_order() -> None:
    cfg = generator_config(origin_ms=1_700_000_000_000)
    slices = EventGenerator(cfg).slices(12)
    for k, events in enumerate(slices):
        begin = cfg.origin_ms + k * cfg.slice_ms
        assert all(begin <= e[1] < begin + cfg.slice_ms for e in events)
        assert events == sorted(events, key=lambda e: (e[1], e[2]))


def test_each_session_is_a_join_then_heartbeats_then_at_most_one_end() -> None:
    cfg = generator_config()
    for events in sessions_of(EventGenerator(cfg).slices(40)).values():
        assert events[0][0] == JOIN
        times = [e[1] for e in events]
        assert times == sorted(set(times))  # strictly increasing
        kinds = [e[0] for e in events[1:]]
        assert all(k == HEARTBEAT for k in kinds[:-1])
        # A heartbeat accounts for the whole time since the previous one.
        beats = [e for e in events if e[0] == HEARTBEAT]
        assert all(e[4] + e[5] == cfg.heartbeat_ms for e in beats)


def test_sessions_are_realistic_and_the_incident_is_visible() -> None:
    cfg = GeneratorConfig(
        seed=11, sessions=600, heartbeat_ms=2000, incident=Incident(start_s=60, length_s=60)
    )
    slices = EventGenerator(cfg).slices(300)
    sessions = sessions_of(slices)
    ends = defaultdict(int)
    lengths = []
    for events in sessions.values():
        last = events[-1]
        if last[1] < cfg.origin_ms + 240_000:  # ended (or went silent) well before the end
            ends["silent" if last[0] == HEARTBEAT else last[0]] += 1
            if len(events) > 2:
                lengths.append(last[1] - events[0][1])
    # Join failures with their codes, exits, playback failures and silent sessions.
    assert ends[EXIT] > ends[ERROR] > 0 and ends["silent"] > 0
    codes = {e[3] for events in sessions.values() for e in events if e[0] == ERROR}
    assert codes & set(JOIN_ERRORS)
    # A long tail: the longest sessions last many times the median one.
    assert max(lengths) > 5 * statistics.median(lengths)
    # Viewers come back: fewer distinct viewers than sessions.
    assert len({events[0][3] for events in sessions.values()}) < 0.9 * len(sessions)

    def buffering_ratio(during: bool, hit: bool) -> float:
        buf = play = 0
        for events in sessions.values():
            join = events[0]
            on = (join[6], join[9]) == ("level3", "eu-west")
            for e in events:
                inside = 62_000 <= e[1] < 120_000
                if e[0] == HEARTBEAT and on == hit and inside == during and e is not events[1]:
                    buf, play = buf + e[4], play + e[5]
        return buf / (buf + play)

    assert buffering_ratio(during=True, hit=True) > 0.25
    assert buffering_ratio(during=False, hit=True) < 0.03
    assert buffering_ratio(during=True, hit=False) < 0.03


def test_events_round_trip_through_text() -> None:
    for events in EventGenerator(generator_config()).slices(5):
        for e in events:
            assert parse_event(format_event(e)) == e
    with pytest.raises(ValueError, match=r"player event 'Q\\t1': expected a kind J, H, X or E"):
        parse_event("Q\t1")
    with pytest.raises(ValueError, match="must be integers"):
        parse_event("X\tsoon\t1\t0")


def test_slices_are_written_atomically_with_their_start_as_modification_time(
    tmp_path: Path,
) -> None:
    cfg = generator_config(origin_ms=1_700_000_000_000)
    written = write_slices(tmp_path, cfg, 4)
    assert written == EventGenerator(cfg).slices(4)
    assert sorted(os.listdir(tmp_path)) == [slice_file_name(k) for k in range(4)]
    for k, events in enumerate(written):
        path = tmp_path / slice_file_name(k)
        assert path.stat().st_mtime_ns == (cfg.origin_ms + k * cfg.slice_ms) * 1_000_000
        assert [parse_event(line) for line in path.read_text().splitlines()] == events


def test_the_live_writer_writes_each_slice_once_its_time_has_come(tmp_path: Path) -> None:
    # An origin in the past: every slice's time has come, so they are all written at once.
    origin = (int(time.time() * 1000) // 1000 - 30) * 1000
    writer = LiveWriter(str(tmp_path), generator_config(origin_ms=origin), slices=3)
    writer.start()
    writer.join(60)
    assert not writer.is_alive() and writer.written == 3
    assert sorted(os.listdir(tmp_path)) == [slice_file_name(k) for k in range(3)]
    # ... and one whose time lies ahead is not written before it.
    later = LiveWriter(str(tmp_path / "later"), generator_config(origin_ms=origin + 3_600_000))
    later.start()
    later.stop()
    assert later.written == 0


def test_invalid_generator_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="heartbeat_ms 100 at least 200 ms"):
        GeneratorConfig(heartbeat_ms=100)
    with pytest.raises(ValueError, match=r"p_silent 1.5 must be in \[0, 1\]"):
        GeneratorConfig(p_silent=1.5)
