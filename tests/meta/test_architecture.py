"""The package's shape, checked: imports run one way, privates stay private, modules stay small.

The layering rules (docs/development.md) as a test, so that a later change cannot quietly
undo them:

- no import cycle among the package's modules (imports in function bodies count: a lazy
  import that dodges a cycle is still one; imports under ``if TYPE_CHECKING:`` do not run
  and are not counted);
- no module imports a private name (``_x``) from another module of the package, except
  from the modules that exist to serve the saver (operations and codec);
- ``saver.py`` stays under 700 lines, every other module under 500 unless its docstring
  says why one cohesive thing needs more (a line containing "one cohesive").
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import langgraph.checkpoint.sqlalchemy as package

ROOT = Path(package.__file__).parent
PACKAGE = package.__name__

#: Modules whose private names the saver's other modules may import: they exist to serve it.
SERVING = {"_ops", "_history", "_maintenance", "_codec"}

pytestmark = pytest.mark.filterwarnings("ignore")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except what sits under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _base(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    parts = module.split(".")
    parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
    return ".".join(parts + ([node.module] if node.module else []))


def _imports(module: str) -> Iterator[tuple[str, str | None]]:
    """``(imported module, imported name or None)`` for each import of ``module``."""
    tree = ast.parse(MODULES[module].read_text())
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:
                    yield sub, None
                else:
                    yield base, alias.name


def _graph() -> dict[str, set[str]]:
    return {
        m: {target for target, _ in _imports(m) if target in MODULES and target != m}
        for m in MODULES
    }


def test_no_import_cycle() -> None:
    graph = _graph()
    # A submodule importing its own package's __init__ is the cycle Python itself makes
    # harmless only by accident of order; count it like any other edge.
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
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_names_across_modules() -> None:
    found = []
    for module in MODULES:
        for target, name in _imports(module):
            if target not in MODULES or target == module or name is None:
                continue
            if name.startswith("_") and target.rsplit(".", 1)[-1] not in SERVING:
                found.append(f"{module} imports {name} from {target}")
    assert not found, "\n".join(found)


def test_modules_stay_small() -> None:
    too_long = []
    for module, path in MODULES.items():
        lines = len(path.read_text().splitlines())
        limit = 700 if path.name == "saver.py" else 500
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > limit and "one cohesive" not in doc.lower():
            too_long.append(f"{module}: {lines} lines (limit {limit})")
    assert not too_long, "\n".join(too_long)
