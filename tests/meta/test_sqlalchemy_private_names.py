"""SQLAlchemy's private names are touched in one module only.

``dialects/_sqlalchemy_private.py`` wraps each private name of SQLAlchemy the package
relies on (``tests/engine/test_sqlalchemy_private.py`` checks they still behave); every
other module of ``langgraph.checkpoint.sqlalchemy`` and ``langgraph.store.sqlalchemy``
calls its functions. Read from each module's syntax tree (code, not docstrings or
comments), outside that module there is:

- no import of a private SQLAlchemy module or name (``from sqlalchemy.x._y import z``,
  ``from sqlalchemy.x import _z``);
- no ``getattr``/``hasattr``/``setattr``/``delattr`` of a private name given as a string
  (where the object is not SQLAlchemy's, the exception is listed below with its reason);
- no attribute named as one of the private names we know SQLAlchemy has
  (:data:`KNOWN`), on any object, our own included: a reader must never wonder whose it is;
- no private attribute of a name imported from SQLAlchemy (``Connection._x``) or of an
  object named as SQLAlchemy's objects are in this code base (``engine``, ``pool``,
  ``dialect``, ``conn``... :data:`SQLALCHEMY_OBJECTS`).

A static scan cannot know every object's type; the last two rules are the net for what a
scan can see.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .test_architecture import CHECKPOINT, MODULES

PRIVATE_MODULE = f"{CHECKPOINT}.dialects._sqlalchemy_private"

#: SQLAlchemy private names the package uses or used (through the private module only).
KNOWN = frozenset(
    {
        "_handle_dbapi_exception",
        "_handle_dbapi_exception_noconnection",
        "_should_log_info",
        "_should_log_debug",
        "_echo",
        "_pool",
        "_max_overflow",
        "_pre_ping",
        "_recycle",
        "_EmptyListener",
        "_ListenerCollection",
        "_proxied",
        "_copy",
        "_columns",
        "_server_ansiquotes",
        "_backslash_escapes",
        "_has_events",
        "_execution_options",
        "_dbapi_connection",
        "_invalidate",
    }
)

#: Names by which this code base holds SQLAlchemy's objects: a private attribute on one
#: of them is SQLAlchemy's.
SQLALCHEMY_OBJECTS = frozenset(
    {
        "engine",
        "sync_engine",
        "async_engine",
        "pool",
        "dialect",
        "conn",
        "connection",
        "dispatch",
        "fairy",
        "compiled",
        "metadata",
        "table",
        "column",
    }
)

#: ``(module, name)`` of a private name given as a string to ``getattr`` and the like on
#: an object that is not SQLAlchemy's, with the reason.
NOT_SQLALCHEMY = {
    (f"{CHECKPOINT}._codec.strict", "_unpack_ext_hook"): "LangGraph's JsonPlusSerializer",
    (f"{CHECKPOINT}._codec.strict", "_allowed_msgpack_modules"): "LangGraph's serializer",
}

_ATTR_FUNCTIONS = ("getattr", "hasattr", "setattr", "delattr")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _from_sqlalchemy(module: str | None) -> bool:
    return module is not None and (module == "sqlalchemy" or module.startswith("sqlalchemy."))


def _receiver(node: ast.expr) -> str | None:
    """The last name of an attribute's object: ``engine`` for ``self.engine._x``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def violations(module: str, source: str) -> Iterator[str]:
    """Each SQLAlchemy private name ``source`` touches, as ``module:line: what``."""
    tree = ast.parse(source)
    imported: set[str] = set()  # names bound to SQLAlchemy modules or objects
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _from_sqlalchemy(alias.name):
                    imported.add((alias.asname or alias.name).split(".")[0])
                    if any(_private(part) for part in alias.name.split(".")):
                        yield f"{module}:{node.lineno}: import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and _from_sqlalchemy(node.module):
            assert node.module is not None
            private_module = any(_private(part) for part in node.module.split("."))
            for alias in node.names:
                imported.add(alias.asname or alias.name)
                if private_module or _private(alias.name):
                    yield f"{module}:{node.lineno}: from {node.module} import {alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            receiver = _receiver(node.value)
            if node.attr in KNOWN:
                yield f"{module}:{node.lineno}: .{node.attr} (a SQLAlchemy private name)"
            elif isinstance(node.value, ast.Name) and node.value.id in imported:
                yield f"{module}:{node.lineno}: {node.value.id}.{node.attr}"
            elif receiver in SQLALCHEMY_OBJECTS:
                yield f"{module}:{node.lineno}: {receiver}.{node.attr}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _ATTR_FUNCTIONS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and (module, node.args[1].value) not in NOT_SQLALCHEMY
        ):
            yield f"{module}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KNOWN:
            yield f"{module}:{node.lineno}: {node.value!r} (a SQLAlchemy private name)"


def test_sqlalchemy_private_names_are_touched_in_one_module() -> None:
    assert PRIVATE_MODULE in MODULES
    found = [
        line
        for module, path in MODULES.items()
        if module != PRIVATE_MODULE
        for line in violations(module, path.read_text())
    ]
    assert not found, (
        f"SQLAlchemy's private names are used through {PRIVATE_MODULE} only (a function "
        "there says what it uses, why no public API does it and since which version; "
        "tests/engine/test_sqlalchemy_private.py checks it): use the public API, or add "
        "the function there:\n" + "\n".join(found)
    )


def test_the_private_module_uses_the_names_it_is_for() -> None:
    """The scan is not empty-handed: the private module itself trips every rule."""
    found = "\n".join(violations(PRIVATE_MODULE, MODULES[PRIVATE_MODULE].read_text()))
    for name in ("_handle_dbapi_exception", "_copy", "_backslash_escapes"):
        assert f".{name} (a SQLAlchemy private name)" in found, name
    for name in ("_EmptyListener", "_max_overflow", "_proxied"):
        assert f"{name!r} (a SQLAlchemy private name)" in found, name


def test_the_scan_sees_each_form() -> None:
    source = """
import sqlalchemy.util._collections
from sqlalchemy.event.attr import _ListenerCollection
from sqlalchemy import Connection, util
import sqlalchemy as sa

Connection._anything(1)
sa._something
engine.pool._overflow
self.engine._compiled_cache
getattr(dialect, "_server_version")
hasattr(x, "_mine")
holder._echo
"""
    found = "\n".join(violations("m", source))
    for what in (
        "import sqlalchemy.util._collections",
        "from sqlalchemy.event.attr import _ListenerCollection",
        "Connection._anything",
        "sa._something",
        "pool._overflow",
        "engine._compiled_cache",
        "getattr(..., '_server_version')",
        "hasattr(..., '_mine')",
        "._echo (a SQLAlchemy private name)",
    ):
        assert what in found, (what, found)
    assert "util" not in found.replace("sqlalchemy.util._collections", "")
