"""tests/conftest.py's SharedServices: a service the fault runs share is started once for
consecutive users and stopped as soon as the next test neither asks for it nor comes from
the same directory (pure logic: fake services and items)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.conftest import SharedServices


class Service:
    started = 0

    def __init__(self) -> None:
        self.running = False

    def __enter__(self) -> Service:
        Service.started += 1
        self.running = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.running = False


def item(path: str, *fixtures: str) -> Any:
    return SimpleNamespace(path=Path(path), fixturenames=list(fixtures))


def test_a_service_lives_while_its_users_follow_one_another() -> None:
    services = SharedServices()
    Service.started = 0
    first = item("tests/hdfs/test_a.py", "hdfs_cluster")
    service = services.get("hdfs_cluster", Service)
    assert services.get("hdfs_cluster", Service) is service and Service.started == 1
    # The next test asks for it: kept.
    services.stop_unused(first, item("tests/recovery/test_b.py", "hdfs_cluster"))
    assert service.running
    # The next test does not ask, but is in the same directory (a module's later tests): kept.
    services.stop_unused(first, item("tests/hdfs/test_c.py"))
    assert service.running
    # Another directory that does not ask: stopped, and a later user starts a new one.
    services.stop_unused(first, item("tests/integration/test_d.py", "sc"))
    assert not service.running
    again = services.get("hdfs_cluster", Service)
    assert again is not service and again.running and Service.started == 2
    # The last test of the session: everything stops.
    services.stop_unused(first, None)
    assert not again.running


def test_stop_all_stops_every_running_service() -> None:
    services = SharedServices()
    hdfs, standalone = services.get("hdfs_cluster", Service), services.get("cluster", Service)
    services.stop_all()
    assert not hdfs.running and not standalone.running
