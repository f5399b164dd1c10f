"""The JVM shim's jar when dstream is imported from a zip (``--py-files dstream.zip``): a
JVM cannot load a jar inside a zip, so it is copied out once, by content."""

from __future__ import annotations

import zipfile
from pathlib import Path

from dstream.jvm import _shim_jar


def test_a_jar_inside_a_zip_is_copied_out_once_by_content(tmp_path: Path) -> None:
    shipped = tmp_path / "dstream.zip"
    with zipfile.ZipFile(shipped, "w") as z:
        z.writestr("dstream/__init__.py", "")
        z.writestr("dstream/jars/dstream-shim.jar", b"PK-the-jar")
    jar = _shim_jar(shipped / "dstream")
    assert jar.is_file() and jar.read_bytes() == b"PK-the-jar"
    assert _shim_jar(shipped / "dstream") == jar  # the same copy again


def test_a_jar_on_the_file_system_is_used_where_it_is(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "dstream-shim.jar").write_bytes(b"jar")
    assert _shim_jar(tmp_path) == tmp_path / "jars" / "dstream-shim.jar"


def test_a_zip_without_the_jar_names_where_it_was_looked_for(tmp_path: Path) -> None:
    shipped = tmp_path / "dstream.zip"
    with zipfile.ZipFile(shipped, "w") as z:
        z.writestr("dstream/__init__.py", "")
    assert _shim_jar(shipped / "dstream") == shipped / "dstream" / "jars" / "dstream-shim.jar"
