"""The API reference keeps up with the code: every public error and saver option is on it,
and the docstrings it renders speak of public names only."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import langgraph.checkpoint.sqlalchemy as package
from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

REFERENCE = Path(__file__).parents[2] / "docs" / "reference.md"


def test_every_public_error_is_rendered_in_the_reference() -> None:
    text = REFERENCE.read_text()
    errors = [
        name
        for name in package.__all__
        if isinstance(getattr(package, name), type)
        and issubclass(getattr(package, name), BaseException)
    ]
    assert errors
    missing = [n for n in errors if f"::: langgraph.checkpoint.sqlalchemy.{n}" not in text]
    assert missing == []


def test_every_saver_option_is_in_the_reference_summary() -> None:
    text = REFERENCE.read_text()
    params = inspect.signature(SQLAlchemySaver.from_conn_string).parameters
    assert next(iter(params)) == "conn_string"  # one name everywhere, as LangGraph's savers
    for name in params:
        if name != "engine_kwargs":
            assert f"{name}" in text, name
    assert "from_conn_string(conn_string," in text
    for method in ("lock_thread", "alock_thread", "detect_conflicts", "strict_decode"):
        assert method in text


# -- public docstrings speak of public names ---------------------------------------------

SRC = Path(__file__).parents[2] / "src"
PACKAGES = ("langgraph.checkpoint.sqlalchemy", "langgraph.store.sqlalchemy")

#: A reference to a private module or name: ``_codec.inline``, ``:mod:`._engine```,
#: ``langgraph.checkpoint.sqlalchemy._engine.engines``, ``Store._prepare``,
#: ``:func:`_history```, ````_reads````. Not dunders (``__init__``, ``__error__``) nor
#: LangGraph's capitalised private classes (``_DeltaSnapshot``).
PRIVATE_REFERENCE = re.compile(
    r"(?<![\w.])_[a-z]\w*\.\w"  # _codec.inline
    r"|\._[a-z]\w*"  # ._ops, package._engine, Class._method
    r"|:\w+:`~?\.*_[a-z]"  # :func:`_history`
    r"|`_[a-z]\w*`"  # `_reads`, ``_reads``
)


def test_the_private_reference_pattern_has_no_false_positive() -> None:
    private = [
        "See :mod:`._codec.inline`.",
        "See :class:`._engine.retry.Retry`.",
        "(:func:`langgraph.checkpoint.sqlalchemy._engine.engines.resolve_urls`)",
        "see _retry.Retry",
        "(:func:`_history`)",
        "(``_reads``, ``_scan``)",
        "(:meth:`SQLAlchemyStore._prepare`)",
    ]
    public = [
        "``__init__`` runs it",
        "special channels (``__error__``, ``__interrupt__``)",
        "a ``_DeltaSnapshot`` every snapshot_frequency updates",
        "thread_id_full and checkpoint_ns_full",
        "see :mod:`.dialects` and :class:`~.schema.KeyText`",
        "``lgsa_alembic_version``, ``max_allowed_packet``",
    ]
    assert [t for t in private if not PRIVATE_REFERENCE.search(t)] == []
    assert [t for t in public if PRIVATE_REFERENCE.search(t)] == []


def _griffe_modules() -> Any:
    """Our packages as mkdocstrings reads them (griffe, statically, aliases resolved)."""
    griffe = pytest.importorskip("griffe")
    loader = griffe.GriffeLoader(search_paths=[str(SRC)], allow_inspection=False)
    for name in PACKAGES:
        loader.load(name)
    loader.resolve_aliases(implicit=False, external=None)
    return loader.modules_collection


def _private_references(roots: list[Any]) -> list[str]:
    """Each docstring line naming a private module or name, under ``roots`` and their
    public members (a module's ``__all__``; a class's members, inherited ones included,
    and ``__init__``, whose docstring the reference merges into the class's)."""
    found: list[str] = []
    seen: set[str] = set()

    def walk(obj: Any) -> None:
        if obj.is_alias:
            obj = obj.final_target
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            found.extend(
                f"{obj.path}: {line.strip()}"
                for line in obj.docstring.value.splitlines()
                if PRIVATE_REFERENCE.search(line)
            )
        if obj.is_module:
            members = [m for n, m in obj.members.items() if m.is_public and not n.startswith("_")]
        elif obj.is_class:
            members = [
                m for n, m in obj.all_members.items() if not n.startswith("_") or n == "__init__"
            ]
        else:
            members = []
        for member in members:
            if not member.is_module:
                walk(member)

    for root in roots:
        walk(root)
    assert len(seen) > len(roots), "nothing walked: griffe found no members"
    return found


def test_the_api_reference_names_no_private_module() -> None:
    """Every docstring the API reference renders (each ``:::`` object of
    docs/reference.md, its public members and the inherited ones) speaks of public names
    only: a reader cannot import ``_engine.retry.Retry``."""
    modules = _griffe_modules()
    targets = re.findall(r"^::: ([\w.]+)$", REFERENCE.read_text(), re.M)
    assert "langgraph.checkpoint.sqlalchemy.SQLAlchemySaver" in targets
    assert _private_references([modules[t] for t in targets]) == []


def test_public_modules_docstrings_name_no_private_module() -> None:
    """The same for every public module of the two packages (not the command line's),
    rendered or not: its docstring and those of the names in its ``__all__``."""
    modules = _griffe_modules()

    def public(module: Any) -> list[Any]:
        subs = [
            sub
            for name, sub in module.modules.items()
            if not name.startswith("_") and name not in ("cli", "__main__")
        ]
        return [module, *(m for sub in subs for m in public(sub))]

    roots = [m for name in PACKAGES for m in public(modules[name])]
    assert len(roots) > 10
    assert _private_references(roots) == []


def test_the_rendered_retry_timeout_default_is_the_retry_layers() -> None:
    """The reference shows the signatures' defaults as written: ``retry_timeout=15.0``
    (a number a reader understands, not a private constant's name) is the retry layer's
    own default."""
    from langgraph.checkpoint.sqlalchemy._engine.retry import RETRY_TIMEOUT
    from langgraph.store.sqlalchemy import SQLAlchemyStore

    for owner in (SQLAlchemySaver, SQLAlchemyStore):
        for method in (owner.__init__, owner.from_conn_string):
            assert inspect.signature(method).parameters["retry_timeout"].default == RETRY_TIMEOUT
