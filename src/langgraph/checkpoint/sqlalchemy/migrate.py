"""Run the Alembic migrations of the checkpoint tables from Python.

The scripts under the repository's top-level ``migrations/`` folder are the single
source; the wheel ships them as ``langgraph/checkpoint/sqlalchemy/migrations``. The
version table is ``lgsa_alembic_version`` (:data:`~.schema.VERSION_TABLE`), so an
application's own ``alembic_version`` and history stay untouched.

Alembic is imported by the functions that migrate, not by this module: the saver's
schema check (:func:`current_revision` against :func:`head_revision`, :func:`is_at_head`)
runs on SQLAlchemy alone, so that a process that only reads or writes checkpoints (or
lists threads, or calls ``setup()`` on an up-to-date database) never loads Alembic. The
revisions the scripts ship (:func:`head_revision`, :func:`known_revisions`) are read from
the scripts' ``revision`` and ``down_revision`` lines, without importing them; migrating
checks that Alembic reads the same history.
"""

from __future__ import annotations

import functools
import io
import os
import re
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.sqlalchemy._codec.display import shown_url
from langgraph.checkpoint.sqlalchemy.errors import DowngradeRefusedError, SchemaOutOfDateError
from langgraph.checkpoint.sqlalchemy.schema import VERSION_TABLE
from sqlalchemy import Column, Connection, MetaData, String, Table, select
from sqlalchemy.exc import DBAPIError

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

__all__ = [
    "alembic_config",
    "current_revision",
    "downgrade",
    "head_revision",
    "is_ahead",
    "is_at_head",
    "known_revisions",
    "newer_schema_error",
    "offline_sql",
    "stamp",
    "upgrade",
]


def script_location() -> str:
    """Folder of the migration scripts: inside the installed package, else the repo's.

    Raises:
        FileNotFoundError: Neither folder holds an ``env.py`` (a broken install).
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parents[3] / "migrations"):
        if (candidate / "env.py").is_file():
            return str(candidate)
    raise FileNotFoundError(
        "the Alembic scripts of langgraph-checkpoint-sqlalchemy are missing; reinstall it"
    )


def alembic_config(connection: Connection | None = None, *, schema: str | None = None) -> Config:
    """An Alembic ``Config`` for the checkpoint migrations.

    Args:
        connection: Run on this connection (inside its transaction) instead of a URL.
        schema: PostgreSQL schema that holds the tables and the version table.

    Returns:
        The configuration; pass it to ``alembic.command`` functions.
    """
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", script_location())
    cfg.attributes["connection"] = connection
    cfg.attributes["schema"] = schema
    return cfg


#: Serialises Alembic commands within the process (see :func:`_alembic`); the database's
#: migration lock serialises processes.
_ALEMBIC_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: another thread of the parent may have been
    migrating (holding :data:`_ALEMBIC_LOCK`) at the moment of the fork; that thread
    does not exist here, and the child's first migration would wait for it forever."""
    global _ALEMBIC_LOCK
    _ALEMBIC_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def upgrade(connection: Connection, revision: str = "head", *, schema: str | None = None) -> None:
    """Migrate the schema up to ``revision`` on ``connection``.

    Runs in the connection's transaction, serialised across processes by the dialect's
    migration lock (PostgreSQL advisory lock, MySQL ``GET_LOCK``, SQLite ``BEGIN
    IMMEDIATE``). Idempotent: at ``revision`` already, it does nothing.

    Raises:
        SchemaOutOfDateError: The database is at a revision this package does not know:
            a newer version of the package migrated it (upgrade the package).
    """
    from alembic import command

    _alembic(command.upgrade, connection, revision, schema)


def to_head(
    read: Callable[[], AbstractContextManager[Connection]],
    write: Callable[[], AbstractContextManager[Connection]],
    schema: str | None = None,
) -> None:
    """Bring the tables to the head revision (the saver's ``setup()``).

    Up to date: one version query (:func:`is_at_head`), no Alembic environment and no
    migration lock. That read is a connection of its own, ended before the migration's
    transaction begins (a MySQL snapshot taken before another process creates the
    tables would fail the migration with error 1412).

    An empty database (none of our tables) on SQLite or PostgreSQL gets the head schema
    in one step, stamped at head, without Alembic (``migrations/head.py``: Alembic's
    "create_all, then stamp"); any other database is migrated by Alembic.

    Args:
        read: Opens a connection for the version query.
        write: Opens a connection in a write transaction for :func:`upgrade`.
        schema: The schema of the tables and version table (None: the default).

    Raises:
        SchemaOutOfDateError: The database is at a revision this package does not know.
    """
    with read() as conn:
        up_to_date = is_at_head(conn, schema=schema)
    if not up_to_date:
        with write() as conn:
            if not _head_module().create(conn, schema, head_revision()):
                upgrade(conn, schema=schema)


@functools.cache
def _head_module() -> Any:
    """``head.py`` beside the scripts: the head schema in one step (see :func:`to_head`),
    loaded from its file like Alembic loads ``env.py``."""
    import importlib.util

    path = Path(script_location()) / "head.py"
    spec = importlib.util.spec_from_file_location("_lgsa_migrations_head", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{path} is missing; reinstall langgraph-checkpoint-sqlalchemy")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def downgrade(connection: Connection, revision: str, *, schema: str | None = None) -> None:
    """Migrate the schema down to ``revision`` (``"base"`` drops every table of ours).

    Every step that may refuse (a revision module's ``downgrade_refusal``) is asked before
    any step runs: MySQL/MariaDB commit each DDL statement, so a step refusing midway
    would leave the database between revisions.

    Raises:
        SchemaOutOfDateError: The database was migrated by a newer version of the package.
        DowngradeRefusedError: A step cannot run on the stored data (nothing was changed).
    """
    from alembic import command

    for script in _steps_down(connection, revision, schema):
        refusal = getattr(script.module, "downgrade_refusal", None)
        why = refusal(connection, schema) if refusal is not None else None
        if why is not None:
            raise DowngradeRefusedError(why)
    _alembic(command.downgrade, connection, revision, schema)


def _steps_down(connection: Connection, revision: str, schema: str | None) -> list[Any]:
    """The scripts whose ``downgrade`` a downgrade to ``revision`` runs, newest first:
    from the database's revision down to, not including, ``revision`` (``"base"``: all;
    ``"-N"``: N steps from the database's revision, as Alembic counts them). Empty when
    Alembic itself will refuse the target (unknown, above the current revision, another
    direction): its command reports that, as it always did."""
    from alembic.script.revision import RevisionError

    current = current_revision(connection, schema=schema)
    if current is None or is_ahead(current):
        return []
    scripts = _scripts()
    try:
        if revision.startswith("-") and revision[1:].isdigit():
            return list(scripts.iterate_revisions(current, "base"))[: int(revision[1:])]
        return list(scripts.iterate_revisions(current, revision))
    except (RevisionError, AssertionError):  # Alembic asserts on "rev@-1" forms
        return []


def stamp(connection: Connection, revision: str, *, schema: str | None = None) -> None:
    """Record ``revision`` as the database's revision without running migrations (for
    tables created by hand or by ``upgrade --sql`` output that a DBA applied).

    Raises:
        SchemaOutOfDateError: The database was migrated by a newer version of the package.
    """
    from alembic import command

    _alembic(command.stamp, connection, revision, schema)


def _alembic(
    run: Callable[[Config, str], None], connection: Connection, revision: str, schema: str | None
) -> None:
    """Run an Alembic command; Alembic's "Can't locate revision" for a database migrated
    by a newer package becomes :class:`SchemaOutOfDateError` (no SQL has run then: Alembic
    fails while planning the path from the database's revision).

    One command at a time in a process (:data:`_ALEMBIC_LOCK`): Alembic keeps the running
    migration's context in module globals (``alembic.context``, ``alembic.op``), which two
    threads migrating at once would overwrite in each other's hands."""
    from alembic.util import CommandError

    _scripts()  # refuses scripts Alembic reads otherwise than _history, before any SQL
    try:
        with _ALEMBIC_LOCK:
            run(alembic_config(connection, schema=schema), revision)
    except CommandError as e:
        current = current_revision(connection, schema=schema)
        if is_ahead(current):
            raise newer_schema_error(connection, current) from e
        raise


def is_ahead(current: str | None) -> bool:
    """Whether ``current`` (a database's revision) is one this package does not ship:
    the database was migrated by a newer version of the package."""
    return current is not None and current not in known_revisions()


def newer_schema_error(connection: Connection, current: str | None) -> SchemaOutOfDateError:
    """The error for a database migrated by a newer version of the package (its revision
    ``current`` is not among :func:`known_revisions`)."""
    where = shown_url(connection.engine.url)
    return SchemaOutOfDateError(
        f"The checkpoint tables at {where} are at revision {current}, unknown to this "
        "version of langgraph-checkpoint-sqlalchemy (its newest is "
        f"{head_revision()}): they were migrated by a newer version. Upgrade the package "
        "(pip install -U langgraph-checkpoint-sqlalchemy; from a checkout of the "
        "repository: pull a newer version, then pip install -e .)."
    )


def offline_sql(url: str, direction: str, revision: str, schema: str | None = None) -> str:
    """The SQL of a migration, for a DBA to review and apply, without connecting.

    Args:
        url: Database URL (its dialect decides the SQL).
        direction: ``"upgrade"`` or ``"downgrade"``.
        revision: Target, or ``"FROM:TO"`` (Alembic's offline range).
        schema: PostgreSQL schema.

    Returns:
        The SQL text (Alembic offline mode).
    """
    from alembic import command

    _scripts()  # refuses scripts Alembic reads otherwise than _history
    buffer = io.StringIO()
    cfg = alembic_config(schema=schema)
    cfg.output_buffer = buffer
    cfg.attributes["url"] = url
    with _ALEMBIC_LOCK:
        if direction == "upgrade":
            command.upgrade(cfg, revision, sql=True)
        else:
            target = revision if ":" in revision else f"{head_revision()}:{revision}"
            command.downgrade(cfg, target, sql=True)
    return buffer.getvalue()


def current_revision(connection: Connection, *, schema: str | None = None) -> str | None:
    """The revision the database is at, or None when our tables were never created.

    Alembic's ``MigrationContext.get_current_revision()`` without loading Alembic: the
    same statements (the dialect's check that the version table exists, then its rows).

    Raises:
        alembic.util.CommandError: The version table holds more than one revision.
    """
    if not connection.dialect.has_table(connection, VERSION_TABLE, schema):
        return None
    rows = connection.execute(select(_version_table(schema).c.version_num)).scalars().all()
    if len(rows) > 1:
        from alembic.util import CommandError

        raise CommandError(
            f"Version table '{VERSION_TABLE}' has more than one head present; "
            "please use get_current_heads()"
        )
    return rows[0] if rows else None


def is_at_head(connection: Connection, *, schema: str | None = None) -> bool:
    """Whether the database is at the head revision, in one query: the version table's
    rows read directly, without Alembic's environment or its table check.

    A missing version table fails the query (on PostgreSQL, ending ``connection``'s
    transaction): the answer is then False, and the caller migrates on another
    connection.

    Args:
        connection: A connection to read on; do not reuse it after a False answer.
        schema: The schema of the tables (PostgreSQL), or None for the default.

    Returns:
        True when the version table holds exactly the head revision.
    """
    table = _version_table(schema)
    try:
        rows = connection.execute(select(table.c.version_num)).scalars().all()
    except DBAPIError:
        return False
    return rows == [head_revision()]


@functools.cache
def _version_table(schema: str | None) -> Table:
    """Alembic's version table as a Core table (its one column), for :func:`is_at_head`."""
    return Table(VERSION_TABLE, MetaData(), Column("version_num", String(32)), schema=schema)


@functools.cache
def _scripts() -> ScriptDirectory:
    """The shipped migration scripts as Alembic reads them, once.

    Raises:
        RuntimeError: Alembic's history of the scripts is not :func:`_history` (the
            scripts' text, read without Alembic): a script whose ``revision`` lines
            the cheap reading misses, or a broken install.
    """
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config())
    alembic_history = tuple(s.revision for s in scripts.walk_revisions())[::-1]
    if alembic_history != _history():
        raise RuntimeError(
            f"the migration scripts at {scripts.dir} have the history "
            f"{list(alembic_history)} for Alembic, but {list(_history())} read from their "
            "revision and down_revision lines: write each as a plain string literal "
            '(revision: str = "..."), or reinstall the package'
        )
    return scripts


#: A script's ``revision = "..."`` or ``down_revision = "..."`` (or ``None``) line, with or
#: without a type annotation, as ``alembic revision`` writes them.
_REVISION_LINE = re.compile(
    r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(?:\"([^\"\n]*)\"|'([^'\n]*)'|(None))\s*$",
    re.MULTILINE,
)


@functools.cache
def _history() -> tuple[str, ...]:
    """The revisions of the shipped scripts, base first, read from their text without
    importing them or Alembic (the files Alembic loads: ``versions/*.py``, not
    ``__init__``). Alembic reads the same (:func:`_scripts` checks it before migrating,
    and a test does).

    Raises:
        RuntimeError: A script without plain ``revision``/``down_revision`` lines, or
            scripts that are not one linear history.
    """
    versions = Path(script_location()) / "versions"
    down: dict[str, str | None] = {}
    for path in sorted(versions.glob("*.py")):
        if path.name.startswith(("__init__", ".#")):
            continue
        found: dict[str, str | None] = {}
        for match in _REVISION_LINE.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match[1], match[2] if match[2] is not None else match[3])
        if "revision" not in found or "down_revision" not in found or found["revision"] is None:
            raise RuntimeError(f"{path}: no plain revision and down_revision lines")
        down[found["revision"]] = found["down_revision"]
    children = {parent: rev for rev, parent in down.items()}
    history: list[str] = []
    rev = children.get(None)
    while rev is not None:
        history.append(rev)
        rev = children.get(rev)
    if len(children) != len(down) or len(history) != len(down):
        raise RuntimeError(f"the migration scripts at {versions} are not one linear history")
    return tuple(history)


def head_revision() -> str:
    """The newest revision of the shipped migration scripts (read without Alembic)."""
    return _history()[-1]


def known_revisions() -> frozenset[str]:
    """Every revision of the shipped migration scripts (read without Alembic)."""
    return frozenset(_history())
