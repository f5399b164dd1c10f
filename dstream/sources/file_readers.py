"""How a file source turns an interval's files into an RDD: each reader gets the exact,
fully qualified paths (``file:///...``, ``hdfs://...``) and reads those files and no others.

Spark's ``textFile(p)`` and ``binaryRecords(p)`` hand ``p`` to Hadoop's
``FileInputFormat.setInputPaths``, which splits it on commas and expands each part as a glob:
a file named ``a[1].txt`` would read ``a1.txt``, ``g,h.txt`` two files that do not exist.
:func:`dstream.storage.paths.hadoop_input_groups` escapes each path into a pattern that
matches only itself, so the JVM still reads the lines and hands them to Python as strings
(no per-record pass is added). The columnar reader opens the files itself, by path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dstream.storage.paths import hadoop_input_groups

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.context import StreamingContext
    from dstream.storage.taskfs import TaskFiles

__all__ = ["Reader", "binary_records_reader", "read_text", "text_batches_reader"]

Reader = Callable[["StreamingContext", list[str]], "RDD[Any]"]


def read_text(ssc: StreamingContext, paths: list[str]) -> RDD[str]:
    """The lines of exactly ``paths`` (Hadoop's line reader, as ``textFile``)."""
    sc = ssc.sparkContext
    rdds = [sc.textFile(group) for group in hadoop_input_groups(paths)]
    return rdds[0] if len(rdds) == 1 else sc.union(rdds)


def binary_records_reader(record_length: int) -> Reader:
    def read(ssc: StreamingContext, paths: list[str]) -> RDD[Any]:
        sc = ssc.sparkContext
        groups = hadoop_input_groups(paths)
        rdds = [sc.binaryRecords(group, record_length) for group in groups]
        return rdds[0] if len(rdds) == 1 else sc.union(rdds)

    return read


def text_batches_reader(files: TaskFiles) -> Reader:
    """Lines as one Arrow string array per task, read in the Python worker through ``files``
    (see :mod:`dstream.sources.textbatches`). Each file is cut into enough byte ranges that
    an interval has at least ``defaultParallelism`` tasks."""

    def read(ssc: StreamingContext, paths: list[str]) -> RDD[Any]:
        from dstream.sources.textbatches import read_text_split

        sc = ssc.sparkContext
        per_file = max(1, -(-int(sc.defaultParallelism) // len(paths)))
        splits = [(path, i, per_file) for path in paths for i in range(per_file)]
        return sc.parallelize(splits, len(splits)).map(lambda split: read_text_split(files, *split))

    return read
