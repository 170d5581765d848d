"""SQLite: its drivers, connection set-up, statements and locks.

Connection set-up (``busy_timeout``, WAL, explicit ``BEGIN``/``BEGIN IMMEDIATE``),
first-write-wins inserts and upserts with ``ON CONFLICT``, JSON filters over
``json_each``/``json_tree``, and the thread lock: an exclusive transaction on a lock
database beside the database file, or a lock of the process for an in-memory database.
The async methods run on the sync engine in one worker thread (:attr:`async_in_thread`).
The database file of a URL and the typed errors of a file that cannot be opened, written
or grown (a full disk, a read-only file) come from a mixin of the same package.
"""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import sys
import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from langgraph.checkpoint.sqlalchemy._codec.display import shown_url
from langgraph.checkpoint.sqlalchemy._codec.install import install_hint
from langgraph.checkpoint.sqlalchemy.dialects._json_filters import (
    SQLiteJsonFilters,
    json_kind,
    tree_within,
)
from langgraph.checkpoint.sqlalchemy.dialects._sqlite_files import SQLiteFiles
from langgraph.checkpoint.sqlalchemy.dialects.base import (
    IDLE_OPTION,
    NO_TRANSACTION_OPTION,
    WRITE_OPTION,
    Binder,
    QueryBuilder,
)
from langgraph.checkpoint.sqlalchemy.errors import DatabaseURLError
from sqlalchemy import (
    Connection,
    Engine,
    LargeBinary,
    Table,
    Text,
    and_,
    bindparam,
    case,
    event,
    exists,
    false,
    func,
    literal,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.sql.elements import BindParameter, ColumnElement

__all__ = [
    "MEMDB_PREFIX",
    "SQLITE_URL_FORMS",
    "SQLiteQueryBuilder",
    "check_file",
    "create_private",
]

#: Start of the names of the saver's shared in-memory databases (``memdb`` VFS; see
#: ``_engine.engines.resolve_urls``).
MEMDB_PREFIX = "file:/lgsa-"

#: The URL forms of a SQLite database, quoted by every refusal of one.
SQLITE_URL_FORMS = (
    "valid forms: sqlite:///relative.db (three slashes: a path relative to the working "
    "directory), sqlite:////abs/path.db (four: an absolute path), a bare file path, or "
    ":memory: (also sqlite:// and sqlite:///:memory:) for an in-memory database"
)


def check_file(path: str) -> str:
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


#: The keyword parameters of ``sqlite3.connect``.
_SQLITE3_CONNECT = frozenset(
    {"database", "timeout", "detect_types", "isolation_level", "check_same_thread"}
    | {"factory", "cached_statements", "uri"}
    | ({"autocommit"} if sys.version_info >= (3, 12) else set())
)

#: Rows whose sizes estimate a table's mean row size (``storage_stats(estimate=True)``).
ESTIMATE_SAMPLE = 1000


class SQLiteQueryBuilder(SQLiteFiles, SQLiteJsonFilters, QueryBuilder):
    """The query builder of SQLite (``pysqlite`` and ``aiosqlite``)."""

    family = "sqlite"
    serial_writes = True
    sync_drivers = ("pysqlite",)
    async_drivers = ("aiosqlite",)
    driver_modules: ClassVar[Mapping[str, tuple[str, str]]] = {
        "pysqlite": ("sqlite3", "a Python built with sqlite3"),
        "aiosqlite": ("aiosqlite", install_hint()),
    }
    extra = install_hint()

    @classmethod
    def passes_on(cls, driver: str, name: str) -> bool | None:
        """``sqlite3.connect`` (pysqlite's ``connect``, whose signature Python cannot read
        before 3.13) takes its keywords; aiosqlite hands its other keywords
        to it (``iter_chunk_size`` is aiosqlite's own: a named parameter)."""
        return name in _SQLITE3_CONNECT

    @classmethod
    def check_url(cls, url: URL) -> bool:
        """Refuse what pysqlite would read otherwise than it looks: a host (the text after
        ``sqlite://`` is a host, not a file), ``sqlite:///`` (no file: SQLAlchemy would
        open an in-memory database and lose it at exit), a directory. ``sqlite://`` and
        ``sqlite:///:memory:`` are SQLAlchemy's spellings of an in-memory database."""
        if url.host or url.port or url.username or url.password:
            where = shown_url(url)
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
            return True
        if not url.query.get("uri") and not url.database.startswith("file:"):
            check_file(url.database)
        return False

    #: True: aiosqlite runs every statement in a thread of its own and hops back to the
    #: event loop after each, so an operation of four statements (BEGIN, two statements,
    #: COMMIT) costs eight hops; one worker thread for the whole operation costs two. The
    #: database work is the same sync function either way.
    async_in_thread = True
    #: SQLite caps expression depth at 1,000 (see :meth:`keys_in`).
    in_list_chunk = 200
    #: The thread lock lives in a lock database of its own (:meth:`try_thread_lock`).
    thread_lock_lease = False

    @classmethod
    def configure(cls, engine: Engine) -> None:
        """``busy_timeout`` of 30 s, WAL journal (file databases), ``synchronous =
        NORMAL``, and explicit ``BEGIN`` (``BEGIN IMMEDIATE`` for writes, see
        :data:`~.base.WRITE_OPTION`) so that every transaction, DDL included, is a real
        SQLite transaction. A database file that does not exist yet is created readable
        by its owner only (:func:`create_private`) before SQLite opens it."""
        if not event.contains(engine, "do_connect", _on_do_connect):
            event.listen(engine, "do_connect", _on_do_connect)
        if not event.contains(engine, "connect", _on_connect):
            event.listen(engine, "connect", _on_connect)
        if not event.contains(engine, "begin", _on_begin):
            event.listen(engine, "begin", _on_begin)

    #: SQLite has no statistics to tell a range of ten items from one of a million:
    #: it reads and sorts the range. The store counts the range (at most this many
    #: primary-key entries) and walks the ``updated_at`` index from this many items: a
    #: search of 10 under a prefix of 10,000 items took 0.4 ms walking, 8 ms sorting.
    walk_from = 1000

    def walk_column(self, column: Any) -> Any:
        """``COALESCE(column, '')``: an expression no index serves, so that the range
        condition cannot pick the primary key and the ``ORDER BY`` walks ``updated_at``."""
        return func.coalesce(column, "")

    def vector_similarity(
        self, connection: Connection, column: Any, query: bytes | None, distance: str = "cosine"
    ) -> ColumnElement[float] | None:
        """The score by ``distance`` from ``sqlite-vec`` (the PyPI wheel), loaded into the
        connection the first time a vector search runs on it: ``1 -
        vec_distance_cosine`` (cosine), ``-vec_distance_l2`` (l2), and for the inner
        product, which sqlite-vec has no function for, the cosine times both norms (the
        column's: its L2 distance to the zero vector). None when the package is missing
        or this Python's ``sqlite3`` cannot load extensions (the store then scores in
        batches)."""
        if query is None or not _vec_loaded(connection):
            return None
        q = literal(query, LargeBinary)
        if distance == "l2":
            return -func.vec_distance_l2(column, q)
        # A zero vector has no cosine: NULL from sqlite-vec, 0.0 as the batch scorer says.
        cosine = 1.0 - func.vec_distance_cosine(column, q)
        if distance == "inner_product":
            values = array("f", query[: len(query) - len(query) % 4])  # little-endian
            if sys.byteorder == "big":
                values.byteswap()
            norm = math.sqrt(sum(v * v for v in values))
            zero = literal(bytes(len(query)), LargeBinary)
            return func.coalesce(cosine * func.vec_distance_l2(column, zero) * norm, 0.0)
        return func.coalesce(cosine, 0.0)

    @property
    def one_statement_read_options(self) -> dict[str, Any]:
        """No ``BEGIN``/``ROLLBACK`` around a one-statement read: two driver calls fewer
        (:data:`~.base.NO_TRANSACTION_OPTION`); the driver tells whether a connection is
        in a transaction (:data:`~.base.IDLE_OPTION`)."""
        return {NO_TRANSACTION_OPTION: True, IDLE_OPTION: _idle}

    def keys_in(self, columns: Sequence[Any], count: int) -> ColumnElement[bool]:
        """``(a = ? AND b = ?) OR ...``: SQLite turns a row-value IN list into a scan of
        the whole table, and runs this as one index lookup a key (MULTI-INDEX OR). The
        bound names are ``k<column>_<key>``, key after key, so that the keys can be
        bound as they are (:meth:`key_labels`)."""
        return or_(
            *(
                and_(*(c == bindparam(f"k{j}_{i}") for j, c in enumerate(columns)))
                for i in range(count)
            )
        )

    def keys_params(self, keys: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """One parameter a key column (see :meth:`keys_in`)."""
        return {f"k{j}_{i}": v for i, key in enumerate(keys) for j, v in enumerate(key)}

    def insert(self, table: Table) -> Any:
        """``sqlite.insert`` (``ON CONFLICT`` clauses)."""
        return sqlite.insert(table)

    def json_member_equals(
        self, column: Any, key: str, value: Any, text: str, dialect: Dialect | None, bind: Binder
    ) -> ColumnElement[bool]:
        """``EXISTS (SELECT 1 FROM json_each(metadata) WHERE key = ? AND ...)`` comparing
        atoms, or ``json_tree`` node sets for dicts and lists (``json_each`` takes any key,
        where a SQLite JSON path cannot quote every character).

        A scalar under a key a JSON path can quote (printable ASCII without ``"`` or
        ``\\``) is read with
        ``json_extract``/``json_type`` at ``$."key"`` instead: the same comparison
        without the table-valued function (a third of the time of a search filter on
        10,000 store items).

        The filter value is handed to SQLite as JSON text and parsed by SQLite like the
        stored metadata, so both sides hold the same SQL values (a 2**70 integer is a REAL
        on both). Scalars: same kind (INTEGER and REAL are one: JSON numbers) and equal
        atoms. Dicts and lists: the two json_tree() row sets of (path, kind, atom) are
        equal: key order free, list order kept, 1 == 1.0 at any depth.
        """
        if not isinstance(value, (Mapping, list, tuple)) and _path_key(key):
            return _if_valid_json(column, _scalar_at(column, key, value, bind))
        doc = bind(text, Text)
        member = func.json_each(column).table_valued("key", "value", "type", "atom").alias()
        if not isinstance(value, (Mapping, list, tuple)):
            same: ColumnElement[bool] = and_(
                json_kind(member.c.type) == json_kind(func.json_type(doc)),
                member.c.atom.is_not_distinct_from(func.json_extract(doc, "$")),
            )
        else:
            same = and_(
                member.c.type == ("object" if isinstance(value, Mapping) else "array"),
                tree_within(func.json_tree(member.c.value), func.json_tree(doc)),
                tree_within(func.json_tree(doc), func.json_tree(member.c.value)),
            )
        found = exists(select(literal(1)).select_from(member).where(member.c.key == key, same))
        return _if_valid_json(column, found)

    def table_estimates(
        self, connection: Connection, sizes: Mapping[Table, ColumnElement[Any]]
    ) -> dict[str, dict[str, int]] | None:
        """SQLite keeps no row counts: rows are the largest rowid (rowids ever given,
        an upper bound once rows were deleted), bytes that times the mean serialised
        size of the newest :data:`ESTIMATE_SAMPLE` rows. Two index seeks a table."""
        rowid: ColumnElement[int] = literal_column("rowid")
        out = {}
        for table, size in sizes.items():
            rows = int(connection.execute(select(func.max(rowid)).select_from(table)).scalar() or 0)
            newest = select(size.label("size")).order_by(rowid.desc()).limit(ESTIMATE_SAMPLE)
            sample = newest.select_from(table).subquery()
            n, total = connection.execute(
                select(func.count(), func.coalesce(func.sum(sample.c.size), 0))
            ).one()
            out[table.name] = {"rows": rows, "bytes": rows * int(total) // int(n) if n else 0}
        return out

    def json_has_key(self, column: Any, key: str | BindParameter[str]) -> ColumnElement[bool]:
        """``EXISTS (SELECT 1 FROM json_each(column) WHERE key = ?)``."""
        member = func.json_each(column).table_valued("key").alias()
        found = exists(select(literal(1)).select_from(member).where(member.c.key == key))
        return _if_valid_json(column, found)

    def ensure_schema(self, connection: Connection, schema: str | None) -> None:
        """No-op: SQLite has no schemas to create."""

    @contextmanager
    def migration_lock(self, connection: Connection) -> Iterator[None]:
        """Nothing more: the migration transaction is begun with ``BEGIN IMMEDIATE`` (see
        :data:`~.base.WRITE_OPTION`), which already excludes other writers."""
        yield

    @contextmanager
    def write_lock(
        self, connection: Connection, thread_id: str, checkpoint_ns: str
    ) -> Iterator[None]:
        """Nothing more: the write transaction began with ``BEGIN IMMEDIATE``, SQLite's
        database-wide write lock."""
        yield

    def try_thread_lock(self, connection: Connection | None, url: URL, thread_id: str) -> Any:
        """``BEGIN EXCLUSIVE`` on a lock database of its own beside the database file
        (``<file>.lgsa-locks/<hash>``), SQLite's write lock, which the operating system
        drops if the process dies; an in-memory database (one process) uses a lock of the
        process. ``connection`` is unused (None)."""
        return _try_lock(url, thread_id)

    def release_thread_lock(self, connection: Connection | None, handle: Any) -> None:
        """Release the :class:`_SqliteLock` of :meth:`try_thread_lock`."""
        handle.release()


def create_private(path: str) -> None:
    """Create the file ``path``, empty and readable by its owner only (0600: a checkpoint
    database holds conversations), unless something is there already.

    SQLite would create it with the process's umask (0644 by default), readable by every
    user of the machine. ``O_CREAT | O_EXCL`` makes the file with its final mode in one
    step (no window where it is readable by others) and never touches an existing file or
    its mode; SQLite reads an empty file as an empty database, and gives the ``-wal``,
    ``-shm`` and ``-journal`` files it makes beside it the same mode as the database.
    A path SQLite would not open as a file (``:memory:``, ``file:`` URIs) is left alone;
    a failure (no such directory, no permission) is left to SQLite to report.
    """
    if not path or path == ":memory:" or path.startswith("file:"):
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return  # there already (any mode, kept), or SQLite reports why it cannot open it
    os.close(fd)


def _on_do_connect(_dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> None:
    # pysqlite and aiosqlite connect with the file name first; uri=True names a URI.
    if cargs and isinstance(cargs[0], str) and not cparams.get("uri"):
        create_private(cargs[0])


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
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
        # 16 MiB of page cache a connection (SQLite's default: 2 MiB), filled as pages
        # are read: at a million checkpoints the upper levels of the primary keys and
        # indexes stay cached, and a get_tuple or delete_thread reads its leaf pages only.
        cursor.execute("PRAGMA cache_size = -16384")
    finally:
        cursor.close()


def _on_begin(connection: Connection) -> None:
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


def _if_valid_json(column: Any, condition: ColumnElement[bool]) -> ColumnElement[bool]:
    """``CASE WHEN json_valid(column) THEN condition ELSE 0 END``: SQLite's JSON
    functions raise on a document that is not JSON (a forged row), which would fail the
    whole query; CASE evaluates ``condition`` only for valid ones. The check parses the
    document once more, in C (SQLite 3.45 and later reuse the parse through their JSON
    cache); the hot path (``get_tuple``, ``list`` without filter) does not run it."""
    guarded: ColumnElement[bool] = case((func.json_valid(column) == 1, condition), else_=false())
    return guarded


def _path_key(key: str) -> bool:
    """Whether ``$."key"`` is a SQLite JSON path naming the top-level ``key``: printable
    ASCII without ``"`` or ``\\``. (SQLite before 3.45 compares a path's label with the
    key as written in the document: ``json.dumps`` writes ``"ключ"`` as ``"\\u043a..."``,
    which no path matches; ``json_each`` decodes keys.)"""
    return bool(key) and key.isascii() and key.isprintable() and '"' not in key and "\\" not in key


def _scalar_at(column: Any, key: str, value: Any, bind: Binder) -> ColumnElement[bool]:
    """The top-level ``key`` of the JSON document ``column`` holds the scalar ``value``:
    same JSON kind (numbers are one kind), equal atom (``value`` through ``bind``)."""
    path = literal('$."' + key + '"', Text)
    kind = func.json_type(column, path)
    if value is None:
        return kind == "null"
    if isinstance(value, bool):
        return kind == bind("true" if value else "false", Text)
    atom = func.json_extract(column, path)
    if isinstance(value, (int, float)):
        return and_(atom == bind(value, None), kind.in_(("integer", "real")))
    return and_(atom == bind(value, Text), kind == "text")


class _SqliteLock:
    """A held SQLite thread lock: an exclusive transaction on a lock database, or a lock
    of this process for an in-memory database."""

    def __init__(
        self,
        conn: sqlite3.Connection | None,
        local: threading.Lock | None,
        key: tuple[str, str] = ("", ""),
    ) -> None:
        self._conn = conn
        self._local = local
        self._key = key

    def release(self) -> None:
        if self._conn is not None:
            self._conn.rollback()
            self._conn.close()
        if self._local is not None:
            _MEMORY_HOLDERS.pop(self._key, None)  # before: the next holder then records itself
            self._local.release()


#: The thread locks of in-memory databases, by (database, hashed thread id).
_MEMORY_LOCKS: dict[tuple[str, str], threading.Lock] = {}
#: The thread (``threading.get_ident()``) that holds each held lock of :data:`_MEMORY_LOCKS`.
_MEMORY_HOLDERS: dict[tuple[str, str], int] = {}
_MEMORY_LOCKS_GUARD = threading.Lock()


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: its in-memory databases are copies of the
    parent's, used by the child's threads only. A thread lock held by another thread of
    the parent at the moment of the fork would stay held forever (that thread does not
    exist here): it is dropped. One held by the thread that forked stays its own. The
    guard is made anew: another thread may have held it too."""
    global _MEMORY_LOCKS_GUARD
    _MEMORY_LOCKS_GUARD = threading.Lock()
    forker = threading.get_ident()  # the same in the child as in the parent
    for key in [k for k in _MEMORY_LOCKS if _MEMORY_HOLDERS.get(k) != forker]:
        del _MEMORY_LOCKS[key]
        _MEMORY_HOLDERS.pop(key, None)


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _try_lock(url: URL, thread_id: str) -> _SqliteLock | None:
    database = url.database or ""
    name = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    if (
        database in ("", ":memory:")
        or url.query.get("vfs") == "memdb"
        or database.startswith(MEMDB_PREFIX)
    ):
        key = (database, name)
        with _MEMORY_LOCKS_GUARD:
            lock = _MEMORY_LOCKS.setdefault(key, threading.Lock())
        if not lock.acquire(blocking=False):
            return None
        _MEMORY_HOLDERS[key] = threading.get_ident()
        return _SqliteLock(None, lock, key)
    folder = f"{database}.lgsa-locks"
    os.makedirs(folder, mode=0o700, exist_ok=True)  # (an existing one keeps its mode)
    path = os.path.join(folder, name)
    create_private(path)
    conn = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("BEGIN EXCLUSIVE")
    except sqlite3.OperationalError:
        conn.close()
        return None
    return _SqliteLock(conn, None)


def _vec_loaded(connection: Connection) -> bool:
    """Whether ``sqlite-vec``'s functions are on this pooled connection, loading them
    the first time (the answer is kept in the pool record's ``info``). Extension loading
    is switched on only for the load."""
    info = connection.connection.info
    loaded = info.get("lgsa_sqlite_vec")
    if loaded is None:
        loaded = False
        dbapi = connection.connection.dbapi_connection
        try:
            import sqlite_vec

            dbapi.enable_load_extension(True)  # type: ignore[union-attr]
            try:
                sqlite_vec.load(dbapi)
                loaded = True
            finally:
                dbapi.enable_load_extension(False)  # type: ignore[union-attr]
        except Exception:  # no package, no extension loading, or its own DBAPI error
            loaded = False
        info["lgsa_sqlite_vec"] = loaded
    return bool(loaded)


def _idle(dbapi_connection: Any) -> bool | None:
    """Whether a ``sqlite3`` connection is outside a transaction (None for another
    driver's)."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        return not dbapi_connection.in_transaction
    return None
