"""Which files belong to which interval (pure logic of the file source)."""

from __future__ import annotations

from dstream.sources.files import select_new_files
from dstream.storage.filesystem import FileInfo
from dstream.time import Time


def f(name: str, mtime: int) -> FileInfo:
    return FileInfo(f"/in/{name}", mtime, 10)


def test_files_modified_inside_the_half_open_window_are_new() -> None:
    files = [f("a", 999), f("b", 1000), f("c", 1500), f("d", 1999), f("e", 2000)]
    chosen = select_new_files(files, Time(2000), Time(1000), seen=set())
    # [1000, 2000): 999 is before the window, 2000 belongs to the next interval.
    assert [x.path for x in chosen] == ["/in/b", "/in/c", "/in/d"]


def test_files_already_chosen_are_not_chosen_again() -> None:
    files = [f("a", 1500), f("b", 1600)]
    chosen = select_new_files(files, Time(3000), Time(0), seen={"/in/a"})
    assert [x.path for x in chosen] == ["/in/b"]


def test_a_late_file_is_taken_by_a_later_interval_within_the_remember_window() -> None:
    # Written at 1500 but renamed into the directory only after interval 2000 was listed.
    late = f("late", 1500)
    assert select_new_files([late], Time(3000), Time(3000 - 60_000), seen=set()) == [late]


def test_files_are_returned_in_modification_order_then_by_name() -> None:
    files = [f("z", 1200), f("b", 1100), f("a", 1200)]
    chosen = select_new_files(files, Time(2000), Time(0), seen=set())
    assert [x.path for x in chosen] == ["/in/b", "/in/a", "/in/z"]
