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

import hashlib
import os
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from py4j.java_gateway import JavaClass, JavaPackage

if TYPE_CHECKING:
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

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


def gateway_of(sc: Any) -> Any:
    """The Py4J gateway of ``sc`` (None once it is stopped). PySpark keeps it private
    (``SparkContext._gateway``); this is the one place that reads it."""
    return sc._gateway


def live_conf(sc: Any) -> SparkConf:
    """The settings of the running SparkContext ``sc``, read in place: a view over the
    JVM's own SparkConf (two Py4J calls to reach it), each ``get`` then one or two.
    ``sc.getConf()`` first copies every setting into a new SparkConf, ~3 Py4J calls a
    setting (~150 for a context of 50 settings), at each call. For reading only: a setting
    changed here would not reach the parts of the running context that read it at their
    start."""
    from pyspark import SparkConf

    return SparkConf(_jconf=sc._jsc.sc().conf())


def session_of(sc: Any) -> SparkSession:
    """The SparkSession over ``sc``, made at the first call: a JVM runs one SparkContext,
    so the builder's session is over it. ``builder.config(conf=sc.getConf())``, the way
    it was asked before, copied every setting into the session again at each call (~5 Py4J
    calls a setting, 5,000 calls in a chaos run writing a table every interval)."""
    from pyspark.sql import SparkSession

    session = SparkSession.builder.getOrCreate()
    if session.sparkContext is not sc:  # sc is not the JVM's running context: refuse
        raise RuntimeError(
            f"the SparkContext {sc.applicationId!r} is not the running one "
            f"({session.sparkContext.applicationId!r}); a JVM runs one SparkContext: "
            "give the running one"
        )
    return session


def java_class(sc: Any, name: str) -> Any:
    """The Java class ``name`` (fully qualified) of ``sc``'s JVM, for static calls and
    constructors, without a lookup per name segment."""
    gateway = gateway_of(sc)
    assert gateway is not None  # a running SparkContext always has its gateway
    return JavaClass(name, gateway._gateway_client)


def resolve_hot_classes(sc: Any) -> None:
    """Put :data:`HOT_PYSPARK_CLASSES` and :data:`HOT_QUALIFIED_CLASSES` into ``sc``'s JVM
    view (once per gateway): each name, and each package on a qualified class's path, is an
    attribute of the view (or of the package before it), so Py4J's ``__getattr__``, which
    asks the JVM, is not reached. Every other name of the view or of these packages is
    looked up as before; the objects are the ones Py4J itself would build."""
    gateway = gateway_of(sc)
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


# ---- the JVM shim's jar and its classes ----------------------------------------------------
def _shim_jar(package_dir: Path) -> Path:
    """The jar's path: package data in ``package_dir``, or, when dstream is imported from a
    zip (shipped with ``--py-files``, where a JVM cannot read it), a copy extracted once per
    jar content into the temporary directory."""
    jar = package_dir / "jars" / "dstream-shim.jar"
    if jar.is_file():
        return jar
    archive = next((p for p in package_dir.parents if p.is_file() and zipfile.is_zipfile(p)), None)
    if archive is None:
        return jar
    with zipfile.ZipFile(archive) as z:
        try:
            data = z.read(jar.relative_to(archive).as_posix())
        except KeyError:
            return jar  # not in the zip either: ShimMissingError names where it was looked for
    digest = hashlib.sha256(data).hexdigest()[:16]
    copy = Path(tempfile.gettempdir()) / f"dstream-shim-{digest}.jar"
    if not copy.is_file():
        partial = copy.with_name(f".{copy.name}.{os.getpid()}")
        partial.write_bytes(data)
        os.replace(partial, copy)  # atomic: another process may be extracting it too
    return copy


#: The jar, as package data (``jvm-shim/build.sh`` puts it there; a wheel ships it).
SHIM_JAR: Final[Path] = _shim_jar(Path(__file__).resolve().parent)
RECORDER_CLASS: Final = "io.dstream.shim.EventRecorder"
SHUFFLES_CLASS: Final = "io.dstream.shim.shuffle.Shuffles"


class ShimMissingError(RuntimeError):
    """The shim jar is needed but has not been built."""

    def __init__(self, path: Path, needed_by: str | None = None) -> None:
        why = f" ({needed_by} needs it)" if needed_by else ""
        super().__init__(
            f"dstream JVM shim jar not found at {path}{why}. In a source checkout build it "
            "with `make shim` (or `bash jvm-shim/build.sh`); an installed dstream ships it in "
            "its wheel unless the wheel was built with DSTREAM_BUILD_WITHOUT_SHIM=1: reinstall "
            "from a wheel built with a JDK 17+"
        )
        self.path = path


_loader_lock = threading.Lock()
_loaded: dict[str, tuple[Any, Any]] = {}  # resolved jar path -> (gateway, recorder Class)


def class_on_classpath(sc: SparkContext) -> bool:
    """Whether the driver can already load the recorder (spark.jars, extraClassPath, ...)."""
    from py4j.protocol import Py4JJavaError

    jvm = sc._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(RECORDER_CLASS, False, loader)
    except Py4JJavaError as exc:
        if "ClassNotFoundException" in str(exc.java_exception.getClass().getName()):
            return False
        raise
    return True


def recorder_class_from_jar(sc: SparkContext, jar: Path) -> Any:
    gateway = gateway_of(sc)
    jvm = sc._jvm
    assert gateway is not None and jvm is not None
    key = str(jar.resolve())
    with _loader_lock:
        cached = _loaded.get(key)
        if cached is not None and cached[0] is gateway:
            return cached[1]
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(key).toURI().toURL()
        parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        loader = jvm.java.net.URLClassLoader(urls, parent)
        cls = loader.loadClass(RECORDER_CLASS)
        _loaded[key] = (gateway, cls)
        return cls


def shim_class(sc: SparkContext, name: str, jar: Path | None = None) -> Any:
    """The ``java.lang.Class`` ``name`` of the shim: from the driver's classpath when the shim
    is there, otherwise from ``jar`` (default :data:`SHIM_JAR`) through the one class loader per
    jar that :meth:`TaskEventFeed.attach` uses too (so static state is shared).

    Raises ShimMissingError if the shim is not on the classpath and the jar does not exist,
    and Py4JJavaError (ClassNotFoundException) if that shim has no class ``name``.
    """
    jvm = sc._jvm
    gateway = gateway_of(sc)
    assert jvm is not None and gateway is not None
    path = SHIM_JAR if jar is None else Path(jar)
    key = (name, str(path))
    with _loader_lock:
        cached = _classes.get(key)
    if cached is not None and cached[0] is gateway:
        # One handle per class (invoke_static's lookups are kept by it), and no second
        # class_on_classpath: a class it does not find is a failed lookup in every jar.
        return cached[1]
    if class_on_classpath(sc):
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        cls = jvm.java.lang.Class.forName(name, True, loader)
    else:
        if not path.is_file():
            raise ShimMissingError(path)
        cls = recorder_class_from_jar(sc, path).getClassLoader().loadClass(name)
    with _loader_lock:
        _classes[key] = (gateway, cls)
    return cls


# The shim's classes by (name, the jar asked for), with the gateway they are of: from the
# classpath or from that jar, whichever the first call found.
_classes: dict[tuple[str, str], tuple[Any, Any]] = {}


_shipped: set[str] = set()
_ship_lock = threading.Lock()


def executor_class(sc: SparkContext, name: str) -> Any:
    """The shim's class ``name`` (see :func:`shim_class`) for an RDD whose tasks run it: the
    jar is shipped to the executors once per application. Raises ShimMissingError without
    the shim."""
    cls = shim_class(sc, name)
    app = sc.applicationId
    with _ship_lock:
        if app not in _shipped:
            sc._jsc.sc().addJar(str(SHIM_JAR))
            _shipped.add(app)
    return cls


def invoke_static(sc: SparkContext, cls: Any, method: str, *args: tuple[str, Any]) -> Any:
    """Calls the static ``method`` of the Java class ``cls`` (from :func:`shim_class`) with
    ``args``, each given as (Java parameter type name, value), through reflection (Py4J's
    ``jvm.`` lookup does not see classes of the shim's own class loader). An exception thrown
    by the method is raised as Py4JJavaError of its InvocationTargetException.

    The reflected method is looked up once per class, name and parameter types (a lookup is
    ~8 Py4J calls; :func:`share_kryo` calls for every shuffle of every interval): a call
    is then the argument array and the invocation."""
    gateway = gateway_of(sc)
    jvm = sc._jvm
    assert gateway is not None and jvm is not None
    signature = tuple(type_name for type_name, _ in args)
    key = (id(cls), method, signature)
    with _lock:
        found = _methods.get(key)
    if found is None or found[0] is not cls:
        loader = cls.getClassLoader()
        types = gateway.new_array(jvm.java.lang.Class, len(args))
        for i, type_name in enumerate(signature):
            if type_name in _PRIMITIVES:
                types[i] = getattr(jvm.java.lang, _PRIMITIVES[type_name]).TYPE
            elif type_name.startswith("["):  # an array type: "[B" is byte[]
                types[i] = jvm.java.lang.Class.forName(type_name)
            else:
                types[i] = loader.loadClass(type_name)
        found = (cls, cls.getMethod(method, types))  # cls held: its id is not reused
        with _lock:
            _methods[key] = found
    values = gateway.new_array(jvm.java.lang.Object, len(args))
    for i, (_, value) in enumerate(args):
        values[i] = value
    return found[1].invoke(None, values)


# Reflected static methods by (id of their class's handle, name, parameter types).
_methods: dict[tuple[int, str, tuple[str, ...]], tuple[Any, Any]] = {}


# Parameter types invoke_static takes by their Java names, and the boxes holding their TYPE.
_PRIMITIVES: Final = {"int": "Integer", "long": "Long", "boolean": "Boolean", "double": "Double"}


_kryo_lock = threading.Lock()
_kryo: dict[str, Any] = {}  # application id -> the shim's Shuffles class (None: off)

#: The SparkConf key that turns :func:`share_kryo` off (``false``); on by default.
SHARED_KRYO_CONF: Final = "spark.dstream.shuffle.sharedKryo"


def share_kryo(rdd: Any) -> int:
    """Give the PySpark shuffles in ``rdd``'s lineage that Spark has not built yet one Kryo
    pool per JVM (``io.dstream.shim.shuffle.SharedKryo``: the same bytes; a task no longer
    builds a Kryo of its own, bench/README "One Kryo pool per JVM"); returns how many were
    set. Off with ``spark.dstream.shuffle.sharedKryo=false``; without the shim nothing
    changes (each task builds its own Kryo, as in plain PySpark)."""
    sc = rdd.ctx
    app = sc.applicationId
    with _kryo_lock:
        if app not in _kryo:
            given = live_conf(sc).get(SHARED_KRYO_CONF, "true")
            on = given.strip().lower()
            if on not in ("true", "false"):
                raise ValueError(
                    f"{SHARED_KRYO_CONF}={given!r} must be true (one Kryo pool per JVM for "
                    "the engine's shuffles, the default) or false (a Kryo per task)"
                )
            try:
                cls = executor_class(sc, SHUFFLES_CLASS) if on == "true" else None
            except ShimMissingError:
                cls = None
            _kryo[app] = cls
        cls = _kryo[app]
    if cls is None:
        return 0
    return int(invoke_static(sc, cls, "share", ("org.apache.spark.rdd.RDD", rdd._jrdd.rdd())))
