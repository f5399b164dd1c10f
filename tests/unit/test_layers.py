"""The package's layers: no module imports one from a layer above its own, so there is no
import circle across dstream/'s packages (the architecture step, issue 33). Read from the
source with ``ast``: every import that runs (at module level or inside a function), not
those under ``if TYPE_CHECKING:``, which only annotations read."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dstream

ROOT = Path(dstream.__file__).parent

# Top first. A module may import its own layer's package and any layer below it; the
# bottom layer's modules (pure, no Spark needed) may import each other.
LAYERS: list[set[str]] = [
    {"cli", "testing", "__main__"},  # the command line; helpers for users' tests
    {"context"},  # the user's StreamingContext, the PySpark facade over the engine
    {"kafka", "receiver"},  # input streams made from a user's context
    {"dstream"},  # DStream: the handle users hold over a node of the graph
    {"api"},  # the methods users call, one family per module
    {"scheduler"},  # the engine: start/stop, the event loop, recovery, the monitor
    {"sources"},  # input stream nodes
    {"streams"},  # the graph and its nodes
    # How a state survives a loss: one policy per recovery mode. Below the nodes that hold
    # them (they take a node through a Protocol they declare), above the tasks (the
    # approximate policy's divergence is the tasks'): see dstream/recovery/__init__.py.
    {"recovery"},
    {"tasks"},  # what runs inside Spark tasks
    {"storage"},  # formats and file systems
]
LEAVES = {
    "clock", "console", "errors", "functions", "jvm", "listener", "services", "settings",
    "shutdown", "sparkconf", "tables", "time", "timetext", "versions",
}  # fmt: skip


def _unit(module: str) -> str:
    """``dstream.scheduler.engine`` -> ``scheduler``; ``dstream.time`` -> ``time``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(unit: str) -> int:
    for i, layer in enumerate(LAYERS):
        if unit in layer:
            return i
    assert unit in LEAVES, f"dstream.{unit} is in no layer of {__file__}: add it"
    return len(LAYERS)


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every dstream import in ``path`` that runs."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", None) == "TYPE_CHECKING"
        for node in ast.walk(block)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "dstream":  # `from dstream import shutdown`: the submodules
                found += [(node.lineno, f"dstream.{a.name}") for a in node.names]
            elif node.module.startswith("dstream."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("dstream.")]
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent).with_suffix("")
        out.append((".".join(relative.parts).removesuffix(".__init__"), path))
    return out


def test_no_module_imports_one_from_a_layer_above_it() -> None:
    climbs = []
    for module, path in _modules():
        if module == "dstream":  # the package's lazy re-exports (dstream/__init__.py)
            continue
        own = _layer(_unit(module))
        for line, target in _runtime_imports(path):
            if target == "dstream.__version__":  # the version is defined at the root
                continue
            unit = _unit(target)
            if unit == _unit(module):
                continue
            if _layer(unit) < own or (own == len(LAYERS) and unit not in LEAVES):
                climbs.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert climbs == []


def test_the_layers_name_every_package_and_module() -> None:
    units = {_unit(module) for module, _ in _modules()} - {""}
    named = set().union(*LAYERS) | LEAVES
    assert units - named == set(), "new packages or modules need a layer"
    assert named - units == set(), "layers name packages that no longer exist"


def test_no_module_but_the_context_touches_its_private_fields() -> None:
    """StreamingContext is the user's façade: the engine behind it is reached with
    ``engine_of(ssc)`` and its graph with ``graph_of(ssc)``, never through its fields."""
    fields = re.compile(r"\.(_engine|_sc|_check_can_add)\b")
    reaching = [
        f"{path.relative_to(ROOT.parent)}:{n}"
        for module, path in _modules()
        if module != "dstream.context"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if fields.search(line) and "self._" not in line
    ]
    assert reaching == []


# Accesses ``x._name`` (x not self/cls) in dstream/ where ``_name`` is assigned on ``self`` or
# defined as a ``_function`` only in other packages (a package: a subfolder of dstream/, or a
# top-level module). Counted as /work/shared/tools/private_reach.py counts them (issue 59:
# 266 before the public node protocol). The two left are third-party privates that share a
# name with one of ours: PySpark's ``SparkContext._gateway`` (read once, in
# dstream.jvm.gateway_of) and Py4J's ``JVMView._id``.
PRIVATE_REACH_CAP = 2


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reaches(root: Path) -> list[str]:
    """``file:line _name`` of every cross-package private access under ``root`` (dstream/)."""
    trees = {path: ast.parse(path.read_text()) for path in sorted(root.rglob("*.py"))}
    owners: dict[str, set[str]] = {}

    def own(name: str, path: Path) -> None:
        owners.setdefault(name, set()).add(_package_in(root, path))

    for path, tree in trees.items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
                and _private(node.attr)
            ):
                own(node.attr, path)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _private(node.name):
                own(node.name, path)
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id.startswith("_")
            ):
                own(node.target.id, path)
    found = []
    for path, tree in trees.items():
        here = _package_in(root, path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not _private(node.attr):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr in owners and here not in owners[node.attr]:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.attr}")
    return found


def _package_in(root: Path, path: Path) -> str:
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def test_packages_reach_each_other_through_public_names() -> None:
    """A node's identity, configuration and hooks are its public protocol (streams/base.py);
    an underscore means the name is its own package's. A new reach into another package's
    private name fails here: add a public property or method that says what it does."""
    found = private_reaches(ROOT)
    assert len(found) <= PRIVATE_REACH_CAP, (
        f"{len(found)} accesses to another package's private names in dstream/ (at most "
        f"{PRIVATE_REACH_CAP}): "
        + ", ".join(found)
        + "; give the owner a public property or method for what the caller needs"
    )


def test_no_module_imports_another_packages_private_name() -> None:
    """``from dstream.<package>.<module> import _name`` across packages is the same reach as
    ``x._name``, which the count above does not see (dstream.scheduler.shim imported two of
    dstream.jvm's, dstream.scheduler.stretch one of dstream.sources.base's)."""
    found = []
    for module, path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                continue
            if _unit(node.module) in ("", _unit(module)) or not node.module.startswith("dstream."):
                continue
            found += [
                f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.module}.{alias.name}"
                for alias in node.names
                if _private(alias.name)
            ]
    assert found == [], "import a public name, or make the name public: " + ", ".join(found)


# Modules that share a name across packages on purpose: the same role in two sibling
# packages, each package naming what it is (a connector's client and source), or a word
# that means two things (the receiver's wire protocol, the nodes' protocol). A feature split
# over layers into same-named modules (two tentative.py, two quarantine.py) is not allowed.
SHARED_MODULE_NAMES = {
    "base",  # sources/base.py (the input node base) and streams/base.py (every node's)
    "client",  # kafka/client.py and receiver/client.py: each connector's client
    "source",  # kafka/source.py and receiver/source.py: each connector's input node
    "protocol",  # receiver/protocol.py (wire) and streams/protocol.py (node protocol)
}


def test_no_two_packages_hold_a_module_of_the_same_name() -> None:
    homes: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.stem != "__init__" and path.parent != ROOT:
            homes.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in homes.items() if len(paths) > 1}
    assert set(shared) <= SHARED_MODULE_NAMES, (
        "modules of the same name in two packages; name each by its role (STYLE 17): "
        + str({n: p for n, p in shared.items() if n not in SHARED_MODULE_NAMES})
    )


CLASS_LINE_CAP = 400


def test_no_class_is_over_400_lines() -> None:
    over = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                name = f"{path.relative_to(ROOT)}:{node.name}"
                if lines > CLASS_LINE_CAP:
                    over.append(f"{name} ({lines} lines)")
    assert not over, f"classes over {CLASS_LINE_CAP} lines; split each by responsibility: {over}"


def test_the_replay_stretch_reads_the_plan_nodes_declare_not_their_classes() -> None:
    """dstream.scheduler.stretch runs a stretch of intervals from each node's plan_step()
    (dstream.streams.plan); it imports no node class to match lineage against (it matched
    FileInputDStream, RecordsDStream and TransformedDStream and read their fields)."""
    path = ROOT / "scheduler" / "stretch.py"
    nodes = {"dstream.sources.files", "dstream.streams.transformed", "dstream.streams.keyed_state"}
    imported = {module for _line, module in _runtime_imports(path)}
    assert not imported & nodes, sorted(imported & nodes)
    assert "dstream.streams.plan" in imported
