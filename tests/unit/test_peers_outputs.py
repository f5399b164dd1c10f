"""The peers harness's pure part (bench/peers/outputs.py, #62): output lines of every system
parsed alike, folded into results, and judged key by key as exact, lost or doubled."""

from __future__ import annotations

from bench.peers.outputs import fold, judge, latency_summary, parse_line


def test_lines_of_every_system_parse_alike() -> None:
    plain = parse_line("g 1796613800 12 1796613800885\n", 1796613801000)
    flink = parse_line("2> g 1796613800 12 1796613800885", 1796613801000)
    sql = parse_line("1> +U[g 1796613800 12 1796613800885]", 1796613801000)
    assert plain == flink == sql
    assert plain is not None and plain.value == 12 and plain.arrived - plain.ts == 115
    assert parse_line("1> -U[t k000001 3 1796613800885]", 0) is None
    assert parse_line("WARNING: Using incubator modules", 0) is None
    assert parse_line("t k000001 x 1", 0) is None


def test_partial_counts_add_up_and_upserts_keep_the_largest() -> None:
    lines = ["g 5 2 100", "g 5 3 120", "g 6 1 130", "t k1 4 100", "t k1 9 140", "t k1 4 100"]
    outs = [o for o in (parse_line(x, 200) for x in lines) if o is not None]
    assert fold((o for o in outs if o.kind == "g"), upsert=False) == {"5": 5, "6": 1}
    assert fold((o for o in outs if o.kind == "g"), upsert=True) == {"5": 3, "6": 1}
    # A replay printing an older total again changes nothing.
    assert fold((o for o in outs if o.kind == "t"), upsert=True) == {"k1": 9}


def test_judge_names_lost_doubled_and_unexpected_keys() -> None:
    v = judge({"a": 1, "b": 1, "c": 4, "z": 1}, {"a": 1, "b": 2, "c": 2, "d": 1})
    assert (v.keys, v.exact, v.lost, v.doubled, v.unexpected) == (4, 1, 2, 1, 1)
    assert not v.ok
    assert judge({"a": 1}, {"a": 1}).ok


def test_latency_is_read_time_minus_newest_event_time() -> None:
    outs = [o for o in (parse_line(f"t k{i} 1 {1000 + i}", 2000 + 2 * i) for i in range(100)) if o]
    s = latency_summary(outs)
    assert s["outputs"] == 100
    assert s["p50_ms"] == 1049 and s["p95_ms"] == 1094
    assert latency_summary([])["p95_ms"] == float("inf")


def test_back_on_schedule_is_the_first_line_after_which_all_are_within_the_bound() -> None:
    from bench.peers.recovery import back_on_schedule

    # (arrived, newest event time): killed at 100, late lines until 400, one late at 600.
    lines = [(90, 80), (150, 90), (400, 100), (450, 440), (600, 200), (700, 690), (800, 790)]
    outs = [o for o in (parse_line(f"t k {i} {ts}", a) for i, (a, ts) in enumerate(lines)) if o]
    assert back_on_schedule(outs, killed_ms=100, bound_ms=100) == 700
    assert back_on_schedule(outs, killed_ms=100, bound_ms=1000) == 150
    assert back_on_schedule(outs[:5], killed_ms=100, bound_ms=100) is None


def test_windowed_lines_name_their_window_and_one_window_is_one_latency() -> None:
    from bench.peers.outputs import windows

    lines = ["w 30000 kato 3 1500", "w 30000 mi 2 1900", "2> w 31000 kato 1 1900", "k 31000 mi 4 1"]
    outs = [o for o in (parse_line(x, 2000 + i) for i, x in enumerate(lines)) if o is not None]
    assert [o.window for o in outs] == ["30000", "30000", "31000", "31000"]
    assert windows(o for o in outs if o.kind == "w") == {
        "30000": {"kato": 3, "mi": 2},
        "31000": {"kato": 1},
    }
    # w 30000: read 2001 - newest 1900; w 31000: 2002 - 1900; k 31000: 2003 - 1.
    assert sorted(latency_summary(outs)[k] for k in ("p50_ms", "max_ms")) == [102, 2002]


def test_wordcount_is_judged_on_the_fullest_window() -> None:
    from bench.peers.outputs import judge_window

    lines = ["w 1 a 1 0", "w 2 a 3 0", "w 2 b 1 0", "w 3 a 2 0"]
    outs = [o for o in (parse_line(x, 0) for x in lines) if o is not None]
    assert judge_window(outs, {"a": 3, "b": 1}).ok
    assert judge_window(outs, {"a": 3, "b": 2}).lost == 1


def test_topk_is_exact_but_for_ties_at_the_last_place() -> None:
    from bench.peers.outputs import judge_top

    want = {"a": 5, "b": 4, "c": 3, "d": 3, "e": 1}
    tie = [
        o for o in (parse_line(f"k 9 {w} {c} 0", 0) for w, c in [("a", 5), ("b", 4), ("d", 3)]) if o
    ]
    assert judge_top(tie, want, 3).ok  # c or d: either is a top 3
    wrong = [o for o in (parse_line(f"k 9 {w} {c} 0", 0) for w, c in [("a", 5), ("e", 1)]) if o]
    v = judge_top(wrong, want, 3)
    assert (v.exact, v.unexpected, v.lost) == (1, 1, 1) and not v.ok


def test_the_latency_timeline_gives_each_steps_p95_from_before_the_kill() -> None:
    from bench.peers.outputs import Output
    from bench.peers.recovery import latency_timeline

    def line(arrived: int, latency: int) -> Output:
        return Output("t", "k", 1, arrived - latency, arrived)

    outs = [line(100, 5), line(900, 50), line(1000, 400), line(1500, 300), line(2100, 20)]
    # Steps of 1 s from 0.5 s before the kill at 1000: the line at 100 is older, left out.
    rows = latency_timeline(outs, killed_ms=1000, step_ms=1000, before_ms=500)
    assert [(r["from_s"], r["lines"], r["max_ms"]) for r in rows] == [
        (-1.0, 1, 50),
        (0.0, 2, 400),
        (1.0, 1, 20),
    ]
