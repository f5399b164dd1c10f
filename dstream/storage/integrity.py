"""The trust boundary of stored state: private directories and SHA-256 digests.

State files are pickles (checkpoint partitions) or hold pickles (track()'s SQLite snapshots),
and unpickling runs code. So whoever can write them runs code as the program's user. Two
rules keep that set of people to the program's user:

* **Private directories.** Files a task downloads (WebHDFS snapshots) are kept in a directory
  only the user can enter (mode 0700, checked before every use: a real directory, owned by
  the user, no access for group or others), inside the executor's own Spark local directory
  (per application, unpredictably named by Spark, removed with the executor) — never in a
  shared, predictable place such as ``/tmp/dstream-hdfs-cache``.
* **Digests.** Every stored state file is checked against a SHA-256 its writer recorded
  before its content is used: a checkpoint partition carries the digest of its payload in its
  header (:mod:`dstream.storage.checkpoint`); a snapshot's digest is recorded by the driver in
  the checkpoint's ``_COMPLETE`` manifest (and is part of the snapshot's file name), and the
  task that opens the snapshot verifies it (:func:`open_verified`).

What the digests protect against, exactly: a file that was torn, truncated or corrupted
(disk, network, a partial copy), and a file replaced or rewritten by someone who can write
the state files but not the record of their digest (the manifest, the header) — they cannot
make other content match it. They do **not** protect against someone who can rewrite both:
there is no secret to key a checksum with, and the checkpoint directory also holds the
metadata journal, itself a pickle. Hence the rule the README states: the checkpoint directory
must be writable only by the program's user.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading

__all__ = [
    "TamperedFileError",
    "VerifiedFile",
    "open_verified",
    "private_directory",
    "remember_verified",
    "sha256_file",
]

_BLOCK = 1 << 20


class TamperedFileError(OSError):
    """A stored state file whose content is not what its writer recorded: corrupted, or
    changed by someone else. Its content was not used."""


def sha256_file(path: str) -> str:
    """The hex SHA-256 of the file at ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _sha256_fd(fd)
    finally:
        os.close(fd)


def _sha256_fd(fd: int) -> str:
    digest = hashlib.sha256()
    offset = 0
    while block := os.pread(fd, _BLOCK, offset):
        digest.update(block)
        offset += len(block)
    return digest.hexdigest()


def private_directory(path: str) -> str:
    """Create ``path`` with mode 0700, or check an existing one: a directory (not a symlink)
    owned by this user that group and others cannot enter. Raises PermissionError naming it
    otherwise. Returns ``path``."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    problem = None
    if not stat.S_ISDIR(st.st_mode):
        problem = "is not a directory (a symlink or a file)"
    elif st.st_uid != os.getuid():
        problem = f"belongs to uid {st.st_uid}, not to this user (uid {os.getuid()})"
    elif st.st_mode & 0o077:
        problem = f"has mode {stat.S_IMODE(st.st_mode):04o}: group or others may use it"
    if problem is not None:
        raise PermissionError(
            f"private directory {path} {problem}; files in it are trusted (they hold pickles, "
            "which run code), so it must be a directory of this user with mode 0700: remove "
            "it (or fix its mode) and run again"
        )
    return path


class VerifiedFile:
    """An open local file whose content matched its recorded SHA-256. ``path`` opens that
    same file (``/proc/self/fd/N`` where the system has it), not whatever its name points to
    later; the file stays open until :meth:`close`."""

    def __init__(self, fd: int, local_path: str, name: str) -> None:
        self.fd = fd
        self.name = name  # what errors call it (its hdfs:// path for a downloaded copy)
        proc = f"/proc/self/fd/{fd}"
        self.path = proc if os.path.exists(proc) else local_path

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> VerifiedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Files this process has verified: (path, digest) -> the identity of the file that matched.
# A snapshot is opened every interval; it is hashed once per process, and again only if the
# file changed (a new inode, size, modification or change time: a rewrite or a replacement
# changes st_ctime, which no user can set).
_verified: dict[tuple[str, str], tuple[int, ...]] = {}
_verified_lock = threading.Lock()
_VERIFIED_MAX = 4096


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def remember_verified(path: str, sha256: str) -> None:
    """Record that the file now at ``path`` (just written or downloaded and checked by the
    caller) has ``sha256``."""
    with _verified_lock:
        if len(_verified) >= _VERIFIED_MAX:
            _verified.clear()
        _verified[(path, sha256)] = _identity(os.stat(path))


def open_verified(path: str, sha256: str, name: str | None = None) -> VerifiedFile:
    """Open the local file ``path`` and check that its content has ``sha256`` (hex); raise
    :class:`TamperedFileError` naming ``name`` (default ``path``) if not."""
    shown = name or path
    fd = os.open(path, os.O_RDONLY)
    try:
        identity = _identity(os.fstat(fd))
        with _verified_lock:
            known = _verified.get((path, sha256)) == identity
        if not known:
            actual = _sha256_fd(fd)
            if actual != sha256 or _identity(os.fstat(fd)) != identity:
                raise TamperedFileError(
                    f"{shown} does not match the SHA-256 its writer recorded ({sha256[:16]}..., "
                    f"found {actual[:16]}...): the file is corrupt or was changed by someone "
                    "else, so it was not used; the checkpoint directory must be writable only "
                    "by this program's user"
                )
            with _verified_lock:
                if len(_verified) >= _VERIFIED_MAX:
                    _verified.clear()
                _verified[(path, sha256)] = identity
        return VerifiedFile(fd, path, shown)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
