"""``dstream run``'s spark-submit arguments: what the user gives wins over the recommended
settings, in every form spark-submit accepts (pure, no Spark)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dstream.cli.run import submit_args
from dstream.sparkconf import RECOMMENDED

KEY = "spark.locality.wait"


def settings(args: list[str]) -> dict[str, list[str]]:
    """Each key's values in the order spark-submit reads them (the last one wins)."""
    out: dict[str, list[str]] = {}
    for flag, arg in itertools.pairwise(args):
        if flag in ("--conf", "-c"):
            key, _, value = arg.partition("=")
            out.setdefault(key, []).append(value)
    for arg in args:
        if arg.startswith("--conf="):
            key, _, value = arg[len("--conf=") :].partition("=")
            out.setdefault(key, []).append(value)
    return out


def test_every_recommended_setting_is_passed_when_nobody_gives_one() -> None:
    args = submit_args("", None, [])
    assert args[-1] == "pyspark-shell"
    # No master: pyspark's local[*], whose workers run this Python: dstream's daemon too.
    assert {k: v[-1] for k, v in settings(args).items()} == {
        **{k: str(v) for k, v in RECOMMENDED.items()},
        "spark.python.daemon.module": "dstream.tasks.daemon",
    }


@pytest.mark.parametrize(
    ("master", "daemon"),
    [("local[2]", True), ("local-cluster[2,1,1024]", True), ("spark://h:7077", False),
     ("yarn", False), ("k8s://https://h:6443", False)],
)  # fmt: skip
def test_the_worker_daemon_is_set_only_where_executors_run_this_python(
    master: str, daemon: bool
) -> None:
    """Spark starts the daemon module before --py-files are on the path: on a cluster whose
    executors may lack dstream it would fail every task, so it is left to the user there."""
    for args in (submit_args("", master, []), submit_args(f"--master {master}", None, [])):
        assert ("spark.python.daemon.module" in settings(args)) is daemon


@pytest.mark.parametrize(
    "env",
    [f"--conf {KEY}=7s pyspark-shell", f"--conf={KEY}=7s", f"-c {KEY}=7s pyspark-shell"],
)
def test_a_setting_in_pyspark_submit_args_is_not_overridden_in_any_form(env: str) -> None:
    assert KEY in RECOMMENDED
    args = submit_args(env, None, [])
    assert settings(args)[KEY] == ["7s"]
    assert args.count("pyspark-shell") == 1


def test_conf_and_master_given_to_dstream_run_come_after_the_environment() -> None:
    args = submit_args(f"--master local[1] --conf {KEY}=1s", "local[2]", [f"{KEY}=2s"])
    assert settings(args)[KEY] == ["1s", "2s"]  # dstream run's own --conf is read last
    assert args[:6] == ["--master", "local[1]", "--conf", f"{KEY}=1s", "--master", "local[2]"]


def test_a_conf_that_is_not_key_value_is_explained() -> None:
    with pytest.raises(SystemExit, match=r"--conf 'spark.ui.port' is not KEY=VALUE, e.g."):
        submit_args("", None, ["spark.ui.port"])


@pytest.mark.parametrize("command", ["run", "shell"])
def test_a_missing_program_is_one_line_naming_the_command(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from dstream.cli import main

    assert main([command, "/nonexistent/app.py"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"dstream {command}: /nonexistent/app.py is not a file; give the path of a streaming "
        f"application script, e.g. dstream {command} examples/windowed_counts.py\n"
    )


def test_a_failed_program_prints_its_traceback_once_as_python_would(tmp_path: Path) -> None:
    """``dstream run`` of a program that raises prints what ``python APP.py`` prints: its
    traceback from the program's own frames, with real line breaks (it printed the error's
    repr: one line with literal \\n), and exits with 1; ``sys.exit("message")`` too."""
    app = tmp_path / "app.py"
    app.write_text('def load():\n    raise ValueError("bad input\\nsecond line")\n\n\nload()\n')
    done = run_cli(tmp_path, "run", str(app))
    python = subprocess.run(
        [sys.executable, str(app)], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == python.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr == python.stderr
    assert done.stderr.startswith("Traceback (most recent call last):\n")
    assert done.stderr.count("Traceback") == 1 and f'File "{app}", line 5' in done.stderr
    assert done.stderr.endswith("ValueError: bad input\nsecond line\n")
    app.write_text('import sys\nsys.exit("no input directory given")\n')
    done = run_cli(tmp_path, "run", str(app))
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "no input directory given\n")


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dstream", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        timeout=120,
    )
