"""dstream's log lines when the program configured no logging: Spark's console format at
``spark.log.level``; a program's own configuration wins, and nothing prints twice. Each case
in a fresh interpreter: logging's configuration is per process."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from dstream.console import use_default_logging

STAMP = r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d"


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == ""
    return done.stderr


def test_unconfigured_programs_get_sparks_format_and_level() -> None:
    err = run(
        """
        import logging
        from dstream.console import use_default_logging
        log = logging.getLogger("dstream.scheduler.x")
        assert use_default_logging(None) and not use_default_logging("INFO")  # once
        log.info("not shown: warnings and errors by default")
        log.warning("a warning")
        log.error("an error")
        """
    )
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert re.fullmatch(rf"{STAMP} WARN dstream\.scheduler\.x: a warning", lines[0]), err
    assert re.fullmatch(rf"{STAMP} ERROR dstream\.scheduler\.x: an error", lines[1]), err


@pytest.mark.parametrize(("level", "shown"), [("info", 2), ("ERROR", 0), ("OFF", 0)])
def test_spark_log_level_sets_dstreams(level: str, shown: int) -> None:
    err = run(
        f"""
        import logging
        from dstream.console import use_default_logging
        use_default_logging({level!r})
        logging.getLogger("dstream.x").info("info")
        logging.getLogger("dstream.x").warning("warning")
        """
    )
    assert len(err.splitlines()) == shown, err


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_programs_own_logging_wins_and_nothing_prints_twice(when: str) -> None:
    configure = 'logging.basicConfig(format="mine %(levelname)s %(message)s")'
    err = run(
        f"""
        import logging
        from dstream.console import use_default_logging
        {configure if when == "before" else ""}
        use_default_logging(None)
        {configure if when == "after" else ""}
        logging.getLogger("dstream.x").warning("once")
        """
    )
    assert err == "mine WARNING once\n"


def test_a_wrong_spark_log_level_is_refused_naming_the_levels() -> None:
    with pytest.raises(ValueError, match=r"spark.log.level='LOUD' is not one of Spark's log "
                       r"levels \(ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF\); e\.g\. "
                       r"--conf spark.log.level=WARN"):  # fmt: skip
        use_default_logging("LOUD")
