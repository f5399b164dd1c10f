"""A stream's driver-only fields are declared in ``_transient`` so that they are not saved
with the graph in the metadata journal, and rebuilt by ``_init_transient()``. A name there
that is no field (issue 59: StateStream's ``published_ms``, ``restoring``, ``root``,
``files``) silently saves the real one: a node refuses to be made with one, and every
stream class in dstream/ declares exactly the fields its ``_init_transient`` sets."""

from __future__ import annotations

import ast
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

import dstream
from dstream.streams.base import DStreamCore

ROOT = Path(dstream.__file__).parent


class _Graph:
    """What DStreamCore's constructor asks of its graph, without Spark."""

    lock = threading.RLock()

    def check_can_add(self, what: str) -> None:
        pass

    def register(self, stream: object) -> int:
        return 7


def _make(cls: type[DStreamCore[Any]]) -> DStreamCore[Any]:
    return cls(_Graph(), (), name="probe")  # type: ignore[arg-type]


class _Declared(DStreamCore[Any]):
    _transient: ClassVar[tuple[str, ...]] = ("_published_ms", "_root")

    def _init_transient(self) -> None:
        super()._init_transient()
        self._published_ms: int | None = None
        self._root: str | None = None


class _Misspelt(_Declared):
    _transient: ClassVar[tuple[str, ...]] = ("restoring",)

    def _init_transient(self) -> None:
        super()._init_transient()
        self._restoring = False


def test_declared_transient_fields_are_not_saved_and_come_back_rebuilt() -> None:
    node = _make(_Declared)
    node._published_ms, node._root = 5, "/tmp/x"  # type: ignore[attr-defined]
    state = node.__getstate__()
    assert not {"_published_ms", "_root", "_generated", "_lock", "_pins"} & set(state)
    assert state["_id"] == 7
    copy = _Declared.__new__(_Declared)
    copy.__setstate__(state)
    assert copy._published_ms is None and copy._root is None  # type: ignore[attr-defined]


def test_a_misspelt_transient_name_is_refused_when_the_node_is_made() -> None:
    with pytest.raises(TypeError) as info:
        _make(_Misspelt)
    assert str(info.value) == (
        "_Misspelt._transient names 'restoring', which _init_transient() does not set, and "
        "leaves out '_restoring', which it sets; declare exactly the fields _init_transient() "
        "rebuilds (they are not saved with the graph)"
    )


def _own_transient(cls: ast.ClassDef) -> tuple[set[str], set[str]] | None:
    """(the names its own ``_transient`` lists, the ``self.`` fields its ``_init_transient``
    sets), or None for a class that has neither."""
    declared: set[str] | None = None
    assigned: set[str] | None = None
    for item in cls.body:
        target = item.target if isinstance(item, ast.AnnAssign) else None
        if isinstance(item, ast.Assign) and len(item.targets) == 1:
            target = item.targets[0]
        if isinstance(target, ast.Name) and target.id == "_transient":
            value = item.value  # type: ignore[union-attr]
            assert isinstance(value, ast.Tuple), ast.unparse(item)
            declared = {e.value for e in value.elts if isinstance(e, ast.Constant)}
        if isinstance(item, ast.FunctionDef) and item.name == "_init_transient":
            assigned = {
                node.attr
                for node in ast.walk(item)
                if isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            }
    if declared is None and assigned is None:
        return None
    return declared or set(), assigned or set()


def test_every_stream_class_declares_exactly_the_fields_its_init_transient_sets() -> None:
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        for cls in ast.walk(ast.parse(path.read_text())):
            if isinstance(cls, ast.ClassDef) and (found := _own_transient(cls)) is not None:
                declared, assigned = found
                if declared != assigned:
                    wrong.append(
                        f"{path.relative_to(ROOT.parent)} {cls.name}: declared only "
                        f"{sorted(declared - assigned)}, set only {sorted(assigned - declared)}"
                    )
    assert wrong == []
