"""The peer-suite runner's pure parts (bench/peers/pyspark_suite.py): the import rewrite that points
Spark's streaming tests at dstream, and the JUnit report reading. No Spark."""

from __future__ import annotations

import pytest

# Last on the path: bench/ script names must not hide the apps packages.
from bench.peers.pyspark_suite import (
    Outcome,
    count,
    format_report,
    one_line,
    parse_junit,
    rewrite_imports,
)

SPARK_TEST_HEAD = """\
import time

from pyspark import SparkConf, SparkContext, RDD
from pyspark.streaming import StreamingContext
from pyspark.streaming import StreamingListener
from pyspark.testing.streamingutils import PySparkStreamingTestCase
    from pyspark.streaming import StreamingContext  # indented, inside a function
x = "from pyspark.streaming import StreamingContext"
"""


def test_the_dstream_rewrite_moves_the_engine_imports_and_the_base_class() -> None:
    assert rewrite_imports(SPARK_TEST_HEAD, "dstream") == (
        "import time\n"
        "\n"
        "from pyspark import SparkConf, SparkContext, RDD\n"  # Spark core stays Spark's
        "from dstream import StreamingContext\n"
        "from dstream import StreamingListener\n"
        "from suite_streamingutils import PySparkStreamingTestCase\n"
        "    from dstream import StreamingContext  # indented, inside a function\n"
        'x = "from pyspark.streaming import StreamingContext"\n'  # not an import: untouched
    )


def test_the_peer_keeps_pyspark_streaming_and_only_uses_the_base_class_copy() -> None:
    rewritten = rewrite_imports(SPARK_TEST_HEAD, "pyspark")
    assert rewritten == SPARK_TEST_HEAD.replace(
        "from pyspark.testing.streamingutils import", "from suite_streamingutils import"
    )


def test_an_unknown_engine_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match=r"engine 'flink' is not one of \('dstream', 'pyspark'\)"):
        rewrite_imports("", "flink")


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="4">
<testcase classname="test_context.StreamingContextTests" name="test_union" time="1.0"/>
<testcase classname="test_context.StreamingContextTests" name="test_get_active" time="1.0">
<failure message="AttributeError: 'StreamingContext' object has no attribute '_jssc'">
trace</failure></testcase>
<testcase classname="test_context.StreamingContextTests" name="test_crash" time="0.1">
<error message="">

  RuntimeError: boom
more</error></testcase>
<testcase classname="test_context.StreamingContextTests" name="test_kinesis" time="0">
<skipped message="no jar">x</skipped></testcase>
</testsuite></testsuites>
"""


def test_junit_outcomes_name_the_test_and_the_first_line_of_the_reason() -> None:
    outcomes = parse_junit(JUNIT, "test_context.py")
    test_id = "test_context.py::StreamingContextTests::"
    assert outcomes == [
        Outcome(test_id + "test_union", "passed"),
        Outcome(
            test_id + "test_get_active",
            "failed",
            "AttributeError: 'StreamingContext' object has no attribute '_jssc'",
        ),
        Outcome(test_id + "test_crash", "error", "RuntimeError: boom"),
        Outcome(test_id + "test_kinesis", "skipped", "no jar"),
    ]
    assert count(outcomes) == {"passed": 1, "failed": 1, "error": 1, "skipped": 1}


def test_a_long_reason_is_cut_to_one_line() -> None:
    assert one_line("\n  " + "x" * 200 + "\nsecond", limit=20) == "x" * 17 + "..."
    assert one_line(None) == ""


def test_the_report_counts_each_file_and_engine_and_lists_dstream_failures() -> None:
    failed = Outcome("test_listener.py::T::test_b", "failed", "AssertionError: 1 != 0")
    results = {
        "dstream": {"test_listener.py": [Outcome("test_listener.py::T::test_a", "passed"), failed]},
        "pyspark": {"test_listener.py": [Outcome("test_listener.py::T::test_a", "passed")] * 2},
    }
    lines = format_report(results).splitlines()
    assert lines[1].split() == ["test_listener.py", "dstream", "1", "1", "0", "0"]
    assert lines[2].split() == ["total", "dstream", "1", "1", "0", "0"]
    assert lines[3].split() == ["test_listener.py", "pyspark", "2", "0", "0", "0"]
    assert lines[-2:] == [
        "dstream failures and errors: 1",
        "  failed test_listener.py::T::test_b: AssertionError: 1 != 0",
    ]
