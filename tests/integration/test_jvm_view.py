"""dstream.jvm: the classes PySpark names for every RDD are in the JVM view ready-made, so
reaching them asks the JVM nothing, and every other name still resolves as Py4J does."""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaPackage

from dstream import StreamingContext
from dstream.jvm import HOT_PYSPARK_CLASSES, HOT_QUALIFIED_CLASSES


def test_hot_classes_are_in_the_view_and_other_names_still_resolve(sc: Any) -> None:
    StreamingContext(sc, 1)  # resolves them (once per gateway)
    view = sc._jvm
    for name in HOT_PYSPARK_CLASSES:
        held = view.__dict__[name]
        assert isinstance(held, JavaClass)
        assert held._fqn == f"org.apache.spark.api.python.{name}"
    storage_level = view.org.apache.spark.storage.StorageLevel
    assert isinstance(storage_level, JavaClass)
    assert storage_level.MEMORY_ONLY().useMemory()  # a working class, not a stand-in
    for qualified in HOT_QUALIFIED_CLASSES:
        *packages, name = qualified.split(".")
        holder: Any = view
        for package in packages:
            holder = holder.__dict__[package]
            assert isinstance(holder, JavaPackage)
        assert holder.__dict__[name]._fqn == qualified
    # Names beside them are looked up as before: a class under a held package, a package.
    assert view.org.apache.hadoop.fs.Path("/a/b").getName() == "b"
    assert isinstance(view.org.apache.spark.rdd, JavaPackage)
    # And PySpark's own RDDs work through them.
    pairs = sc.parallelize([("a", 1), ("b", 2), ("a", 3)], 2).reduceByKey(lambda x, y: x + y)
    assert sorted(pairs.collect()) == [("a", 4), ("b", 2)]
