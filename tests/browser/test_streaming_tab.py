"""The Spark UI's Streaming tab in a real browser (headless Chromium), and dstream's gauges
through Spark's PrometheusServlet, for a program with two StreamingContexts on one
SparkContext (tests/browser/streaming_program.py, in its own process: the test suite's shared
SparkContext has no UI).

What a person would check: the page shows the run's own numbers (the batch times, records and
delays ``ssc.recentProgress`` reports), its charts are drawn, its job links lead to jobs Spark
has, a failed batch shows its error, the metrics carry the same values, two contexts do not mix,
and a stopped context says so. Screenshots are kept under the test's directory and checked to
be real pictures.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from . import chromium
from .dom import Element, parse

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).with_name("streaming_program.py")
BATCHES = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Run:
    process: subprocess.Popen[str]
    ui: str
    app_id: str
    files: str  # key of the file-reading context
    queue: str  # key of the queue context
    stuck: str  # key of the context whose first interval never ends
    contexts: dict[str, Any]
    work: Path

    def command(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.ui + path, timeout=60) as response:
            return str(response.read().decode())

    def dom(self, path: str) -> Element:
        return parse(chromium.dump_dom(self.ui + path, self.work))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    chromium.chromium()  # installed before the program starts
    work = tmp_path_factory.mktemp("streaming-tab")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable)
    process = subprocess.Popen(
        [
            sys.executable,
            str(PROGRAM),
            "--port",
            str(port),
            "--work",
            str(work / "program"),
            "--batches",
            str(BATCHES),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(work / "program.log", "w"),  # noqa: SIM115
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    if not first:
        process.wait(60)
        raise AssertionError(
            f"the program exited {process.returncode}: {(work / 'program.log').read_text()[-3000:]}"
        )
    report = json.loads(first)
    yield Run(
        process,
        report["ui"].replace(f"//{socket.gethostname()}:", "//127.0.0.1:"),
        report["appId"],
        report["files"],
        report["queue"],
        report["stuck"],
        report["contexts"],
        work,
    )
    try:
        process.communicate("exit\n", timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(60)


def ms(value: int | None) -> str:
    return "-" if value is None else f"{value} ms"


def rows_by_batch(page: Element, table_id: str) -> dict[int, Element]:
    table = page.find("table", id=table_id)
    return {int(tr.attrs["data-batch-id"]): tr for tr in table.find_all("tr", cls="batch-row")}


def test_the_page_shows_the_runs_batches_with_their_real_numbers(run: Run) -> None:
    page = run.dom(f"/dstream/?id={run.files}")
    progress = run.contexts[run.files]["progress"]
    assert len(progress) >= BATCHES
    summary = page.find(id="context-summary").clean_text
    assert summary.startswith("Running batches of 1 second since ")
    assert f"({len(progress)} completed batches" in summary
    assert f"{sum(p['numInputRows'] for p in progress):,} records" in summary
    rows = rows_by_batch(page, "completed-batches-table")
    assert sorted(rows) == [p["batchId"] for p in progress]  # every batch, nothing else
    for p in progress:
        row = rows[p["batchId"]]
        assert row.find("td", cls="batch-time").clean_text == p["batchTime"]
        assert row.find("td", cls="records").clean_text == f"{p['numInputRows']:,}"
        durations = p["durationMs"]
        assert row.find("td", cls="scheduling-delay").clean_text == ms(durations["schedulingDelay"])
        assert row.find("td", cls="processing-time").clean_text == ms(durations["processing"])
        assert row.find("td", cls="total-delay").clean_text == ms(durations["totalDelay"])
        files = [f for s in p["sources"] for f in s.get("files", [])]
        read = row.find("td", cls="read").clean_text
        for path in files:
            assert path in read
        # What the source read, in words: no field names, no empty lists ("0 skipped").
        assert "_count" not in read and "0 skipped" not in read, read
    # The poisoned file's batch failed, and says why, in both tables.
    (failed,) = [p for p in progress if p["failed"]]
    assert any("poison-2.txt" in f for s in failed["sources"] for f in s.get("files", []))
    for table in ("completed-batches-table", "failed-batches-table"):
        row = rows_by_batch(page, table)[failed["batchId"]]
        error = row.find("td", cls="error").clean_text
        # The exception first, then where it was raised (the operator, once).
        assert error.startswith("ValueError: poison line in this interval's input"), error
        assert error.count("foreachRDD at") == 1 and "output operation #" not in error, error
        assert row.find("td", cls="outputs").clean_text == "1/2"
    # The state stream: its checkpoint and lineage as the last progress record says.
    (state,) = progress[-1]["stateOperators"]
    state_row = page.find("table", id="states-table").find("tr", cls="state-row")
    assert state_row.find("td", cls="state-name").clean_text == "totals"
    assert state_row.find("td", cls="last-checkpoint").clean_text == (
        state["lastCheckpoint"] or "-"
    )
    assert state_row.find("td", cls="lineage-depth").clean_text == str(state["lineageDepth"])
    live = page.find(id="live-executors").clean_text
    assert live.startswith("driver (")  # local[2]: the tasks run in the driver


def test_the_charts_are_drawn_with_one_point_per_batch(run: Run) -> None:
    page = run.dom(f"/dstream/?id={run.files}")
    n = len(run.contexts[run.files]["progress"])
    for chart in ("input-rate", "scheduling-delay", "processing-time", "total-delay"):
        timeline = page.find(id=f"{chart}-timeline")
        (svg,) = timeline.find_all("svg")
        assert len(svg.find_all("circle")) == n, chart  # a point per batch
        (line,) = [
            p
            for p in svg.find_all("path", cls="line")
            if "stroke-dasharray" not in p.attrs.get("style", "")
        ]
        assert line.attrs["d"].count(",") >= n  # a line through them
        histogram = page.find(id=f"{chart}-histogram")
        assert histogram.find_all("rect"), chart
    # The axis shows the first and last batch times (time of day).
    progress = run.contexts[run.files]["progress"]
    axis = page.find(id="processing-time-timeline").find("g", cls="x").clean_text
    assert progress[0]["batchTime"].split(" ")[1][:8] in axis
    assert progress[-1]["batchTime"].split(" ")[1][:8] in axis


def test_job_links_point_at_the_batches_spark_jobs(run: Run) -> None:
    page = run.dom(f"/dstream/?id={run.files}")
    context_id = run.contexts[run.files]["id"]
    rows = rows_by_batch(page, "completed-batches-table")
    checked = 0
    for batch_id, row in rows.items():
        links = row.find("td", cls="jobs").find_all("a", cls="job-link")
        assert links, f"batch {batch_id} lists no job"
        for link in links:
            job_id = int(link.attrs["data-job-id"])
            assert link.attrs["href"] == f"/jobs/job/?id={job_id}"
            job = json.loads(run.get(f"/api/v1/applications/{run.app_id}/jobs/{job_id}"))
            assert job["jobId"] == job_id
            assert job["jobGroup"] == f"{context_id}-{batch_id}"  # the batch's own job
            assert job["status"] == link.attrs["data-status"]
            checked += 1
    assert checked >= len(rows)


def test_the_batch_page_of_the_failed_batch(run: Run) -> None:
    progress = run.contexts[run.files]["progress"]
    (failed,) = [p for p in progress if p["failed"]]
    page = run.dom(f"/dstream/batch/?id={run.files}&batch={failed['batchId']}")
    summary = page.find(id="batch-summary")
    assert summary.find(id="batch-time").clean_text == f"Batch time: {failed['batchTime']}"
    assert summary.find(id="status").clean_text == "Status: failed"
    assert summary.find(id="records").clean_text == f"Input records: {failed['numInputRows']}"
    assert summary.find(id="processing-time").clean_text == (
        f"Processing time: {failed['durationMs']['processing']} ms"
    )
    outputs = page.find("table", id="outputs-table").find_all("tr", cls="output-row")
    assert len(outputs) == len(failed["outputs"]) == 2
    for row, output in zip(outputs, failed["outputs"], strict=True):
        cells = row.find_all("td")
        assert cells[1].clean_text == output["name"]
        assert cells[4].clean_text == ("failed" if output["failure"] else "succeeded")
        links = row.find("td", cls="jobs").find_all("a", cls="job-link")
        assert links  # each output ran at least one Spark job
        statuses = set()
        for link in links:
            job = json.loads(
                run.get(f"/api/v1/applications/{run.app_id}/jobs/{link.attrs['data-job-id']}")
            )
            assert job["description"].endswith(output["name"])
            assert job["status"] == link.attrs["data-status"]
            statuses.add(job["status"])
        # The poison check runs in tasks: its job failed; the other output's jobs succeeded.
        assert statuses == ({"FAILED"} if output["failure"] else {"SUCCEEDED"})
    error = outputs[1].find("td", cls="error").clean_text
    assert "ValueError: poison line in this interval's input" in error
    read = page.find("table", id="inputs-table").clean_text
    assert "poison-2.txt" in read


def test_two_contexts_on_one_spark_context_each_have_their_own_page(run: Run) -> None:
    page = run.dom("/dstream/")
    listed = {
        tr.attrs["data-context"]
        for tr in page.find("table", id="contexts-table").find_all("tr")
        if "data-context" in tr.attrs
    }
    assert listed == {run.files, run.queue, run.stuck}
    queue_page = run.dom(f"/dstream/?id={run.queue}")
    progress = run.contexts[run.queue]["progress"]
    rows = rows_by_batch(queue_page, "completed-batches-table")
    assert sorted(rows) == [p["batchId"] for p in progress]
    # The queue's second batch had a record its map raised on, set aside (bad_records).
    assert [p["quarantinedRecords"] for p in progress][:3] == [0, 1, 0]
    assert [rows[p["batchId"]].find("td", cls="records").clean_text for p in progress] == [
        f"{p['numInputRows']:,}" + (" (1 set aside)" if p["quarantinedRecords"] else "")
        for p in progress
    ]
    second = run.dom(f"/dstream/batch/?id={run.queue}&batch={progress[1]['batchId']}")
    assert second.find(id="quarantined").clean_text == (
        'Records set aside (bad_records="quarantine"): 1'
    )
    assert not queue_page.find_all("table", id="states-table")  # the other context's state
    assert not queue_page.find_all("table", id="failed-batches-table")


def test_a_program_that_falls_behind_shows_its_active_batches(run: Run) -> None:
    """The stuck context's first interval never ends: it shows as processing, the next as
    queued (max_backlog=2), and the due intervals behind them as not generated. Before,
    nothing showed a program falling behind, exactly when a user looks."""
    deadline, poll = time.monotonic() + 60, threading.Event()
    page = run.dom(f"/dstream/?id={run.stuck}")
    while not page.find_all(id="not-generated") and time.monotonic() < deadline:
        poll.wait(0.5)  # a due interval behind the two active ones: a second or two
        page = run.dom(f"/dstream/?id={run.stuck}")
    assert page.find(id="active").clean_text == "Active Batches (2)"
    rows = page.find("table", id="active-batches-table").find_all("tr", cls="batch-row")
    statuses = [row.find("td", cls="status").clean_text for row in rows]
    assert statuses == ["processing", "queued"]
    assert [row.find("td", cls="outputs").clean_text for row in rows] == ["0/1", "0/1"]
    held = page.find(id="not-generated").clean_text
    assert re.fullmatch(r"\d+ due intervals not generated yet .*max_backlog.*", held), held
    assert page.find(id="no-batches").clean_text == "No batch has completed yet."
    queue_page = run.dom(f"/dstream/?id={run.queue}")  # one that keeps up: nothing active
    assert queue_page.find(id="no-active-batches") is not None


def prometheus(run: Run) -> dict[str, float]:
    values = {}
    for line in run.get("/metrics/prometheus").splitlines():
        match = re.match(r'^(metrics_\S+)_Value\{type="gauges"\} (\S+)$', line)
        if match:
            values[match.group(1)] = float(match.group(2))
    return values


def gauge_prefix(run: Run, key: str) -> str:
    return "metrics_" + re.sub(r"[^a-zA-Z0-9]", "_", f"{run.app_id}.driver.dstream.{key}.")


def test_the_metrics_carry_the_same_numbers(run: Run) -> None:
    values = prometheus(run)
    for key in (run.files, run.queue):
        progress = run.contexts[key]["progress"]
        last = progress[-1]
        prefix = gauge_prefix(run, key)
        expected = {
            "batchDurationMs": 1000,
            "totalCompletedBatches": len(progress),
            "totalFailedBatches": sum(p["failed"] for p in progress),
            "totalInputRecords": sum(p["numInputRows"] for p in progress),
            "lastCompletedBatch_time": last["batchId"],
            "lastCompletedBatch_inputRecords": last["numInputRows"],
            "lastCompletedBatch_schedulingDelayMs": last["durationMs"]["schedulingDelay"],
            "lastCompletedBatch_processingTimeMs": last["durationMs"]["processing"],
            "lastCompletedBatch_totalDelayMs": last["durationMs"]["totalDelay"],
            "lastCompletedBatch_inputRate": last["inputRowsPerSecond"],
            "lastCompletedBatch_processingRate": last["processedRowsPerSecond"],
            "lastCompletedBatch_backlog": last["backlog"],
            "lastCompletedBatch_failed": int(last["failed"]),
            "executors_avoided": 0,
        }
        for name, value in expected.items():
            assert values[prefix + name] == pytest.approx(value), (key, name)
    # Task counts are the executor monitor's (they only grow as late task events arrive): the
    # gauge reads the same document as the last batch's page.
    last = run.contexts[run.files]["progress"][-1]
    # The page shows the tasks once the monitor has a record of the batch: its task events
    # arrive on Spark's listener bus, after the batch completed on a busy machine.
    deadline, poll = time.monotonic() + 60, threading.Event()
    page = run.dom(f"/dstream/batch/?id={run.files}&batch={last['batchId']}")
    while not page.find_all(id="tasks") and time.monotonic() < deadline:
        poll.wait(0.5)
        page = run.dom(f"/dstream/batch/?id={run.files}&batch={last['batchId']}")
    shown = int(page.find(id="tasks").clean_text.split()[1].replace(",", ""))
    assert 0 <= values[gauge_prefix(run, run.files) + "lastCompletedBatch_tasks"] <= shown
    state = run.contexts[run.files]["progress"][-1]["stateOperators"][0]
    prefix = gauge_prefix(run, run.files) + "state_totals_"
    assert values[prefix + "lineageDepth"] == state["lineageDepth"]
    if state["lastCheckpointMs"] is not None:
        age = run.contexts[run.files]["progress"][-1]["batchId"] - state["lastCheckpointMs"]
        assert values[prefix + "checkpointAgeMs"] == age


def colours(png: Path) -> int:
    with Image.open(png) as image:
        rgb = image.convert("RGB")
        assert rgb.width >= 1000 and rgb.height >= 1000
        counts = rgb.getcolors(maxcolors=rgb.width * rgb.height)
        assert counts is not None
        return len(counts)


def test_screenshots_are_real_pictures(run: Run) -> None:
    shots = run.work / "screenshots"
    shots.mkdir(exist_ok=True)
    main = chromium.screenshot(
        f"{run.ui}/dstream/?id={run.files}", shots / "streaming.png", run.work
    )
    progress = run.contexts[run.files]["progress"]
    (failed,) = [p for p in progress if p["failed"]]
    batch = chromium.screenshot(
        f"{run.ui}/dstream/batch/?id={run.files}&batch={failed['batchId']}",
        shots / "batch.png",
        run.work,
        size=(1400, 1200),
    )
    # Text, tables, blue lines and bars, anti-aliasing: many colours; a blank or error page
    # has a handful.
    assert colours(main) > 200
    assert colours(batch) > 100
    print(f"screenshots: {main} {batch}")


def test_a_stopped_context_says_so_and_its_metrics_go(run: Run) -> None:
    assert run.command(f"stop {run.files}") == f"stopped {run.files}"
    page = run.dom(f"/dstream/?id={run.files}")
    assert page.find(id="context-summary").clean_text.startswith("Stopped at ")
    statuses = {
        tr.attrs["data-context"]: tr.find("td", cls="context-status").clean_text
        for tr in page.find("table", id="contexts-table").find_all("tr")
        if "data-context" in tr.attrs
    }
    assert statuses[run.files].startswith("stopped at ")
    assert statuses[run.queue] == "running"
    # Its batches are still shown; its gauges are gone, the other context's remain.
    assert len(rows_by_batch(page, "completed-batches-table")) == len(
        run.contexts[run.files]["progress"]
    )
    values = prometheus(run)
    assert not [k for k in values if k.startswith(gauge_prefix(run, run.files))]
    assert [k for k in values if k.startswith(gauge_prefix(run, run.queue))]
