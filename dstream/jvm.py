"""Java classes reached through Py4J without the cost of finding them by name.

``sc._jvm.org.apache.hadoop.fs.FileSystem`` asks the JVM, one name segment at a time, what
``org``, ``org.apache``... are: every segment that is not a class is a failed class lookup,
which scans every jar of the class path and builds an exception (a dozen of them for that
one name). A simple name such as PySpark's ``jvm.PythonRDD`` first fails in the default
package, then tries each wildcard import in turn. Profiled (JFR) in a driver running an
interval a second, those failed lookups were 17 % of the driver JVM's CPU.

:func:`java_class` names the class directly (a Py4J ``JavaClass``, whose static calls the
JVM resolves from the classes it has loaded), and :func:`import_hot_classes` gives the
PySpark classes that every Python RDD resolves by simple name a single import each, so that
one failed lookup (the default package, which Py4J always tries first) precedes the hit.
"""

from __future__ import annotations

import threading
from typing import Any

from py4j.java_gateway import JavaClass, java_import

# The classes PySpark looks up by simple name for every Python RDD, pair RDD and string
# conversion (pyspark/core/rdd.py), all in org.apache.spark.api.python.
HOT_PYSPARK_CLASSES = (
    "PythonRDD",
    "PythonUtils",
    "SimplePythonFunction",
    "PairwiseRDD",
    "PythonPartitioner",
    "BytesToString",
)

_imported: set[int] = set()
_lock = threading.Lock()


def java_class(sc: Any, name: str) -> Any:
    """The Java class ``name`` (fully qualified) of ``sc``'s JVM, for static calls and
    constructors, without a lookup per name segment."""
    gateway = sc._gateway
    assert gateway is not None  # a running SparkContext always has its gateway
    return JavaClass(name, gateway._gateway_client)


def import_hot_classes(sc: Any) -> None:
    """Single imports, in ``sc``'s JVM view, for the classes of :data:`HOT_PYSPARK_CLASSES`
    (once per gateway). They name the very classes PySpark's wildcard import finds."""
    gateway = sc._gateway
    if gateway is None:
        return
    with _lock:
        if id(gateway) in _imported:
            return
        for name in HOT_PYSPARK_CLASSES:
            java_import(gateway.jvm, f"org.apache.spark.api.python.{name}")
        _imported.add(id(gateway))
