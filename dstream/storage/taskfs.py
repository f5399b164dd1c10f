"""Files that *tasks* read and write: state checkpoints and track()'s snapshots.

The driver reaches any Hadoop file system through its JVM (:mod:`dstream.storage.filesystem`),
but a task runs in a Python worker with no JVM gateway. So a task gets a small picklable
handle, chosen on the driver for the checkpoint directory:

* :class:`LocalTaskFiles` for local paths (the embedded default, and shared mounts);
* :class:`WebHdfsTaskFiles` for ``hdfs://`` paths: WebHDFS through the ``hdfs`` package,
  against the NameNode that the ``hdfs://`` URI names. Its HTTP address comes from the
  Hadoop configuration the driver's SparkContext sees (``dstream.webhdfs.url``, else
  ``dfs.namenode.http-address``, else the URI's host on Hadoop's default port 9870), so a
  cluster's ``hdfs-site.xml`` (or ``--conf spark.hadoop.dfs.namenode.http-address=...``)
  is all it takes.

Every publish is "write a temporary name, then rename without replacing": a retried or
speculative task that finds the file already there stops (the content is deterministic).
Immutable files that a task needs as a local file (SQLite snapshots) are downloaded once
into the executor's private cache (:func:`task_cache_dir`), checked against the SHA-256
their writer recorded (see :mod:`dstream.storage.integrity` for what that protects).
"""

from __future__ import annotations

import atexit
import contextlib
import getpass
import hashlib
import mmap
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlparse

from dstream.storage.filesystem import LocalFileSystem, _local_path, publish
from dstream.storage.integrity import (
    TamperedFileError,
    private_directory,
    remember_verified,
    sha256_file,
)
from dstream.storage.paths import qualify, split_uri, warn_if_unshared

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = [
    "LocalTaskFiles",
    "TaskFiles",
    "WebHdfsTaskFiles",
    "task_cache_dir",
    "task_files_for",
    "webhdfs_url",
]

_T = TypeVar("_T")
WEBHDFS_URL_KEY = "dstream.webhdfs.url"
DEFAULT_NAMENODE_HTTP_PORT = 9870


class TaskFiles(Protocol):
    def exists(self, path: str) -> bool: ...

    def read_bytes(self, path: str) -> bytes: ...

    def size(self, path: str) -> int: ...

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset`` (fewer at the end of the file)."""
        ...

    def publish(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` unless it exists; False if it did."""
        ...

    def list_names(self, path: str) -> list[str]:
        """The names in the directory ``path`` (empty if it does not exist)."""
        ...

    def publish_file(self, path: str, local_file: str) -> bool:
        """Copy the local file to ``path`` unless it exists; False if it did."""
        ...

    def local_copy(self, path: str, sha256: str | None = None) -> str:
        """A local file with ``path``'s content (``path`` must never change once written). A
        download is checked against ``sha256`` (hex) when given: :class:`TamperedFileError`
        naming ``path`` if it does not match. Open the result with
        :func:`dstream.storage.integrity.open_verified` to check a local file."""
        ...


@dataclass(frozen=True)
class LocalTaskFiles:
    def exists(self, path: str) -> bool:
        return LocalFileSystem().exists(path)

    def read_bytes(self, path: str) -> bytes:
        return LocalFileSystem().read_bytes(path)

    def size(self, path: str) -> int:
        return os.path.getsize(_local_path(path))

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        with open(_local_path(path), "rb") as f:
            f.seek(offset)
            return f.read(length)

    def open_map(self, path: str) -> contextlib.AbstractContextManager[Any] | None:
        """The whole file mapped read-only (None for an empty file): tasks that read a
        local file parse the page cache's bytes in place."""
        with open(_local_path(path), "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return None
            view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        view.madvise(mmap.MADV_SEQUENTIAL)
        return _closing_map(view)

    def publish(self, path: str, data: bytes) -> bool:
        return self._publish(path, lambda fs, tmp: fs.write_bytes(tmp, data))

    def list_names(self, path: str) -> list[str]:
        try:
            return os.listdir(_local_path(path))
        except FileNotFoundError:
            return []

    def publish_file(self, path: str, local_file: str) -> bool:
        def copy(fs: LocalFileSystem, tmp: str) -> None:
            shutil.copyfile(local_file, tmp)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

        return self._publish(path, copy)

    @staticmethod
    def _publish(path: str, write: Callable[[LocalFileSystem, str], None]) -> bool:
        fs = LocalFileSystem()
        if fs.exists(path):
            return False
        fs.mkdirs(os.path.dirname(path))
        return publish(fs, path, lambda tmp: write(fs, tmp))

    def local_copy(self, path: str, sha256: str | None = None) -> str:
        return _local_path(path)  # checked when opened (open_verified)


@contextlib.contextmanager
def _closing_map(view: mmap.mmap) -> Iterator[mmap.mmap]:
    try:
        yield view
    finally:
        # BufferError: an Arrow buffer still points into it; unmapped when that is freed.
        with contextlib.suppress(BufferError):
            view.close()


_clients: dict[tuple[str, str], Any] = {}
_clients_lock = threading.Lock()


@dataclass(frozen=True)
class WebHdfsTaskFiles:
    """``hdfs://`` paths through WebHDFS at ``url`` (``http://namenode:port``) as ``user``."""

    url: str
    user: str
    cache_dir: str | None = None  # where downloaded snapshots are kept (default: temp dir)

    def _client(self) -> Any:
        key = (self.url, self.user)
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                from hdfs import InsecureClient

                client = _clients[key] = InsecureClient(self.url, user=self.user)
            return client

    @staticmethod
    def _hpath(path: str) -> str:
        # Split as Hadoop does ('?', '#' are name characters). A path without a scheme is on
        # this NameNode: the handle is made only when the default file system is HDFS.
        scheme, _, rest = split_uri(path)
        if scheme == "hdfs" or (scheme == "" and rest.startswith("/")):
            return rest or "/"
        raise ValueError(f"{path!r} is not an hdfs:// path")

    def exists(self, path: str) -> bool:
        return _retrying(lambda: self._client().status(self._hpath(path), strict=False)) is not None

    def read_bytes(self, path: str) -> bytes:
        def read() -> bytes:
            with self._client().read(self._hpath(path)) as reader:
                data: bytes = reader.read()
            return data

        return _retrying(read)

    def size(self, path: str) -> int:
        status = _retrying(lambda: self._client().status(self._hpath(path)))
        return int(status["length"])

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        def read() -> bytes:
            with self._client().read(self._hpath(path), offset=offset, length=length) as reader:
                data: bytes = reader.read()
            return data

        return _retrying(read)

    def publish(self, path: str, data: bytes) -> bool:
        return self._publish(path, lambda client, tmp: client.write(tmp, data=data))

    def list_names(self, path: str) -> list[str]:
        hpath = self._hpath(path)
        if _retrying(lambda: self._client().status(hpath, strict=False)) is None:
            return []
        return [str(n) for n in _retrying(lambda: self._client().list(hpath, status=False))]

    def publish_file(self, path: str, local_file: str) -> bool:
        return self._publish(path, lambda client, tmp: client.upload(tmp, local_file))

    def _publish(self, path: str, write: Any) -> bool:
        client = self._client()

        def fill(tmp: str) -> None:
            def attempt() -> None:
                try:
                    write(client, tmp)  # WebHDFS CREATE makes the parent directories
                except BaseException:
                    with contextlib.suppress(Exception):
                        client.delete(tmp)
                    raise

            _retrying(attempt)

        return publish(_WebHdfsRenamer(client), self._hpath(path), fill)

    def local_copy(self, path: str, sha256: str | None = None) -> str:
        # Snapshots are immutable once published, so a copy keyed by the path stays valid.
        root = private_directory(self.cache_dir) if self.cache_dir else task_cache_dir()
        key = hashlib.sha256(f"{self.url}\0{path}\0{sha256 or ''}".encode()).hexdigest()[:32]
        directory = os.path.join(root, key[:2])
        local = os.path.join(directory, key)
        if os.path.exists(local):
            return local
        os.makedirs(directory, exist_ok=True)
        tmp = f"{local}.tmp-{uuid.uuid4().hex}"
        try:
            _retrying(lambda: self._client().download(self._hpath(path), tmp, overwrite=True))
            if sha256 is not None and sha256_file(tmp) != sha256:
                raise TamperedFileError(
                    f"{path} does not match the SHA-256 its writer recorded ({sha256[:16]}...): "
                    "the file is corrupt or was changed by someone else, so it was not used; "
                    "the checkpoint directory must be writable only by this program's user"
                )
            os.replace(tmp, local)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if sha256 is not None:
            remember_verified(local, sha256)  # checked just now: opening it needs no rehash
        _trim_cache(root)
        return local


_process_cache: list[str] = []  # this process's private directory, once made
_process_cache_lock = threading.Lock()


def task_cache_dir() -> str:
    """The private directory where this executor keeps downloaded state files: a
    ``dstream-cache`` directory (mode 0700, checked before each use) inside the executor's
    block manager directory, which Spark passes to Python workers as ``SPARK_LOCAL_DIRS``,
    names at random per application and removes with the executor. Outside a Spark worker (the
    driver, tests) a private temporary directory of this process, removed at exit."""
    local_dirs = os.environ.get("SPARK_LOCAL_DIRS")
    if local_dirs:
        return private_directory(os.path.join(local_dirs.split(",")[0], "dstream-cache"))
    with _process_cache_lock:
        if not _process_cache:
            made = tempfile.mkdtemp(prefix="dstream-cache-")  # mode 0700, a random name
            atexit.register(shutil.rmtree, made, True)
            _process_cache.append(made)
        return private_directory(_process_cache[0])


@dataclass(frozen=True)
class _WebHdfsRenamer:
    """:func:`publish`'s three operations through a WebHDFS client."""

    client: Any

    def exists(self, path: str) -> bool:
        return self.client.status(path, strict=False) is not None

    def delete(self, path: str) -> None:
        self.client.delete(path)

    def rename(self, src: str, dst: str) -> None:
        self.client.rename(src, dst)  # HdfsError when dst exists


_CACHE_LIMIT_BYTES = 2 << 30
_RETRIES = 8


def _retrying(action: Callable[[], _T]) -> _T:
    """Run ``action``, again after a pause when a DataNode (or the NameNode) refused the
    connection: until the NameNode declares a crashed DataNode dead (tens of seconds) it may
    still redirect a WebHDFS request there; the next redirect usually picks a live one."""
    from requests.exceptions import ConnectionError as RequestsConnectionError

    pause = 0.25
    for attempt in range(_RETRIES):
        try:
            return action()
        except RequestsConnectionError:
            if attempt == _RETRIES - 1:
                raise
            threading.Event().wait(pause)
            pause = min(pause * 2, 8.0)
    raise AssertionError("unreachable")


def _trim_cache(root: str) -> None:
    """Keep the download cache under a size limit, dropping the least recently used files."""
    files = []
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(path)
                files.append((st.st_atime, st.st_size, path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= _CACHE_LIMIT_BYTES:
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        total -= size


def webhdfs_url(sc: SparkContext, uri: str) -> str:
    """The WebHDFS address of the NameNode that ``uri`` (``hdfs://host:port/...``) names."""
    conf = sc._jsc.hadoopConfiguration()
    explicit = conf.get(WEBHDFS_URL_KEY)
    if explicit:
        return str(explicit).rstrip("/")
    host = urlparse(uri).hostname or "localhost"
    address = conf.get("dfs.namenode.http-address")
    if address:
        http_host, _, port = str(address).rpartition(":")
        if http_host in ("", "0.0.0.0"):
            http_host = host
        return f"http://{http_host}:{port}"
    return f"http://{host}:{DEFAULT_NAMENODE_HTTP_PORT}"


def require_webhdfs_client(what: str) -> None:
    """Tasks reach hdfs:// paths through WebHDFS with the ``hdfs`` and ``requests`` packages,
    the ``hdfs`` extra: an error that says so when either is missing on the driver."""
    import importlib.util

    missing = [name for name in ("hdfs", "requests") if importlib.util.find_spec(name) is None]
    if missing:
        raise ValueError(
            f"{what} is on HDFS, which dstream's tasks read and write through WebHDFS with the "
            f"{' and '.join(missing)} package{'s' if len(missing) > 1 else ''}, not installed in "
            "this Python: install them with `pip install 'pyspark-dstream[hdfs]'` (on the "
            "executors too)"
        )


def task_files_for(
    directory: str, sc: SparkContext, what: str = "the checkpoint directory"
) -> TaskFiles:
    """The task-side handle for files under ``directory`` (a path without a scheme is on
    Hadoop's default file system, as for Spark); checks that tasks can reach it, and warns
    when it is the driver's local disk under a master whose executors run elsewhere.
    ``what`` names the directory in errors."""
    directory = qualify(directory, sc)
    scheme = split_uri(directory)[0]
    if scheme in ("", "file"):
        warn_if_unshared(directory, sc, what)
        return LocalTaskFiles()
    if scheme == "hdfs":
        require_webhdfs_client(f"{what} {directory!r}")
        url = webhdfs_url(sc, directory)
        user = os.environ.get("HADOOP_USER_NAME") or sc.sparkUser() or getpass.getuser()
        files = WebHdfsTaskFiles(url, user)
        try:
            files._client().status("/")
        except Exception as exc:
            raise ValueError(
                f"tasks reach {what} {directory!r} through WebHDFS, but "
                f"{url} does not answer ({type(exc).__name__}: {str(exc)[:200]}); enable "
                f"WebHDFS on the NameNode (dfs.webhdfs.enabled) and set its address with "
                f"--conf spark.hadoop.dfs.namenode.http-address=HOST:PORT or "
                f"spark.hadoop.{WEBHDFS_URL_KEY}=http://HOST:PORT"
            ) from exc
        return files
    raise ValueError(
        f"{what} {directory!r} uses {scheme}://, which dstream's tasks cannot reach: use a "
        "local path (or a shared mount) or hdfs://"
    )
