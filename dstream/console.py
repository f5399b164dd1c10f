"""What a streaming program prints to its console, following PySpark's conventions.

- dstream's log records (the ``dstream.*`` loggers) read like Spark's own console lines,
  ``26/12/07 03:16:42 WARN dstream.scheduler.scheduler: ...``, when the program configured
  no logging of its own (Python would print the bare message, without level or logger);
  a program that configures logging (``logging.basicConfig``, its own handlers), before or
  after, gets them its way instead, each once.
- Their level is Spark's: ``spark.log.level`` (Spark 4's setting that sets Spark's log level
  once, at start, as ``sc.setLogLevel`` would) sets dstream's too; unset, dstream logs
  warnings and errors, as a PySpark program's console shows Spark's.
- Spark's console progress bar (``[Stage 3:> (0 + 1) / 1]``, redrawn on stderr; on by
  default where PySpark runs as a shell, so under plain ``python``) is stopped when a
  program declares a ``pprint``: its redraws would cut through the printed records.
  ``recommended_conf`` turns it off from the start.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, TextIO

__all__ = ["SPARK_LEVELS", "stop_progress_bar", "use_default_logging"]

log = logging.getLogger(__name__)

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%y/%m/%d %H:%M:%S"  # Spark's console pattern: %d{yy/MM/dd HH:mm:ss} %p %c: %m

#: Spark's log levels (``spark.log.level``, ``sc.setLogLevel``) as Python's.
SPARK_LEVELS: dict[str, int] = {
    "ALL": logging.DEBUG,
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}
_SPARK_NAMES = {logging.WARNING: "WARN", logging.CRITICAL: "FATAL"}

_lock = threading.Lock()
_BAR_STOPPED = "_dstream_progress_bar_stopped"


class _SparkFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        name = _SPARK_NAMES.get(record.levelno)
        if name is None:
            return line
        return line.replace(f" {record.levelname} ", f" {name} ", 1)


class _UnlessConfigured(logging.Handler):
    """Writes to the current ``sys.stderr`` unless the program has configured the root
    logger since: then its handlers print the record (propagated), and this one stays
    silent, so nothing is printed twice."""

    def emit(self, record: logging.LogRecord) -> None:
        if logging.getLogger().handlers:
            return
        stream: TextIO = sys.stderr
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


_installed: list[_UnlessConfigured] = []  # the one handler, once installed


def use_default_logging(spark_log_level: str | None) -> bool:
    """Once per process (a StreamingContext calls it when made): unless the program
    configured logging, dstream's records are printed in Spark's console format, at
    ``spark_log_level`` (``spark.log.level``) when given. True if installed now."""
    level = None
    if spark_log_level is not None:
        level = SPARK_LEVELS.get(spark_log_level.strip().upper())
        if level is None:
            raise ValueError(
                f"spark.log.level={spark_log_level!r} is not one of Spark's log levels "
                f"({', '.join(SPARK_LEVELS)}); e.g. --conf spark.log.level=WARN"
            )
    logger = logging.getLogger("dstream")
    with _lock:
        if _installed or logger.handlers or logging.getLogger().handlers:
            return False
        handler = _UnlessConfigured()
        handler.setFormatter(_SparkFormatter(FORMAT, DATE_FORMAT))
        logger.addHandler(handler)
        _installed.append(handler)
        if level is not None and logger.level == logging.NOTSET:
            logger.setLevel(level)
        return True


def stop_progress_bar(sc: Any) -> bool:
    """Stop ``sc``'s console progress bar for good, clearing any line it drew (once per
    SparkContext; ``pprint()`` calls it). True if a bar was stopped."""
    with _lock:
        if getattr(sc, _BAR_STOPPED, False):
            return False
        setattr(sc, _BAR_STOPPED, True)
    # SparkContext.progressBar is private[spark] in Scala, public to the JVM (and Py4J).
    bar = sc._jsc.sc().progressBar()
    if not bar.isDefined():
        return False
    bar.get().finishAll()  # clears the line it drew
    bar.get().stop()
    log.info(
        "Spark's console progress bar is off from now on: it would cut through pprint's "
        "records (spark.ui.showConsoleProgress=false turns it off from the start)"
    )
    return True
