"""The JVM shim's jar when dstream is imported from a zip (``--py-files dstream.zip``): a
JVM cannot load a jar inside a zip, so it is copied out once, by content. And the Spark
setting that turns the shim's shared Kryo off."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from dstream.jvm import SHARED_KRYO_CONF, _shim_jar, share_kryo


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


class _Conf:
    """The JVM SparkConf dstream.jvm.live_conf reads (sc._jsc.sc().conf())."""

    def __init__(self, value: str | None) -> None:
        self.value = value

    def get(self, key: str, default: str) -> str:
        return default if self.value is None else self.value

    def sc(self) -> _Conf:
        return self

    def conf(self) -> _Conf:
        return self


class _Context:
    def __init__(self, app: str, value: str | None) -> None:
        self.applicationId, self._jsc = app, _Conf(value)


class _RDD:
    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx


def test_shared_kryo_is_turned_off_by_its_spark_setting_and_a_wrong_value_is_named() -> None:
    # Off: nothing is walked (no JVM is reached: the fake context has none).
    assert share_kryo(_RDD(_Context("app-off", " False "))) == 0
    with pytest.raises(ValueError, match=f"{SHARED_KRYO_CONF}='Yes' must be true .* or false"):
        share_kryo(_RDD(_Context("app-wrong", "Yes")))


class _Method:
    def __init__(self) -> None:
        self.invoked: list[list[object]] = []

    def invoke(self, target: object, values: list[object]) -> object:
        assert target is None  # static
        self.invoked.append(list(values))
        return sum(v for v in values if isinstance(v, int))


class _ShimClass:
    """A shim class's Py4J handle: counts the reflective lookups of its methods."""

    def __init__(self) -> None:
        self.lookups: list[tuple[str, tuple[object, ...]]] = []
        self.method = _Method()

    def getClassLoader(self) -> object:
        return None

    def getMethod(self, name: str, types: list[object]) -> _Method:
        self.lookups.append((name, tuple(types)))
        return self.method


class _Gateway:
    def new_array(self, kind: object, n: int) -> list[object]:
        return [None] * n


class _Lang:
    class Integer:
        TYPE = "int"

    class Long:
        TYPE = "long"

    Class = object
    Object = object


class _Jvm:
    class java:  # noqa: N801 (Py4J's view: jvm.java.lang)
        lang = _Lang


class _Gatewayed:
    _gateway = _Gateway()
    _jvm = _Jvm()


def test_a_static_method_is_looked_up_once_per_class_name_and_signature() -> None:
    from dstream.jvm import invoke_static

    sc, cls = _Gatewayed(), _ShimClass()
    assert invoke_static(sc, cls, "sum", ("int", 1), ("long", 2)) == 3  # type: ignore[arg-type]
    assert invoke_static(sc, cls, "sum", ("int", 4), ("long", 5)) == 9  # type: ignore[arg-type]
    assert cls.lookups == [("sum", ("int", "long"))]  # the second call reused the method
    assert cls.method.invoked == [[1, 2], [4, 5]]
    invoke_static(sc, cls, "sum", ("long", 1), ("long", 2))  # type: ignore[arg-type]
    assert cls.lookups[-1] == ("sum", ("long", "long"))  # another signature, another lookup
    other = _ShimClass()
    invoke_static(sc, other, "sum", ("int", 1), ("long", 2))  # type: ignore[arg-type]
    assert other.lookups == [("sum", ("int", "long"))]  # another class, its own lookup
