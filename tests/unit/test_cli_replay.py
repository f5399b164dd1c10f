"""``dstream replay`` parses the form its help, the README and the CLI docstring give:
``dstream replay APP.py --from T --to T [--speed S] [-- ARGS]`` (the program's own arguments
after ``--``). Before, everything after APP.py went to the program and --from was refused."""

from __future__ import annotations

from typing import Any

import pytest

import dstream.cli.replay
from dstream.cli import main


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []

    def record(app: str, args: list[str], begin: str, end: str, speed: str) -> int:
        calls.append((app, args, begin, end, speed))
        return 0

    monkeypatch.setattr(dstream.cli.replay, "run_replay", record)
    return calls


def test_the_documented_form_passes_the_programs_arguments_after_the_separator(
    replays: list[tuple[Any, ...]],
) -> None:
    argv = ["replay", "app.py", "--from", "21:00", "--to", "21:30", "--speed", "10x"]
    assert main([*argv, "--", "--input", "/in", "--", "-x"]) == 0
    assert replays == [("app.py", ["--input", "/in", "--", "-x"], "21:00", "21:30", "10x")]


def test_options_may_come_in_any_order_and_the_program_may_take_no_arguments(
    replays: list[tuple[Any, ...]],
) -> None:
    assert main(["replay", "--to", "now", "app.py", "--from=-5m"]) == 0
    assert replays == [("app.py", [], "-5m", "now", "max")]


def test_program_arguments_without_the_separator_are_refused_with_the_fix(
    replays: list[tuple[Any, ...]], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["replay", "app.py", "--from", "1", "--to", "2", "--input", "/in"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --input /in" in err
    assert "go after --: dstream replay APP.py --from T --to T -- ARGS" in err
    assert replays == []


def test_from_and_to_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "app.py", "--to", "2"])
    assert "--from" in capsys.readouterr().err
