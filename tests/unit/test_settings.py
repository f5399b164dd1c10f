"""StreamingSettings checks every field when it is built and takes durations as users write
them; a wrong value names the field instead of breaking every interval later."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dstream import Duration, StreamingSettings
from dstream.settings import AvoidancePolicy


def test_durations_are_taken_as_users_write_them() -> None:
    s = StreamingSettings(
        file_remember=30,
        graceful_stop_timeout="2s",
        receiver_restart_delay=timedelta(milliseconds=500),
        max_history=Duration(90_000),
        output_retry_backoff=0,  # no wait between retries: allowed
        max_file_age="1h",
    )
    assert s.file_remember == Duration(30_000)
    assert s.graceful_stop_timeout == Duration(2_000)
    assert s.receiver_restart_delay == Duration(500)
    assert s.max_history == Duration(90_000)
    assert s.output_retry_backoff == Duration(0)
    assert s.max_file_age == Duration(3_600_000)
    assert StreamingSettings(max_file_age=None).max_file_age is None


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"file_remember": [30]}, TypeError, "StreamingSettings file_remember must be seconds"),
        ({"receiver_restart_delay": 0}, ValueError, "StreamingSettings receiver_restart_delay is 0 ms"),
        ({"graceful_stop_timeout": -1}, ValueError, "graceful_stop_timeout -1 is negative"),
        ({"max_history": "soon"}, ValueError, "max_history 'soon' is not a duration"),
        ({"pipelining_depth": "2"}, TypeError, "pipelining_depth must be an int, got str '2'"),
        ({"pipelining_depth": True}, TypeError, "pipelining_depth must be an int"),
        ({"pipelining_depth": 0}, ValueError, "pipelining_depth 0 must be at least 1"),
        ({"output_retries": -1}, ValueError, "output_retries -1 must be at least 0"),
        ({"max_backlog": 0}, ValueError, "max_backlog 0 must be at least 1"),
        ({"replay_stretch": 0}, ValueError, "replay_stretch 0 must be at least 1"),
        ({"state_replicas": 0}, ValueError, "state_replicas 0 must be at least 1, e.g. 2"),
        ({"on_failed_interval": "stop"}, ValueError, "on_failed_interval 'stop' must be 'continue'"),
        ({"executor_avoidance": "yes"}, TypeError, "executor_avoidance must be an AvoidancePolicy"),
        ({"receiver_max_buffered": 0}, ValueError, "receiver_max_buffered 0 must be at least 1"),
        ({"max_file_age": "30s"}, ValueError, "max_file_age 30000 ms must be at least file_remember 60000 ms"),
        ({"existing_checkpoint": "keep"}, ValueError, "existing_checkpoint 'keep' must be 'set_aside'"),
    ],
)  # fmt: skip
def test_a_wrong_value_is_refused_with_the_fields_name(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        StreamingSettings(**kwargs)  # type: ignore[arg-type]


def test_avoidance_policy_fields_are_checked_too() -> None:
    assert AvoidancePolicy(cooldown="45s").cooldown == Duration(45_000)
    with pytest.raises(ValueError, match="strikes 6 must be between 1 and window 5"):
        AvoidancePolicy(strikes=6)
    with pytest.raises(TypeError, match="AvoidancePolicy window must be an int"):
        AvoidancePolicy(window=2.5)  # type: ignore[arg-type]


def test_settings_round_trip_through_the_journal_by_field_name() -> None:
    s = StreamingSettings(file_remember=5, pipelining_depth=2, on_failed_interval="halt")
    assert StreamingSettings.from_bytes(s.to_bytes()) == s
    assert s.differences(StreamingSettings()) == {
        "file_remember": (Duration(5_000), Duration(60_000)),
        "pipelining_depth": (2, 1),
        "on_failed_interval": ("halt", "continue"),
    }
