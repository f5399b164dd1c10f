"""The video oracle by hand (the metrics of a few sessions worked out on paper), and on
the shared generated run (the incident is found, silent sessions time out); then the
monitor's own per-session logic (video.session, video.metrics) run through a plain-Python
model of track() and the windows, against the oracle — the streaming program's logic
checked without Spark."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from video import hll
from video.config import ALL, MonitorConfig
from video.events import Event
from video.generator import EventGenerator
from video.metrics import METRICS, alert_kinds, assemble, ended_joins, narrow
from video.oracle import Oracle
from video.session import (
    I_BUFFERING,
    I_JOIN_FAILURES,
    I_PLAY,
    add,
    gauge_items,
    increment_items,
    initialize,
    update,
    viewer_items,
)

from tests.video_case import APPS, INCIDENT, INTERVALS, MONITOR, generator_config

CFG = MonitorConfig(
    window_ms=2000,
    baseline_ms=4000,
    timeout_ms=3000,
    stall_ms=2000,
    alert_min_view_ms=1000,
    hll_precision=6,
)
DIMS = ("acme", "acme/t0", "akamai", "bt", "web", "eu-west")


def join(t: int, sid: int, viewer: int, cdn: str = "akamai") -> Event:
    return ("J", t, sid, viewer, "acme", "acme/t0", cdn, "bt", "web", "eu-west", 3000)


def test_a_few_sessions_worked_out_by_hand() -> None:
    batches: list[list[Event]] = [
        [join(100, 1, 7), join(200, 2, 8), ("H", 300, 99, 800, 0, 2000, 0)],  # 99: unknown
        [("H", 1100, 1, 3000, 500, 1500, 2), ("E", 1200, 2, "CDN_403")],
        [("H", 2100, 1, 1500, 1000, 1000, 0), join(2200, 3, 7)],
        [("X", 3100, 1, 1)],
        [],
        [],
        [],
    ]
    oracle = Oracle(CFG)
    out = oracle.run(batches, 1000)
    first = out[0][ALL]
    assert first["join_attempts"] == 2 and first["concurrent_sessions"] == 2
    assert first["join_failure_rate"] == 0.0 and first["plays"] == 0
    assert first["unique_viewers"] == 2 and first["unique_viewers_hll"] == 2
    second = out[1][ALL]  # window: intervals 1-2
    assert second["join_failures"] == 1 and second["join_failure_rate"] == 0.5
    assert second["plays"] == 1 and second["avg_join_time_ms"] == 500
    assert second["buffering_ratio"] == 0.0  # startup is not rebuffering
    assert second["concurrent_sessions"] == 1
    third = out[2][ALL]  # window: intervals 2-3
    assert third["join_attempts"] == 1 and third["join_failures"] == 1
    assert third["viewing_minutes"] == 2500 / 60000
    assert third["buffering_ratio"] == 1000 / (1000 + 2500)
    assert third["avg_bitrate_kbps"] == (3000 * 1500 + 1500 * 1000) / 2500
    assert third["dropped_frames_per_minute"] == 2 * 60000 / 2500
    assert third["sessions_over_buffering_threshold"] == 1  # 1000 / 3500 > 5 %
    assert third["sessions_buffering_now"] == 0  # 1000 buffering vs 1000 played
    assert third["unique_viewers"] == 2  # viewer 7 twice (sessions 1 and 3), viewer 8
    fourth = out[3][ALL]
    assert fourth["exits"] == fourth["exits_during_buffering"] == 1
    assert fourth["exits_before_start"] == 0 and fourth["concurrent_sessions"] == 1
    # Session 3 joined in the interval ending at 3 s and then said nothing: stalled at
    # 5 s (2 s of silence), closed by the 3 s timeout at 6 s; nothing is left to report.
    assert [r[ALL]["stalled_sessions"] for r in out[3:5]] == [0, 1]
    assert out[4][ALL]["concurrent_sessions"] == 1
    assert oracle.timed_out == [0, 0, 0, 0, 0, 1, 0]  # ended sessions are not "timed out"
    assert ALL not in out[5] and out[6] == {}
    assert oracle.sessions == {}  # the ended ones (1, 2) were closed at 7 s and 5 s


def test_the_alert_compares_with_the_groups_own_baseline() -> None:
    calm = [("H", 1000 * i + 500, 1, 3000, 0, 2000, 0) for i in range(1, 4)]
    batches = [[join(100, 1, 1)], *([e] for e in calm), [("H", 4500, 1, 400, 1500, 500, 0)]]
    out = Oracle(CFG).run(batches, 1000)
    assert [r[("cdn", "akamai")]["alert"] for r in out] == [False] * 4 + [True]
    assert not out[4][ALL]["alert"]  # "all" is not an alert dimension
    assert out[4][("cdn", "akamai")]["baseline_buffering_ratio"] == 0.0


def test_every_metric_has_a_definition_in_the_readme() -> None:
    run = Oracle(MONITOR).run(EventGenerator(generator_config()).slices(3), 1000)
    assert set(run[-1][ALL]) == {"dim", "value", *METRICS}
    readme = (APPS / "video" / "README.md").read_text()
    documented = {line.split("`")[1] for line in readme.splitlines() if line.startswith("| `")}
    assert documented == set(METRICS)


def test_the_generated_run_has_timeouts_and_its_incident_is_found() -> None:
    cfg = generator_config()
    oracle = Oracle(MONITOR)
    out = oracle.run(EventGenerator(cfg).slices(INTERVALS), 1000)
    assert sum(oracle.timed_out) >= 20
    start = int(INCIDENT.start_s)  # the incident's first interval is out[start]
    hit = ("cdn_region", f"{INCIDENT.cdn}/{INCIDENT.region}")
    alerted = [i for i, r in enumerate(out) if hit in r and r[hit]["alert"]]
    assert alerted and start <= alerted[0] <= start + 2
    for i, records in enumerate(out):
        for (dim, value), r in records.items():
            if "buffering" in r["alert_kinds"]:
                assert i >= start, (i, dim, value)
                assert dim not in ("cdn", "region", "cdn_region") or value in (
                    INCIDENT.cdn,
                    INCIDENT.region,
                    hit[1],
                )
    # Its join failures too (a join's outcome comes up to 4 s after it): within 5 intervals.
    joins = [i for i, r in enumerate(out) if "join_failures" in r[hit]["alert_kinds"]]
    assert joins and start <= joins[0] <= start + 5
    # Narrowed, one incident is reported once per kind, under its CDN-in-region group.
    for records in out[start:]:
        for a in Oracle.alerts(records):
            if a["kind"] == "buffering":
                assert (a["dim"], a["value"]) == hit
    # The approximate count stays near the exact one.
    sigma = hll.relative_error(MONITOR.hll_precision)
    for r in out[-1].values():
        assert abs(r["unique_viewers_hll"] - r["unique_viewers"]) <= max(
            2, 3 * sigma * r["unique_viewers"]
        )


def monitor_logic(cfg: MonitorConfig, batches: list[list[Event]]) -> list[dict[Any, Any]]:
    """What the streaming program computes, without Spark: track()'s rules (events tagged
    with their batch, timeout after the interval's events), then the sums, sketches and
    gauges of video.session, assembled by video.metrics.assemble."""
    states: dict[int, Any] = {}
    last: dict[int, int] = {}
    history: list[tuple[dict[Any, Any], dict[Any, set[int]]]] = []
    out = []
    for i, events in enumerate(batches, start=1):
        t = i * cfg.batch_ms
        changed = set()
        for e in events:
            old = states.get(e[2])
            new = initialize(e[2], (t, e)) if old is None else update(e[2], old, (t, e))
            if new is not None:
                states[e[2]], last[e[2]] = new, t
                changed.add(e[2])
        sums: dict[Any, Any] = {}
        viewers: dict[Any, set[int]] = defaultdict(set)
        for sid in changed:
            for g, inc in increment_items(states[sid]):
                sums[g] = add(sums[g], inc) if g in sums else inc
            for g, v in viewer_items(states[sid]):
                viewers[g].add(v)
        history.append((sums, viewers))
        for sid in [s for s in states if last[s] <= t - cfg.timeout_ms]:
            del states[sid]
        parts: dict[Any, dict[str, Any]] = defaultdict(dict)
        for key, span in (("w", cfg.window_ms), ("b", cfg.baseline_ms)):
            for s, v in history[-(span // cfg.batch_ms) :]:
                for g, full in s.items():
                    # b: (rebuffering ms, played ms, ended join attempts, failed ones)
                    inc = (
                        (full[I_BUFFERING], full[I_PLAY], ended_joins(full), full[I_JOIN_FAILURES])
                        if key == "b"
                        else full
                    )
                    parts[g][key] = add(parts[g][key], inc) if key in parts[g] else inc
                    if key == "w":
                        seen = parts[g].setdefault("seen", set())
                        seen |= v[g]
        for state in states.values():
            for g, gauge in gauge_items(state, t, cfg):
                parts[g]["g"] = add(parts[g]["g"], gauge) if "g" in parts[g] else gauge
        records = {}
        for g, p in parts.items():
            seen = p.pop("seen", None)
            if seen is not None:
                p["u"], p["h"] = len(seen), hll.sketch_of(seen, cfg.hll_precision)
            record = assemble(g, p, cfg)
            if record is not None:
                records[g] = record
        out.append(records)
    return out


def test_the_monitors_session_logic_equals_the_oracle() -> None:
    batches = EventGenerator(generator_config(seed=2)).slices(INTERVALS)
    assert monitor_logic(MONITOR, batches) == Oracle(MONITOR).run(batches, 1000)


def alerting(dim: str, value: str, kinds: list[str], excess: float) -> dict[str, Any]:
    return {
        "dim": dim,
        "value": value,
        "alert": True,
        "alert_kinds": kinds,
        "excess_buffering_ms": excess,
        "excess_join_failures": excess,
    }


def test_narrowing_reports_the_cdn_in_region_for_the_groups_it_accounts_for() -> None:
    groups = [
        alerting("cdn_region", "level3/eu-west", ["buffering", "join_failures"], 1000.0),
        alerting("cdn", "level3", ["buffering"], 1100.0),  # contains it
        alerting("region", "eu-west", ["buffering", "join_failures"], 5000.0),  # contains it
        alerting("isp", "bt", ["buffering"], 1500.0),  # at most twice its excess
        alerting("device", "roku", ["buffering"], 2500.0),  # more than twice: on its own
        alerting("cdn", "akamai", ["buffering"], 10.0),  # another CDN: never explained
        alerting("region", "asia", ["join_failures"], 1.0),  # another region
    ]
    out = [(a["kind"], a["dim"], a["value"], a["explains"]) for a in narrow(groups)]
    assert out == [
        ("buffering", "cdn", "akamai", []),
        ("buffering", "cdn_region", "level3/eu-west", ["cdn=level3", "isp=bt", "region=eu-west"]),
        ("buffering", "device", "roku", []),
        ("join_failures", "cdn_region", "level3/eu-west", ["region=eu-west"]),
        ("join_failures", "region", "asia", []),
    ]
    assert narrow(list(reversed(groups))) == narrow(groups)  # order of the input: none
    # Without a CDN-in-region alert, every alerting group is reported.
    assert len(narrow(groups[1:])) == 7


def test_two_cdn_in_region_alerts_credit_a_shared_group_to_the_larger() -> None:
    groups = [
        alerting("cdn_region", "level3/eu-west", ["buffering"], 100.0),
        alerting("cdn_region", "akamai/eu-west", ["buffering"], 900.0),
        alerting("region", "eu-west", ["buffering"], 1200.0),
    ]
    by = {a["value"]: a["explains"] for a in narrow(groups)}
    assert by == {"akamai/eu-west": ["region=eu-west"], "level3/eu-west": []}


def with_window(baseline: tuple[int, ...], window: tuple[int, ...]) -> tuple[int, ...]:
    """The baseline window's sums: the part before the window, plus the window."""
    return tuple(a + b for a, b in zip(baseline, window, strict=True))


def test_a_join_failure_alert_needs_a_jump_beyond_chance() -> None:
    cfg = MonitorConfig(alert_min_joins=10)
    calm = (0, 0, 20, 1)  # before the window: 1 of 20 ended attempts failed
    # 6 of 10 failed: 60 % >= the 15 % floor and >= 3 x 5 %, and 5.6 standard deviations
    # above the baseline's rate.
    six = (0, 0, 10, 6)
    assert alert_kinds("cdn", six, with_window(calm, six), cfg) == ["join_failures"]
    # 3 of 10: above the floor and 3 x the baseline, but 2.3 standard deviations: chance.
    three = (0, 0, 10, 3)
    assert alert_kinds("cdn", three, with_window(calm, three), cfg) == []
    # Too few ended attempts in the window; not an alert dimension.
    five = (0, 0, 5, 5)
    assert alert_kinds("cdn", five, with_window(calm, five), cfg) == []
    assert alert_kinds("all", six, with_window(calm, six), cfg) == []
