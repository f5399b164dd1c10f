"""``python -m dstream shell`` for real: the program runs in a subprocess on a pseudo-terminal,
queries are typed while it runs, and their answers are checked against the outputs the
program itself committed. Ctrl-D stops the program gracefully."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.pty_console import Console

REPO = Path(__file__).resolve().parents[2]

APP = textwrap.dedent(
    """
    import sys
    from pyspark import SparkConf, SparkContext
    from dstream import StreamingContext

    indir, out = sys.argv[1], sys.argv[2]
    sc = SparkContext(conf=SparkConf().setMaster("local[2]").setAppName("shell-test")
                      .set("spark.ui.enabled", "false"))
    sc.setLogLevel("ERROR")
    ssc = StreamingContext(sc, 1)
    ssc.remember(600)
    words = ssc.textFileStream(indir).flatMap(str.split).map(lambda w: (w, 1))
    totals = words.updateStateByKey(lambda new, old: sum(new) + (old or 0)).setName("totals")
    totals.saveAsTextFiles(out + "/totals")
    ssc.start()
    ssc.awaitTermination()
    """
)


def committed(out: Path) -> dict[int, list[tuple[str, int]]]:
    result = {}
    for d in out.glob("totals-*"):
        if (d / "_DSTREAM_COMMIT").exists():
            lines = [ln for p in d.glob("part-*") for ln in p.read_text().splitlines()]
            result[int(d.name.split("-")[1])] = sorted(eval(ln) for ln in lines)
    return result


@pytest.mark.slow
def test_queries_typed_in_the_shell_answer_from_the_live_state(tmp_path: Path) -> None:
    indir, out = tmp_path / "in", tmp_path / "out"
    indir.mkdir()
    out.mkdir()
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable, "TERM": "dumb"}
    console = Console(
        [sys.executable, "-m", "dstream", "shell", str(app), str(indir), str(out)], env
    )
    try:
        console.expect(r"Named streams: totals")
        console.expect(r">>> ")
        words = ["to", "be", "or", "not", "to", "be"]
        for i, word in enumerate(words):
            hidden = indir / f".w{i}"
            hidden.write_text(word + "\n")
            hidden.rename(indir / f"w{i}.txt")
        want_final = sorted({w: words.count(w) for w in words}.items())
        done = threading.Event()
        while not any(v == want_final for v in committed(out).values()):
            assert not done.wait(0.2) and console.proc.poll() is None
        # A past interval, as the program committed it. Its output is committed inside its
        # output job, a moment before the interval completes (every output done, the
        # journal's record written) and queries can read it: wait for that, an event.
        when, content = max((t, v) for t, v in committed(out).items() if v)
        console.send(f"print('DONE', ssc.wait_for_batch(Time({when}), 60))")
        assert console.expect(r"DONE (True|False)\n").group(1) == "True"
        console.send(f"print('AT', sorted(totals.at(Time({when})).collect()))")
        assert eval(console.expect(r"AT (\[.*?\])\n").group(1)) == content
        console.send("print('LOOKUP', totals.lookup('to'), totals.lookup('nope'))")
        assert console.expect(r"LOOKUP (\[.*?\]) (\[.*?\])\n").groups() == ("[2]", "[]")
        console.send("totals.createOrReplaceTempView('totals')")
        console.send("print('SQL', spark.sql('select sum(value) from totals').first()[0])")
        assert console.expect(r"SQL (\d+)\n").group(1) == str(len(words))
        console.send("print('LATEST', sorted(totals.snapshot().collect()))")
        assert eval(console.expect(r"LATEST (\[.*?\])\n").group(1)) == want_final
        console.expect(r">>> ")
        os.write(console.master, b"\x04")  # Ctrl-D at the prompt
        console.expect(r"the program stopped")
        assert console.proc.wait(120) == 0
    finally:
        if console.proc.poll() is None:
            console.proc.kill()
        os.close(console.master)
