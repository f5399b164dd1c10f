"""Ad-hoc queries on the live session state (the paper's Fig. 14b), as plain functions.

Each takes what the live shell will hand over: the state of the ``track`` stream at one
completed interval, an RDD of ``(session id, state)`` pairs (see :mod:`video.session`), or
a DataFrame over it (:func:`sessions_frame`, and SQL on the view :func:`register_view`
makes). Both forms give the same answers:

* :func:`active_sessions` — sessions joined and not exited, failed or timed out;
* :func:`customer_sessions` — the active sessions of one customer;
* :func:`failed_sessions` — sessions that failed (to join, or during playback) and are still
  in the state, i.e. failures within the last timeout;
* :func:`top_cdns_by_buffering` — CDNs ranked by the rebuffering ratio of their playing
  sessions, over the sessions' whole life so far (ties by name);
* :func:`sessions_above_bitrate` — the paper's "how many sessions have a bitrate above X":
  active sessions whose average bitrate over their playback so far (kbps, weighted by
  played time) is above ``kbps`` (sessions that have not played yet have none).

>>> # in a foreachRDD on the track stream, or on the shell's snapshot of it:
>>> active_sessions(state_rdd)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .session import (
    BITRATE_PLAY,
    BUFFERING_MS,
    DIMS,
    ERROR_CODE,
    FAILED,
    JOINED_MS,
    JOINING,
    LAST_SEEN_MS,
    PLAY_MS,
    PLAYING,
    STATUS,
    STATUS_NAMES,
    VIEWER,
)

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "SQL",
    "active_sessions",
    "customer_sessions",
    "failed_sessions",
    "register_view",
    "sessions_above_bitrate",
    "sessions_frame",
    "sql_answers",
    "top_cdns_by_buffering",
]

_LIVE = (JOINING, PLAYING)
# The bitrate the answers ask about by default (kbps): the generator's bitrates straddle it.
DEFAULT_KBPS = 3000.0


def active_sessions(sessions: RDD[Any]) -> int:
    return sessions.filter(lambda kv: kv[1][STATUS] in _LIVE).count()


def customer_sessions(sessions: RDD[Any], customer: str) -> int:
    return sessions.filter(lambda kv: kv[1][STATUS] in _LIVE and kv[1][DIMS][0] == customer).count()


def failed_sessions(sessions: RDD[Any]) -> int:
    return sessions.filter(lambda kv: kv[1][STATUS] == FAILED).count()


def top_cdns_by_buffering(sessions: RDD[Any], n: int = 5) -> list[tuple[str, float, int]]:
    """``(cdn, rebuffering ratio, playing sessions)``, highest ratio first."""
    per_cdn = (
        sessions.filter(lambda kv: kv[1][STATUS] == PLAYING)
        .map(lambda kv: (kv[1][DIMS][2], (kv[1][BUFFERING_MS], kv[1][PLAY_MS], 1)))
        .reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1], a[2] + b[2]))
        .filter(lambda kv: kv[1][0] + kv[1][1] > 0)
        .map(lambda kv: (kv[0], kv[1][0] / (kv[1][0] + kv[1][1]), kv[1][2]))
    )
    return per_cdn.takeOrdered(n, key=lambda r: (-r[1], r[0]))


def _above(state: tuple[Any, ...], kbps: float) -> bool:
    """Playing or joining, played, and its average bitrate (exactly) above ``kbps``."""
    return (
        state[STATUS] in _LIVE
        and state[PLAY_MS] > 0
        and state[BITRATE_PLAY] > kbps * state[PLAY_MS]
    )


def sessions_above_bitrate(sessions: RDD[Any], kbps: float) -> int:
    return sessions.filter(lambda kv: _above(kv[1], kbps)).count()


COLUMNS = (
    "session_id",
    "customer",
    "content",
    "cdn",
    "isp",
    "device",
    "region",
    "viewer",
    "status",
    "error",
    "joined_ms",
    "play_ms",
    "buffering_ms",
    "last_seen_ms",
    "avg_bitrate_kbps",
)


def _row(kv: tuple[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    sid, s = kv
    return (
        sid,
        *s[DIMS],
        s[VIEWER],
        STATUS_NAMES[s[STATUS]],
        s[ERROR_CODE],
        s[JOINED_MS],
        s[PLAY_MS],
        s[BUFFERING_MS],
        s[LAST_SEEN_MS],
        s[BITRATE_PLAY] / s[PLAY_MS] if s[PLAY_MS] else None,
    )


def sessions_frame(spark: SparkSession, sessions: RDD[Any]) -> DataFrame:
    """The session state as a DataFrame, one row per session (COLUMNS)."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    longs = {"session_id", "viewer", "joined_ms", "play_ms", "buffering_ms", "last_seen_ms"}
    schema = StructType(
        [StructField(c, LongType() if c in longs else StringType(), False) for c in COLUMNS[:-1]]
        + [StructField("avg_bitrate_kbps", DoubleType(), True)]  # none before playback
    )
    return spark.createDataFrame(sessions.map(_row), schema)


def register_view(spark: SparkSession, sessions: RDD[Any], name: str = "sessions") -> DataFrame:
    """:func:`sessions_frame` as the temporary view ``name`` (for :data:`SQL`)."""
    frame = sessions_frame(spark, sessions)
    frame.createOrReplaceTempView(name)
    return frame


# The same four queries in SQL over the view (``{view}``; ``{customer}`` and ``{n}`` are
# parameters of the second and fourth).
SQL = {
    "active_sessions": "SELECT COUNT(*) FROM {view} WHERE status IN ('joining', 'playing')",
    "customer_sessions": (
        "SELECT COUNT(*) FROM {view} WHERE status IN ('joining', 'playing') "
        "AND customer = '{customer}'"
    ),
    "failed_sessions": "SELECT COUNT(*) FROM {view} WHERE status = 'failed'",
    "top_cdns_by_buffering": (
        "SELECT cdn, CAST(SUM(buffering_ms) AS DOUBLE) / CAST(SUM(buffering_ms + play_ms) "
        "AS DOUBLE) AS ratio, COUNT(*) AS sessions FROM {view} WHERE status = 'playing' "
        "GROUP BY cdn HAVING SUM(buffering_ms + play_ms) > 0 "
        "ORDER BY ratio DESC, cdn LIMIT {n}"
    ),
    "sessions_above_bitrate": (
        "SELECT COUNT(*) FROM {view} WHERE status IN ('joining', 'playing') "
        "AND play_ms > 0 AND avg_bitrate_kbps > {kbps}"
    ),
}


def sql_answers(
    spark: SparkSession,
    customer: str,
    n: int = 5,
    view: str = "sessions",
    kbps: float = DEFAULT_KBPS,
) -> dict[str, Any]:
    """The five answers from SQL on ``view`` (made by :func:`register_view`)."""
    if "'" in customer:
        raise ValueError(f"customer {customer!r} must not contain a quote (it goes into SQL)")

    def scalar(name: str) -> int:
        query = SQL[name].format(view=view, customer=customer, n=n, kbps=float(kbps))
        return int(spark.sql(query).collect()[0][0])

    top = spark.sql(SQL["top_cdns_by_buffering"].format(view=view, n=n)).collect()
    return {
        "active_sessions": scalar("active_sessions"),
        "customer_sessions": scalar("customer_sessions"),
        "failed_sessions": scalar("failed_sessions"),
        "top_cdns_by_buffering": [(r[0], r[1], r[2]) for r in top],
        "sessions_above_bitrate": scalar("sessions_above_bitrate"),
    }


def answers(
    sessions: RDD[Any], customer: str, n: int = 5, kbps: float = DEFAULT_KBPS
) -> dict[str, Any]:
    """The five answers from the RDD."""
    return {
        "active_sessions": active_sessions(sessions),
        "customer_sessions": customer_sessions(sessions, customer),
        "failed_sessions": failed_sessions(sessions),
        "top_cdns_by_buffering": top_cdns_by_buffering(sessions, n),
        "sessions_above_bitrate": sessions_above_bitrate(sessions, kbps),
    }
