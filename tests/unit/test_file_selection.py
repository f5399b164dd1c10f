"""Which files belong to which interval (pure logic of the file source)."""

from __future__ import annotations

from collections.abc import Container

from dstream.sources.file_selection import Selection, select_new_files, settled_at_restart
from dstream.storage.filesystem import FileInfo
from dstream.time import Duration, Time

REMEMBER = Duration(60_000)
DAY = 86_400_000
WEEK = Duration(7 * DAY)


def f(name: str, mtime: int) -> FileInfo:
    return FileInfo(f"/in/{name}", mtime, 10)


def select(
    files: list[FileInfo],
    at: int,
    decided: Container[str] = frozenset(),
    max_age: Duration | None = WEEK,
) -> Selection:
    return select_new_files(files, Time(at), remember=REMEMBER, max_age=max_age, decided=decided)


def paths(files: list[FileInfo]) -> list[str]:
    return [x.path for x in files]


def test_files_modified_before_the_batch_time_are_new_and_later_ones_wait() -> None:
    files = [f("a", 999), f("b", 1000), f("c", 1999), f("d", 2000), f("e", 2500)]
    # 2000 and later belong to a later interval (which will take them then).
    assert paths(select(files, 2000).taken) == ["/in/a", "/in/b", "/in/c"]


def test_files_already_decided_are_not_taken_again() -> None:
    files = [f("a", 1500), f("b", 1600)]
    assert paths(select(files, 3000, decided={"/in/a"}).taken) == ["/in/b"]


def test_a_file_older_than_the_remember_window_is_taken_late() -> None:
    on_time, late = f("on-time", 100_000 - 60_000), f("late", 100_000 - 60_001)
    chosen = select([late, on_time], 100_000)
    assert chosen.taken == [late, on_time] and chosen.late == [late] and chosen.too_old == []


def test_a_file_older_than_the_maximum_age_is_skipped() -> None:
    t = 10 * DAY
    limit, older = f("limit", t - 7 * DAY), f("older", t - 7 * DAY - 1)
    chosen = select([older, limit], t)
    assert chosen.taken == [limit] and chosen.too_old == [older]
    # Without a maximum age nothing is too old.
    assert select([older], t, max_age=None).taken == [older]


def test_files_are_returned_in_modification_order_then_by_name() -> None:
    files = [f("z", 1200), f("b", 1100), f("a", 1200)]
    assert paths(select(files, 2000).taken) == ["/in/b", "/in/a", "/in/z"]


def test_a_restarted_driver_settles_what_is_on_record_or_older_than_the_window() -> None:
    t = 1_000_000
    files = [
        f("recorded", t - 1000),
        f("recent", t - 1000),  # not on record, within the window: read after the restart
        f("old", t - 60_001),  # older than the window, not on record: read before
        f("before-start", t - 50_000),
    ]
    listed = Time(t - 1000)  # the last interval listed before the restart
    settled = settled_at_restart(files, Time(t), REMEMBER, {"/in/recorded"}, None, listed)
    assert settled == {"/in/recorded", "/in/old"}
    # With newFilesOnly, files modified before the program started were never new.
    start = Time(t - 40_000)
    assert settled_at_restart(files, Time(t), REMEMBER, set(), start, listed) == {
        "/in/old",
        "/in/before-start",
    }


def test_a_file_modified_after_the_last_listing_was_never_read_whatever_its_age() -> None:
    t = 1_000_000
    # The driver died long ago: the interval now run is far after the files, yet a file
    # modified after the last interval listed cannot have been taken by it.
    files = [f("before-listing", t - 90_000), f("after-listing", t - 70_000)]
    settled = settled_at_restart(files, Time(t), REMEMBER, set(), None, Time(t - 80_000))
    assert settled == {"/in/before-listing"}


def test_a_driver_that_never_listed_read_nothing_so_no_age_settles_a_file() -> None:
    # Killed after start() recorded the program, before its first interval: only the
    # files there before the start (newFilesOnly) are settled, however old the rest are.
    t = 1_000_000
    files = [f("before-start", t - 200_000), f("after-start", t - 100_000)]
    start = Time(t - 150_000)
    assert settled_at_restart(files, Time(t), REMEMBER, set(), start, None) == {"/in/before-start"}
    assert settled_at_restart(files, Time(t), REMEMBER, set(), None, None) == set()
