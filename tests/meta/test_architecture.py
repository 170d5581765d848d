"""The package's floor plan, checked: layers import downwards, no cycle, modules stay small.

The rules of docs/development.md ("Where code goes") as tests, so that a later change
cannot quietly undo them. Each failure names the rule it breaks and the lines to look at.

- **Layers.** Every module of ``langgraph.checkpoint.sqlalchemy`` and
  ``langgraph.store.sqlalchemy`` belongs to one layer (:data:`LAYERS`, bottom first); a
  module imports modules of its own layer or of the layers below it, never above. Imports
  inside functions and under ``if TYPE_CHECKING:`` count: a lazy import still ties the
  two modules, and a type-only one ties them for every reader and type checker.
- **No cycle**, among all modules of both packages, the same imports counted.
- **Private names stay in their layer**: a module imports a ``_name`` only from a module
  of its own layer package.
- **Small modules**: every module under :data:`MAX_LINES` lines.
- **A tree that shows the layers**: at most :data:`MAX_FLAT_PRIVATE` private modules lie
  flat in the checkpoint package; each private layer package's ``__init__`` says in its
  docstring what it may import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import langgraph.checkpoint.sqlalchemy as saver_package
import langgraph.store.sqlalchemy as store_package

CHECKPOINT = saver_package.__name__
STORE = store_package.__name__
ROOTS = {
    CHECKPOINT: Path(saver_package.__file__).parent,
    STORE: Path(store_package.__file__).parent,
}

MAX_LINES = 600
MAX_FLAT_PRIVATE = 10

#: The layers, bottom first: (name, module prefixes relative to the checkpoint package,
#: or absolute for the store). A module belongs to the layer of its longest prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("errors", ("errors",)),
    ("schema", ("schema",)),
    ("codec", ("_codec",)),
    ("dialects", ("dialects",)),
    ("migrate", ("migrate",)),
    ("engine", ("_engine",)),
    ("ops", ("_ops",)),
    ("plans", ("_plans",)),
    ("saver", ("", "saver", "_operator")),
    ("owners", ("server", STORE)),
    ("transfer", ("_transfer", "transfer")),
    ("cli", ("cli", "__main__")),
]
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}
ORDER = " < ".join(name for name, _ in LAYERS)

pytestmark = pytest.mark.filterwarnings("ignore")


def _module_name(package: str, path: Path) -> str:
    parts = list(path.relative_to(ROOTS[package]).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


MODULES = {
    _module_name(package, path): path
    for package, root in ROOTS.items()
    for path in sorted(root.rglob("*.py"))
}


def layer_of(module: str) -> str:
    """The layer a module belongs to (the longest matching prefix of :data:`LAYERS`)."""
    best, best_len = "", -1
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            full = (
                prefix
                if prefix.startswith(STORE)
                else ".".join(p for p in (CHECKPOINT, prefix) if p)
            )
            if (module == full or module.startswith(full + ".")) and len(full) > best_len:
                best, best_len = name, len(full)
    assert best, f"{module} belongs to no layer: add it to LAYERS"
    return best


def _base(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    parts = module.split(".")
    parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
    return ".".join(parts + ([node.module] if node.module else []))


def _imports(module: str) -> Iterator[tuple[str, str | None, int]]:
    """``(imported module, imported name or None, line)`` for every import of ``module``,
    those in function bodies and under ``if TYPE_CHECKING:`` included."""
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    yield sub, None, node.lineno
                else:
                    yield base, alias.name, node.lineno


def _edges() -> Iterator[tuple[str, str, str | None, int]]:
    for module in MODULES:
        for target, name, line in _imports(module):
            if target in MODULES and target != module:
                yield module, target, name, line


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_layers_import_only_downwards() -> None:
    broken = [
        f"{module}:{line} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, target, _, line in _edges()
        if RANK[layer_of(target)] > RANK[layer_of(module)]
    ]
    assert not broken, (
        f"a layer imports only its own layer and those below it ({ORDER}); "
        "move the code down, or hand it in as an argument:\n" + "\n".join(broken)
    )


def test_no_import_cycle() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, target, _, _ in _edges():
        graph[module].add(target)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append([*path[path.index(n) :], n])
            elif n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, (
        "no import cycle, type-only and lazy imports included (a runner takes what it "
        "needs, not the object that owns it):\n" + "\n".join(" -> ".join(c) for c in cycles)
    )


def _layer_package(module: str) -> str:
    """The package a private name may be shared within: the layer package of a module
    (``..._ops`` for ``..._ops.history``), or the module's own package."""
    for package in (CHECKPOINT, STORE):
        if module.startswith(package + "."):
            head = module[len(package) + 1 :].split(".")[0]
            return (
                f"{package}.{head}"
                if head.startswith("_")
                and (MODULES.get(f"{package}.{head}", Path()).name == "__init__.py")
                else package
            )
    return module


def test_private_names_stay_in_their_layer_package() -> None:
    found = [
        f"{module}:{line} imports {name} from {target}"
        for module, target, name, line in _edges()
        if name is not None
        and name.startswith("_")
        and _layer_package(module) != _layer_package(target)
    ]
    assert not found, (
        "a private name (_x) is shared only inside its layer package; give it a public "
        "name in its module (the module itself stays private):\n" + "\n".join(found)
    )


def test_modules_stay_small() -> None:
    too_long = [
        f"{module}: {n} lines"
        for module, path in MODULES.items()
        if (n := len(path.read_text().splitlines())) >= MAX_LINES
    ]
    assert not too_long, (
        f"a module stays under {MAX_LINES} lines: split it along a seam of its job\n"
        + "\n".join(too_long)
    )


def test_the_tree_shows_the_layers() -> None:
    root = ROOTS[CHECKPOINT]
    flat = sorted(p.name for p in root.glob("_*.py") if not p.name.startswith("__"))
    assert len(flat) <= MAX_FLAT_PRIVATE, (
        f"at most {MAX_FLAT_PRIVATE} private modules lie flat in {CHECKPOINT}; put the "
        f"others in their layer package: {flat}"
    )
    layers = sorted(p.parent.name for p in root.glob("_*/__init__.py"))
    assert len(layers) >= 4, f"the private layers are packages: found {layers}"
    for name in layers:
        doc = ast.get_docstring(ast.parse((root / name / "__init__.py").read_text())) or ""
        assert "may import" in doc.lower(), (
            f"{CHECKPOINT}.{name}: the layer package's docstring says what it may import"
        )
