"""How a driver process ends with StreamingContexts still running.

At interpreter exit (the program's last line, an exception out of ``awaitTermination``, or
SIGTERM, the way YARN and Kubernetes stop a job) every StreamingContext still running is
stopped before Python joins its threads, as Spark's shutdown hook stops a Scala one:

- by default at once: running jobs are cancelled and their intervals stay pending, to be run
  again by a driver restarted from the checkpoint; the process exits promptly instead of
  retrying intervals nobody waits for;
- with ``spark.streaming.stopGracefullyOnShutdown=true``, gracefully: the intervals already
  generated finish and commit first, for at most ``StreamingSettings.graceful_stop_timeout``.

SIGTERM exits with status 143 (128 + 15) once that stop is done. The handler is installed by
``start()`` on the main thread (``dstream run`` installs it on its own), and only when the
program has none of its own for SIGTERM.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import TYPE_CHECKING, Any

from dstream.jvm import live_conf

if TYPE_CHECKING:
    from dstream.context import StreamingContext

__all__ = [
    "STOP_GRACEFULLY_ON_SHUTDOWN",
    "graceful_on_shutdown",
    "install_sigterm_exit",
    "register",
]

log = logging.getLogger(__name__)

STOP_GRACEFULLY_ON_SHUTDOWN = "spark.streaming.stopGracefullyOnShutdown"

_lock = threading.Lock()
_registered = threading.Event()


def graceful_on_shutdown(conf_value: str | None) -> bool:
    """Whether the value of :data:`STOP_GRACEFULLY_ON_SHUTDOWN` asks for a graceful stop
    (Spark's boolean spelling: ``true``/``false``, any case; unset is false)."""
    if conf_value is None:
        return False
    value = conf_value.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(
            f"{STOP_GRACEFULLY_ON_SHUTDOWN}={conf_value!r} must be true or false "
            "(whether a SIGTERM or the program's end lets generated intervals finish)"
        )
    return value == "true"


def register(running: Callable[[], Iterable[StreamingContext]]) -> None:
    """Once per process: stop ``running()`` contexts at interpreter exit, before Python joins
    the engine's job threads, and make SIGTERM an exit (see the module's text)."""
    with _lock:
        if _registered.is_set():
            return
        _registered.set()
    try:
        # Called in reverse order of registration, before non-daemon threads are joined: the
        # job pool's own join (concurrent.futures) was registered earlier, so this runs first.
        threading._register_atexit(lambda: _stop_all(running))  # type: ignore[attr-defined]
    except RuntimeError:  # the interpreter is already shutting down
        return
    install_sigterm_exit()


def install_sigterm_exit() -> bool:
    """On the main thread, and unless the program handles SIGTERM itself: SIGTERM raises
    ``SystemExit(143)`` there, so the process exits through the stop at exit. True if
    installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    signal.signal(signal.SIGTERM, _exit_on_signal)
    return True


def _exit_on_signal(signum: int, frame: FrameType | None) -> Any:
    log.warning("signal %d: stopping the running streaming contexts, then exiting", signum)
    raise SystemExit(128 + signum)


def _stop_all(running: Callable[[], Iterable[StreamingContext]]) -> None:
    for ssc in list(running()):
        try:
            graceful = graceful_on_shutdown(
                live_conf(ssc.sparkContext).get(STOP_GRACEFULLY_ON_SHUTDOWN)
            )
        except ValueError as bad:
            log.warning("%s; stopping at once", bad)
            graceful = False
        try:
            ssc.stop(stopSparkContext=False, stopGraceFully=graceful)
        except Exception:  # exiting anyway: say why this context did not stop cleanly
            log.warning("stopping a streaming context at exit failed", exc_info=True)
