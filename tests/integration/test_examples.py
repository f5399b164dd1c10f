"""Every program in examples/ runs as a user copies it, on the real clock, and gives the
answer it promises (on the session's SparkContext: each example's
``SparkContext.getOrCreate`` returns it, and its ``ssc.stop()`` is kept from stopping it)."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
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


def test_no_example_chooses_its_master() -> None:
    """The master is spark-submit's (--master, MASTER, spark-defaults) or PYSPARK_SUBMIT_ARGS';
    a program that sets one in its code runs there whatever it is submitted with."""
    setting = [p.name for p in EXAMPLES.glob("*.py") if "setMaster" in p.read_text()]
    assert setting == []


def test_an_example_runs_on_the_master_spark_submit_gives(tmp_path: Path) -> None:
    """`spark-submit --master M examples/windowed_counts.py` runs on M (it ran on the
    local[2] the example hard-coded, without a word). Read from the application's event
    log, which records the master the SparkContext ran on."""
    events = tmp_path / "events"
    events.mkdir()
    python = sys.executable
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("MASTER", None)
    ran = subprocess.run(
        [
            str(Path(python).with_name("spark-submit")),
            "--master",
            "local[1]",
            *("--conf", "spark.ui.enabled=false", "--conf", "spark.eventLog.enabled=true"),
            *("--conf", f"spark.eventLog.dir=file:{events}"),
            *("--conf", "spark.eventLog.compress=false"),
            str(EXAMPLES / "windowed_counts.py"),
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
    assert "windows; the incremental and the summed window agree: True" in ran.stdout
    lines = [
        ln
        for f in events.rglob("*")
        if f.is_file() and not f.name.startswith(".")
        for ln in f.read_text().splitlines()
    ]
    masters = {
        props["spark.master"]
        for event in map(json.loads, lines)
        if event["Event"] == "SparkListenerEnvironmentUpdate"
        for props in [event["Spark Properties"]]
    }
    assert masters == {"local[1]"}


def test_table_output_appends_each_interval_once_and_is_read_live(example: Any) -> None:
    got = example("table_output.py")(4)
    n = got["totals"]["cat"]  # one cat per interval: the intervals committed
    assert 1 <= n <= 4 and got["totals"] == {"ann": 3 * n, "bob": 2 * n, "cat": n}
    assert 0 <= got["live_intervals"] <= n
    assert got["running"] == got["totals"]  # the upserted running totals, newest per word
