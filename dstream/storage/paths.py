"""How dstream names files: as Hadoop splits a path, resolved as Spark resolves it, and handed
to Hadoop's input formats so that it names exactly one file.

* :func:`split_uri` splits ``scheme://authority/path`` the way Hadoop's ``Path(String)``
  does: everything after the authority is the path, whatever it contains (``?`` and ``#``
  are file name characters here, not a query or a fragment).
* :func:`resolve_path`: a path without a scheme means a place on Hadoop's default file
  system (``fs.defaultFS``), as for Spark's ``textFile``; it is the local disk only when
  that is the local file system. :func:`qualify` asks a SparkContext's Hadoop configuration.
* :func:`hadoop_input_groups`: ``textFile(p)`` and ``binaryRecords(p)`` treat ``p`` as a
  comma-separated list of glob patterns (``FileInputFormat.setInputPaths``). Each path is
  escaped so that its pattern matches only itself; see the function for the rules.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

from dstream.jvm import java_class

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = [
    "glob_escape",
    "hadoop_input_groups",
    "is_local",
    "local_path",
    "qualify",
    "resolve_path",
    "split_uri",
    "warn_if_unshared",
]

log = logging.getLogger(__name__)

LOCAL_SCHEMES = ("", "file")


def split_uri(path: str) -> tuple[str, str | None, str]:
    """``(scheme, authority, path)`` as Hadoop's ``Path(String)`` parses them: a scheme is
    what precedes the first ``:`` when no ``/`` comes before it (``""`` if none); ``//``
    then starts an authority that runs to the next ``/`` (None if absent)."""
    scheme, start = "", 0
    colon, slash = path.find(":"), path.find("/")
    if colon != -1 and (slash == -1 or colon < slash):
        scheme, start = path[:colon], colon + 1
    authority = None
    if path.startswith("//", start) and len(path) - start > 2:
        end = path.find("/", start + 2)
        end = len(path) if end == -1 else end
        authority, start = path[start + 2 : end], end
    return scheme, authority, path[start:]


def is_local(path: str) -> bool:
    """A plain path or a ``file:`` URI (after resolution: the driver's local disk)."""
    return split_uri(path)[0] in LOCAL_SCHEMES


def local_path(path: str) -> str:
    """The absolute local path of a plain path or a ``file:`` URI."""
    scheme, _, rest = split_uri(path)
    if scheme not in LOCAL_SCHEMES:
        raise ValueError(f"{path!r} is not a local path (its scheme is {scheme}:)")
    return os.path.abspath(rest)


def resolve_path(path: str, default_fs: str, working_dir: str | None = None) -> str:
    """Where ``path`` is, as Spark resolves it: unchanged if it has a scheme; otherwise on
    ``default_fs`` (Hadoop's ``fs.defaultFS``, e.g. ``hdfs://nn:8020`` or ``file:///``).

    On the local file system the result is a plain absolute path (relative paths are taken
    from the current directory, as Hadoop's local file system does). Elsewhere it is a URI
    on the default file system; a relative path is taken from ``working_dir`` (the file
    system's working directory, ``/user/<name>`` on HDFS), which must then be given.
    """
    if split_uri(path)[0]:
        return path
    scheme, authority, _ = split_uri(default_fs)
    if scheme in LOCAL_SCHEMES:
        return os.path.abspath(path)
    base = f"{scheme}://{authority or ''}"
    if path.startswith("/"):
        return base + path
    if working_dir is None:
        raise ValueError(
            f"path {path!r} is relative and the default file system is {default_fs}; give "
            "an absolute path or a URI"
        )
    directory = working_dir.rstrip("/")
    if not split_uri(directory)[0]:
        directory = base + directory
    return f"{directory}/{path}"


def qualify(path: str, sc: SparkContext) -> str:
    """:func:`resolve_path` against ``sc``'s Hadoop configuration (read at each call, so a
    ``fs.defaultFS`` set at runtime counts, as it does for Spark's own reads)."""
    if split_uri(path)[0]:
        return path
    file_system = java_class(sc, "org.apache.hadoop.fs.FileSystem")
    conf = sc._jsc.hadoopConfiguration()
    default_fs = str(file_system.getDefaultUri(conf).toString())
    working_dir = None
    if not path.startswith("/") and split_uri(default_fs)[0] not in LOCAL_SCHEMES:
        working_dir = str(file_system.get(conf).getWorkingDirectory())
    return resolve_path(path, default_fs, working_dir)


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_if_unshared(directory: str, sc: SparkContext, what: str) -> None:
    """Log once (per application and directory) that a directory on the driver's local disk
    is used by tasks while the master runs executors on other machines."""
    master = sc.master or ""
    if not is_local(directory) or master.startswith("local"):
        return
    key = (str(sc.applicationId), directory)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning(
        "%s %s is on the driver's local disk, but master %s runs executors on other "
        "machines, which cannot see it: use a directory every executor reaches (hdfs://..., "
        "a path on the cluster's default file system, or a shared mount at the same path)",
        what,
        directory,
        master,
    )


# ---- exact input paths for Hadoop's FileInputFormat ------------------------------------------
# FileInputFormat.setInputPaths(conf, String) first splits its argument on every comma that
# is not inside {...} (getPathStrings counts braces and ignores backslashes), stores each
# path escaped (StringUtils.escapeString) and unescapes it again (getInputPaths); then each
# path is a glob (Globber, GlobPattern): a backslash makes the next character literal, and
# a component without an unescaped special character is looked up directly.
_GLOB_SPECIAL = frozenset("\\*?[]{}")


def glob_escape(path: str) -> str:
    """``path`` as a Hadoop input pattern that matches only ``path``: glob characters are
    escaped with a backslash, and a comma becomes the group ``{\\,}`` (one alternative, a
    literal comma) so that ``getPathStrings`` does not split there."""
    _, _, rest = split_uri(path)
    prefix = path[: len(path) - len(rest)]
    out = []
    for ch in rest:
        if ch in _GLOB_SPECIAL:
            out.append("\\" + ch)
        elif ch == ",":
            out.append("{\\,}")
        else:
            out.append(ch)
    return prefix + "".join(out)


def _scan_braces(text: str, depth: int, in_glob: bool) -> tuple[int, bool]:
    """getPathStrings's state (brace depth, "inside a glob") after ``text``."""
    for ch in text:
        if ch == "{":
            depth += 1
            in_glob = True
        elif ch == "}":
            depth -= 1
            if depth == 0 and in_glob:
                in_glob = False
    return depth, in_glob


def hadoop_input_groups(paths: list[str]) -> list[str]:
    """Strings for ``textFile``/``binaryRecords`` that together name exactly ``paths``:
    escaped paths joined by commas, as few strings as possible. A path whose literal
    braces are unbalanced would stop ``getPathStrings`` from splitting the commas after it,
    so the next path then starts a new string (one more RDD in the union)."""
    groups: list[str] = []
    current: list[str] = []
    in_glob = False
    depth = 0
    for path in paths:
        escaped = glob_escape(path)
        if current and in_glob:  # the separating comma would not split here
            groups.append(",".join(current))
            current = []
        if not current:
            depth, in_glob = 0, False
        current.append(escaped)
        depth, in_glob = _scan_braces(escaped, depth, in_glob)
    if current:
        groups.append(",".join(current))
    return groups
