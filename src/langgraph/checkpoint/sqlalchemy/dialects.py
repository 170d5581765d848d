"""The query builder: the one module where the SQL dialects differ.

Everything that is not plain portable SQLAlchemy Core lives here, chosen by the
dialect's name: engine URLs (which sync and async driver serve a URL), connection set-up
(SQLite pragmas and transaction mode), upserts and first-write-wins inserts (the
dialects' own ``INSERT ... ON CONFLICT`` / ``ON DUPLICATE KEY`` constructs), JSON metadata
filters, bound-parameter limits and the lock that serialises migrations across processes.
Callers get a :class:`QueryBuilder` and never branch on the dialect themselves.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import sqlite3
import threading
import uuid
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    and_,
    bindparam,
    case,
    cast,
    event,
    exists,
    func,
    literal,
    literal_column,
    or_,
    select,
    tuple_,
)
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import URL, Dialect, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.schema import CreateSchema
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement

from .errors import (
    DatabaseURLError,
    DriverNotInstalledError,
    ThreadLockTimeout,
    UnsupportedDriverError,
)

__all__ = [
    "EngineURLs",
    "QueryBuilder",
    "UnsupportedDialectError",
    "ValueTooLargeError",
    "configure_engine",
    "resolve_urls",
]

#: Execution option that marks a transaction that will write. SQLite opens it with
#: ``BEGIN IMMEDIATE`` so that a read-then-write transaction never fails to upgrade its
#: lock; other dialects ignore it.
WRITE_OPTION = "lgsa_write"
#: Execution option: read without an explicit transaction on SQLite (no ``BEGIN``).
NO_TRANSACTION_OPTION = "lgsa_no_transaction"

_SYNC_DRIVERS = {
    "sqlite": ("pysqlite", "aiosqlite"),
    "postgresql": ("psycopg", "psycopg"),
    "mysql": ("pymysql", "asyncmy"),
    "mariadb": ("pymysql", "asyncmy"),
}

#: Drivers of each dialect that serve the sync methods, in order of preference: the first
#: installed one is the twin of an async-only URL (and serves a URL naming no driver).
_SYNC_CANDIDATES = {
    "sqlite": ("pysqlite",),
    "postgresql": ("psycopg", "psycopg2", "pg8000"),
    "mysql": ("pymysql", "mysqldb", "mariadbconnector", "mysqlconnector"),
}
#: Drivers that serve the async methods, likewise (``psycopg`` serves both sides).
_ASYNC_CANDIDATES = {
    "sqlite": ("aiosqlite",),
    "postgresql": ("psycopg", "asyncpg", "psycopg_async"),
    "mysql": ("asyncmy",),
}
#: The module each driver imports, and what to install when it is missing.
_DRIVER_MODULES = {
    "pysqlite": ("sqlite3", "a Python built with sqlite3"),
    "aiosqlite": ("aiosqlite", 'pip install "langgraph-checkpoint-sqlalchemy"'),
    "psycopg": ("psycopg", 'pip install "langgraph-checkpoint-sqlalchemy[postgres]"'),
    "psycopg_async": ("psycopg", 'pip install "langgraph-checkpoint-sqlalchemy[postgres]"'),
    "asyncpg": ("asyncpg", 'pip install "langgraph-checkpoint-sqlalchemy[asyncpg]"'),
    "psycopg2": ("psycopg2", 'pip install "langgraph-checkpoint-sqlalchemy[psycopg2]"'),
    "pg8000": ("pg8000", 'pip install "langgraph-checkpoint-sqlalchemy[pg8000]"'),
    "pymysql": ("pymysql", 'pip install "langgraph-checkpoint-sqlalchemy[mysql]"'),
    "asyncmy": ("asyncmy", 'pip install "langgraph-checkpoint-sqlalchemy[mysql]"'),
    "mysqldb": (
        "MySQLdb",
        "pip install mysqlclient (it builds against the MySQL/MariaDB client library), "
        'or use mysql+pymysql:// (pip install "langgraph-checkpoint-sqlalchemy[mysql]")',
    ),
    "mariadbconnector": (
        "mariadb",
        "pip install mariadb (it needs MariaDB Connector/C), or use mysql+pymysql:// "
        '(pip install "langgraph-checkpoint-sqlalchemy[mysql]")',
    ),
    "mysqlconnector": ("mysql.connector", "pip install mysql-connector-python"),
}
#: Drivers SQLAlchemy documents that the saver refuses, and why.
_REFUSED_DRIVERS = {
    "aiomysql": (
        "aiomysql fails on every binary parameter with PyMySQL >= 1.2 (TypeError: 'str' "
        "object is not callable), and the saver stores every value as bytes; use "
        'mysql+asyncmy:// (pip install "langgraph-checkpoint-sqlalchemy[mysql]")'
    ),
}
_EXTRAS = {
    "sqlite": 'pip install "langgraph-checkpoint-sqlalchemy"',
    "postgresql": 'pip install "langgraph-checkpoint-sqlalchemy[postgres]"',
    "mysql": 'pip install "langgraph-checkpoint-sqlalchemy[mysql]"',
}

#: The URL forms of a SQLite database, quoted by every refusal of one.
SQLITE_URL_FORMS = (
    "valid forms: sqlite:///relative.db (three slashes: a path relative to the working "
    "directory), sqlite:////abs/path.db (four: an absolute path), a bare file path, or "
    ":memory: (also sqlite:// and sqlite:///:memory:) for an in-memory database"
)


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except (ImportError, OSError):
        return False
    return True


class ValueTooLargeError(ValueError):
    """A value (channel value or pending write) larger than the database accepts in one
    statement. Nothing of the call that raised it was stored; the message names the
    server setting to raise."""


class UnsupportedDialectError(DatabaseURLError):
    """Raised for a database URL whose dialect the query builder does not know.

    Supported: ``sqlite``, ``postgresql`` (``postgres``) and ``mysql``/``mariadb``.
    """


@dataclass(frozen=True)
class EngineURLs:
    """The pair of URLs a saver builds its engines from.

    Attributes:
        sync: URL of the sync engine (``sqlite+pysqlite``, ``postgresql+psycopg``, ...).
        async_: URL of the async engine (``sqlite+aiosqlite``, ``postgresql+psycopg``, ...).
        memory: For SQLite ``:memory:``, the URI of the shared in-memory database that both
            engines open (SQLite's ``memdb`` VFS); the saver keeps one connection to it open
            so that the database lives as long as the saver. ``None`` otherwise.
        async_missing: Why no async driver is installed for the URL, or None. Sync-only
            users (the command line, Alembic) go on; the saver raises it
            (:meth:`require_async`).
    """

    sync: URL
    async_: URL
    memory: str | None = None
    async_missing: str | None = None

    def require_async(self) -> None:
        """Raise :class:`DriverNotInstalledError` if no async driver is installed."""
        if self.async_missing is not None:
            raise DriverNotInstalledError(self.async_missing)


#: Start of the names of the saver's shared in-memory databases (see _memory_urls).
_MEMDB_PREFIX = "file:/lgsa-"


def _memory_urls() -> EngineURLs:
    # One named in-memory database per saver, shared by every connection of the process
    # that names it (memdb VFS, SQLite >= 3.36), with ordinary locking, unlike
    # ``cache=shared``.
    name = f"{_MEMDB_PREFIX}{uuid.uuid4().hex}?vfs=memdb"
    sync_url = make_url(f"sqlite+pysqlite:///{name}&uri=true")
    return EngineURLs(sync_url, sync_url.set(drivername="sqlite+aiosqlite"), name)


def resolve_urls(url_or_path: str | URL) -> EngineURLs:
    """Map a database URL or a SQLite file path to a sync and an async engine URL.

    SQLite: ``sqlite:///relative.db``, ``sqlite:////abs/path.db`` and a bare path give
    ``sqlite+pysqlite`` and ``sqlite+aiosqlite`` on that file; ``:memory:``, ``sqlite://``
    and ``sqlite:///:memory:`` (SQLAlchemy's own spellings of an in-memory database) give
    one in-memory database shared by both engines. PostgreSQL: ``postgresql://`` and
    ``postgres://`` give psycopg 3 for both sides; MySQL/MariaDB: ``mysql://`` and
    ``mariadb://`` give PyMySQL and asyncmy. A URL naming a driver keeps it for the side(s)
    it serves; the other side takes the first installed driver of the dialect
    (:data:`_SYNC_CANDIDATES`, :data:`_ASYNC_CANDIDATES`).

    Args:
        url_or_path: A SQLAlchemy URL (string or ``URL``) or a SQLite file path.

    Returns:
        The URLs of both engines.

    Raises:
        DatabaseURLError: A URL SQLAlchemy would refuse or read otherwise than it looks:
            ``sqlite://relative.db`` (a host on SQLite), ``sqlite:///`` or ``""`` (no
            path), ``sqlite:relative.db`` (no ``//``), an unparsable URL. The message lists
            the valid forms.
        UnsupportedDialectError: The URL's dialect is none of sqlite, postgresql, mysql,
            mariadb.
        UnsupportedDriverError: A driver the saver does not know or refuses (aiomysql).
        DriverNotInstalledError: The driver named, or any sync driver, is not installed;
            the message names the extra to install. A missing async driver is reported in
            :attr:`EngineURLs.async_missing` instead (the command line needs none).
    """
    if not isinstance(url_or_path, (str, URL)):
        raise DatabaseURLError(
            f"a database URL must be a str or a sqlalchemy URL, got "
            f"{type(url_or_path).__name__}; {SQLITE_URL_FORMS}"
        )
    if isinstance(url_or_path, str):
        text = url_or_path.strip()
        if text == ":memory:":
            return _memory_urls()
        if not text:
            raise DatabaseURLError(f"empty database URL; {SQLITE_URL_FORMS}")
        if "://" not in text:
            if _SCHEME_WITHOUT_SLASHES.match(text):
                raise DatabaseURLError(
                    f"{text!r} looks like a URL without '//' after its scheme; "
                    f"{SQLITE_URL_FORMS} (PostgreSQL: postgresql://user@host/db)"
                )
            path = _sqlite_file(os.path.abspath(os.path.expanduser(text)))
            url = URL.create("sqlite+pysqlite", database=path)
            return EngineURLs(url, url.set(drivername="sqlite+aiosqlite"))
        if text.startswith("postgres://"):
            text = "postgresql://" + text[len("postgres://") :]
        try:
            url = make_url(text)
        except ArgumentError as e:
            raise DatabaseURLError(
                f"cannot parse the database URL: {e}; {SQLITE_URL_FORMS}"
            ) from None
    else:
        url = url_or_path
    backend, _, driver = url.drivername.partition("+")
    if backend not in _SYNC_DRIVERS:
        raise UnsupportedDialectError(
            f"Unsupported database URL scheme {url.drivername!r}: use sqlite://, "
            "postgresql:// or mysql:// (mariadb://)."
        )
    if backend == "sqlite":
        if url.host or url.port or url.username or url.password:
            # SQLAlchemy's pysqlite refuses these at connect; the part after '//' is a host
            where = url.render_as_string(hide_password=True)
            raise DatabaseURLError(
                f"{where!r} is not a SQLite URL: the text after 'sqlite://' is read as a "
                f"host, not a file (SQLAlchemy refuses it); {SQLITE_URL_FORMS}"
            )
        if url.database == "":
            raise DatabaseURLError(
                f"'sqlite:///' names no file (SQLAlchemy would open an in-memory database "
                f"and lose it at exit); {SQLITE_URL_FORMS}"
            )
        if url.database in (None, ":memory:"):
            return _memory_urls()
        if not url.query.get("uri") and not url.database.startswith("file:"):
            _sqlite_file(url.database)
    family = "mysql" if backend == "mariadb" else backend
    sync_driver, async_driver, async_missing = _pick_drivers(family, driver, url.drivername)
    if family == "mysql" and "charset" not in url.query:
        # 4-byte UTF-8 (emoji) in ids and metadata; the tables are utf8mb4 too.
        url = url.update_query_dict({"charset": "utf8mb4"})
    return EngineURLs(
        url.set(drivername=f"{backend}+{sync_driver}"),
        url.set(drivername=f"{backend}+{async_driver}"),
        async_missing=async_missing,
    )


def _sqlite_file(path: str) -> str:
    """``path`` unless it is a directory (SQLite would fail at the first connection with
    "unable to open database file"). A missing directory is not refused: it may be made
    before the first connection.

    Raises:
        DatabaseURLError: ``path`` is a directory.
    """
    full = os.path.abspath(path)
    if os.path.isdir(full):
        raise DatabaseURLError(
            f"{full} is a directory, not a SQLite database file; name a file in it, e.g. "
            f"sqlite:///{os.path.join(full, 'checkpoints.sqlite')}"
        )
    return path


#: ``scheme:rest`` with no ``//``: a mistyped URL, not a file name (a Windows drive
#: letter has a one-letter scheme).
_SCHEME_WITHOUT_SLASHES = re.compile(r"^(sqlite|postgres|postgresql|mysql|mariadb)(\+\w+)?:")


def _pick_drivers(family: str, driver: str, drivername: str) -> tuple[str, str, str | None]:
    """``(sync driver, async driver, why the async one is missing or None)`` for a URL of
    ``family`` naming ``driver`` (or none): the named driver serves the side(s) it can,
    the first installed candidate the other side."""
    if driver in _REFUSED_DRIVERS:
        raise UnsupportedDriverError(
            f"{drivername}:// is not supported: {_REFUSED_DRIVERS[driver]}"
        )
    sync_ok, async_ok = _SYNC_CANDIDATES[family], _ASYNC_CANDIDATES[family]
    if driver and driver not in sync_ok and driver not in async_ok:
        raise UnsupportedDriverError(
            f"{drivername}:// names a driver this saver does not support; use one of "
            + ", ".join(f"{family}+{d}" for d in dict.fromkeys(sync_ok + async_ok))
        )
    if driver:
        module, fix = _DRIVER_MODULES[driver]
        if not _importable(module):
            raise DriverNotInstalledError(
                f"{drivername}:// needs the {module!r} module, which is not installed: {fix}"
            )
    sync_driver = driver if driver in sync_ok else _first_installed(sync_ok)
    async_driver = driver if driver in async_ok else _first_installed(async_ok)

    def missing(side: str, names: Sequence[str]) -> str:
        named = (
            f"{drivername}:// serves only one side; the {side} methods need"
            if driver
            else f"{drivername}:// needs"
        )
        return (
            f"{named} a {side} {family} driver ({', '.join(names)}) and none is "
            f"installed: {_EXTRAS[family]}"
        )

    if sync_driver is None:
        raise DriverNotInstalledError(missing("sync", sync_ok))
    if async_driver is None:
        return sync_driver, async_ok[0], missing("async", async_ok)
    return sync_driver, async_driver, None


def _first_installed(drivers: Sequence[str]) -> str | None:
    return next((d for d in drivers if _importable(_DRIVER_MODULES[d][0])), None)


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's "begin" event below emit BEGIN itself (the driver's own implicit
    # transactions skip DDL and SELECT); see SQLAlchemy's "Serializable isolation /
    # Savepoints / Transactional DDL" recipe for pysqlite and aiosqlite.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA busy_timeout = 30000")
        # WAL: readers never block the writer. synchronous=NORMAL in WAL mode cannot
        # corrupt the database and keeps every committed transaction across a process
        # crash; only an OS crash or power loss may undo the last commits.
        cursor.execute("PRAGMA journal_mode")
        (mode,) = cursor.fetchone()
        if str(mode).lower() not in ("memory", "wal"):
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()


def _sqlite_on_begin(connection: Connection) -> None:
    options = connection.get_execution_options()
    if options.get(NO_TRANSACTION_OPTION):
        return  # one-statement read: pysqlite runs it in autocommit mode
    write = options.get(WRITE_OPTION, False)
    # Straight to the driver: this runs before every transaction, and going through
    # exec_driver_sql costs a full SQLAlchemy execution each time.
    cursor = connection.connection.cursor()
    try:
        cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    finally:
        cursor.close()


#: Recursion allowed to a recursive CTE on MySQL/MariaDB, whose defaults (1,000) are
#: shorter than the delta-history walk's own cap (see ``_history.MAX_CHAIN``).
MYSQL_RECURSION_LIMIT = 100_001


def _mysql_on_connect(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("SELECT VERSION()")
        (version,) = cursor.fetchone()
        # MariaDB stops a recursive CTE silently at max_recursive_iterations; MySQL
        # raises at cte_max_recursion_depth.
        variable = (
            "max_recursive_iterations"
            if "mariadb" in str(version).lower()
            else "cte_max_recursion_depth"
        )
        cursor.execute(f"SET SESSION {variable} = {MYSQL_RECURSION_LIMIT:d}")
    finally:
        cursor.close()


def configure_engine(engine: Engine) -> None:
    """Install the per-dialect connection set-up on a sync engine (idempotent).

    On SQLite: ``busy_timeout`` of 30 s, WAL journal (file databases), ``synchronous =
    NORMAL``, and explicit ``BEGIN`` (``BEGIN IMMEDIATE`` for writes) so that every
    transaction, DDL included, is a real SQLite transaction. On MySQL/MariaDB: a
    recursive-CTE limit (:data:`MYSQL_RECURSION_LIMIT`) that lets long parent chains be
    walked. PostgreSQL needs nothing. For an ``AsyncEngine`` pass its ``sync_engine``.

    Args:
        engine: The engine to configure.
    """
    if engine.dialect.name in ("mysql", "mariadb"):
        if not event.contains(engine, "connect", _mysql_on_connect):
            event.listen(engine, "connect", _mysql_on_connect)
        return
    if engine.dialect.name != "sqlite":
        return
    if not event.contains(engine, "connect", _sqlite_on_connect):
        event.listen(engine, "connect", _sqlite_on_connect)
    if not event.contains(engine, "begin", _sqlite_on_begin):
        event.listen(engine, "begin", _sqlite_on_begin)


def canonical_json(value: Any) -> Any:
    """Check that ``value`` is JSON and return the copy that is stored or compared.

    The rules applied to metadata and metadata filters on every dialect: NUL characters
    are removed from every string, keys included (LangGraph already strips them from
    top-level strings; PostgreSQL's JSONB cannot hold them at all); integers must fit in
    a signed 64 bits; strings must be valid Unicode (no lone surrogates). Tuples become
    lists.

    Raises:
        TypeError: A key is not a string, or a value is not JSON (str, int, float, bool,
            None, list, tuple, dict).
        ValueError: A float is NaN or infinite, an integer needs more than 64 bits, or a
            string holds a lone surrogate.
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, got {type(k).__name__}")
            out[_json_string(k)] = canonical_json(v)
        return out
    if isinstance(value, (list, tuple)):
        return [canonical_json(v) for v in value]
    if isinstance(value, str):
        return _json_string(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(
                f"{value} does not fit a signed 64-bit integer, the largest JSON integer "
                "every supported database stores exactly; store it as a string"
            )
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} is not a JSON number")
        return value
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _json_string(text: str) -> str:
    text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{text[:40]!r} is not valid Unicode ({e.reason})") from None
    return text


def _json_text(value: Any) -> str:
    return json.dumps(canonical_json(value), allow_nan=False)


def _mysql_path(key: str) -> str:
    """MySQL/MariaDB JSON path of a top-level key: ``$."key"``, the key spelled as a JSON
    string (``json.dumps``), which is how the stored document spells it: MariaDB matches
    path keys against the document's text, escapes included."""
    return "$." + json.dumps(key)


def _json_kind(json_type: Any) -> ColumnElement[Any]:
    return case((json_type.in_(("integer", "real")), "number"), else_=json_type)


def _tree_within(left: Any, right: Any) -> ColumnElement[bool]:
    """SQLite: every node of json_tree ``left`` has a twin (same path, kind and atom) in
    json_tree ``right``."""
    a = left.table_valued("fullkey", "type", "atom").alias()
    b = right.table_valued("fullkey", "type", "atom").alias()
    twin = (
        select(literal(1))
        .select_from(b)
        .where(
            b.c.fullkey == a.c.fullkey,
            _json_kind(b.c.type) == _json_kind(a.c.type),
            b.c.atom.is_not_distinct_from(a.c.atom),
        )
    )
    return ~exists(select(literal(1)).select_from(a).where(~exists(twin)))


class QueryBuilder:
    """Builds the dialect-specific statements of the saver.

    One instance per saver, made from the dialect name of its engines. Every statement
    it returns is a SQLAlchemy construct with bound parameters, so SQLAlchemy's compiled
    statement cache serves repeated calls.

    Args:
        dialect_name: ``engine.dialect.name``: ``sqlite``, ``postgresql``, ``mysql`` or
            ``mariadb``.

    Raises:
        UnsupportedDialectError: Any other dialect.
    """

    def __init__(self, dialect_name: str) -> None:
        if dialect_name not in _SYNC_DRIVERS:
            raise UnsupportedDialectError(
                f"Unsupported dialect {dialect_name!r}: sqlite, postgresql, mysql and "
                "mariadb are supported."
            )
        self.dialect_name = dialect_name
        self._mysql = dialect_name in ("mysql", "mariadb")
        self._value_limit: int | None = None

    @property
    def one_statement_read_options(self) -> dict[str, Any]:
        """Execution options of a read that is one statement (``get_tuple``): no
        transaction around it, which saves two driver calls (``BEGIN``, ``ROLLBACK``) on
        SQLite and two round trips on PostgreSQL. A single statement reads one snapshot
        on every database. MySQL/MariaDB keep their transaction: switching PyMySQL to
        autocommit and back costs two round trips itself.
        """
        if self.dialect_name == "postgresql":
            return {"isolation_level": "AUTOCOMMIT"}
        if self.dialect_name == "sqlite":
            return {NO_TRANSACTION_OPTION: True}
        return {}

    @property
    def one_statement_write_options(self) -> dict[str, Any]:
        """Execution options of a write that is one statement (a put whose values are all
        in the checkpoint row, a put_writes of one batch): a statement is atomic on its
        own, so no ``BEGIN``/``COMMIT`` around it: two driver calls fewer on SQLite, two
        round trips fewer on PostgreSQL. MySQL/MariaDB keep their transaction (see
        :attr:`one_statement_read_options`).
        """
        return self.one_statement_read_options

    @property
    def async_in_thread(self) -> bool:
        """Whether the async methods run the operation on the sync engine in a worker
        thread (``asyncio.to_thread``) instead of on the async engine.

        True on SQLite: its async driver, aiosqlite, runs every statement in a thread of
        its own and hops back to the event loop after each, so an operation of four
        statements (BEGIN, two statements, COMMIT) costs eight hops; one worker thread for
        the whole operation costs two. The database work is the same sync function either
        way. False elsewhere: psycopg and asyncmy speak the protocol on the event loop.
        """
        return self.dialect_name == "sqlite"

    @property
    def row_chunk(self) -> int:
        """Ids put in one ``IN`` list, and rows handled by one batched maintenance
        statement (prune, ``delete_for_runs``, ``list_threads``, delta-channel history):
        500, well under SQLite's 32,766 bound parameters and PostgreSQL's parser stack."""
        return 500

    # Keys put in one ``(a, b, ...) IN (...)`` list. PostgreSQL parses a long IN list
    # recursively and stops at ``max_stack_depth`` (2 MB: between 7,000 and 8,000 pairs);
    # SQLite caps bound parameters at 32,766. Reads split longer lists into chunks.
    @property
    def in_list_chunk(self) -> int:
        """Keys put in one :meth:`keys_in` condition (see the comment above)."""
        return 200 if self.dialect_name == "sqlite" else 500

    def keys_in(self, columns: Sequence[Any], count: int) -> ColumnElement[bool]:
        """Condition: ``columns`` equal one of ``count`` keys (composite primary-key
        lookups), with bound parameters filled by :meth:`keys_params`.

        ``(a, b) IN (SELECT * FROM unnest(?, ?))`` with one array a column on
        PostgreSQL (planning a long row-value IN list costs it more than running it);
        ``(a, b) IN ((?, ?), ...)`` (one expanding parameter) on MySQL. SQLite turns a
        row-value IN list into a scan of the whole table, so there it is ``(a = ? AND
        b = ?) OR ...``, which SQLite runs as one index lookup a key (MULTI-INDEX OR). At
        most :attr:`in_list_chunk` keys: SQLite caps expression depth at 1,000. Build it
        once per ``count`` and reuse it: the compiled statement is then cached.
        """
        if self.dialect_name == "sqlite":
            return or_(
                *(
                    and_(*(c == bindparam(f"k{i}_{j}") for j, c in enumerate(columns)))
                    for i in range(count)
                )
            )
        if self.dialect_name == "postgresql":
            # One array a column, unnested into rows: planning a long row-value IN list
            # costs PostgreSQL ~130 ms for 500 keys, the unnest ~6 ms all told.
            names = [f"k{j}" for j in range(len(columns))]
            rows = (
                func.unnest(*(bindparam(n, type_=postgresql.ARRAY(Text)) for n in names))
                .table_valued(*names)
                .render_derived(name="lgsa_keys")
            )
            return tuple_(*columns).in_(select(*(rows.c[n] for n in names)))
        return tuple_(*columns).in_(bindparam("keys", expanding=True))

    def keys_params(self, keys: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """The bound parameters of a :meth:`keys_in` condition for ``keys``."""
        if self.dialect_name == "sqlite":
            return {f"k{i}_{j}": v for i, key in enumerate(keys) for j, v in enumerate(key)}
        if self.dialect_name == "postgresql":
            width = len(keys[0]) if keys else 0
            return {f"k{j}": [key[j] for key in keys] for j in range(width)}
        return {"keys": [tuple(k) for k in keys]}

    def _insert(self, table: Table) -> Any:
        if self.dialect_name == "sqlite":
            return sqlite.insert(table)
        if self.dialect_name == "postgresql":
            return postgresql.insert(table)
        return mysql.insert(table)

    def insert_ignore(self, table: Table) -> Insert:
        """``INSERT`` that keeps the existing row when the primary key is taken.

        SQLite/PostgreSQL: ``ON CONFLICT DO NOTHING``; MySQL/MariaDB: ``ON DUPLICATE KEY
        UPDATE`` of a key column to itself (``INSERT IGNORE`` would also hide truncation).
        Use with a list of parameter dicts (executemany).
        """
        stmt = self._insert(table)
        if self._mysql:
            first = table.primary_key.columns.values()[0]
            return stmt.on_duplicate_key_update({first.name: stmt.inserted[first.name]})  # type: ignore[no-any-return]
        return stmt.on_conflict_do_nothing()  # type: ignore[no-any-return]

    def upsert(self, table: Table, update: Sequence[str]) -> Insert:
        """``INSERT`` that overwrites the ``update`` columns when the primary key is taken.

        SQLite/PostgreSQL: ``ON CONFLICT (pk) DO UPDATE SET col = excluded.col``;
        MySQL/MariaDB: ``ON DUPLICATE KEY UPDATE col = VALUES(col)``.
        """
        stmt = self._insert(table)
        if self._mysql:
            return stmt.on_duplicate_key_update({c: stmt.inserted[c] for c in update})  # type: ignore[no-any-return]
        return stmt.on_conflict_do_update(  # type: ignore[no-any-return]
            index_elements=list(table.primary_key.columns),
            set_={c: stmt.excluded[c] for c in update},
        )

    def check_filter(self, key: object, value: Any) -> tuple[str, str]:
        """Check one metadata filter item; return its key (NUL removed) and value as JSON text.

        Raises:
            TypeError: ``key`` is not a string or ``value`` is not JSON.
            ValueError: ``value`` holds NaN, an infinite float or a 64-bit overflow, or
                (MySQL/MariaDB) ``key`` starts with "-".
        """
        if not isinstance(key, str):
            raise TypeError(f"metadata filter keys must be strings, got {type(key).__name__}")
        key = _json_string(key)
        text = _json_text(value)
        if self._mysql and key.startswith("-"):
            # MariaDB's path parser reads a quoted key that starts with "-" as a
            # negative array index and matches nothing: refuse rather than answer wrong.
            raise ValueError(
                "MySQL/MariaDB JSON paths cannot address a key that starts with '-'; "
                "rename the metadata key"
            )
        return key, text

    def metadata_equals(
        self, column: Any, key: str, value: Any, dialect: Dialect | None = None
    ) -> ColumnElement[bool]:
        """Condition: the top-level metadata ``key`` equals the JSON value ``value``.

        One semantics on every dialect: the value is compared as JSON, so ``True`` does not
        match ``1``, ``None`` matches an explicit JSON ``null`` only (not a missing key),
        dicts match regardless of key order, lists element by element, and numbers as
        numbers (``1`` matches ``1.0``, at any depth). NUL characters are removed from the
        key and the value, as from stored metadata (:func:`canonical_json`). Key and
        value are bound parameters; no SQL text is built from them.

        * SQLite: ``EXISTS (SELECT 1 FROM json_each(metadata) WHERE key = ? AND ...)``
          comparing atoms, or ``json_tree`` node sets for dicts and lists (``json_each``
          takes any key, where a SQLite JSON path cannot quote every character).
        * PostgreSQL: ``metadata -> ? = CAST(? AS JSONB)`` (JSONB equality).
        * MySQL/MariaDB: ``JSON_EXTRACT`` with a quoted path, compared with
          ``JSON_EQUALS`` (MariaDB) or as JSON (MySQL).

        Args:
            column: The JSON metadata column.
            key: Top-level key.
            value: JSON value: str, int, float, bool, None, list or dict.
            dialect: The dialect of the connection that runs the query. A ``mysql://`` URL
                may reach a MariaDB server, which SQLAlchemy learns on connecting; MariaDB
                and MySQL compare JSON differently.

        Raises:
            TypeError: ``key`` is not a string or ``value`` is not JSON.
            ValueError: ``value`` holds NaN, an infinite float or a 64-bit overflow.
        """
        key, text = self.check_filter(key, value)
        if self.dialect_name == "sqlite":
            return self._sqlite_equals(column, key, value, text)
        if self.dialect_name == "postgresql":
            member: ColumnElement[Any] = column.op("->")(literal(key, Text))
            return member == cast(literal(text, Text), postgresql.JSONB)
        extracted = func.json_extract(column, literal(_mysql_path(key), Text))
        if self.dialect_name == "mariadb" or getattr(dialect, "is_mariadb", False):
            return func.json_equals(extracted, literal(text, Text)) == 1
        return extracted == cast(literal(text, Text), mysql.JSON)

    @staticmethod
    def _sqlite_equals(column: Any, key: str, value: Any, text: str) -> ColumnElement[bool]:
        # The filter value is handed to SQLite as JSON text and parsed by SQLite like the
        # stored metadata, so both sides hold the same SQL values (a 2**70 integer is a
        # REAL on both). Scalars: same kind (INTEGER and REAL are one: JSON numbers) and
        # equal atoms. Dicts and lists: the two json_tree() row sets of (path, kind,
        # atom) are equal: key order free, list order kept, 1 == 1.0 at any depth.
        doc = literal(text, Text)
        member = func.json_each(column).table_valued("key", "value", "type", "atom").alias()
        if not isinstance(value, (Mapping, list, tuple)):
            same: ColumnElement[bool] = and_(
                _json_kind(member.c.type) == _json_kind(func.json_type(doc)),
                member.c.atom.is_not_distinct_from(func.json_extract(doc, "$")),
            )
        else:
            same = and_(
                member.c.type == ("object" if isinstance(value, Mapping) else "array"),
                _tree_within(func.json_tree(member.c.value), func.json_tree(doc)),
                _tree_within(func.json_tree(doc), func.json_tree(member.c.value)),
            )
        return exists(select(literal(1)).select_from(member).where(member.c.key == key, same))

    def json_has_key(self, column: Any, key: str) -> ColumnElement[bool]:
        """Condition: the JSON object in ``column`` has the top-level key ``key``.

        SQLite: ``EXISTS (SELECT 1 FROM json_each(column) WHERE key = ?)``; PostgreSQL:
        the JSONB ``?`` operator; MySQL/MariaDB: ``JSON_CONTAINS_PATH`` with a quoted path.
        The key is a bound parameter.
        """
        if self.dialect_name == "sqlite":
            member = func.json_each(column).table_valued("key").alias()
            return exists(select(literal(1)).select_from(member).where(member.c.key == key))
        if self.dialect_name == "postgresql":
            has: ColumnElement[bool] = column.op("?", return_type=Boolean)(literal(key, Text))
            return has
        return func.json_contains_path(column, "one", literal(_mysql_path(key), Text)) == 1

    def value_limit(self, connection: Connection) -> int | None:
        """Largest value (bytes) one statement may carry on this server, or None.

        MySQL/MariaDB: half of ``max_allowed_packet`` (read once per saver): the statement
        travels as escaped text in one packet, and MariaDB 10.11 was measured refusing a
        40 MB value under a 64 MB limit while taking 30 MB. PostgreSQL (1 GB per value)
        and SQLite (1 GB per string or blob by default) need no check here.
        """
        if not self._mysql:
            return None
        if self._value_limit is None:
            packet = connection.execute(select(literal_column("@@max_allowed_packet"))).scalar()
            self._value_limit = int(packet or 0) // 2
        return self._value_limit

    def too_large(self, size: int, limit: int) -> ValueTooLargeError:
        """The error for a value of ``size`` bytes over ``limit`` (see :meth:`value_limit`)."""
        return ValueTooLargeError(
            f"a checkpoint value or write of {size} bytes is larger than this MySQL/MariaDB "
            f"server takes in one statement ({limit} bytes, half of max_allowed_packet); "
            "raise max_allowed_packet (SET GLOBAL max_allowed_packet = 1073741824, or in "
            "the server's config) or store less in the channel. Nothing of this call was "
            "stored."
        )

    def translate_error(self, error: DBAPIError) -> Exception | None:
        """A typed error for a database error that has a known cause and remedy, or None.

        MySQL/MariaDB refuse a statement larger than ``max_allowed_packet`` (error 1153,
        or 1301 for a value over it): :class:`ValueTooLargeError` names the setting. The
        transaction was rolled back, so nothing of the call is stored.
        """
        code = getattr(error.orig, "args", (None,))[0] if error.orig is not None else None
        if self._mysql and code in (1153, 1301):
            return ValueTooLargeError(
                "a checkpoint value or write is larger than the server accepts in one "
                "statement (MySQL/MariaDB max_allowed_packet); raise the limit, e.g. "
                "SET GLOBAL max_allowed_packet = 268435456 (or in the server's config), or "
                "store less in the channel. Nothing of this call was stored."
            )
        return None

    @property
    def transactional_ddl(self) -> bool:
        """Whether DDL runs inside the migration transaction (not on MySQL/MariaDB, where
        each DDL statement commits; their migrations are written to be re-runnable)."""
        return not self._mysql

    def ensure_schema(self, connection: Connection, schema: str | None) -> None:
        """Create the schema ``schema`` if it does not exist: a PostgreSQL schema, a
        MySQL/MariaDB database. No-op on SQLite (no schemas to create) or when ``schema``
        is None."""
        if schema and self.dialect_name != "sqlite":
            connection.execute(CreateSchema(schema, if_not_exists=True))

    def primary_key_name(self, name: str) -> str | None:
        """The name to give a primary key constraint in DDL: ``name``, or None on
        MySQL/MariaDB, which call every primary key ``PRIMARY`` and answer any other
        name with warning 1280 ("Name ... ignored for PRIMARY key")."""
        return None if self._mysql else name

    def ensure_version_table(self, connection: Connection, name: str, schema: str | None) -> None:
        """Create Alembic's version table ahead of Alembic where Alembic's own DDL would
        draw a warning: on MySQL/MariaDB, the same table (``version_num VARCHAR(32)``,
        its primary key) with the key left unnamed (see :meth:`primary_key_name`).
        Alembic finds it and uses it. No-op elsewhere or when the table exists."""
        if not self._mysql:
            return
        Table(
            name,
            MetaData(),
            Column("version_num", String(32), nullable=False),
            PrimaryKeyConstraint("version_num", name=self.primary_key_name(f"{name}_pkc")),
            schema=schema,
        ).create(connection, checkfirst=True)

    @contextmanager
    def migration_lock(self, connection: Connection) -> Iterator[None]:
        """Serialise schema migrations across processes, within the open transaction.

        PostgreSQL: ``pg_advisory_xact_lock`` (released at commit or rollback); MySQL and
        MariaDB: ``GET_LOCK``, released on exit after committing the migration's work;
        SQLite: the migration transaction is begun with ``BEGIN IMMEDIATE`` (see
        :data:`WRITE_OPTION`), which already excludes other writers.

        Args:
            connection: A connection inside the migration transaction.

        Raises:
            TimeoutError: MySQL/MariaDB did not grant the lock within 300 s.
        """
        if self.dialect_name == "postgresql":
            connection.execute(select(func.pg_advisory_xact_lock(_MIGRATION_LOCK_KEY)))
            yield
        elif self._mysql:
            got = connection.execute(select(func.get_lock("lgsa_migrations", 300))).scalar()
            if got != 1:
                raise TimeoutError("could not take the lgsa_migrations lock within 300 s")
            try:
                yield
                # Commit the version row BEFORE the lock goes: the next process must see
                # it (InnoDB would show it the old snapshot, and its own insert of the
                # same row would then collide). MySQL DDL has committed the rest already.
                connection.exec_driver_sql("COMMIT")
            finally:
                connection.execute(select(func.release_lock("lgsa_migrations")))
        else:
            yield

    def rows_before(self, columns: Sequence[Any], values: Sequence[Any]) -> ColumnElement[bool]:
        """Condition: ``columns`` sort strictly before ``values`` (keyset pagination of
        ``list()``, newest first).

        A row-value comparison ``(a, b, c) < (?, ?, ?)`` on SQLite and PostgreSQL, which
        both turn it into a range scan of the index on those columns. MariaDB 10.11 does
        not (``EXPLAIN``: a scan of the whole table and a filesort for every page), so
        there it is spelled out, ``a <= ? AND (a < ? OR (a = ? AND (b < ? OR (b = ? AND
        c < ?))))``, whose ``a <= ?`` is a range on the index, read backwards.
        """
        if not self._mysql:
            return tuple_(*columns) < tuple_(*values)
        condition: ColumnElement[bool] = columns[-1] < values[-1]
        for column, value in zip(reversed(columns[:-1]), reversed(values[:-1]), strict=True):
            condition = or_(column < value, and_(column == value, condition))
        return and_(columns[0] <= values[0], condition)

    # -- per-thread locks ----------------------------------------------------------------

    @contextmanager
    def write_lock(
        self, connection: Connection, thread_id: str, checkpoint_ns: str
    ) -> Iterator[None]:
        """Serialise the writers of one ``(thread_id, checkpoint_ns)`` until the open
        transaction ends (the conflict check of ``detect_conflicts``).

        PostgreSQL: ``pg_advisory_xact_lock`` on a 64-bit hash of the key, released at
        commit; MySQL/MariaDB: ``GET_LOCK`` on a name made of the hash, held until the
        block's work is committed; SQLite: nothing more, as the write transaction began
        with ``BEGIN IMMEDIATE``, SQLite's database-wide write lock.

        Raises:
            ThreadLockTimeout: MySQL/MariaDB did not grant the lock within 30 s.
        """
        key = f"{thread_id}\x00{checkpoint_ns}"
        if self.dialect_name == "postgresql":
            connection.execute(select(func.pg_advisory_xact_lock(_lock_key("put", key))))
            yield
        elif self._mysql:
            name = _lock_name("put", key)
            got = connection.execute(select(func.get_lock(name, 30))).scalar()
            if got != 1:
                raise ThreadLockTimeout(f"thread {thread_id!r} stayed locked for 30 s")
            try:
                yield
                connection.exec_driver_sql("COMMIT")  # before the lock goes, as migrations
            finally:
                connection.execute(select(func.release_lock(name)))
        else:
            yield

    @property
    def thread_lock_uses_connection(self) -> bool:
        """Whether :meth:`try_thread_lock` needs a database connection, kept for as long
        as the lock is held (PostgreSQL, MySQL/MariaDB: locks of a session); SQLite's
        lock lives in a lock database of its own."""
        return self.dialect_name != "sqlite"

    def try_thread_lock(self, connection: Connection | None, url: URL, thread_id: str) -> Any:
        """Try once to take the cross-process lock of ``thread_id`` (``lock_thread``).

        PostgreSQL: session-level ``pg_try_advisory_lock``; MySQL/MariaDB: ``GET_LOCK``
        with no wait; SQLite: ``BEGIN EXCLUSIVE`` on a lock database of its own beside the
        database file (``<file>.lgsa-locks/<hash>``), SQLite's write lock, which the
        operating system drops if the process dies; an in-memory database (one process)
        uses a lock of the process. The caller waits and retries.

        Args:
            connection: A connection kept for the lock's lifetime when
                :attr:`thread_lock_uses_connection`, else None.
            url: The database's URL (SQLite: where the lock database goes).
            thread_id: The thread.

        Returns:
            A handle for :meth:`release_thread_lock`, or None when the lock is taken.
        """
        if self.dialect_name == "postgresql":
            assert connection is not None
            key = _lock_key("thread", thread_id)
            got = connection.execute(select(func.pg_try_advisory_lock(key))).scalar()
            connection.commit()  # the lock is the session's; no transaction stays open
            return key if got else None
        if self._mysql:
            assert connection is not None
            name = _lock_name("thread", thread_id)
            got = connection.execute(select(func.get_lock(name, 0))).scalar()
            connection.commit()
            return name if got == 1 else None
        return _sqlite_try_lock(url, thread_id)

    def release_thread_lock(self, connection: Connection | None, handle: Any) -> None:
        """Release a lock taken by :meth:`try_thread_lock`."""
        if connection is not None and self.dialect_name == "postgresql":
            connection.execute(select(func.pg_advisory_unlock(handle)))
            connection.commit()
        elif connection is not None and self._mysql:
            connection.execute(select(func.release_lock(handle)))
            connection.commit()
        else:
            handle.release()


def _lock_key(kind: str, key: str) -> int:
    digest = hashlib.sha256(f"lgsa/{kind}/{key}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _lock_name(kind: str, key: str) -> str:
    digest = hashlib.sha256(f"lgsa/{kind}/{key}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"lgsa:{digest[:48]}"  # MySQL lock names stop at 64 characters


class _SqliteLock:
    """A held SQLite thread lock: an exclusive transaction on a lock database, or a lock
    of this process for an in-memory database."""

    def __init__(self, conn: sqlite3.Connection | None, local: threading.Lock | None) -> None:
        self._conn = conn
        self._local = local

    def release(self) -> None:
        if self._conn is not None:
            self._conn.rollback()
            self._conn.close()
        if self._local is not None:
            self._local.release()


_MEMORY_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_MEMORY_LOCKS_GUARD = threading.Lock()


def _sqlite_try_lock(url: URL, thread_id: str) -> _SqliteLock | None:
    database = url.database or ""
    name = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    if (
        database in ("", ":memory:")
        or url.query.get("vfs") == "memdb"
        or database.startswith(_MEMDB_PREFIX)
    ):
        with _MEMORY_LOCKS_GUARD:
            lock = _MEMORY_LOCKS.setdefault((database, name), threading.Lock())
        return _SqliteLock(None, lock) if lock.acquire(blocking=False) else None
    folder = f"{database}.lgsa-locks"
    os.makedirs(folder, exist_ok=True)
    conn = sqlite3.connect(
        os.path.join(folder, name), timeout=0, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("BEGIN EXCLUSIVE")
    except sqlite3.OperationalError:
        conn.close()
        return None
    return _SqliteLock(conn, None)


_MIGRATION_LOCK_KEY = zlib.crc32(b"langgraph-checkpoint-sqlalchemy/migrations")
