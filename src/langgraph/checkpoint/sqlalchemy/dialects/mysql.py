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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    and_,
    cast,
    event,
    func,
    literal,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import URL, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement

from ..errors import ThreadLockTimeout, ValueTooLargeError
from .base import QueryBuilder

__all__ = ["MYSQL_RECURSION_LIMIT", "MariaDBQueryBuilder", "MySQLQueryBuilder"]

#: Recursion allowed to a recursive CTE on MySQL/MariaDB, whose defaults (1,000) are
#: shorter than the delta-history walk's own cap (see ``_history.MAX_CHAIN``).
MYSQL_RECURSION_LIMIT = 100_001

_EXTRA = 'pip install "langgraph-checkpoint-sqlalchemy[mysql]"'


class MySQLQueryBuilder(QueryBuilder):
    """The query builder of MySQL (and of MariaDB reached through ``mysql://``)."""

    family = "mysql"
    sync_drivers = ("pymysql", "mysqldb", "mariadbconnector", "mysqlconnector")
    async_drivers = ("asyncmy",)
    driver_modules: ClassVar[Mapping[str, tuple[str, str]]] = {
        "pymysql": ("pymysql", _EXTRA),
        "asyncmy": ("asyncmy", _EXTRA),
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
    refused_drivers: ClassVar[Mapping[str, str]] = {
        "aiomysql": (
            "aiomysql fails on every binary parameter with PyMySQL >= 1.2 (TypeError: 'str' "
            "object is not callable), and the saver stores every value as bytes; use "
            'mysql+asyncmy:// (pip install "langgraph-checkpoint-sqlalchemy[mysql]")'
        ),
    }
    extra = _EXTRA
    #: 4-byte UTF-8 (emoji) in ids and metadata; the tables are utf8mb4 too.
    url_query: ClassVar[Mapping[str, str]] = {"charset": "utf8mb4"}
    #: Each DDL statement commits; the migrations are written to be re-runnable.
    transactional_ddl = False
    #: ``GET_LOCK`` locks are the session's (:meth:`try_thread_lock`).
    thread_lock_uses_connection = True
    #: Whether the server is known to be MariaDB without asking the connection.
    is_mariadb: ClassVar[bool] = False

    def __init__(self) -> None:
        self._value_limit: int | None = None

    @classmethod
    def configure(cls, engine: Engine) -> None:
        """A recursive-CTE limit (:data:`MYSQL_RECURSION_LIMIT`) that lets long parent
        chains be walked, set on every new connection."""
        if not event.contains(engine, "connect", _on_connect):
            event.listen(engine, "connect", _on_connect)

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
        first connect: MariaDB or MySQL, ``ANSI_QUOTES``, backslash escapes."""
        extra: Any = dialect
        return (
            *super().compile_key(dialect),
            getattr(extra, "is_mariadb", None),
            getattr(extra, "_server_ansiquotes", None),
            getattr(extra, "_backslash_escapes", None),
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
        self, column: Any, key: str, value: Any, text: str, dialect: Dialect | None
    ) -> ColumnElement[bool]:
        """``JSON_EXTRACT`` with a quoted path, compared with ``JSON_EQUALS`` (MariaDB) or
        as JSON (MySQL)."""
        extracted = func.json_extract(column, literal(_path(key), Text))
        if self.is_mariadb or getattr(dialect, "is_mariadb", False):
            return func.json_equals(extracted, literal(text, Text)) == 1
        return extracted == cast(literal(text, Text), mysql.JSON)

    def json_has_key(self, column: Any, key: str) -> ColumnElement[bool]:
        """``JSON_CONTAINS_PATH`` with a quoted path."""
        return func.json_contains_path(column, "one", literal(_path(key), Text)) == 1

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

    def translate_error(self, error: DBAPIError) -> Exception | None:
        """A statement larger than ``max_allowed_packet`` (error 1153, or 1301 for a value
        over it) is a :class:`ValueTooLargeError` naming the setting. The transaction was
        rolled back, so nothing of the call is stored."""
        code = getattr(error.orig, "args", (None,))[0] if error.orig is not None else None
        if code in (1153, 1301):
            return ValueTooLargeError(
                "a checkpoint value or write is larger than the server accepts in one "
                "statement (MySQL/MariaDB max_allowed_packet); raise the limit, e.g. "
                "SET GLOBAL max_allowed_packet = 268435456 (or in the server's config), or "
                "store less in the channel. Nothing of this call was stored."
            )
        return None

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
        """``GET_LOCK``, released on exit after committing the migration's work.

        Raises:
            TimeoutError: The lock was not granted within 300 s.
        """
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

    @contextmanager
    def write_lock(
        self, connection: Connection, thread_id: str, checkpoint_ns: str
    ) -> Iterator[None]:
        """``GET_LOCK`` on a name made of a hash of the key, held until the block's work
        is committed.

        Raises:
            ThreadLockTimeout: The lock was not granted within 30 s.
        """
        name = _lock_name("put", f"{thread_id}\x00{checkpoint_ns}")
        got = connection.execute(select(func.get_lock(name, 30))).scalar()
        if got != 1:
            raise ThreadLockTimeout(f"thread {thread_id!r} stayed locked for 30 s")
        try:
            yield
            connection.exec_driver_sql("COMMIT")  # before the lock goes, as migrations
        finally:
            connection.execute(select(func.release_lock(name)))

    def try_thread_lock(self, connection: Connection | None, url: URL, thread_id: str) -> Any:
        """``GET_LOCK`` with no wait on ``connection``; the handle is the lock's name."""
        assert connection is not None
        name = _lock_name("thread", thread_id)
        got = connection.execute(select(func.get_lock(name, 0))).scalar()
        connection.commit()
        return name if got == 1 else None

    def release_thread_lock(self, connection: Connection | None, handle: Any) -> None:
        """``RELEASE_LOCK``."""
        assert connection is not None
        connection.execute(select(func.release_lock(handle)))
        connection.commit()


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
    finally:
        cursor.close()
