"""SQLAlchemy's private names we rely on are there, and still do what we rely on.

Each function of ``dialects/_sqlalchemy_private.py`` wraps one private name of
SQLAlchemy. A release that renames or changes one fails here, by name, before a user's
hot path meets it (``.ci/newest`` runs this module against the newest SQLAlchemy the
package index serves):

- a missing name fails the import of the module, loudly, with the version and the name;
- the DBAPI error handlers wrap a driver's error in ``DBAPIError``, run ``handle_error``
  listeners, and on a dropped connection invalidate it and the pool's older ones (SQLite
  file, PostgreSQL, MariaDB);
- the pool's settings read back what ``create_engine`` was given;
- the listener collections are the types SQLAlchemy's dispatch holds for engine and
  pool events with and without listeners, and our reading of them answers as ``bool()``;
- an ``execution_options()`` copy leads to its engine, a column copy is a column, and a
  MySQL dialect's backslash flag follows the server's ``sql_mode``.

The public checks that replaced private ones (the engine's logger for ``echo``) give the
answer SQLAlchemy's own private check gives.
"""

from __future__ import annotations

import logging
import pydoc
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy
import sqlalchemy.event.attr
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    event,
    select,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine

from langgraph.checkpoint.sqlalchemy._engine.runner import _copy_engine
from langgraph.checkpoint.sqlalchemy.dialects import _sqlalchemy_private as private
from langgraph.checkpoint.sqlalchemy.dialects import query_builder

from ..provision import ADMIN_URLS, BACKENDS

PLACES = [b for b in ("sqlite-file", "postgres", "mariadb") if b in BACKENDS]

#: A URL on each server backend that refuses connections at once (nothing listens on
#: port 1 of the loopback).
REFUSED = {
    "sqlite-file": "sqlite:////nonexistent-folder-lgsa/db.sqlite",
    "postgres": "postgresql+psycopg://postgres@127.0.0.1:1/postgres",
    "mariadb": "mysql+pymysql://root@127.0.0.1:1/test",
}


@pytest.fixture(params=PLACES)
def url(request: pytest.FixtureRequest, fresh_databases: Any) -> str:
    """A new, empty database: a SQLite file, a PostgreSQL or a MariaDB database."""
    return str(fresh_databases(request.param))


@pytest.fixture
def engine(url: str) -> Iterator[Engine]:
    made = create_engine(url)
    yield made
    made.dispose()


def _backend(engine: Engine) -> str:
    return {"sqlite": "sqlite-file", "postgresql": "postgres"}.get(engine.dialect.name, "mariadb")


# -- a missing name is loud -------------------------------------------------------------------


# (where the name lives, the name): every name the module checks at import
AT_IMPORT = [
    ("sqlalchemy.Connection", "_handle_dbapi_exception"),
    ("sqlalchemy.Connection", "_handle_dbapi_exception_noconnection"),
    ("sqlalchemy.dialects.mysql.base.MySQLDialect", "_backslash_escapes"),
    ("sqlalchemy.Column", "_copy"),
    ("sqlalchemy.event.attr", "_EmptyListener"),
    ("sqlalchemy.event.attr", "_ListenerCollection"),
]

_WITHOUT_ONE = """
import importlib, pydoc, sys
import langgraph.checkpoint.sqlalchemy.dialects  # the package, and the module once
NAME = "langgraph.checkpoint.sqlalchemy.dialects._sqlalchemy_private"
owner = pydoc.locate(sys.argv[1])
delattr(owner, sys.argv[2])
del sys.modules[NAME]
try:
    importlib.import_module(NAME)
except ImportError as e:
    print(e)
else:
    print("imported without it")
"""


@pytest.mark.parametrize(("owner", "name"), AT_IMPORT)
def test_a_missing_name_fails_the_import_naming_the_version_and_the_name(
    owner: str, name: str
) -> None:
    """In a process of its own: the name removed, importing the module raises
    ImportError with the SQLAlchemy version and the name (no fallback)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_WITHOUT_ONE), owner, name],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    said = done.stdout.strip()
    assert f"SQLAlchemy {sqlalchemy.__version__} has no " in said, said
    assert f".{name}, which langgraph-checkpoint-sqlalchemy relies on" in said, said


def test_a_missing_instance_attribute_is_loud_where_read() -> None:
    """A pool's settings and a copy's parent are set by SQLAlchemy's constructors:
    checked where read (once per engine), with the same words."""
    nothing = SimpleNamespace()
    for read in (private.pool_max_overflow, private.pool_pre_pings, private.pool_recycle):
        with pytest.raises(RuntimeError, match=rf"SQLAlchemy {sqlalchemy.__version__} has no"):
            read(nothing)  # type: ignore[arg-type]


def test_each_name_is_in_the_installed_sqlalchemy() -> None:
    """The names read on instances, on instances SQLAlchemy made."""
    engine = create_engine("sqlite://")
    copy = engine.execution_options(x=1)
    assert copy._proxied is engine  # type: ignore[attr-defined]
    file_engine = create_engine("sqlite:///unused-never-opened.db")
    for attribute in ("_max_overflow", "_pre_ping", "_recycle"):
        assert hasattr(file_engine.pool, attribute), attribute
    for owner, name in AT_IMPORT:
        assert hasattr(pydoc.locate(owner), name), (owner, name)


# -- the DBAPI error handlers -----------------------------------------------------------------


def _listened(engine: Engine) -> list[Any]:
    """The contexts ``handle_error`` listeners of ``engine`` are given."""
    seen: list[Any] = []
    event.listen(engine, "handle_error", seen.append)
    return seen


def test_a_driver_error_is_wrapped_and_listeners_run(engine: Engine) -> None:
    seen = _listened(engine)
    with engine.connect() as conn:
        cursor = conn.connection.cursor()
        statement = "SELECT * FROM no_such_table_lgsa"
        try:
            cursor.execute(statement)
        except engine.dialect.loaded_dbapi.Error as e:
            raised = e
        with pytest.raises(DBAPIError) as info:
            private.handle_dbapi_error(conn, raised, statement, (), cursor)
        assert info.value.orig is raised and info.value.statement == statement
        assert not info.value.connection_invalidated and not conn.invalidated
        assert [(c.original_exception, c.connection) for c in seen] == [(raised, conn)]


def _drop(engine: Engine, conn: Connection) -> Any:
    """End ``conn``'s DBAPI connection behind SQLAlchemy's back (the server ends its
    session; SQLite's file connection is closed); a cursor made before it."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    backend = _backend(engine)
    if backend == "sqlite-file":
        dbapi.close()
        return cursor
    admin = create_engine(ADMIN_URLS[backend], isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as other:
            if backend == "postgres":
                pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
                # waits (up to 60 s) until the session has ended
                other.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)}, 60000)")
            else:
                cid = conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar()
                other.exec_driver_sql(f"KILL CONNECTION {int(cid)}")
    finally:
        admin.dispose()
    return cursor


def test_a_dropped_connection_is_invalidated_with_the_pools_older_ones(engine: Engine) -> None:
    seen = _listened(engine)
    with engine.connect() as older:  # back in the pool, older than the dropped one
        older_dbapi = older.connection.dbapi_connection  # kept: its id is not reused
    with engine.connect() as conn:
        cursor = _drop(engine, conn)
        try:
            cursor.execute("SELECT 1")
            cursor.fetchall()
        except engine.dialect.loaded_dbapi.Error as e:
            raised = e
        with pytest.raises(DBAPIError) as info:
            private.handle_dbapi_error(conn, raised, "SELECT 1", (), cursor)
        assert info.value.orig is raised and info.value.connection_invalidated
        assert conn.invalidated
        assert [c.is_disconnect for c in seen] == [True]
    with engine.connect() as fresh, engine.connect() as second:
        # the pool replaced its older connection too: neither is the one kept before
        for conn in (fresh, second):
            assert conn.connection.dbapi_connection is not older_dbapi
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1


@pytest.mark.parametrize("backend", PLACES)
def test_a_failed_connect_is_wrapped_and_listeners_run(backend: str) -> None:
    engine = create_engine(REFUSED[backend])
    seen = _listened(engine)
    try:
        try:
            engine.pool.connect()
        except engine.dialect.loaded_dbapi.Error as e:
            raised = e
        with pytest.raises(DBAPIError) as info:
            private.handle_connect_error(raised, engine)
        assert info.value.orig is raised
        assert [(c.original_exception, c.connection, c.engine) for c in seen] == [
            (raised, None, engine)
        ]
    finally:
        engine.dispose()


def test_a_listeners_own_error_is_raised_instead(tmp_path: Any) -> None:
    engine = create_engine(REFUSED["sqlite-file"])

    def mine(_context: Any) -> None:
        raise LookupError("the listener's")

    event.listen(engine, "handle_error", mine)
    try:
        engine.pool.connect()
    except engine.dialect.loaded_dbapi.Error as e:
        raised = e
    with pytest.raises(LookupError, match="the listener's"):
        private.handle_connect_error(raised, engine)
    other = create_engine(f"sqlite:///{tmp_path / 'other.sqlite'}")
    event.listen(other, "handle_error", mine)
    try:
        with other.connect() as conn:
            cursor = conn.connection.cursor()
            try:
                cursor.execute("SELECT * FROM nowhere")
            except other.dialect.loaded_dbapi.Error as e:
                raised = e
            with pytest.raises(LookupError, match="the listener's"):
                private.handle_dbapi_error(conn, raised, "SELECT * FROM nowhere", (), cursor)
    finally:
        other.dispose()


# -- a pool's settings ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", PLACES)
def test_pool_settings_are_create_engines_arguments(backend: str, tmp_path: Any) -> None:
    """Read without connecting: the engines are never used."""
    url = f"sqlite:///{tmp_path / 'x.sqlite'}" if backend == "sqlite-file" else REFUSED[backend]
    given = create_engine(
        url, pool_size=4, max_overflow=7, pool_pre_ping=True, pool_recycle=30
    ).pool
    default = create_engine(url).pool
    unlimited = create_engine(url, pool_size=0).pool
    assert isinstance(given, sqlalchemy.pool.QueuePool)
    assert private.pool_max_overflow(given) == 7 and given.size() == 4
    assert private.pool_pre_pings(given) is True
    assert private.pool_recycle(given) == 30
    assert private.pool_max_overflow(default) == 10  # type: ignore[arg-type]
    assert private.pool_pre_pings(default) is False
    assert private.pool_recycle(default) == -1
    assert private.pool_max_overflow(unlimited) == -1  # type: ignore[arg-type]


# -- listeners --------------------------------------------------------------------------------

ENGINE_EVENTS = ("commit", "begin", "before_cursor_execute", "engine_connect")
POOL_EVENTS = ("checkout", "checkin", "reset")


def _noop(*_args: Any, **_kwargs: Any) -> None:
    pass


def test_listener_collections_are_the_types_dispatch_holds() -> None:
    """Without a listener an engine's (or a pool's) event is an ``_EmptyListener``,
    with one of its own a ``_ListenerCollection``: the two the fast reading knows."""
    engine = create_engine("sqlite://")
    for target, name in ((engine, "commit"), (engine.pool, "checkout")):
        assert type(getattr(target.dispatch, name)) is sqlalchemy.event.attr._EmptyListener
        assert private._EMPTY is sqlalchemy.event.attr._EmptyListener
        event.listen(target, name, _noop)
        found = getattr(target.dispatch, name)
        assert type(found) is sqlalchemy.event.attr._ListenerCollection
        assert private._COLLECTION is sqlalchemy.event.attr._ListenerCollection
        assert list(found.listeners) == [_noop] and not found.parent_listeners
        event.remove(target, name, _noop)
    engine.dispose()


def _answers(dispatch: Any, names: tuple[str, ...]) -> tuple[bool, bool]:
    return private.has_listeners(dispatch, names), any(bool(getattr(dispatch, n)) for n in names)


def test_has_listeners_answers_as_bool_does() -> None:
    engine = create_engine("sqlite://")
    copy = engine.execution_options(x=1)  # a joined collection: bool() answers
    targets = {"engine": engine, "copy": copy, "pool": engine.pool}
    try:
        for where, target in targets.items():
            names = POOL_EVENTS if where == "pool" else ENGINE_EVENTS
            assert _answers(target.dispatch, names) == (False, False), where
        # on the engine (seen by its copy), on the Engine class, on the pool
        for where, target, name in (
            ("engine", engine, "commit"),
            ("class", Engine, "before_cursor_execute"),
            ("pool", engine.pool, "checkin"),
        ):
            event.listen(target, name, _noop)
            try:
                for seen_by, other in targets.items():
                    names = POOL_EVENTS if seen_by == "pool" else ENGINE_EVENTS
                    got, expected = _answers(other.dispatch, names)
                    assert got == expected, (where, seen_by)
                    # the engine's and the class's listeners are the engine's and its
                    # copy's, the pool's the pool's
                    assert got == ((where == "pool") == (seen_by == "pool")), (where, seen_by)
            finally:
                event.remove(target, name, _noop)
        assert _answers(engine.dispatch, ENGINE_EVENTS) == (False, False)
    finally:
        engine.dispose()


def test_listeners_are_tells_a_dialects_own_from_another() -> None:
    engine = create_engine("sqlite://")

    def own(*_args: Any) -> None:
        pass

    try:
        assert private.listeners_are(engine.dispatch, "begin", ())
        event.listen(engine, "begin", own)
        mine = tuple(engine.dispatch.begin)
        assert private.listeners_are(engine.dispatch, "begin", mine)
        event.listen(engine, "begin", _noop)
        assert not private.listeners_are(engine.dispatch, "begin", mine)
        event.remove(engine, "begin", _noop)
        assert private.listeners_are(engine.dispatch, "begin", mine)
        event.listen(Engine, "begin", _noop)
        try:
            assert not private.listeners_are(engine.dispatch, "begin", mine)
        finally:
            event.remove(Engine, "begin", _noop)
    finally:
        engine.dispose()


# -- engines, columns, MySQL ------------------------------------------------------------------


def test_base_engine_leads_from_copies_of_copies_to_the_engine() -> None:
    engine = create_engine("sqlite://")
    once = engine.execution_options(a=1)
    twice = once.execution_options(b=2)
    assert private.base_engine(engine) is engine
    assert private.base_engine(once) is engine
    assert private.base_engine(twice) is engine
    assert twice.pool is engine.pool  # why a copy must start from the engine


def test_a_copy_for_another_loop_of_a_twice_optioned_engine_keeps_its_pool() -> None:
    """``execution_options()`` on an ``execution_options()`` copy: the copy for another
    loop gets a pool of its own, the user's engine keeps its pool (before, the copy was
    made of the middle copy, whose pool setter replaced the user's engine's pool)."""
    parent = create_async_engine("sqlite+aiosqlite:///unused.db")
    given = parent.execution_options(isolation_level="SERIALIZABLE").execution_options(a=1)
    pool = parent.sync_engine.pool
    copied = _copy_engine(given)
    assert parent.sync_engine.pool is pool and given.sync_engine.pool is pool
    assert copied.sync_engine.pool is not pool
    options = copied.sync_engine.get_execution_options()
    assert options["isolation_level"] == "SERIALIZABLE" and options["a"] == 1


def test_copy_column_is_the_column_on_no_table() -> None:
    table = Table("t", MetaData(), Column("a", Integer, primary_key=True), Column("b", String(9)))
    a, b = (private.copy_column(c) for c in table.columns)
    assert (a.name, a.primary_key, a.nullable, a.table if a.table is not None else None) == (
        "a",
        True,
        False,
        None,
    )
    assert isinstance(b.type, String) and b.type.length == 9 and b.nullable
    copied = Table("t", MetaData(), a, b)
    assert [c.name for c in copied.primary_key] == ["a"]


def test_mysql_backslash_flag_default_without_a_connection() -> None:
    dialect = create_engine("mysql+pymysql://root@127.0.0.1:1/test").dialect
    assert private.backslash_escapes(dialect) is True


@pytest.mark.skipif("mariadb" not in BACKENDS, reason="mariadb not in LGSA_TEST_BACKENDS")
def test_mysql_compile_key_follows_the_servers_sql_mode(fresh_databases: Any) -> None:
    """A session with ``ANSI_QUOTES,NO_BACKSLASH_ESCAPES`` compiles other SQL (a LIKE's
    ``ESCAPE``, quoted names), and gets another compile key: the two read at first
    connect (the backslash flag through the private name, the quote through the
    identifier preparer)."""
    url = fresh_databases("mariadb")
    modes = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES,NO_BACKSLASH_ESCAPES')"
    plain, ansi = create_engine(url), create_engine(url, connect_args={"init_command": modes})
    table = Table("Mixed Case", MetaData(), Column("k", String(9)))
    stmt = select(table).where(table.c.k.like("a!%", escape="\\"))
    qb = query_builder("mariadb")
    try:
        for engine in (plain, ansi):
            with engine.connect():
                pass  # the dialect reads the server's settings
        assert private.backslash_escapes(plain.dialect) is True
        assert private.backslash_escapes(ansi.dialect) is False
        assert plain.dialect.identifier_preparer.initial_quote == "`"
        assert ansi.dialect.identifier_preparer.initial_quote == '"'
        sql = [str(stmt.compile(dialect=e.dialect)) for e in (plain, ansi)]
        assert "`Mixed Case`" in sql[0] and "ESCAPE '\\\\'" in sql[0]
        assert '"Mixed Case"' in sql[1] and "ESCAPE '\\'" in sql[1]
        assert qb.compile_key(plain.dialect) != qb.compile_key(ansi.dialect)
    finally:
        plain.dispose()
        ansi.dispose()


# -- public checks that replaced private ones -------------------------------------------------


@pytest.mark.parametrize(
    "how", ["off", "echo", "echo debug", "logger at INFO", "named logger at INFO", "copy"]
)
def test_the_loggers_answer_is_sqlalchemys_own(how: str) -> None:
    """``engine.logger.isEnabledFor(INFO)`` (the short door and the cursor executor)
    answers as SQLAlchemy's private check and a new ``Connection``'s echo flag do
    (``copy``: an ``execution_options()`` copy of an ``echo=True`` engine)."""
    kwargs: dict[str, Any] = {
        "echo": {"echo": True, "echo debug": "debug", "copy": True}.get(how, False),
        "logging_name": "lgsa_named" if how == "named logger at INFO" else None,
    }
    logger = {
        "logger at INFO": "sqlalchemy.engine",
        "named logger at INFO": "sqlalchemy.engine.Engine.lgsa_named",
    }.get(how)
    engine = create_engine("sqlite://", **kwargs)
    target = engine.execution_options(x=1) if how == "copy" else engine
    level = logging.getLogger(logger).level if logger else None
    try:
        if logger:
            logging.getLogger(logger).setLevel(logging.INFO)
        ours = target.logger.isEnabledFor(logging.INFO)
        assert ours == target._should_log_info()  # type: ignore[attr-defined]
        with target.connect() as conn:
            assert ours == conn._echo  # type: ignore[attr-defined]
        assert ours == (how != "off")
    finally:
        if logger:
            logging.getLogger(logger).setLevel(level or logging.NOTSET)
        engine.dispose()
