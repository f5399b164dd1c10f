"""What every benchmark starts with: a SparkContext with the settings dstream recommends
(dstream.sparkconf.recommended_conf), so every measurement runs under the same Spark
settings, and the Python workers run the benchmark's own interpreter."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkConf, SparkContext


def bench_conf(app: str, master: str = "local[2]", **settings: str) -> SparkConf:
    """``recommended_conf(master, app)`` without the console progress bar, plus ``settings``
    (Spark keys with dots replaced by ``__``: ``spark__ui__enabled="false"``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from dstream.sparkconf import recommended_conf

    conf = recommended_conf(master, app).set("spark.ui.showConsoleProgress", "false")
    for key, value in settings.items():
        conf.set(key.replace("__", "."), value)
    return conf


def spark_context(app: str, master: str = "local[2]", **settings: str) -> SparkContext:
    """A SparkContext on :func:`bench_conf`, logging errors only."""
    from pyspark import SparkContext

    sc = SparkContext(conf=bench_conf(app, master, **settings))
    sc.setLogLevel("ERROR")
    return sc
