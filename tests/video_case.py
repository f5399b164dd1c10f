"""The generated run the video monitor's tests share: small enough for a few seconds of
Spark, with everything the metrics must handle (a premiere burst of joins, join failures,
exits before start, sessions that go silent and time out, an incident)."""

from __future__ import annotations

from pathlib import Path

from video.config import MonitorConfig
from video.generator import GeneratorConfig, Incident

APPS = Path(__file__).resolve().parents[1] / "apps"

INTERVALS = 16
INCIDENT = Incident(cdn="level3", region="eu-west", start_s=9, length_s=10)


def generator_config(origin_ms: int = 0, seed: int = 1) -> GeneratorConfig:
    return GeneratorConfig(
        seed=seed,
        origin_ms=origin_ms,
        sessions=800,
        burst_s=4,
        median_session_s=12,
        session_sigma=1.0,
        heartbeat_ms=2000,
        p_silent=0.15,
        p_rebuffer=0.01,
        incident=INCIDENT,
    )


MONITOR = MonitorConfig(
    window_ms=4000,
    baseline_ms=12000,
    timeout_ms=5000,
    stall_ms=3000,
    alert_min_view_ms=60000,
    alert_min_joins=8,
    hll_precision=8,
)
