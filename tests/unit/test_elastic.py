"""The elasticity rules (dstream.scheduler.elastic), pure: the PID rate estimator behind
backpressure, the scaling rule of ElasticPolicy, and the policy's own checks."""

from __future__ import annotations

import pytest

from dstream import Duration, StreamingSettings
from dstream.scheduler.elastic import RateEstimator, ScaleStep, ScalingRule, rescaled_partitions
from dstream.settings import ElasticPolicy

B = 1000  # ms per interval

# ---- the rate estimator ----------------------------------------------------------------------


def test_the_first_interval_sets_the_rate_to_what_was_processed() -> None:
    est = RateEstimator(B)
    assert est.update(1000, records=5000, processing_ms=2000, scheduling_ms=0) == 2500.0


def test_nothing_to_learn_from_an_empty_interval_or_an_old_one() -> None:
    est = RateEstimator(B)
    assert est.update(1000, 0, 500, 0) is None
    assert est.update(1000, 10, 0, 0) is None
    assert est.update(2000, 1000, 500, 0) == 2000.0
    assert est.update(2000, 1000, 100, 0) is None  # same batch again
    assert est.update(1000, 1000, 100, 0) is None  # an older one
    assert est.rate == 2000.0


def test_an_overloaded_source_is_slowed_to_what_is_processed_less_the_backlog() -> None:
    est = RateEstimator(B)
    est.update(1000, 4000, 1000, 0)  # rate 4000/s
    # Next: 4000 records in 2000 ms (2000/s processed), 1000 ms behind.
    rate = est.update(2000, 4000, 2000, 1000)
    # error 2000; backlog term 1000 * 2000 / 1000 = 2000; 4000 - 2000 - 0.2 * 2000
    assert rate == pytest.approx(1600.0)


def test_a_source_keeping_up_keeps_its_rate_and_the_rate_never_falls_below_the_floor() -> None:
    est = RateEstimator(B, min_rate=100)
    est.update(1000, 1000, 500, 0)  # 2000/s processed
    assert est.update(2000, 1000, 500, 0) == pytest.approx(2000.0)  # no error, no backlog
    assert est.update(3000, 10, 10_000, 50_000) == 100  # hopelessly behind: the floor


def test_the_estimator_converges_on_the_capacity_of_a_slower_system() -> None:
    """A system that processes 1000 records/s whatever it is given: the rate, applied
    as the next interval's input, settles at 1000/s and the backlog stays bounded."""
    est = RateEstimator(B)
    capacity, backlog_ms, rate = 1000.0, 0, 5000.0
    for i in range(1, 40):
        records = int(rate * B / 1000)
        processing = int(records / capacity * 1000)
        new = est.update(i * B, records, processing, backlog_ms)
        assert new is not None
        rate = new
        backlog_ms = max(0, backlog_ms + processing - B)
    assert rate == pytest.approx(capacity, rel=0.05)
    assert backlog_ms < 10 * B


def test_the_estimator_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="batch_ms"):
        RateEstimator(0)
    with pytest.raises(ValueError, match="min_rate"):
        RateEstimator(B, min_rate=0)


# ---- the scaling rule ------------------------------------------------------------------------


def policy(**kw: object) -> ElasticPolicy:
    base: dict[str, object] = dict(
        min_executors=1, max_executors=8, up_after=2, down_after=3, cooldown=Duration(5 * B)
    )
    base.update(kw)
    return ElasticPolicy(**base)  # type: ignore[arg-type]


def run(rule: ScalingRule, loads: list[float], executors: int, start: int = 1) -> list[tuple]:
    """Feed ``loads`` (processing over interval), one per interval; apply each step."""
    steps = []
    for i, load in enumerate(loads, start=start):
        step = rule.observe(i * B, int(load * B), 0, executors)
        if step is not None:
            steps.append((i, step.before, step.after))
            executors = step.after
    return steps


def test_loaded_intervals_in_a_row_double_the_executors_up_to_the_maximum() -> None:
    rule = ScalingRule(policy(max_executors=6), B)
    # One loaded interval is not a run; two are; the 5 intervals after a step are not
    # counted towards the next run (its cooldown).
    steps = run(rule, [1.2, 0.5, 1.2, 1.3, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5], executors=2)
    assert steps == [(4, 2, 4), (11, 4, 6)]


def test_idle_intervals_in_a_row_halve_the_executors_down_to_the_minimum() -> None:
    rule = ScalingRule(policy(min_executors=2, cooldown=0), B)
    steps = run(rule, [0.1] * 12, executors=8)
    assert steps == [(3, 8, 4), (6, 4, 2)]


def test_a_backlog_scales_up_at_once_and_idle_needs_no_backlog() -> None:
    rule = ScalingRule(policy(), B)
    step = rule.observe(B, 500, 2, 3)
    assert step == ScaleStep(3, 6, "backlog of 2 intervals")
    rule = ScalingRule(policy(cooldown=0), B)
    assert [rule.observe(i * B, 100, 1, 4) for i in range(1, 6)] == [None] * 5  # behind: not idle


def test_executors_outside_the_bounds_are_brought_back_and_none_means_a_failure() -> None:
    rule = ScalingRule(policy(min_executors=2, max_executors=4), B)
    assert rule.observe(B, 500, 0, 1) == ScaleStep(1, 2, "below min_executors")
    rule = ScalingRule(policy(min_executors=2, max_executors=4), B)
    assert rule.observe(B, 500, 0, 6) == ScaleStep(6, 4, "above max_executors")
    assert ScalingRule(policy(), B).observe(B, 5000, 5, 0) is None


def test_the_rule_runs_on_batch_time_so_a_replay_decides_the_same() -> None:
    loads = [1.5, 1.5] + [0.1] * 8 + [1.4] * 8
    first = run(ScalingRule(policy(), B), loads, executors=2)
    again = run(ScalingRule(policy(), B), loads, executors=2)
    assert first == again == [(2, 2, 4), (10, 4, 2), (17, 2, 4)]


def test_state_partitions_follow_the_executors_by_the_same_factor() -> None:
    assert rescaled_partitions(4, ScaleStep(2, 4, "")) == 8
    assert rescaled_partitions(8, ScaleStep(4, 2, "")) == 4
    assert rescaled_partitions(1, ScaleStep(2, 1, "")) == 1
    assert rescaled_partitions(6, ScaleStep(3, 4, "")) == 8


# ---- the settings ----------------------------------------------------------------------------


def test_the_policy_names_each_wrong_value_and_its_rule() -> None:
    with pytest.raises(ValueError, match="max_executors 1 must be at least min_executors 2"):
        ElasticPolicy(min_executors=2, max_executors=1)
    with pytest.raises(ValueError, match=r"scale_down 0\.5 must be at most half of scale_up 0\.9"):
        ElasticPolicy(scale_down=0.5)
    with pytest.raises(ValueError, match="scale_up 0 must be a number > 0"):
        ElasticPolicy(scale_up=0)
    with pytest.raises(ValueError, match="min_executors 0 must be at least 1"):
        ElasticPolicy(min_executors=0)
    assert ElasticPolicy(cooldown="10s").cooldown == Duration(10_000)
    with pytest.raises(TypeError, match="elastic must be an ElasticPolicy"):
        StreamingSettings(elastic=4)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="backpressure must be a bool"):
        StreamingSettings(backpressure="yes")  # type: ignore[arg-type]


def test_settings_with_a_policy_go_through_the_journal() -> None:
    settings = StreamingSettings(elastic=ElasticPolicy(max_executors=4), backpressure=True)
    assert StreamingSettings.from_bytes(settings.to_bytes()) == settings


# ---- the controller's choice of executors --------------------------------------------------


class FakeMonitor:
    def __init__(self, live: dict[str, str]) -> None:
        self.working_executors = live
        self.decommissions = True
        self.calls: list[tuple[int, list[str], str]] = []

    def scale_to(self, target: int, remove: list[str], reason: str) -> None:
        self.calls.append((target, remove, reason))


class FakeReceiverSource:
    id = 0

    def receivers(self) -> dict[int, tuple[str, tuple[str, int]]]:
        return {0: ("3", ("127.0.0.1", 9999))}


def controller(live: dict[str, str]) -> tuple[object, FakeMonitor]:
    from types import SimpleNamespace

    from dstream.scheduler.elastic import ElasticController

    graph = SimpleNamespace(inputs=[FakeReceiverSource()], streams=[], batch_duration=Duration(B))
    monitor = FakeMonitor(live)
    return ElasticController(graph, monitor, policy(), backpressure=False), monitor  # type: ignore[arg-type]


def test_a_scale_down_removes_the_newest_executors_and_never_a_receivers() -> None:
    ctl, monitor = controller({"1": "h", "2": "h", "3": "h", "10": "h"})
    ctl._apply(ScaleStep(4, 2, "idle"), monitor.working_executors)  # type: ignore[attr-defined]
    # 10 and 3 are the newest, but 3 runs the receiver: 10 and 2 go.
    assert monitor.calls == [(2, ["10", "2"], "scale 4->2: idle")]


def test_a_scale_down_with_only_receiver_executors_left_to_remove_does_nothing() -> None:
    ctl, monitor = controller({"3": "h"})
    ctl._apply(ScaleStep(2, 1, "idle"), {"3": "h"})  # type: ignore[attr-defined]
    assert monitor.calls == []


def test_spark_settings_of_backpressure_are_read_as_spark_reads_them_or_refused() -> None:
    from pyspark import SparkConf

    from dstream.sparkconf import conf_flag, conf_number

    conf = SparkConf(loadDefaults=False)
    conf.set("spark.streaming.backpressure.enabled", " TRUE")
    conf.set("spark.streaming.backpressure.initialRate", "500")
    conf.set("spark.streaming.backpressure.pid.minRate", "fast")
    assert conf_flag(conf, "spark.streaming.backpressure.enabled")
    assert not conf_flag(conf, "spark.decommission.enabled")  # unset: false
    assert conf_number(conf, "spark.streaming.backpressure.initialRate", 1.0) == 500.0
    assert conf_number(conf, "spark.unset.rate", 100.0) == 100.0
    with pytest.raises(ValueError, match=r"pid.minRate='fast' must be a positive number"):
        conf_number(conf, "spark.streaming.backpressure.pid.minRate", 100.0)
