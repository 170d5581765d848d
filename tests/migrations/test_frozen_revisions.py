"""The revisions are frozen: none imports the package, and the frozen helper modules
beside them are neither imported by the package nor edited.

A revision, once released, is history (Alembic's guidance; Optuna keeps its revisions the
same way): what it does to a user's database must not change when a constant, a type or
a function of the package does. So no file under ``migrations/versions/`` imports
``langgraph`` (read from the source: every ``import``/``from`` at any depth, and
``importlib.import_module``/``__import__`` of a literal name; and run: every revision
loads in a process where importing ``langgraph`` fails). What several revisions share
lives in ``migrations/frozen_<revision>.py``, which imports no ``langgraph`` either,
which no package module (nor ``env.py``/``head.py``, which build the current schema)
loads, and whose text is pinned here: a change is a new frozen module, not an edit.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MIGRATIONS = REPO / "migrations"
REVISIONS = sorted(p for p in (MIGRATIONS / "versions").glob("*.py") if p.name != "__init__.py")
FROZEN = sorted(MIGRATIONS.glob("frozen_*.py"))
#: The frozen modules and the SHA-256 of their text: never edited once committed.
FROZEN_TEXT = {
    "frozen_0013.py": "47ba51c3cb656e98009215018ca0487c867cbdb30db3ef25a885a0fcac2774e1",
}


def _imported(path: Path) -> list[tuple[int, str]]:
    """Every module name ``path`` imports, with its line: ``import``/``from`` statements
    at any depth (function bodies, ``if TYPE_CHECKING``) and calls of
    ``importlib.import_module``/``__import__`` with a literal name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            # A relative import (level > 0) would reach a package the scripts are not in.
            found.append((node.lineno, "." * node.level + (node.module or "")))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in ("import_module", "__import__") and isinstance(first, ast.Constant):
                found.append((node.lineno, str(first.value)))
    return found


def _langgraph(names: list[tuple[int, str]]) -> list[str]:
    return [
        f"line {line}: {name}"
        for line, name in names
        if name == "langgraph" or name.startswith(("langgraph.", "."))
    ]


def test_the_scripts_are_where_the_test_looks() -> None:
    assert len(REVISIONS) >= 13
    assert [p.name for p in FROZEN] == sorted(FROZEN_TEXT)


@pytest.mark.parametrize("path", [*REVISIONS, *FROZEN], ids=lambda p: p.name)
def test_no_revision_or_frozen_module_imports_the_package(path: Path) -> None:
    assert _langgraph(_imported(path)) == [], (
        f"{path.relative_to(REPO)} imports the package: a revision holds literal values "
        "(or takes them from a frozen module in migrations/), so that a later change of "
        "the package cannot change what it does to a database"
    )


def test_every_revision_loads_without_the_package(tmp_path: Path) -> None:
    """Each revision and the frozen modules it loads, imported in a process where any
    import of ``langgraph`` fails (a dynamic import the source check cannot see)."""
    script = tmp_path / "load.py"
    script.write_text(
        "import importlib.abc, importlib.util, sys\n"
        "class Refuse(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'langgraph' or name.startswith('langgraph.'):\n"
        "            raise ImportError(f'revision imports {name}')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "for i, path in enumerate(sys.argv[1:]):\n"
        "    spec = importlib.util.spec_from_file_location(f'lgsa_revision_{i}', path)\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        "    assert callable(module.upgrade) and callable(module.downgrade), path\n"
        "print('loaded', len(sys.argv) - 1)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script), *map(str, REVISIONS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"loaded {len(REVISIONS)}"


def test_frozen_modules_are_never_edited() -> None:
    for path in FROZEN:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert digest == FROZEN_TEXT[path.name], (
            f"{path.relative_to(REPO)} changed: a frozen module is history (the revisions "
            "that load it ran it on users' databases). Put a new definition in the revision "
            "that needs it, or in a new migrations/frozen_<revision>.py"
        )


def test_revisions_load_only_frozen_modules_that_exist() -> None:
    for path in REVISIONS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "_frozen"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                name = str(node.args[0].value)
                assert (MIGRATIONS / f"{name}.py") in FROZEN, f"{path.name} loads {name}"


def test_package_code_never_loads_a_frozen_module() -> None:
    """The package, ``env.py`` and ``head.py`` describe the current schema: a frozen
    module is the revisions' alone (an import or a path naming one is refused)."""
    sources = [*sorted((REPO / "src").rglob("*.py")), MIGRATIONS / "env.py", MIGRATIONS / "head.py"]
    offenders = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        names = [name for _, name in _imported(path)]
        if any("frozen_" in name for name in names):
            offenders.append(str(path.relative_to(REPO)))
            continue
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and "frozen_" in str(node.value):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []
