"""The file systems the engine reads and writes: the local one (the embedded default) and,
through the driver JVM's Hadoop FileSystem API, anything Hadoop can open (``hdfs://`` ...).

Only what the engine needs: list a directory's files with modification times, test, make,
delete, read and write small files, and rename *without replacing* the destination — the
atomic step every commit in dstream is built on. A rename that cannot be done raises; it is
never a log line. :func:`publish` is that commit, the one way dstream makes a file or a
directory appear: whole, once, or not at all.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dstream.jvm import gateway_of, java_class
from dstream.storage.paths import is_local, local_path, qualify, split_uri

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = [
    "FileInfo",
    "FileSystem",
    "HadoopFileSystem",
    "LocalFileSystem",
    "RenameError",
    "Renamer",
    "filesystem_for",
    "is_hidden",
    "join",
    "publish",
    "temporary_name",
]


class RenameError(OSError):
    """A rename that did not happen (the destination exists, or the source is missing)."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: str
    modified_ms: int
    size: int


def is_hidden(name: str) -> bool:
    """Names starting with '.' or '_' are in-progress or bookkeeping files (Hadoop's rule)."""
    return name.startswith((".", "_"))


def join(directory: str, name: str) -> str:
    return directory.rstrip("/") + "/" + name


class Renamer(Protocol):
    """What :func:`publish` needs of a file system."""

    def exists(self, path: str) -> bool: ...

    def delete(self, path: str) -> None: ...

    def rename(self, src: str, dst: str) -> None:
        """Rename without replacing; raise if ``dst`` exists."""
        ...


def temporary_name(path: str, tag: str = "") -> str:
    """A hidden, unique name next to ``path`` for the content it is about to get:
    ``.<name>.tmp-[<tag>-]<uuid>``."""
    directory, _, name = path.rstrip("/").rpartition("/")
    return f"{directory}/.{name}.tmp-{tag + '-' if tag else ''}{uuid.uuid4().hex}"


def publish(fs: Renamer, path: str, write: Callable[[str], None], tag: str = "") -> bool:
    """Make ``path`` appear whole or not at all: ``write(tmp)`` fills a hidden temporary name
    next to it (a file or a directory), which is then renamed into place without replacing.

    Returns False, leaving nothing behind, if ``path`` exists already or appears meanwhile
    (another attempt published it first; what dstream publishes is deterministic, so the
    content is the same). Any other failure removes the temporary and raises. ``tag``
    goes into the temporary's name (output commits put the driver's epoch there).
    """
    if fs.exists(path):
        return False
    tmp = temporary_name(path, tag)
    try:
        write(tmp)
        fs.rename(tmp, path)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.delete(tmp)
        if fs.exists(path):
            return False
        raise
    return True


class FileSystem(Protocol):
    def list_files(self, directory: str) -> list[FileInfo]:
        """Visible regular files directly in ``directory`` (hidden names skipped)."""
        ...

    def list_names(self, directory: str) -> list[str]:
        """Every entry's name in ``directory``, hidden ones included."""
        ...

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def mkdirs(self, path: str) -> None: ...

    def delete(self, path: str) -> None:
        """Delete a file or a directory tree; a missing path is not an error."""
        ...

    def read_bytes(self, path: str) -> bytes: ...

    def write_bytes(self, path: str, data: bytes) -> None:
        """Create ``path`` with ``data`` (replacing it), flushed to stable storage."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Atomically rename; raises :class:`RenameError` if ``dst`` exists."""
        ...


# ---- local -------------------------------------------------------------------------------
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


def _load_renameat2() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()


def _local_path(path: str) -> str:
    # Split as Hadoop does: '?' and '#' are file name characters, not a query or fragment.
    return local_path(path)


class LocalFileSystem:
    """POSIX file system. ``rename`` uses renameat2(RENAME_NOREPLACE) where the kernel has
    it, so "the destination exists" is decided atomically by the kernel."""

    def list_files(self, directory: str) -> list[FileInfo]:
        result = []
        with os.scandir(_local_path(directory)) as entries:
            for entry in entries:
                if is_hidden(entry.name) or not entry.is_file():
                    continue
                st = entry.stat()
                result.append(FileInfo(entry.path, st.st_mtime_ns // 1_000_000, st.st_size))
        return result

    def list_names(self, directory: str) -> list[str]:
        try:
            return os.listdir(_local_path(directory))
        except FileNotFoundError:
            return []

    def exists(self, path: str) -> bool:
        return os.path.exists(_local_path(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(_local_path(path))

    def mkdirs(self, path: str) -> None:
        os.makedirs(_local_path(path), exist_ok=True)

    def delete(self, path: str) -> None:
        p = _local_path(path)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=False)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)

    def read_bytes(self, path: str) -> bytes:
        with open(_local_path(path), "rb") as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        with open(_local_path(path), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def rename(self, src: str, dst: str) -> None:
        s, d = _local_path(src), _local_path(dst)
        if _renameat2 is not None:
            if _renameat2(_AT_FDCWD, s.encode(), _AT_FDCWD, d.encode(), _RENAME_NOREPLACE) == 0:
                self._sync_dir(os.path.dirname(d))
                return
            err = ctypes.get_errno()
            if err == errno.EEXIST:
                raise RenameError(err, f"cannot rename {src} to {dst}: the destination exists")
            if err not in (errno.EINVAL, errno.ENOSYS):  # EINVAL: the FS lacks NOREPLACE
                raise RenameError(err, f"cannot rename {src} to {dst}: {os.strerror(err)}")
        # Fallback where the kernel or file system lacks RENAME_NOREPLACE: check, then rename.
        if os.path.lexists(d):
            raise RenameError(errno.EEXIST, f"cannot rename {src} to {dst}: the destination exists")
        try:
            os.rename(s, d)
        except OSError as exc:
            raise RenameError(exc.errno, f"cannot rename {src} to {dst}: {exc.strerror}") from exc
        self._sync_dir(os.path.dirname(d))

    @staticmethod
    def _sync_dir(directory: str) -> None:
        # A rename is durable only once its directory entry is on disk.
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ---- Hadoop (hdfs:// and any other scheme), through the driver JVM -------------------------
class HadoopFileSystem:
    """Hadoop's FileSystem API through Py4J; ``rename`` uses ``FileContext.rename`` with
    ``Options.Rename.NONE``, which fails (atomically, on HDFS) when the destination exists —
    unlike ``FileSystem.rename``, which moves a source *into* an existing directory."""

    def __init__(self, sc: SparkContext, uri: str) -> None:
        self._sc = sc
        self._gateway: Any = gateway_of(sc)
        self._io_utils = java_class(sc, "org.apache.commons.io.IOUtils")
        self._conf = sc._jsc.hadoopConfiguration()
        self._path_cls = java_class(sc, "org.apache.hadoop.fs.Path")
        self._fs = self._path(uri).getFileSystem(self._conf)
        self._fc = java_class(sc, "org.apache.hadoop.fs.FileContext").getFileContext(
            self._fs.getUri(), self._conf
        )

    def _path(self, path: str) -> Any:
        return self._path_cls(path)

    def list_files(self, directory: str) -> list[FileInfo]:
        result = []
        for status in self._fs.listStatus(self._path(directory)):
            if status.isDirectory():
                continue
            path = status.getPath()
            if is_hidden(path.getName()):
                continue
            result.append(FileInfo(path.toString(), status.getModificationTime(), status.getLen()))
        return result

    def list_names(self, directory: str) -> list[str]:
        p = self._path(directory)
        if not self._fs.exists(p):
            return []
        return [s.getPath().getName() for s in self._fs.listStatus(p)]

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._path(path)))

    def is_dir(self, path: str) -> bool:
        return bool(self._fs.isDirectory(self._path(path)))

    def mkdirs(self, path: str) -> None:
        if not self._fs.mkdirs(self._path(path)):
            raise OSError(f"could not create directory {path}")

    def delete(self, path: str) -> None:
        self._fs.delete(self._path(path), True)

    def read_bytes(self, path: str) -> bytes:
        stream = self._fs.open(self._path(path))
        try:
            return bytes(self._io_utils.toByteArray(stream))
        finally:
            stream.close()

    def write_bytes(self, path: str, data: bytes) -> None:
        out = self._fs.create(self._path(path), True)
        try:
            out.write(bytearray(data))
            out.hsync()
        finally:
            out.close()

    def rename(self, src: str, dst: str) -> None:
        rename = java_class(self._sc, "org.apache.hadoop.fs.Options$Rename")
        options = self._gateway.new_array(rename, 1)
        options[0] = rename.NONE
        try:
            self._fc.rename(self._path(src), self._path(dst), options)
        except Exception as exc:
            # With Rename.NONE an existing destination of any kind is refused (HDFS words
            # it differently for files and directories); say so plainly.
            if self._fs.exists(self._path(dst)):
                raise RenameError(
                    errno.EEXIST, f"cannot rename {src} to {dst}: the destination exists"
                ) from exc
            java = getattr(exc, "java_exception", None)
            reason = str(java.getMessage()) if java is not None else str(exc)
            raise RenameError(
                errno.EIO, f"cannot rename {src} to {dst}: {reason.splitlines()[0][:500]}"
            ) from exc


def filesystem_for(path: str, sc: SparkContext | None = None) -> FileSystem:
    """The file system ``path`` is on, as Spark resolves it: with a SparkContext a path
    without a scheme is on Hadoop's default file system (``fs.defaultFS``; the local disk
    only when that is ``file:///``), without one it is local. The local file system for
    local paths and ``file:``, Hadoop's for any other scheme. A Hadoop file system reached
    for a scheme-less path is the default one, so it resolves such paths the same way."""
    if sc is not None:
        path = qualify(path, sc)
    if is_local(path):
        return LocalFileSystem()
    if sc is None:
        scheme = split_uri(path)[0]
        raise ValueError(f"{path!r} needs a SparkContext to reach its file system ({scheme}://)")
    return HadoopFileSystem(sc, path)
