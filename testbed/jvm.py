"""The ``java`` that the project's JVM helpers (HDFS mini cluster, standalone Spark) start."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["JavaNotFoundError", "java_executable"]


class JavaNotFoundError(RuntimeError):
    """No Java runtime to start a helper JVM with."""


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` if it exists, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise JavaNotFoundError("no java: set JAVA_HOME or put java (17+) on PATH")
    return java
