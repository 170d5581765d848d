"""MySQL and MariaDB: their drivers, connection set-up, statements and ``GET_LOCK`` locks.

One family: the same drivers, SQL and locks. MariaDB differs only in how it compares
JSON (``JSON_EQUALS``), so :class:`MariaDBQueryBuilder` is a subclass saying so; a
``mysql://`` URL may reach a MariaDB server too, which the JSON filter learns from the
connection's dialect. Also here: ``ON DUPLICATE KEY UPDATE`` inserts, the
``max_allowed_packet`` value limit and its error, the recursive-CTE limit set on every
connection, and re-runnable (non-transactional) DDL.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from langgraph.checkpoint.sqlalchemy._codec.display import masked_text
from langgraph.checkpoint.sqlalchemy._codec.install import install_hint
from langgraph.checkpoint.sqlalchemy.dialects._json_filters import MySQLJsonFilters
from langgraph.checkpoint.sqlalchemy.dialects._sqlalchemy_private import backslash_escapes
from langgraph.checkpoint.sqlalchemy.dialects.base import Binder, QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import MigrationLockTimeout, ValueTooLargeError
from langgraph.checkpoint.sqlalchemy.schema import (
    CHECKPOINT_ID_INDEX,
    THREAD_INDEX,
    VERSION_TABLE,
    locks,
)
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    Select,
    String,
    Table,
    Text,
    and_,
    bindparam,
    cast,
    create_engine,
    delete,
    event,
    func,
    inspect,
    literal,
    literal_column,
    or_,
    select,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateTable, DropTable
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import BindParameter, ColumnElement

__all__ = ["MYSQL_RECURSION_LIMIT", "MariaDBQueryBuilder", "MySQLQueryBuilder"]

#: Seconds a migration lease lasts without renewal (:meth:`MySQLQueryBuilder.migration_lock`).
MIGRATION_LEASE = 60.0
#: Seconds ``setup()`` waits for a migration lease that a live migration keeps renewing.
MIGRATION_WAIT = 3600.0
_MIGRATION_LEASE_NAME = "lgsa/migrations"

#: Recursion allowed to a recursive CTE on MySQL/MariaDB, whose defaults (1,000) are
#: shorter than the delta-history walk's own cap (see ``_history.MAX_CHAIN``).
MYSQL_RECURSION_LIMIT = 100_001

_EXTRA = install_hint("mysql")
#: The system's "No space left on device" (errno 28) in a server's message.
_ENOSPC = re.compile(r"\b(?:errno|errcode|error)\W{0,3}28\b|no space left on device", re.I)


#: Rows and storage of the saver's tables from ``information_schema``.
_ESTIMATES = text(
    "SELECT table_name, table_rows, data_length + index_length "
    "FROM information_schema.tables "
    "WHERE table_schema = coalesce(:schema, database()) AND table_name IN :names"
).bindparams(bindparam("names", expanding=True))


class MySQLQueryBuilder(MySQLJsonFilters, QueryBuilder):
    """The query builder of MySQL (and of MariaDB reached through ``mysql://``)."""

    family = "mysql"
    #: ``\\z`` ends the text in PCRE (MariaDB) and ICU (MySQL 8); ``$`` also before a final newline.
    regexp_end = "\\z"
    sync_drivers = ("pymysql", "mysqldb", "mariadbconnector", "mysqlconnector")
    async_drivers = ("asyncmy",)
    default_port = 3306
    driver_modules: ClassVar[Mapping[str, tuple[str, str]]] = {
        "pymysql": ("pymysql", _EXTRA),
        "asyncmy": ("asyncmy", _EXTRA),
        "mysqldb": (
            "MySQLdb",
            "pip install mysqlclient (it builds against the MySQL/MariaDB client library), "
            f"or use mysql+pymysql://, which comes with {_EXTRA}",
        ),
        "mariadbconnector": (
            "mariadb",
            "pip install mariadb (it needs MariaDB Connector/C), or use mysql+pymysql://, "
            f"which comes with {_EXTRA}",
        ),
        "mysqlconnector": ("mysql.connector", "pip install mysql-connector-python"),
    }
    refused_drivers: ClassVar[Mapping[str, str]] = {
        "aiomysql": (
            "aiomysql fails on every binary parameter with PyMySQL >= 1.2 (TypeError: 'str' "
            "object is not callable), and the saver stores every value as bytes; use "
            f"mysql+asyncmy://, which comes with {_EXTRA}"
        ),
    }
    extra = _EXTRA
    #: 4-byte UTF-8 (emoji) in ids and metadata; the tables are utf8mb4 too.
    url_query: ClassVar[Mapping[str, str]] = {"charset": "utf8mb4"}
    #: Each DDL statement commits; the migrations are written to be re-runnable.
    transactional_ddl = False
    migration_note = (
        " (A setup() keeps the migration steps it finished: each DDL statement commits; "
        "run it again once there is room.)"
    )
    #: Error numbers of a connection or server that is gone or not usable: server
    #: shutdown (1053), connection killed (1927), can't connect (2002, 2003), server gone
    #: or lost (2006, 2013, 2055), Galera's "WSREP has not yet prepared node for
    #: application use" (1047: a node that left the cluster's primary component) and
    #: MariaDB's idle-transaction timeout (4031). The pool drops its connections.
    disconnect_codes: ClassVar[frozenset[int]] = frozenset(
        {1047, 1053, 1927, 2002, 2003, 2006, 2013, 2055, 4031}
    )
    #: Error numbers of a server that takes no writes (``read_only``, a read-only
    #: transaction).
    read_only_codes: ClassVar[frozenset[int]] = frozenset({1290, 1792, 1836})
    #: Error numbers of a transaction that lost to a concurrent one: a deadlock, which
    #: is also how Galera reports a certification conflict (1213), a lock wait timeout
    #: (1205), and Galera's "query interrupted" of a brute-force abort (1317 is not:
    #: it is also a user's KILL QUERY).
    conflict_codes: ClassVar[frozenset[int]] = frozenset({1213, 1205})
    #: Error numbers of a commit refused while the cluster is not available, the
    #: connection itself still good: Galera's "Error while appending streaming
    #: replication fragment (provider status: Not connected to Primary Component)"
    #: (1180, "Got error during COMMIT"), seen on the surviving nodes while a killed node
    #: leaves the cluster. The transaction was rolled back; retried like a lost
    #: connection.
    unavailable_codes: ClassVar[frozenset[int]] = frozenset({1180})
    #: Error numbers of a full disk: "Disk is full writing ..." (20, a mysys error),
    #: "Disk full (...); waiting for someone to free some space" (1021), "The table ...
    #: is full" (1114: InnoDB could not extend the table's tablespace).
    full_codes: ClassVar[frozenset[int]] = frozenset({20, 1021, 1114})
    #: Error numbers of a failed write that carry the system's errno in their message,
    #: a full disk when it is 28 (``ENOSPC``): "Error writing file ... (errno: 28 ...)"
    #: (3 on MySQL 8, 1026), "Got error 28 ... from storage engine" (1030), "Got error
    #: 28 ... during COMMIT" (1180).
    write_codes: ClassVar[frozenset[int]] = frozenset({3, 1026, 1030, 1180})
    #: Whether the server is known to be MariaDB without asking the connection.
    is_mariadb: ClassVar[bool] = False

    def __init__(self) -> None:
        self._value_limit: int | None = None

    @classmethod
    def configure(cls, engine: Engine) -> None:
        """A recursive-CTE limit (:data:`MYSQL_RECURSION_LIMIT`) that lets long parent
        chains be walked, and on a Galera node causal reads (``wsrep_sync_wait`` raised
        from 0 to 1; another value, set by the server or the URL, is kept), set on every
        new connection;
        the base's disconnect
        listener."""
        super().configure(engine)
        if not event.contains(engine, "connect", _on_connect):
            event.listen(engine, "connect", _on_connect)

    def walk_newest_first(self, stmt: Select[Any], table: Table) -> Select[Any]:
        """``FORCE INDEX``: after a bulk load, without statistics, MariaDB 10.11 read a
        filter on ``step`` as a scan of the whole table and a filesort (``EXPLAIN``)."""
        return stmt.with_hint(table, f"FORCE INDEX ({CHECKPOINT_ID_INDEX})")

    def walk_thread(self, connection: Connection, stmt: Select[Any], table: Table) -> Select[Any]:
        """``FORCE INDEX``: after a bulk load, without statistics, MariaDB 10.11 read
        ``list(thread)`` without a namespace through the primary key's range of the
        thread and a filesort (``EXPLAIN``), the whole thread for a page."""
        return stmt.with_hint(table, f"FORCE INDEX ({THREAD_INDEX})")

    def rows_before(self, columns: Sequence[Any], values: Sequence[Any]) -> ColumnElement[bool]:
        """Spelled out, ``a <= ? AND (a < ? OR (a = ? AND (b < ? OR (b = ? AND c <
        ?))))``, whose ``a <= ?`` is a range on the index, read backwards: MariaDB 10.11
        does not turn a row-value comparison into a range scan (``EXPLAIN``: a scan of the
        whole table and a filesort for every page)."""
        condition: ColumnElement[bool] = columns[-1] < values[-1]
        for column, value in zip(reversed(columns[:-1]), reversed(values[:-1]), strict=True):
            condition = or_(column < value, and_(column == value, condition))
        return and_(columns[0] <= values[0], condition)

    def insert(self, table: Table) -> Any:
        """``mysql.insert`` (``ON DUPLICATE KEY UPDATE``)."""
        return mysql.insert(table)

    @classmethod
    def compile_key(cls, dialect: Dialect) -> tuple[Any, ...]:
        """The base key, and the server settings SQLAlchemy's MySQL compiler reads at
        first connect: MariaDB or MySQL, the identifiers' quote (a double quote under
        ``ANSI_QUOTES``, a backtick otherwise), backslash escapes."""
        extra: Any = dialect
        return (
            *super().compile_key(dialect),
            getattr(extra, "is_mariadb", None),
            dialect.identifier_preparer.initial_quote,
            backslash_escapes(dialect),
        )

    def compressed_columns_ddl(
        self,
        dialect: Dialect,
        table: str,
        columns: Sequence[tuple[str, bool]],
        schema: str | None,
        *,
        compressed: bool,
        offline: bool,
    ) -> list[str]:
        """MariaDB 10.3.2+: ``LONGBLOB COMPRESSED`` columns (zlib in the server). InnoDB
        keeps a long value uncompressed on an overflow page of its own: a realistic
        checkpoint row took a 16 kB page for 8 kB of values. MySQL has no such
        attribute: offline SQL wraps it in MariaDB's executable comment, which MySQL
        reads as a comment; online, only a MariaDB server is altered."""
        extra: Any = dialect
        version = tuple(dialect.server_version_info or ())
        if not offline and not (getattr(extra, "is_mariadb", False) and version >= (10, 3, 2)):
            return []
        quote = dialect.identifier_preparer.quote
        name = f"{quote(schema)}.{quote(table)}" if schema else quote(table)
        attribute = " /*M!100302 COMPRESSED*/" if compressed else ""
        changes = ", ".join(
            f"MODIFY {quote(column)} LONGBLOB{attribute} {'NULL' if nullable else 'NOT NULL'}"
            for column, nullable in columns
        )
        return [f"ALTER TABLE {name} {changes}"]

    def insert_ignore(self, table: Table) -> Insert:
        """``ON DUPLICATE KEY UPDATE`` of a key column to itself (``INSERT IGNORE`` would
        also hide truncation)."""
        stmt = self.insert(table)
        first = table.primary_key.columns.values()[0]
        return stmt.on_duplicate_key_update({first.name: stmt.inserted[first.name]})  # type: ignore[no-any-return]

    def upsert(self, table: Table, update: Sequence[str]) -> Insert:
        """``ON DUPLICATE KEY UPDATE col = VALUES(col)``."""
        stmt = self.insert(table)
        return stmt.on_duplicate_key_update({c: stmt.inserted[c] for c in update})  # type: ignore[no-any-return]

    def check_filter(self, key: object, value: Any) -> tuple[str, str]:
        """As the base, and refuse a key that starts with "-".

        Raises:
            TypeError: ``key`` is not a string or ``value`` is not JSON.
            ValueError: ``value`` holds NaN, an infinite float or a 64-bit overflow, or
                ``key`` starts with "-".
        """
        key, text = super().check_filter(key, value)
        if key.startswith("-"):
            # MariaDB's path parser reads a quoted key that starts with "-" as a
            # negative array index and matches nothing: refuse rather than answer wrong.
            raise ValueError(
                "MySQL/MariaDB JSON paths cannot address a key that starts with '-'; "
                "rename the metadata key"
            )
        return key, text

    def json_member_equals(
        self, column: Any, key: str, value: Any, text: str, dialect: Dialect | None, bind: Binder
    ) -> ColumnElement[bool]:
        """``JSON_EXTRACT`` with a quoted path, compared with ``JSON_EQUALS`` (MariaDB) or
        as JSON (MySQL)."""
        extracted = func.json_extract(column, literal(_path(key), Text))
        if self.is_mariadb or getattr(dialect, "is_mariadb", False):
            return func.json_equals(extracted, bind(text, Text)) == 1
        return extracted == cast(bind(text, Text), mysql.JSON)

    def json_has_key(self, column: Any, key: str | BindParameter[str]) -> ColumnElement[bool]:
        """``JSON_CONTAINS_PATH`` with a quoted path (:meth:`json_key_value`)."""
        path = literal(_path(key), Text) if isinstance(key, str) else key
        return func.json_contains_path(column, "one", path) == 1

    def json_key_value(self, key: str) -> str:
        """The JSON path of the key (``$."key"``), what :meth:`json_has_key` tests."""
        return _path(key)

    def table_estimates(
        self, connection: Connection, sizes: Mapping[Table, ColumnElement[Any]]
    ) -> dict[str, dict[str, int]] | None:
        """``information_schema.tables``: ``table_rows`` (InnoDB's estimate) and
        ``data_length + index_length`` (storage, not serialised lengths; MySQL 8 caches
        both for ``information_schema_stats_expiry`` seconds)."""
        schema = connection.get_execution_options().get("schema_translate_map", {}).get(None)
        names = [t.name for t in sizes]
        found = {
            (name.decode() if isinstance(name, bytes) else str(name)): (rows, size)
            for name, rows, size in connection.execute(
                _ESTIMATES, {"schema": schema, "names": names}
            )
        }
        out = {}
        for name in names:
            rows, size = found.get(name, (0, 0))
            out[name] = {"rows": max(int(rows or 0), 0), "bytes": max(int(size or 0), 0)}
        return out

    def value_limit(self, connection: Connection) -> int | None:
        """Half of ``max_allowed_packet`` (read once per saver): the statement travels as
        escaped text in one packet, and MariaDB 10.11 was measured refusing a 40 MB value
        under a 64 MB limit while taking 30 MB."""
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

    def translate_error(self, error: DBAPIError, url: URL | None = None) -> Exception | None:
        """A statement larger than ``max_allowed_packet`` (error 1153, or 1301 for a value
        over it) is a :class:`ValueTooLargeError` naming the setting. The transaction was
        rolled back, so nothing of the call is stored. Else the base's answer (a full
        disk)."""
        code = getattr(error.orig, "args", (None,))[0] if error.orig is not None else None
        if code in (1153, 1301):
            return ValueTooLargeError(
                "a checkpoint value or write is larger than the server accepts in one "
                "statement (MySQL/MariaDB max_allowed_packet); raise the limit, e.g. "
                "SET GLOBAL max_allowed_packet = 268435456 (or in the server's config), or "
                "store less in the channel. Nothing of this call was stored."
            )
        return super().translate_error(error, url)

    @classmethod
    def servers(cls, url: URL) -> list[str]:
        """The URL's socket (``?unix_socket=``), or its host (PyMySQL's and asyncmy's
        default: ``localhost``, over TCP) and port."""
        socket = url.query.get("unix_socket")
        if isinstance(socket, str):
            return [f"socket {socket}"]
        return [f"host {url.host or 'localhost'}, port {url.port or cls.default_port}"]

    def words(self, error: DBAPIError) -> str:
        """The server's message and its error number (the driver's ``(number,
        message)`` arguments)."""
        args: tuple[Any, ...] = getattr(error.orig, "args", ())
        if len(args) == 2 and isinstance(args[0], int):
            return " ".join(masked_text(f"{args[1]} (error {args[0]})").split())
        return super().words(error)

    def storage_full(self, error: DBAPIError) -> bool:
        """An error number of :attr:`full_codes`, or of :attr:`write_codes` whose
        message names errno 28 (``ENOSPC``)."""
        code = self.error_code(error.orig)
        if code in self.full_codes:
            return True
        return code in self.write_codes and _ENOSPC.search(str(error.orig)) is not None

    @classmethod
    def error_code(cls, error: BaseException | None) -> Any:
        """The error number (the first argument of PyMySQL's and asyncmy's errors)."""
        args = getattr(error, "args", ())
        return args[0] if args and isinstance(args[0], int) else None

    @classmethod
    def is_disconnect(cls, error: BaseException | None) -> bool:
        """An error number of :attr:`disconnect_codes`."""
        return cls.error_code(error) in cls.disconnect_codes

    def transient(self, error: DBAPIError) -> str | None:
        """``"read-only"``, ``"conflict"`` (see :attr:`conflict_codes`), else the base's
        answer; never a full disk (:meth:`storage_full`)."""
        code = self.error_code(error.orig)
        if self.storage_full(error):
            return None  # (1180 of a full disk: retrying does not free space)
        if code in self.read_only_codes:
            return "read-only"
        if code in self.conflict_codes:
            return "conflict"
        if code in self.unavailable_codes:
            return "connection"
        return super().transient(error)

    def clock(self) -> ColumnElement[Any]:
        """``UNIX_TIMESTAMP(NOW(6))``."""
        return func.unix_timestamp(func.now(6))

    def primary_key_name(self, name: str) -> str | None:
        """None: MySQL/MariaDB call every primary key ``PRIMARY`` and answer any other
        name with warning 1280 ("Name ... ignored for PRIMARY key")."""
        return None

    def ensure_version_table(self, connection: Connection, name: str, schema: str | None) -> None:
        """The same table as Alembic's (``version_num VARCHAR(32)``, its primary key) with
        the key left unnamed (see :meth:`primary_key_name`). Alembic finds it and uses it.
        No-op when the table exists."""
        Table(
            name,
            MetaData(),
            Column("version_num", String(32), nullable=False),
            PrimaryKeyConstraint("version_num", name=self.primary_key_name(f"{name}_pkc")),
            schema=schema,
        ).create(connection, checkfirst=True)

    @contextmanager
    def migration_lock(self, connection: Connection) -> Iterator[None]:
        """A lease row (:meth:`~.base.QueryBuilder.take_lease`) in ``lgsa_locks`` (created
        if missing) on a connection of its own: a ``GET_LOCK`` is one server's, and two
        Galera nodes' migrations would both pass it. Renewed by a thread while the
        migration runs; a killed migrator holds it :data:`MIGRATION_LEASE` s at most.

        Raises:
            MigrationLockTimeout: The lease stayed taken (renewed by a live migration)
                for :data:`MIGRATION_WAIT` seconds.
        """
        # Not from the application's pool, whose connection the migration holds (a pool
        # of one would wait for itself): a pool of the same creator, connect events and
        # engine options (schema_translate_map). The server sees two connections.
        app = connection.engine
        own = create_engine(app.url, pool=app.pool.recreate())
        try:
            with self._leased(own.execution_options(**app.get_execution_options()), connection):
                yield
        finally:
            own.dispose()

    @contextmanager
    def _leased(self, engine: Engine, connection: Connection) -> Iterator[None]:
        schema = connection.get_execution_options().get("schema_translate_map", {}).get(None)
        table = locks.to_metadata(MetaData(), schema=schema)
        table.primary_key.name = None  # see primary_key_name
        create = CreateTable(table, if_not_exists=True)
        with engine.begin() as conn:
            self.ensure_schema(conn, schema)
            conn.execute(create)
        owner = self.new_owner()
        deadline = time.monotonic() + MIGRATION_WAIT
        while not self._try_lease(engine, create, owner):
            if time.monotonic() > deadline:
                raise MigrationLockTimeout(
                    "another process kept the migration lease (row 'lgsa/migrations' of "
                    f"lgsa_locks) for {MIGRATION_WAIT:.0f} s while migrating this database; "
                    "wait for it to finish and run setup() again"
                )
            time.sleep(0.1)
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(MIGRATION_LEASE / 3):
                try:
                    with engine.begin() as conn:
                        self.renew_lease(conn, _MIGRATION_LEASE_NAME, owner, MIGRATION_LEASE)
                except DBAPIError:  # the next renewal tries again
                    continue

        beat = threading.Thread(target=renew, name="lgsa-migration-lease", daemon=True)
        beat.start()
        try:
            yield
            # Commit the version row BEFORE the lease goes: the next process must see
            # it (InnoDB would show it the old snapshot, and its own insert of the
            # same row would then collide). MySQL DDL has committed the rest already.
            connection.exec_driver_sql("COMMIT")
        finally:
            stop.set()
            beat.join()
            with engine.begin() as conn:
                tables = set(inspect(conn).get_table_names(schema=schema))
                if VERSION_TABLE not in tables:  # at base: leave no table of ours
                    conn.execute(DropTable(table, if_exists=True))
                elif locks.name in tables:  # (a downgrade below 0005 dropped it)
                    self.drop_lease(conn, _MIGRATION_LEASE_NAME, owner)

    def _try_lease(self, engine: Engine, create: CreateTable, owner: str) -> bool:
        """:meth:`take_lease` of the migration lease in a transaction of its own; a
        conflict at commit (two Galera nodes) or on the row is a lease not taken, and so
        is a table dropped meanwhile by a downgrade to base (created again)."""
        try:
            with engine.begin() as conn:
                return self.take_lease(conn, _MIGRATION_LEASE_NAME, owner, MIGRATION_LEASE)
        except DBAPIError as e:
            if self.error_code(e.orig) == 1146:  # no such table
                with engine.begin() as conn:
                    conn.execute(create)
                return False
            if self.transient(e) == "conflict":
                return False
            raise

    @contextmanager
    def write_lock(
        self, connection: Connection, thread_id: str, checkpoint_ns: str
    ) -> Iterator[None]:
        """A row of the namespace in ``lgsa_locks``, written first in the transaction and
        deleted again before it commits: its row lock serialises the writers of one
        server until commit, and on a Galera cluster two nodes' transactions that both
        wrote the row fail certification but one (a deadlock error: the saver re-runs the
        loser, whose check then sees the winner's checkpoint). ``GET_LOCK`` would be one
        node's only. Deleting it leaves no row behind (a row per namespace ever written
        would grow with the data) while the write set still names the row."""
        name = _lock_name("put", f"{thread_id}\x00{checkpoint_ns}")
        stmt = self.insert(locks).values(name=name, owner="put", expires_at=0)
        connection.execute(stmt.on_duplicate_key_update(expires_at=stmt.inserted.expires_at + 1))
        yield
        connection.execute(delete(locks).where(locks.c.name == name))


class MariaDBQueryBuilder(MySQLQueryBuilder):
    """The query builder of MariaDB named as such (``mariadb://``): MySQL's, comparing
    JSON with ``JSON_EQUALS``."""

    is_mariadb = True


def _path(key: str) -> str:
    """MySQL/MariaDB JSON path of a top-level key: ``$."key"``, the key spelled as a JSON
    string (``json.dumps``), which is how the stored document spells it: MariaDB matches
    path keys against the document's text, escapes included."""
    return "$." + json.dumps(key)


def _lock_name(kind: str, key: str) -> str:
    digest = hashlib.sha256(f"lgsa/{kind}/{key}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"lgsa:{digest[:48]}"  # MySQL lock names stop at 64 characters


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
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
        if "mariadb" in str(version).lower():
            # A Galera node applies other nodes' commits asynchronously: a read right
            # after a write through another node may miss it (measured: 1 read in 30).
            # wsrep_sync_wait=1 makes each read wait until the node has applied every
            # commit the cluster had when the read began (read-your-writes across nodes).
            # A value set by the URL (init_command) or the server is kept.
            cursor.execute("SELECT @@wsrep_on, @@session.wsrep_sync_wait")
            wsrep_on, sync_wait = cursor.fetchone()
            if int(wsrep_on or 0) and not int(sync_wait or 0):
                cursor.execute("SET SESSION wsrep_sync_wait = 1")
    finally:
        cursor.close()
