"""The tentative delay's breakdown (bench/engine/tentative_delay.py) over a made-up run:
the phases split the time from the later of the interval's end and the episode's start to
the tentative result's delivery. No Spark."""

from __future__ import annotations

from bench.engine.tentative_delay import breakdown

PREFIX = "dstream-app-0"


def task(start: int, end: int, group: str) -> dict[str, object]:
    return {"type": "TaskEnd", "launch_time": start, "finish_time": end, "job_group": group}


def test_the_phases_add_up_to_the_delay_and_name_what_held_the_slots() -> None:
    t = 100_000  # the interval's end; the episode begins at 101_000
    group = f"{PREFIX}-tentative-{t}"
    result = {
        "group_prefix": PREFIX,
        "killed_at_ms": 99_000,
        "t0_ms": 90_000,
        "batch_ms": 2000,
        "controller": ["11.0s tentative outputs: executor 1 lost ...: tentative results until"],
        "events": [
            {"type": "ExecutorRemoved", "time": 100_500},
            {"type": "JobStart", "time": 102_000, "job_group": group},
            {
                "type": "StageCompleted",
                "submission_time": 102_000,
                "completion_time": 106_000,
                "job_group": group,
            },
            task(101_500, 104_000, f"{PREFIX}-recovery-{t - 2000}"),  # holds the slot
            task(104_000, 105_000, group),
            task(104_500, 106_000, group),
        ],
        "outputs": {
            "top": {
                str(t): {
                    "tentative": [],
                    "tentative_after_ms": 7000,
                    "exact_after_ms": 9000,
                    "exact": [],
                },
                str(t - 2000): {"exact_after_ms": 100, "exact": []},
            }
        },
    }
    b = breakdown(result)
    assert b["detect_ms"] == [1500] and b["lookup_ms"] == 500
    assert b["episode_from_kill_ms"] == 2000
    (row,) = b["intervals"]
    assert row["from_ms"] == 1000 and row["after_end_ms"] == 7000
    # 101_000..102_000 controller; 102_000..104_000 queued behind the recovery;
    # 104_000..106_000 running; 106_000..107_000 driver.
    assert (row["controller"], row["queued"], row["running"], row["driver"]) == (
        1000,
        2000,
        2000,
        1000,
    )
    assert row["behind_task_ms"] == {"recovery": 2000}
    assert b["due"] == 1
