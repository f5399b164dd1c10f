"""Paths: split as Hadoop splits them, resolved as Spark resolves them, and escaped for
Hadoop's input formats (pure functions; the integration and HDFS tests read real files)."""

from __future__ import annotations

import logging
import os
import re

import pytest

from dstream.storage.paths import (
    glob_escape,
    hadoop_input_groups,
    local_path,
    resolve_path,
    split_uri,
    warn_if_unshared,
)


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("/data/in", ("", None, "/data/in")),
        ("hdfs://nn:8020/data/a?b#c.txt", ("hdfs", "nn:8020", "/data/a?b#c.txt")),
        ("file:///tmp/x", ("file", "", "/tmp/x")),
        ("file:/tmp/x", ("file", None, "/tmp/x")),
        ("/tmp/a:b", ("", None, "/tmp/a:b")),  # a colon after a slash is no scheme
        ("hdfs://nn", ("hdfs", "nn", "")),
    ],
)
def test_uris_split_as_hadoop_splits_them(path: str, parts: tuple[str, str | None, str]) -> None:
    assert split_uri(path) == parts


def test_local_paths_keep_question_marks_and_hashes() -> None:
    assert local_path("file:///tmp/d?.txt") == "/tmp/d?.txt"
    assert local_path("/tmp/e#f.txt") == "/tmp/e#f.txt"
    assert local_path("rel/x") == os.path.join(os.getcwd(), "rel/x")
    with pytest.raises(ValueError, match="is not a local path"):
        local_path("hdfs://nn/x")


@pytest.mark.parametrize(
    ("path", "default_fs", "working_dir", "resolved"),
    [
        ("/data/x", "hdfs://nn:8020", None, "hdfs://nn:8020/data/x"),
        ("/data/x", "hdfs://nn:8020/", None, "hdfs://nn:8020/data/x"),
        ("data/x", "hdfs://nn:8020", "/user/me", "hdfs://nn:8020/user/me/data/x"),
        ("data/x", "hdfs://nn:8020", "hdfs://nn:8020/user/me", "hdfs://nn:8020/user/me/data/x"),
        ("/data/x", "file:///", None, "/data/x"),
        ("/data/x", "file:/", None, "/data/x"),
        ("s3a://bucket/x", "hdfs://nn:8020", None, "s3a://bucket/x"),  # a scheme: unchanged
        ("file:///data/x", "hdfs://nn:8020", None, "file:///data/x"),
    ],
)
def test_a_path_without_a_scheme_is_on_the_default_file_system(
    path: str, default_fs: str, working_dir: str | None, resolved: str
) -> None:
    assert resolve_path(path, default_fs, working_dir) == resolved


def test_a_relative_local_path_is_from_the_current_directory() -> None:
    assert resolve_path("ckpt", "file:///") == os.path.join(os.getcwd(), "ckpt")


def test_a_relative_path_on_a_remote_default_needs_its_working_directory() -> None:
    with pytest.raises(ValueError, match=r"'data/x' is relative and the default file system"):
        resolve_path("data/x", "hdfs://nn:8020")


# ---- Hadoop input patterns ----------------------------------------------------------------
def hadoop_split(joined: str) -> list[str]:
    """FileInputFormat.getPathStrings: commas split, except inside {...} (braces counted,
    backslashes ignored)."""
    out, depth, glob, start = [], 0, False, 0
    for i, ch in enumerate(joined):
        if ch == "{":
            depth += 1
            glob = True
        elif ch == "}":
            depth -= 1
            if depth == 0 and glob:
                glob = False
        elif ch == "," and not glob:
            out.append(joined[start:i])
            start = i + 1
    out.append(joined[start:])
    return out


def glob_regex(pattern: str) -> re.Pattern[str]:
    """GlobPattern's translation of a pattern to a regular expression (enough for these
    tests: escapes, *, ?, {a,b}, [..])."""
    regex, i, curly = "", 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 1
            regex += re.escape(pattern[i])
        elif c == "*":
            regex += ".*"
        elif c == "?":
            regex += "."
        elif c == "{":
            regex += "(?:"
            curly += 1
        elif c == "," and curly:
            regex += "|"
        elif c == "}" and curly:
            regex += ")"
            curly -= 1
        elif c in "[]":
            regex += c
        else:
            regex += re.escape(c)
        i += 1
    return re.compile(regex)


NAMES = ["a[1].txt", "b{x,y}.txt", "c*.txt", "d?.txt", "e\\f.txt", "g,h.txt", "i{j.txt", "k}l.txt"]
DECOYS = ["a1.txt", "bx.txt", "by.txt", "cX.txt", "dZ.txt", "ef.txt", "g", "h.txt", "ij.txt"]


def test_each_escaped_path_matches_only_itself() -> None:
    for name in NAMES:
        pattern = glob_escape(f"file:///in/{name}")
        assert pattern.startswith("file:///in/")
        regex = glob_regex(pattern.removeprefix("file://"))
        assert regex.fullmatch(f"/in/{name}"), (name, pattern)
        for other in NAMES + DECOYS:
            if other != name:
                assert not regex.fullmatch(f"/in/{other}"), (name, other, pattern)


def test_paths_are_joined_so_that_hadoop_splits_them_back_exactly() -> None:
    paths = [f"hdfs://nn:8020/in/{name}" for name in [*NAMES, "plain.txt"]]
    groups = hadoop_input_groups(paths)
    split = [part for group in groups for part in hadoop_split(group)]
    assert split == [glob_escape(p) for p in paths]
    # Only a path with an unbalanced literal brace starts a new string.
    assert len(groups) == 2


def test_ordinary_paths_make_one_string() -> None:
    paths = ["file:///in/a.txt", "file:///in/b.txt"]
    assert hadoop_input_groups(paths) == ["file:///in/a.txt,file:///in/b.txt"]


class FakeContext:
    def __init__(self, master: str, app: str) -> None:
        self.master, self.applicationId = master, app


def test_a_local_directory_under_a_cluster_master_is_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="dstream.storage.paths")
    cluster = FakeContext("spark://master:7077", "app-test-warn")
    for _ in range(3):
        warn_if_unshared("/data/ckpt", cluster, "the checkpoint directory")  # type: ignore[arg-type]
    warn_if_unshared("hdfs://nn/ckpt", cluster, "the checkpoint directory")  # type: ignore[arg-type]
    local = FakeContext("local[2]", "app-test-local")
    warn_if_unshared("/data/ckpt", local, "the checkpoint directory")  # type: ignore[arg-type]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1, messages
    assert messages[0].startswith("the checkpoint directory /data/ckpt is on the driver's local")
    assert "spark://master:7077" in messages[0] and "cannot see it" in messages[0]
