"""The socket receiver's line decoding against Java's BufferedReader.readLine rules (what
Spark's SocketReceiver uses): terminators \\n, \\r and \\r\\n stripped, malformed UTF-8 replaced
by U+FFFD, the same lines however the bytes are cut into chunks."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dstream.sources.lines import LineDecoder


def read_lines_like_java(data: bytes) -> list[str]:
    """The reference: decode everything at once with REPLACE, then readLine until EOF."""
    text = data.decode("utf-8", errors="replace")
    lines = re.split(r"\r\n|\r|\n", text)
    if lines[-1] == "":
        lines.pop()
    return lines


def decode_in_chunks(data: bytes, cuts: list[int]) -> list[str]:
    decoder = LineDecoder()
    lines: list[str] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        lines += decoder.feed(data[start:cut])
        start = cut
    return lines + decoder.finish()


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"a\nb\n", ["a", "b"]),
        (b"a\r\nb\r\n", ["a", "b"]),
        (b"a\rb\rc", ["a", "b", "c"]),
        (b"a\r\n\r\nb", ["a", "", "b"]),
        (b"a\n\rb", ["a", "", "b"]),  # "\n" then "\r": two terminators, an empty line
        (b"good1\nba\xffd\ngood2\n", ["good1", "ba\ufffdd", "good2"]),
        (b"\xe2\x82x\n", ["\ufffdx"]),  # a truncated 3-byte character is one U+FFFD
        (b"end\xe2\x82", ["end\ufffd"]),  # ... also at the end of the stream
        (b"\xef\xbb\xbfbom\n", ["\ufeffbom"]),  # Java's UTF-8 decoder keeps a BOM
        (b"", []),
        (b"\n", [""]),
    ],
)
def test_lines_follow_java_readline(data: bytes, lines: list[str]) -> None:
    assert read_lines_like_java(data) == lines  # the reference agrees with the table
    for cut in range(len(data) + 1):  # every way of cutting the bytes in two
        assert decode_in_chunks(data, [cut]) == lines, f"cut at {cut}"


ALPHABET = [b"a", b"\n", b"\r", b"\r\n", b"\xff", b"\xc3\xa9", b"\xe2\x82\xac", b"\xe2", b"\x80"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    pieces=st.lists(st.sampled_from(ALPHABET), max_size=30),
    cuts=st.lists(st.integers(0, 90), max_size=6),
)
def test_any_chunking_gives_the_lines_of_one_read(pieces: list[bytes], cuts: list[int]) -> None:
    data = b"".join(pieces)
    cuts = [c for c in cuts if c <= len(data)]
    assert decode_in_chunks(data, cuts) == read_lines_like_java(data)


def test_reset_drops_a_partial_line() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b"whole\npart") == ["whole"]
    decoder.reset()  # the connection was lost mid-line
    assert decoder.feed(b"\nnext\n") == ["", "next"]
