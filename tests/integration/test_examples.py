"""Every program in examples/ runs as a user copies it, on the real clock, and gives the
answer it promises (on the session's SparkContext: each example's
``SparkContext.getOrCreate`` returns it, and its ``ssc.stop()`` is kept from stopping it)."""

from __future__ import annotations

import runpy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import dstream

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def example(sc: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    stop = dstream.StreamingContext.stop

    def keep_spark(self: Any, stopSparkContext: bool = True, stopGraceFully: bool = False) -> None:
        stop(self, stopSparkContext=False, stopGraceFully=stopGraceFully)

    monkeypatch.setattr(dstream.StreamingContext, "stop", keep_spark)

    def load(name: str) -> Any:
        return runpy.run_path(str(EXAMPLES / name), run_name="example")["main"]

    return load


def test_every_example_is_tested() -> None:
    tested = {"file_wordcount", "windowed_counts", "recoverable_totals", "sessions_track"}
    tested |= {"live_query", "bad_records", "heavy_hitters", "table_output"}
    assert {p.stem for p in EXAMPLES.glob("*.py")} == tested


def test_file_wordcount_counts_every_word_written_once(example: Any) -> None:
    totals = example("file_wordcount.py")(3)
    # The writer drops 10 words a file, the five words in turn: equal counts, all counted.
    assert sum(totals.values()) > 0 and sum(totals.values()) % 10 == 0
    assert len(set(totals.values())) == 1 and len(totals) == 5


def test_the_incremental_window_equals_the_window_summed_again(example: Any) -> None:
    windows = example("windowed_counts.py")(4)
    assert len(windows) >= 3
    for _, incremental, summed in windows:
        assert incremental and incremental == summed


def test_sessions_start_count_end_and_time_out(example: Any) -> None:
    seen = example("sessions_track.py")()
    states = [dict(s) for _, s in seen]
    assert states[:4] == [
        {"ann": 1, "bob": 1},
        {"ann": 2, "bob": 1, "cat": 1},
        {"ann": 2, "cat": 1},  # bob logged out
        {"ann": 2, "cat": 2},
    ]
    assert states[4] == {"cat": 2}  # ann: 3 s without events
    assert states[5:7] == [{"cat": 2}, {}]  # cat: 3 s without events
    assert states[7] == {"ann": 1}  # a new session


def test_a_malformed_line_is_set_aside_and_the_totals_go_on(example: Any) -> None:
    result = example("bad_records.py")()
    assert result["totals"] == [("ann", 5), ("bob", 1), ("cat", 5)]
    ((record, operator, error),) = result["quarantined"]
    assert record == "'bob one'" and operator.startswith("map at bad_records.py")
    assert error.startswith("ValueError")


def test_live_queries_answer_while_the_program_runs(example: Any) -> None:
    answer = example("live_query.py")(3)
    assert answer["keys"] > 0
    ((count,),) = [answer["lookup"]]
    # Later answers read later intervals of a running total: never smaller.
    (first, top_count), *_ = answer["sql_top3"]
    assert first == answer["top_word"] and count >= top_count > 0


def test_recoverable_totals_resume_from_their_checkpoint(example: Any, tmp_path: Path) -> None:
    main = example("recoverable_totals.py")
    first = main(str(tmp_path / "ckpt"), 2)
    second = main(str(tmp_path / "ckpt"), 2)
    assert (first["resumed"], second["resumed"]) == (False, True)
    # Every interval of the first run is still there once, and the second run added more.
    assert set(first["saved"]) < set(second["saved"])
    assert Counter(second["saved"]).most_common(1)[0][1] == 1


def test_heavy_hitters_are_all_found_and_never_undercounted(example: Any) -> None:
    result = example("heavy_hitters.py")(4)
    found, exact, truth = result["found"], result["exact"], result["truth"]
    assert truth and truth <= set(found)  # none missed
    for pair in truth:
        # Count-Min only overcounts, and no failure lost anything here.
        assert found[pair] >= exact[pair]
    assert all(e + result["bound"] >= result["threshold"] for e in found.values())
    assert len(found) <= 2 * len(truth)  # few false positives


def test_table_output_appends_each_interval_once_and_is_read_live(example: Any) -> None:
    got = example("table_output.py")(4)
    n = got["totals"]["cat"]  # one cat per interval: the intervals committed
    assert 1 <= n <= 4 and got["totals"] == {"ann": 3 * n, "bob": 2 * n, "cat": n}
    assert 0 <= got["live_intervals"] <= n
