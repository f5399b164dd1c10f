"""Where getOrCreate looks for a checkpoint before any SparkContext exists: a path Spark
would resolve off the local disk must not be looked up on the local disk."""

from __future__ import annotations

import pytest

from dstream.scheduler.recovery import _needs_spark_to_reach


@pytest.mark.parametrize(
    ("path", "default_fs", "needs"),
    [
        ("/ckpt", "file:///", False),
        ("ckpt", "file:///", False),
        ("file:///ckpt", "hdfs://nn:8020", False),
        ("/ckpt", "hdfs://nn:8020", True),  # scheme-less: on the default file system
        ("relative/ckpt", "hdfs://nn:8020", True),
        ("hdfs://nn:8020/ckpt", "file:///", True),
        ("hdfs:/ckpt", "file:///", True),
        ("s3a://bucket/ckpt", "file:///", True),
    ],
)
def test_a_checkpoint_path_is_looked_up_where_spark_resolves_it(
    path: str, default_fs: str, needs: bool
) -> None:
    asked: list[str] = []

    def configured_default() -> str:
        asked.append(default_fs)
        return default_fs

    assert _needs_spark_to_reach(path, configured_default) is needs
    # the default file system (which starts the JVM) is consulted only for scheme-less paths
    assert bool(asked) == ("://" not in path and not path.startswith(("file:", "hdfs:")))
