"""``dstream run``'s spark-submit arguments: what the user gives wins over the recommended
settings, in every form spark-submit accepts (pure, no Spark)."""

from __future__ import annotations

import itertools

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
    assert {k: v[-1] for k, v in settings(args).items()} == {
        k: str(v) for k, v in RECOMMENDED.items()
    }


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
