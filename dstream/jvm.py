"""Java classes reached through Py4J without the cost of finding them by name.

``sc._jvm.org.apache.hadoop.fs.FileSystem`` asks the JVM, one name segment at a time, what
``org``, ``org.apache``... are: every segment that is not a class is a failed class lookup,
which scans every jar of the class path and builds an exception (a dozen of them for that
one name). A simple name such as PySpark's ``jvm.PythonRDD`` first fails in the default
package, then tries each wildcard import in turn. Profiled (JFR) in a driver running an
interval a second, those failed lookups were 17 % of the driver JVM's CPU.

:func:`java_class` names the class directly (a Py4J ``JavaClass``, whose static calls the
JVM resolves from the classes it has loaded), and :func:`resolve_hot_classes` puts the classes
that PySpark names for every Python RDD (by simple name, or through a package path) into
``sc._jvm`` ready-made, so that reaching them asks the JVM nothing: a single import per
simple name (the earlier remedy) still cost one failed lookup in the default package each,
~160 an interval of apps/recoverable.py, 10 % of its driver JVM's CPU (JFR, 2026-11-29).
"""

from __future__ import annotations

import threading
from typing import Any

from py4j.java_gateway import JavaClass, JavaPackage

# The classes PySpark names for every Python RDD, pair RDD and string conversion
# (pyspark/core/rdd.py): by simple name (from its wildcard import of
# org.apache.spark.api.python), or by their full name from the view's root.
HOT_PYSPARK_CLASSES = (
    "PythonRDD",
    "PythonUtils",
    "SimplePythonFunction",
    "PairwiseRDD",
    "PythonPartitioner",
    "BytesToString",
)
HOT_QUALIFIED_CLASSES = (
    "org.apache.spark.storage.StorageLevel",
    "org.apache.spark.api.java.JavaRDD",
    "org.apache.spark.api.java.JavaPairRDD",
    "org.apache.spark.api.java.JavaDoubleRDD",
    "py4j.reflection.TypeUtil",
)

_resolved: set[int] = set()
_lock = threading.Lock()


def java_class(sc: Any, name: str) -> Any:
    """The Java class ``name`` (fully qualified) of ``sc``'s JVM, for static calls and
    constructors, without a lookup per name segment."""
    gateway = sc._gateway
    assert gateway is not None  # a running SparkContext always has its gateway
    return JavaClass(name, gateway._gateway_client)


def resolve_hot_classes(sc: Any) -> None:
    """Put :data:`HOT_PYSPARK_CLASSES` and :data:`HOT_QUALIFIED_CLASSES` into ``sc``'s JVM
    view (once per gateway): each name, and each package on a qualified class's path, is an
    attribute of the view (or of the package before it), so Py4J's ``__getattr__``, which
    asks the JVM, is not reached. Every other name of the view or of these packages is
    looked up as before; the objects are the ones Py4J itself would build."""
    gateway = sc._gateway
    if gateway is None:
        return
    with _lock:
        if id(gateway) in _resolved:
            return
        view, client = gateway.jvm, gateway._gateway_client
        for name in HOT_PYSPARK_CLASSES:
            view.__dict__[name] = JavaClass(f"org.apache.spark.api.python.{name}", client)
        for qualified in HOT_QUALIFIED_CLASSES:
            *packages, name = qualified.split(".")
            holder = view
            for depth, package in enumerate(packages, start=1):
                if package not in holder.__dict__:
                    fqn = ".".join(packages[:depth])
                    holder.__dict__[package] = JavaPackage(fqn, client, jvm_id=view._id)
                holder = holder.__dict__[package]
            holder.__dict__[name] = JavaClass(qualified, client)
        _resolved.add(id(gateway))
