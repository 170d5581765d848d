"""PostgreSQL: its drivers, statements and advisory locks.

Key lookups through ``unnest`` of one array a column, JSONB filters, one-statement
reads and writes in autocommit, and every lock an advisory lock on a 64-bit hash
(``pg_advisory_xact_lock`` for writers and migrations: transaction-scoped, so correct
behind a transaction pooler), the SQLSTATEs the saver retries, and the server clock of
``lock_thread``'s lease rows.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from langgraph.checkpoint.sqlalchemy._codec.install import install_hint
from langgraph.checkpoint.sqlalchemy._codec.metakeys import metadata_json_key
from langgraph.checkpoint.sqlalchemy.dialects._ann import VectorIndex
from langgraph.checkpoint.sqlalchemy.dialects._json_filters import PostgreSQLJsonFilters
from langgraph.checkpoint.sqlalchemy.dialects._pgvector import PgVector
from langgraph.checkpoint.sqlalchemy.dialects.base import IDLE_OPTION, Binder, QueryBuilder
from langgraph.checkpoint.sqlalchemy.schema import locks
from sqlalchemy import (
    JSON,
    Boolean,
    Connection,
    Double,
    Engine,
    Select,
    Table,
    Text,
    bindparam,
    cast,
    extract,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    tuple_,
    type_coerce,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["PostgreSQLQueryBuilder"]


class _JsonbText(TypeDecorator[str]):
    """JSON text, bound as text and cast to JSONB where it is bound."""

    impl = Text
    cache_ok = True

    def bind_expression(self, bindvalue: Any) -> Any:
        return cast(bindvalue, postgresql.JSONB)


_EXTRA = install_hint("postgres")
#: ``Connection.info`` key: the transaction whose planner walks (:meth:`walking`).
_WALKING = "lgsa_walking"

#: Rows and storage of the saver's tables from the catalog: ``reltuples`` (-1 before the
#: first VACUUM or ANALYZE), the statistics system's live-row counter, and the pages of
#: the table with its indexes and TOAST.
_ESTIMATES = text(
    "SELECT c.relname, c.reltuples, s.n_live_tup, pg_total_relation_size(c.oid) "
    "FROM pg_catalog.pg_class c "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_catalog.pg_stat_user_tables s ON s.relid = c.oid "
    "WHERE n.nspname = coalesce(:schema, current_schema()) AND c.relname IN :names"
).bindparams(bindparam("schema", type_=Text), bindparam("names", expanding=True))


class PostgreSQLQueryBuilder(PostgreSQLJsonFilters, QueryBuilder):
    """The query builder of PostgreSQL (psycopg 3, asyncpg, psycopg2, pg8000)."""

    family = "postgresql"
    sync_drivers = ("psycopg", "psycopg2", "pg8000")
    async_drivers = ("psycopg", "asyncpg", "psycopg_async")
    dml_in_cte = True
    driver_modules: ClassVar[Mapping[str, tuple[str, str]]] = {
        "psycopg": ("psycopg", _EXTRA),
        "psycopg_async": ("psycopg", _EXTRA),
        "asyncpg": ("asyncpg", install_hint("asyncpg")),
        "psycopg2": ("psycopg2", install_hint("psycopg2")),
        "pg8000": ("pg8000", install_hint("pg8000")),
    }
    extra = _EXTRA
    url_aliases = ("postgres",)
    default_port = 5432
    #: SQLSTATEs of a server that is going away or not yet taking connections, or of a
    #: connection that broke: the pool must drop its connections (a promotion moves
    #: the primary; ``admin_shutdown`` is a stopped or failed-over server).
    disconnect_states: ClassVar[frozenset[str]] = frozenset(
        {"57P01", "57P02", "57P03", "25006", "08000", "08001", "08003", "08004", "08006"}
    )
    #: SQLSTATEs of a transaction that lost to a concurrent one.
    conflict_states: ClassVar[frozenset[str]] = frozenset({"40001", "40P01"})
    #: What SQLAlchemy's asyncpg adapter takes itself (its prepared-statement cache and
    #: the names of the statements it prepares), documented by SQLAlchemy for PgBouncer.
    adapter_arguments: ClassVar[Mapping[str, frozenset[str]]] = {
        "asyncpg": frozenset({"prepared_statement_cache_size", "prepared_statement_name_func"})
    }

    @classmethod
    def passes_on(cls, driver: str, name: str) -> bool | None:
        """psycopg 3 and psycopg2 hand every keyword that is not a parameter of their
        ``connect`` to libpq, which takes its connection keywords only (``sslmode``,
        ``connect_timeout``, ...; ``prepared_statement_cache_size`` is "an invalid
        connection option"): the driver's own libpq is asked (its parser of connection
        strings). psycopg2 also takes ``async``, ``async_`` and ``database``."""
        if driver == "psycopg2" and name in ("async", "async_", "database"):
            return True
        if driver in ("psycopg", "psycopg_async", "psycopg2"):
            return _libpq_knows(cls.driver_modules[driver][0], name)
        return None

    @classmethod
    def engine_options(cls, engine: Engine, options: Mapping[str, Any]) -> Mapping[str, Any]:
        """asyncpg with its prepared-statement cache off (``prepared_statement_cache_size=0``
        in the engine's URL, SQLAlchemy's setting for a transaction pooler): a
        one-statement access runs in a transaction, not in AUTOCOMMIT. SQLAlchemy's
        asyncpg adapter prepares every statement in a round trip of its own before it
        runs it; outside a transaction, PgBouncer in transaction mode may give the two
        round trips two different server connections (``prepared statement
        "__asyncpg_..." does not exist``). Inside one, both go to the same. Two round
        trips more a call (``BEGIN``, ``COMMIT``); with the cache on, nothing changes."""
        if options.get("isolation_level") != "AUTOCOMMIT" or not _asyncpg_uncached(engine):
            return options
        return {k: v for k, v in options.items() if k != "isolation_level"}

    @classmethod
    def value_reader(cls, dialect: Dialect) -> Callable[[Any], None] | None:
        """psycopg (sync): results in binary format (``Cursor.format``), as
        ``PostgresSaver`` reads them. In text format a ``bytea`` value comes as hex
        text, twice its size, which libpq decodes: 6.5 M instructions of a 37.8 M
        ``get_tuple`` of 400 messages of 400 characters (0.27 MB), 1.21x
        ``PostgresSaver``'s. Every type the saver reads loads alike in both formats.
        Not for a ``ClientCursor`` (client-side binding, which refuses binary
        results), nor on the async door, whose adapted cursor has no such setting
        (asyncpg reads binary always)."""
        if dialect.driver != "psycopg" or dialect.is_async:
            return None
        psycopg = importlib.import_module("psycopg")
        binary = psycopg.pq.Format.BINARY
        client_side = psycopg.ClientCursor

        def read_binary(cursor: Any) -> None:
            if not isinstance(cursor, client_side):
                cursor.format = binary

        return read_binary

    @property
    def one_statement_read_options(self) -> dict[str, Any]:
        """``AUTOCOMMIT``: no transaction around a one-statement read or write, two round
        trips fewer; psycopg tells whether a connection is in a transaction
        (:data:`~.base.IDLE_OPTION`)."""
        return {"isolation_level": "AUTOCOMMIT", IDLE_OPTION: _idle}

    def one_namespace(
        self, table: Table, thread_id: Any, checkpoint_ns: Any
    ) -> tuple[list[ColumnElement[bool]], tuple[Any, ...]]:
        """The thread and the namespace each bound as a range of one value (``thread_id
        >= :t AND thread_id <= :t``) and ordered by ``thread_id, checkpoint_ns,
        checkpoint_id``: an order only the primary key gives. With plain equality
        PostgreSQL drops the constant columns from the order and may plan ``ORDER BY
        checkpoint_id DESC`` on the global checkpoint-id index, which then walks every
        newer checkpoint of other threads (measured 1.2 ms against 0.04 ms for
        ``get_tuple`` of a thread of 1,000 among 11,000 checkpoints, and 925 buffers
        against 5 for ``list(thread, limit=10)`` with stale statistics), or on
        ``ix_lgsa_checkpoints_thread``, which reads the thread's other namespaces too."""
        c = table.c
        where = [c.thread_id >= thread_id, c.thread_id <= thread_id]
        where += [c.checkpoint_ns >= checkpoint_ns, c.checkpoint_ns <= checkpoint_ns]
        return where, (c.thread_id, c.checkpoint_ns, c.checkpoint_id)

    def one_thread(
        self, table: Table, thread_id: Any
    ) -> tuple[list[ColumnElement[bool]], tuple[Any, ...]]:
        """The thread bound as a range of one value, as in :meth:`one_namespace`, and
        ordered by ``thread_id, checkpoint_id, checkpoint_ns``: an order only
        ``ix_lgsa_checkpoints_thread`` gives. With plain equality and no statistics,
        ``list(thread)`` walked ``ix_lgsa_checkpoints_checkpoint_id`` backwards across
        every newer thread: 587 buffers at 100,000 checkpoints against 8 at 10,000."""
        c = table.c
        where = [c.thread_id >= thread_id, c.thread_id <= thread_id]
        return where, (c.thread_id, c.checkpoint_id, c.checkpoint_ns)

    def walk_thread(self, connection: Connection, stmt: Select[Any], table: Table) -> Select[Any]:
        """``enable_sort`` off for the rest of the read transaction (as in
        :meth:`walking`; the page's other statements are key lookups, which sort
        nothing). Without statistics PostgreSQL guesses a few rows a thread, fewer than
        a page, and reads them all through a bitmap scan of the thread index and a sort:
        the whole thread whatever its length. The only plan left without a sort walks
        the index backwards and stops at the page."""
        connection.execute(select(func.set_config("enable_sort", "off", True)))
        return stmt

    def keys_in(self, columns: Sequence[Any], count: int) -> ColumnElement[bool]:
        """``(a, b) IN (SELECT * FROM unnest(?, ?))`` with one array a column: planning a
        long row-value IN list costs PostgreSQL ~130 ms for 500 keys, the unnest ~6 ms all
        told."""
        names = [f"k{j}" for j in range(len(columns))]
        rows = (
            func.unnest(*(bindparam(n, type_=postgresql.ARRAY(Text)) for n in names))
            .table_valued(*names)
            .render_derived(name="lgsa_keys")
        )
        return tuple_(*columns).in_(select(*(rows.c[n] for n in names)))

    def json_text_type(self) -> TypeEngine[Any]:
        """JSON text bound as text and cast to JSONB in the statement (the drivers would
        bind a JSONB object serialised anew)."""
        return _JsonbText()

    def upsert_rows(
        self, table: Table, columns: Sequence[str], update: Sequence[str], types: Any
    ) -> Any:
        """``INSERT ... SELECT ... FROM jsonb_array_elements(?) ON CONFLICT DO UPDATE``: any
        number of rows in one short statement of one parameter, a JSON array of rows
        (psycopg parses a multi-row ``VALUES`` statement of over 4 kB anew at each call,
        PostgreSQL plans it anew, and an array a column costs psycopg a regular
        expression an element). Text, float and JSON elements (a JSON column's element
        is its document itself, or with a Text type the text of it); None for another
        type.

        The array is parsed once, as JSONB: a JSON element is then the column's value
        as it is, not text parsed a second time. Measured on PostgreSQL 18, 500 items
        of a store of 20,000: 7.5 ms in the server against 11.0 ms for a ``JSON`` array
        of rows whose values are JSON text, and 20.5 ms for a multi-row ``VALUES``.
        """
        row = func.jsonb_array_elements(
            cast(bindparam("rows", type_=Text), postgresql.JSONB)
        ).column_valued("lgsa_row")
        picked: list[Any] = []
        for i, name in enumerate(columns):
            at: Any = literal_column(str(i))
            kind = types[name]
            if isinstance(table.c[name].type, JSON):
                if isinstance(kind, Text):  # the text of a JSON document
                    picked.append(cast(row.op("->>")(at), postgresql.JSONB))
                elif isinstance(kind, JSON):
                    picked.append(type_coerce(row.op("->")(at), postgresql.JSONB))
                else:
                    return None
            elif isinstance(kind, Double):
                picked.append(cast(row.op("->>")(at), Double))
            elif isinstance(kind, Text):
                picked.append(row.op("->>")(at))
            else:
                return None
        stmt = postgresql.insert(table).from_select(list(columns), select(*picked))
        return stmt.on_conflict_do_update(
            index_elements=list(table.primary_key.columns),
            set_={c: stmt.excluded[c] for c in update},
        )

    def keys_params(self, keys: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """One array a key column (see :meth:`keys_in`)."""
        width = len(keys[0]) if keys else 0
        return {f"k{j}": [key[j] for key in keys] for j in range(width)}

    def insert(self, table: Table) -> Any:
        """``postgresql.insert`` (``ON CONFLICT`` clauses)."""
        return postgresql.insert(table)

    def json_member_equals(
        self, column: Any, key: str, value: Any, text: str, dialect: Dialect | None, bind: Binder
    ) -> ColumnElement[bool]:
        """``metadata -> ? = CAST(? AS JSONB)`` (JSONB equality)."""
        member: ColumnElement[Any] = column.op("->")(literal(key, Text))
        return member == cast(bind(text, Text), postgresql.JSONB)

    metadata_index_rows = False

    #: PostgreSQL's ``$`` ends the text (no newline-sensitive mode unless asked).
    regexp_end = "$"

    #: PostgreSQL estimates a JSONB equality at 0.5% of the rows whatever the value: a
    #: filter matching a third of 10,000 items was planned as a scan and a sort (3.2 ms)
    #: rather than a walk of ``updated_at`` that stops at the page (see :meth:`walking`).
    walk_from = 1000

    def vector_index(self) -> VectorIndex | None:
        """pgvector's column and HNSW index: whether a server has the extension is
        checked where it is used."""
        found: PgVector | None = self.__dict__.get("_pgvector")
        if found is None:
            found = self.__dict__["_pgvector"] = PgVector()
        return found

    def walking(self, connection: Connection, on: bool) -> None:
        """While ``on``, for the rest of the transaction (``set_config(..., is_local =>
        true)``, safe behind a transaction pooler): ``enable_sort`` off, so that the only
        plan left walks the ``updated_at`` index and stops at the page, whatever the
        statistics; and no parallel plan and no JIT, which the walk's estimate asks for
        as the table grows (the filter's JSON conditions guessed at one row: the whole
        index read). With statistics at 100,000 items PostgreSQL 15 walked in a
        parallel worker behind a Gather Merge: 9 ms of which 7 starting the worker,
        against 0.25 ms in the backend. Not ``on`` after ``on`` in the same transaction:
        sorts are allowed again (a later search of a small prefix sorts its range). A
        call that changes nothing sends nothing."""
        txn = connection.get_transaction()
        if (txn is not None and connection.info.get(_WALKING) is txn) == on:
            return
        settings = {"enable_sort": "on"}
        if on:
            settings = {"enable_sort": "off", "max_parallel_workers_per_gather": "0", "jit": "off"}
        connection.execute(select(*(func.set_config(k, v, True) for k, v in settings.items())))
        # Read after the statement, which begins the transaction when none had begun.
        connection.info[_WALKING] = connection.get_transaction() if on else None

    def small_reads(self, connection: Connection) -> None:
        """No parallel plan and no JIT for the rest of this read transaction:
        ``set_config(name, value, is_local => true)``, as ``SET LOCAL`` (transaction-scoped:
        safe behind a transaction pooler), both in one round trip.

        Without statistics PostgreSQL guesses 0.5% of a table a ``thread_id`` (72,000 rows
        for 20 threads at a million checkpoints, where there are 200): it planned the
        aggregates of ``SQLAlchemySaver.list_threads`` as a parallel scan (starting the
        workers took 10 of its 12 ms), and once that was off, the estimated cost (227,000)
        passed ``jit_above_cost`` (100,000): compiling the query took 10.3 of its 11 ms
        (``EXPLAIN ANALYZE``), against 1.8 ms at 10,000 checkpoints.
        """
        connection.execute(
            select(
                func.set_config("max_parallel_workers_per_gather", "0", True),
                func.set_config("jit", "off", True),
            )
        )

    def metadata_index_filter(
        self, table: Table, key: str, text: str, indexed: bool
    ) -> ColumnElement[bool] | None:
        """``metadata @> CAST(? AS JSONB)`` with ``{key: value}``, for every key: the GIN
        index ``ix_lgsa_checkpoints_metadata`` (``jsonb_path_ops``) serves containment.
        Containment is looser than equality (``[1, 2]`` contains ``[1]``), so the exact
        condition of :meth:`metadata_equals` still decides."""
        doc = cast(literal(metadata_json_key(key, text), Text), postgresql.JSONB)
        found: ColumnElement[bool] = table.c.metadata.op("@>", return_type=Boolean)(doc)
        return found

    def json_has_key(self, column: Any, key: str | BindParameter[str]) -> ColumnElement[bool]:
        """The JSONB ``?`` operator."""
        bound = literal(key, Text) if isinstance(key, str) else key
        has: ColumnElement[bool] = column.op("?", return_type=Boolean)(bound)
        return has

    def table_estimates(
        self, connection: Connection, sizes: Mapping[Table, ColumnElement[Any]]
    ) -> dict[str, dict[str, int]] | None:
        """The live-row counter (``pg_stat_user_tables.n_live_tup``, or ``reltuples``
        while the counter is empty) and ``pg_total_relation_size``: storage, not
        serialised lengths."""
        schema = connection.get_execution_options().get("schema_translate_map", {}).get(None)
        names = [t.name for t in sizes]
        found = {
            str(name): (reltuples, live, size)
            for name, reltuples, live, size in connection.execute(
                _ESTIMATES, {"schema": schema, "names": names}
            )
        }
        out = {}
        for name in names:
            reltuples, live, size = found.get(name, (0, None, 0))
            rows = live if live else reltuples  # the counter is the fresher
            out[name] = {"rows": max(int(rows or 0), 0), "bytes": max(int(size or 0), 0)}
        return out

    @contextmanager
    def migration_lock(self, connection: Connection) -> Iterator[None]:
        """``pg_advisory_xact_lock``, released at commit or rollback."""
        connection.execute(select(func.pg_advisory_xact_lock(_MIGRATION_LOCK_KEY)))
        yield

    @contextmanager
    def write_lock(
        self, connection: Connection, thread_id: str, checkpoint_ns: str
    ) -> Iterator[None]:
        """``pg_advisory_xact_lock`` on a 64-bit hash of the key, released at commit."""
        key = f"{thread_id}\x00{checkpoint_ns}"
        connection.execute(select(func.pg_advisory_xact_lock(_lock_key("put", key))))
        yield

    lease_in_one_statement = True

    def take_lease(self, connection: Connection, name: str, owner: str, seconds: float) -> bool:
        """One statement: ``INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE`` the lease
        expired or is ``owner``'s, ``RETURNING owner``: a row comes back when ``owner``
        holds the lease. A concurrent taker waits for the row's lock and then sees the
        committed holder (READ COMMITTED re-checks the ``WHERE`` on the newest row)."""
        c = locks.c
        now = self.clock()
        stmt = postgresql.insert(locks).values(name=name, owner=owner, expires_at=now + seconds)
        stmt = stmt.on_conflict_do_update(
            index_elements=[c.name],
            set_={"owner": stmt.excluded.owner, "expires_at": stmt.excluded.expires_at},
            where=or_(c.expires_at < now, c.owner == stmt.excluded.owner),
        )
        return connection.execute(stmt.returning(c.owner)).first() is not None

    def clock(self) -> ColumnElement[Any]:
        """``EXTRACT(EPOCH FROM clock_timestamp())``: the server's time now (not the
        transaction's start)."""
        return extract("epoch", func.clock_timestamp())

    @classmethod
    def error_code(cls, error: BaseException | None) -> Any:
        """The SQLSTATE (psycopg, asyncpg: ``sqlstate``; psycopg2: ``pgcode``)."""
        return getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)

    @classmethod
    def is_disconnect(cls, error: BaseException | None) -> bool:
        """A SQLSTATE of :attr:`disconnect_states` (``read_only_sql_transaction``
        included: after a promotion a pooled connection may still reach the old primary,
        now a standby, or a standby that a multi-host URL picked while no host was
        writable), or a connection error with no SQLSTATE (the client's own: refused,
        reset, timed out)."""
        code = cls.error_code(error)
        if code is None:
            text = str(error)
            return type(error).__name__ == "OperationalError" and not any(
                marker in text for marker in _PERMANENT_CONNECT_FAILURES
            )
        return str(code) in cls.disconnect_states

    def transient(self, error: DBAPIError) -> str | None:
        """``"read-only"`` for SQLSTATE 25006, ``"conflict"`` for serialization failures
        and deadlocks (40001, 40P01), else the base's answer."""
        code = self.error_code(error.orig)
        if code == "25006":
            return "read-only"
        if code in self.conflict_states:
            return "conflict"
        return super().transient(error)

    def words(self, error: DBAPIError) -> str:
        """The server's message and its SQLSTATE."""
        code = self.error_code(error.orig)
        return super().words(error) + (f" (SQLSTATE {code})" if code else "")

    def storage_full(self, error: DBAPIError) -> bool:
        """SQLSTATE 53100 ``disk_full``: "could not extend file ...: No space left on
        device" (a table, an index or a temporary file that could not grow)."""
        return str(self.error_code(error.orig)) == "53100"

    @classmethod
    def servers(cls, url: URL) -> list[str]:
        """Each server libpq tries for ``url``, in order: a host list (``?host=a,b&port=
        5432,5433``, or SQLAlchemy's ``?host=a:5432&host=b:5433``) host by host, a socket
        folder (``?host=/var/run/postgresql``) as that folder, ``hostaddr`` where a host
        is left empty, ``PGHOST``/``PGPORT`` where the URL names none (as libpq reads
        them), else libpq's default socket: never a host the URL did not name."""
        host, port = url.query.get("host"), url.query.get("port")
        if isinstance(host, tuple) or (
            isinstance(host, str) and port is None and ":" in host and "," not in host
        ):  # SQLAlchemy's host:port form (each token split as its psycopg dialect does)
            tokens = [host] if isinstance(host, str) else list(host)
            pairs = [(*t.split(":", 1), "")[:2] for t in tokens]
            hosts, ports = [h for h, _ in pairs], [p for _, p in pairs]
        else:
            hosts, ports = _listed(host), _listed(port)
        if url.host:
            hosts, ports = [url.host], [str(url.port)] if url.port else ports
        hosts = hosts or [f"{h} (PGHOST)" for h in _listed(os.environ.get("PGHOST"))]
        ports = ports or _listed(os.environ.get("PGPORT"))
        addresses = _listed(url.query.get("hostaddr"))
        named = []
        for i in range(max(len(hosts), len(addresses), 1)):
            name = (hosts[i] if i < len(hosts) else "") or (
                addresses[i] if i < len(addresses) else ""
            )
            number = (ports[i] if i < len(ports) else ports[0] if ports else "") or str(
                cls.default_port
            )
            if name.startswith("/"):
                named.append(f"socket folder {name}, port {number}")
            elif name:
                named.append(f"host {name}, port {number}")
            else:
                named.append(f"the default socket, port {number}")
        return named


#: What libpq says when a connection is refused for good (no SQLSTATE reaches the
#: client then): a missing database or role, a refused login. Not retried.
_PERMANENT_CONNECT_FAILURES = (
    "does not exist",
    "authentication failed",
    "no pg_hba.conf entry",
    "password",
    "permission denied",
    "invalid",
)


def _listed(value: str | Sequence[str] | None) -> list[str]:
    """A libpq list (``"a,b"``), or the values of a query parameter given several times,
    as a list (empty for None)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [v for item in items for v in item.split(",")]


#: Where psycopg 3 and psycopg2 parse a connection string with their libpq.
_CONNINFO_PARSERS = {
    "psycopg": ("psycopg.conninfo", "conninfo_to_dict"),
    "psycopg2": ("psycopg2.extensions", "parse_dsn"),
}
#: :func:`_libpq_knows` by (driver module, keyword).
_LIBPQ_KNOWS: dict[tuple[str, str], bool] = {}


def _libpq_knows(module: str, name: str) -> bool | None:
    """Whether the libpq of ``module`` (``psycopg`` or ``psycopg2``) knows the connection
    keyword ``name`` (libpq's ``PQconninfoParse``, through the driver's parser of
    connection strings, which raises its ``ProgrammingError`` for an unknown keyword);
    None when the module cannot be imported."""
    key = (module, name)
    if key not in _LIBPQ_KNOWS:
        if not re.fullmatch(r"[A-Za-z_]\w*", name, re.ASCII):
            return False
        where, function = _CONNINFO_PARSERS[module]
        try:
            parse = getattr(importlib.import_module(where), function)
            refused = importlib.import_module(module).ProgrammingError
        except ImportError:
            return None
        try:
            parse(f"{name}=x")
        except refused:
            _LIBPQ_KNOWS[key] = False
        else:
            _LIBPQ_KNOWS[key] = True
    return _LIBPQ_KNOWS[key]


def _asyncpg_uncached(engine: Engine) -> bool:
    """Whether ``engine`` is an asyncpg engine whose URL turns SQLAlchemy's
    prepared-statement cache off (``prepared_statement_cache_size=0``)."""
    if engine.dialect.driver != "asyncpg":
        return False
    size = engine.url.query.get("prepared_statement_cache_size")
    value = size[-1] if isinstance(size, tuple) else size
    return value is not None and value.strip().isdigit() and int(value) == 0


def _lock_key(kind: str, key: str) -> int:
    digest = hashlib.sha256(f"lgsa/{kind}/{key}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


_MIGRATION_LOCK_KEY = zlib.crc32(b"langgraph-checkpoint-sqlalchemy/migrations")


def _idle(dbapi_connection: Any) -> bool | None:
    """Whether a psycopg (3 or 2) connection is outside a transaction (its transaction
    status IDLE, 0 in both); None for another driver's. psycopg 3's libpq wrapper
    (``pgconn``) answers with the plain number, without the enum its
    ``info.transaction_status`` makes of it (a Python ``Enum`` call a statement)."""
    pgconn = getattr(dbapi_connection, "pgconn", None)
    if pgconn is not None:
        return int(pgconn.transaction_status) == 0
    info = getattr(dbapi_connection, "info", None)
    status = getattr(info, "transaction_status", None)
    if status is None:
        get = getattr(dbapi_connection, "get_transaction_status", None)
        if get is None:
            return None
        status = get()
    return int(status) == 0
