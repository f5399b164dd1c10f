"""The columnar text reader's line splitting (dstream.sources.textbatches), without Spark:
every way of cutting a file into splits gives back exactly the file's lines as Hadoop's
LineRecordReader (textFile) sees them."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from dstream.sources.textbatches import read_split, split_range

BOM = b"\xef\xbb\xbf"


def hadoop_lines(data: bytes) -> list[str]:
    """textFile's lines of a whole file: \\n, \\r\\n and lone \\r end a line, no line after
    a final terminator, a UTF-8 BOM at the start skipped, bad UTF-8 replaced."""
    if not data:
        return []
    parts = re.split(rb"\r\n|\r|\n", data)
    if re.search(rb"(\r\n|\r|\n)\Z", data):
        parts.pop()
    if parts and parts[0].startswith(BOM):
        parts[0] = parts[0][len(BOM) :]
    return [p.decode("utf-8", errors="replace") for p in parts]


def split_lines(data: bytes, splits: int, chunk: int | None = None) -> list[list[str]]:
    def read_range(offset: int, length: int) -> bytes:
        if chunk is not None:
            length = min(length, chunk)  # a reader that returns short reads
        return data[offset : offset + length]

    return [read_split(len(data), i, splits, read_range).to_pylist() for i in range(splits)]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"\r",
        b"\r\n",
        b"a",
        b"a\n",
        b"a\nb",
        b"a\r\nb\r\n",
        b"a\rb\r",
        b"\n\n\n",
        b"\r\r\n\n\r",
        BOM + b"x\ny\n",
        BOM,
        BOM + b"\n",
        b"caf\xc3\xa9\n\xe2\x82\xac\n",
        b"bad \xff byte\n",
        b"to be or not to be\nbe quick\nnot now\n",
    ],
)
@pytest.mark.parametrize("splits", [1, 2, 3, 7, 40])
def test_every_split_count_gives_the_files_lines(data: bytes, splits: int) -> None:
    parts = split_lines(data, splits)
    assert [line for part in parts for line in part] == hadoop_lines(data)


@pytest.mark.parametrize("with_cr", [True, False])  # without \r: the faster \n-only reader
def test_random_files_cut_anywhere_give_the_files_lines(with_cr: bool) -> None:
    rng = random.Random(7)
    alphabet = [b"a", b"b", b" ", b"\n", b"\xc3\xa9", b"\xff", BOM]
    if with_cr:
        alphabet += [b"\r", b"\r\n"]
    for _ in range(600):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        splits = rng.randrange(1, 12)
        chunk = rng.choice([None, 1, 2, 5])
        parts = split_lines(data, splits, chunk)
        assert [line for part in parts for line in part] == hadoop_lines(data), (data, splits)


def test_a_split_owns_the_lines_that_begin_in_it() -> None:
    data = b"aaaa\nbb\ncccccc\n"  # lines begin at 0, 5 and 8
    assert split_range(len(data), 0, 3) == (0, 5)
    assert split_lines(data, 3) == [["aaaa"], ["bb", "cccccc"], []]


def test_long_lines_are_read_past_the_split_end() -> None:
    line = "x" * 200_000
    data = f"{line}\n{line}\n".encode()
    assert split_lines(data, 4) == [[line], [], [line], []]


def test_the_result_is_an_arrow_string_array() -> None:
    import pyarrow as pa

    array = read_split(4, 0, 1, lambda offset, n: b"a\nb\n"[offset : offset + n])
    assert array.type == pa.string()
    assert array.null_count == 0


def test_words_are_str_split_words_on_ascii_and_unicode_batches() -> None:
    import pyarrow as pa

    from dstream.tasks.arrow_text import words_of as _words

    rng = random.Random(11)
    pieces = ["ab", "c", " ", "  ", "\t", "\x0b", "\x1c", "\x1f", "\u00a0", "\u3000", "\xe9", "\n"]
    for ascii_only in (True, False):
        usable = [p for p in pieces if not ascii_only or p.isascii()]
        for _ in range(200):
            lines = ["".join(rng.choice(usable) for _ in range(rng.randrange(0, 12)))]
            lines += [line.replace("\x1c", "").replace("\x1f", "") for line in lines]
            want = [w for line in lines for w in line.split()]
            assert _words(pa.array(lines)).to_pylist() == want, lines
    # A slice of a larger array: only the slice's lines count.
    batch = pa.array(["a b", "c  d", "e"]).slice(1, 1)
    assert _words(batch).to_pylist() == ["c", "d"]


@pytest.mark.parametrize("needle", ["a", "aa", "aba", "ka", "kato", "\u00e9a", " "])
def test_contains_is_pythons_in_for_every_line(needle: str) -> None:
    import pyarrow as pa

    from dstream.tasks.arrow_text import contains_mask as _contains_mask

    rng = random.Random(3)
    pieces = ["a", "b", "k", "to", " ", "\u00e9", ""]
    for _ in range(300):
        lines = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 6)))]
        lines += [
            "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 6))) for _ in range(30)
        ]
        kind = rng.choice([pa.string(), pa.large_string()])
        batch = pa.array(lines, type=kind)
        cut = rng.randrange(0, len(lines))
        for part, texts in ((batch, lines), (batch.slice(cut), lines[cut:])):
            want = [needle in t for t in texts]
            assert _contains_mask(part, needle).to_pylist() == want, (needle, texts)


def test_contains_when_most_lines_match_and_with_nulls() -> None:
    import pyarrow as pa

    from dstream.tasks.arrow_text import contains_mask as _contains_mask

    many = ["xa"] * 5000 + ["b"]
    assert _contains_mask(pa.array(many), "a").to_pylist() == [True] * 5000 + [False]
    assert _contains_mask(pa.array(["a", None, "b"]), "a").to_pylist() == [True, None, False]


def test_word_counts_count_str_split_words() -> None:
    from collections import Counter

    import pyarrow as pa

    from dstream.tasks.arrow_text import word_counts as _word_counts

    rng = random.Random(5)
    pieces = ["ab", "c", " ", "  ", "\t", "\x1c", "\u3000", "\xe9", ""]
    for _ in range(100):
        batches = [
            pa.array(["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 8)))])
            for _ in range(rng.randrange(0, 4))
        ]
        want = Counter(w for b in batches for line in b.to_pylist() for w in line.split())
        assert dict(_word_counts(batches)) == dict(want)


def test_local_files_read_through_a_memory_map_give_the_files_lines(tmp_path: Path) -> None:
    from dstream.sources.textbatches import read_text_split
    from dstream.storage.taskfs import LocalTaskFiles

    rng = random.Random(9)
    files = LocalTaskFiles()
    for case in range(150):
        alphabet = [b"ab", b" ", b"\n", b"\n", b"\xc3\xa9", BOM, b"\xff"]
        if case % 3 == 0:
            alphabet.append(b"\r\n")  # some files take the general reader
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 80)))
        path = tmp_path / f"f{case}.txt"
        path.write_bytes(data)
        for splits in (1, 2, 5):
            parts = [read_text_split(files, str(path), i, splits) for i in range(splits)]
            got = [line for part in parts for line in part.to_pylist()]
            assert got == hadoop_lines(data), (data, splits)
