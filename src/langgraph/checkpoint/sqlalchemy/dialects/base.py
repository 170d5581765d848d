"""The query builder's base class: the portable behaviour, and what a dialect must add
(one cohesive interface: every statement and setting the saver and the store ask of a
dialect, which is why it is longer than most modules).

:class:`QueryBuilder` holds every statement and setting the saver asks of a dialect,
with portable SQLAlchemy Core (or the behaviour most dialects share) as the default. Each
dialect family subclasses it in a module of its own (:mod:`.sqlite`, :mod:`.postgresql`,
:mod:`.mysql`), overriding only what differs there, and is registered by dialect name in
:mod:`langgraph.checkpoint.sqlalchemy.dialects`. The abstract members (the insert
construct, JSON key lookups, the locks) have no portable form: every family provides
them. The model is Alembic's ``DefaultImpl`` (``alembic/ddl/impl.py``) and its
per-dialect subclasses.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from langgraph.checkpoint.sqlalchemy._codec.canonical import (
    MAX_DEPTH,
    json_string,
    json_text,
    scalar_as_stored,
)
from langgraph.checkpoint.sqlalchemy._codec.metakeys import filter_value
from langgraph.checkpoint.sqlalchemy.dialects._ann import VectorIndex
from langgraph.checkpoint.sqlalchemy.dialects._drivers import DriverArguments
from langgraph.checkpoint.sqlalchemy.dialects._errors import DriverErrors
from langgraph.checkpoint.sqlalchemy.dialects._json_filters import JsonFilters
from langgraph.checkpoint.sqlalchemy.dialects._leases import LeaseRows
from langgraph.checkpoint.sqlalchemy.dialects._orders import ListingOrders
from langgraph.checkpoint.sqlalchemy.errors import ValueTooLargeError
from langgraph.checkpoint.sqlalchemy.schema import metadata_index
from sqlalchemy import (
    Connection,
    Engine,
    Table,
    Text,
    bindparam,
    event,
    literal,
    select,
    tuple_,
)
from sqlalchemy.engine import URL, Dialect, ExceptionContext
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateSchema
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.types import TypeEngine

__all__ = ["NO_TRANSACTION_OPTION", "WRITE_OPTION", "Binder", "QueryBuilder"]

Binder = Callable[[Any, Any], ColumnElement[Any]]
"""How a filter value enters a condition: ``bind(value, type_)`` returns the bound
value (default ``literal``: an anonymous parameter). The store passes one that names
each parameter by its position, so that a statement built once serves every value."""

#: Execution option that marks a transaction that will write. SQLite opens it with
#: ``BEGIN IMMEDIATE`` so that a read-then-write transaction never fails to upgrade its
#: lock; other dialects ignore it.
WRITE_OPTION = "lgsa_write"
#: Execution option: read without an explicit transaction on SQLite (no ``BEGIN``).
NO_TRANSACTION_OPTION = "lgsa_no_transaction"
#: Execution option of the one-statement accesses: ``idle(dbapi_connection)``, whether
#: the driver's connection is outside a transaction (None: the driver cannot tell). Where
#: a dialect gives it, the engine's short door may keep its connection checked out
#: between calls (``_engine.lane``), checking it is idle after each.
IDLE_OPTION = "lgsa_idle"


class QueryBuilder(ListingOrders, LeaseRows, JsonFilters, DriverErrors, DriverArguments, ABC):
    """Builds the dialect-specific statements of the saver.

    One instance per saver, made by :func:`~langgraph.checkpoint.sqlalchemy.dialects.query_builder`
    from the dialect name of its engines. Every statement it returns is a SQLAlchemy
    construct with bound parameters, so SQLAlchemy's compiled statement cache serves
    repeated calls.

    The class attributes below describe the dialect family's drivers (read when the saver
    or the store resolves a URL into its two engines) and its settings; the
    methods are the portable defaults, overridden where a dialect differs.
    """

    #: Name of the family in messages and driver names (``mysql`` for MariaDB too).
    family: ClassVar[str]
    #: Drivers that serve the sync methods, in order of preference: the first installed
    #: one is the twin of an async-only URL (and serves a URL naming no driver).
    sync_drivers: ClassVar[tuple[str, ...]]
    #: Drivers that serve the async methods, likewise (a driver may serve both sides).
    async_drivers: ClassVar[tuple[str, ...]]
    #: The module each driver imports, and what to install when it is missing.
    driver_modules: ClassVar[Mapping[str, tuple[str, str]]]
    #: Drivers SQLAlchemy documents that the saver refuses, and why.
    refused_drivers: ClassVar[Mapping[str, str]] = {}
    #: What to install for the family's default drivers.
    extra: ClassVar[str]
    #: Other URL schemes of the family, rewritten to the dialect name (``postgres``).
    url_aliases: ClassVar[tuple[str, ...]] = ()
    #: Query parameters added to the family's URLs unless the URL sets them.
    url_query: ClassVar[Mapping[str, str]] = {}

    #: Whether the async methods run the operation on the sync engine in a worker thread
    #: (``asyncio.to_thread``) instead of on the async engine (see :mod:`.sqlite`).
    async_in_thread: ClassVar[bool] = False
    #: Keys put in one ``(a, b, ...) IN (...)`` list (:meth:`keys_in`). PostgreSQL parses
    #: a long IN list recursively and stops at ``max_stack_depth`` (2 MB: between 7,000
    #: and 8,000 pairs); SQLite caps bound parameters at 32,766. Reads split longer lists
    #: into chunks.
    in_list_chunk: ClassVar[int] = 500
    #: Ids put in one IN list / rows handled by one batched maintenance statement.
    row_chunk: ClassVar[int] = 500
    #: Whether writers take turns: a write transaction holds the database's one write
    #: lock from its first write to its commit (SQLite), so that what it reads after
    #: writing, no other transaction changes before it commits.
    serial_writes: ClassVar[bool] = False
    #: Whether DDL runs inside the migration transaction (not on MySQL/MariaDB, where each
    #: DDL statement commits; their migrations are written to be re-runnable).
    transactional_ddl: ClassVar[bool] = True
    #: Whether a statement may carry other data-changing statements in its ``WITH``
    #: clause (PostgreSQL's data-modifying CTEs): a put with blob rows and a
    #: delete_thread are then one statement, atomic on its own, one round trip
    #: (:meth:`combine_writes`).
    dml_in_cte: ClassVar[bool] = False
    #: Whether filters read :data:`.schema.metadata_index` (PostgreSQL: a GIN index).
    metadata_index_rows: ClassVar[bool] = True

    @classmethod
    def check_url(cls, url: URL) -> bool:
        """Check a URL of the family beyond what SQLAlchemy checks at parse time.

        Called when the saver, the store or the command line resolves a URL, before any
        engine is made. The default accepts every URL.

        Args:
            url: The parsed URL (scheme aliases already rewritten).

        Returns:
            True when the URL names an in-memory database, which the saver then makes
            once and shares between its sync and async engines; False otherwise.

        Raises:
            DatabaseURLError: A URL SQLAlchemy would accept but read otherwise than it
                looks (the message lists the valid forms).
        """
        return False

    @classmethod
    def database_file(cls, url: URL) -> str | None:
        """The absolute path of the file a URL's database lives in, for tools that must
        not create a database by reading one (the CLI's read-only commands).

        Args:
            url: A URL as the saver resolved it (scheme aliases rewritten, the driver
                named).

        Returns:
            The path, or None for a server database (the default), an in-memory one or
            one whose location is the driver's to read.
        """
        return None

    @classmethod
    def configure(cls, engine: Engine) -> None:
        """Install the dialect's connection set-up on a sync engine (idempotent).

        Called on every engine the saver or the store uses, its own or one given. The
        default installs the ``handle_error`` listener that tells SQLAlchemy which more
        errors are disconnects (:meth:`is_disconnect`).
        """
        listener = _disconnect_listener(cls)
        if not event.contains(engine, "handle_error", listener):
            event.listen(engine, "handle_error", listener)

    @classmethod
    def value_reader(cls, dialect: Dialect) -> Callable[[Any], None] | None:
        """What to do to a DBAPI cursor of ``dialect`` before it runs a read whose rows
        carry stored values (channel values, pending writes); None (the default):
        nothing."""
        return None

    @classmethod
    def compile_key(cls, dialect: Dialect) -> tuple[Any, ...]:
        """What the SQL compiled for a dialect instance depends on besides the statement
        and the schema map: statements compiled once are shared by every engine whose
        dialect gives the same key (the hot-path statements run on the DBAPI cursor).

        Default: the dialect's class (driver included), parameter style, server version
        and identifier limits, which SQLAlchemy reads from the server at first connect.
        A family whose compiled SQL depends on more server settings adds them.

        Args:
            dialect: An initialised dialect (the engine has connected).

        Returns:
            A hashable key.
        """
        return (
            type(dialect),
            dialect.paramstyle,
            dialect.server_version_info,
            dialect.max_identifier_length,
            dialect.label_length,
        )

    def combine_writes(self, main: Any, *others: Any) -> Any:
        """One statement running ``others`` (INSERT/DELETE constructs) in its ``WITH``
        clause, then ``main``; all see one snapshot and commit together. Only where
        :attr:`dml_in_cte` (the caller checks it).

        Args:
            main: The statement whose own result is the statement's.
            *others: Data-changing statements run before it, whose results nothing reads.

        Returns:
            ``main`` with ``others`` as CTEs named ``lgsa_w0``, ``lgsa_w1``, ...
        """
        return main.add_cte(*(o.cte(f"lgsa_w{i}") for i, o in enumerate(others)))

    # -- transactions ----------------------------------------------------------------

    @property
    def one_statement_read_options(self) -> dict[str, Any]:
        """Execution options of a read that is one statement (``get_tuple``): by default
        none, so it runs in a transaction of its own. A dialect where a single statement
        can run without a transaction saves the ``BEGIN``/``ROLLBACK`` round trips; a
        single statement reads one snapshot on every database.
        """
        return {}

    @property
    def one_statement_write_options(self) -> dict[str, Any]:
        """Execution options of a write that is one statement (a put whose values are all
        in the checkpoint row, a put_writes of one batch): a statement is atomic on its
        own, so it takes the options of :attr:`one_statement_read_options`.
        """
        return self.one_statement_read_options

    # -- composite-key lookups -------------------------------------------------------

    def keys_in(self, columns: Sequence[Any], count: int) -> ColumnElement[bool]:
        """Condition: ``columns`` equal one of ``count`` keys (composite primary-key
        lookups), with bound parameters filled by :meth:`keys_params`.

        Default: ``(a, b) IN ((?, ?), ...)`` (one expanding parameter). At most
        :attr:`in_list_chunk` keys. Build it once per ``count`` and reuse it: the
        compiled statement is then cached.
        """
        return tuple_(*columns).in_(bindparam("keys", expanding=True))

    def keys_params(self, keys: Sequence[Sequence[Any]]) -> dict[str, Any]:
        """The bound parameters of a :meth:`keys_in` condition for ``keys``."""
        return {"keys": [tuple(k) for k in keys]}

    @staticmethod
    def key_labels(width: int) -> tuple[str, ...]:
        """Labels of :meth:`keys_in`'s names ``<label>_<key>`` (``k0_0, k1_0, ...``), if any."""
        return tuple(f"k{j}" for j in range(width))

    # -- inserts ---------------------------------------------------------------------

    @abstractmethod
    def insert(self, table: Table) -> Any:
        """The dialect's own ``INSERT`` construct for ``table`` (``sqlite.insert``, ...),
        the one that carries its conflict clauses."""

    def insert_ignore(self, table: Table) -> Insert:
        """``INSERT`` that keeps the existing row when the primary key is taken.

        Default: ``ON CONFLICT DO NOTHING``. Use with a list of parameter dicts
        (executemany).
        """
        return self.insert(table).on_conflict_do_nothing()  # type: ignore[no-any-return]

    def upsert(self, table: Table, update: Sequence[str]) -> Insert:
        """``INSERT`` that overwrites the ``update`` columns when the primary key is taken.

        Default: ``ON CONFLICT (pk) DO UPDATE SET col = excluded.col``.
        """
        stmt = self.insert(table)
        return stmt.on_conflict_do_update(  # type: ignore[no-any-return]
            index_elements=list(table.primary_key.columns),
            set_={c: stmt.excluded[c] for c in update},
        )

    def json_text_type(self) -> TypeEngine[Any]:
        """The type that binds a JSON document's text, written already, into a JSON
        column: the store writes the text it checked and measured, never a second
        serialisation. Default: the text as it is (SQLAlchemy's JSON types bind
        ``json.dumps`` text as a plain string on SQLite and MySQL/MariaDB)."""
        return Text()

    def upsert_rows(
        self, table: Table, columns: Sequence[str], update: Sequence[str], types: Any
    ) -> Any:
        """:meth:`upsert` of any number of rows bound as one JSON array of rows
        (parameter ``rows``; each row's ``columns`` in order, elements of
        ``types[column]``), or None where the dialect has no such form (the default:
        multi-row ``VALUES``)."""
        return None

    # -- metadata filters ------------------------------------------------------------

    def check_filter(self, key: object, value: Any) -> tuple[str, str]:
        """Check one metadata filter item; return its key (NUL removed) and value as JSON text.

        Raises:
            TypeError: ``key`` is not a string or ``value`` is not JSON.
            ValueError: ``value`` holds NaN, an infinite float or a 64-bit overflow, or
                nests dicts and lists deeper than 30 levels (stored metadata may nest
                31: MariaDB refuses 32), and whatever key a dialect cannot address.
        """
        if not isinstance(key, str):
            raise TypeError(f"metadata filter keys must be strings, got {type(key).__name__}")
        # The value sits one level below the metadata document's top.
        return json_string(key), json_text(value, depth=MAX_DEPTH - 1)

    def metadata_equals(
        self,
        column: Any,
        key: str,
        value: Any,
        dialect: Dialect | None = None,
        bind: Binder = literal,
    ) -> ColumnElement[bool]:
        """Condition: the top-level metadata ``key`` equals the JSON value ``value``.

        One semantics on every dialect: the value is compared as JSON, so ``True`` does not
        match ``1``, ``None`` matches an explicit JSON ``null`` only (not a missing key),
        dicts match regardless of key order, lists element by element, and numbers as
        numbers (``1`` matches ``1.0``, at any depth). NUL characters are removed from the
        key and the value, as from stored metadata (stored as canonical JSON: keys sorted,
        no NUL). Key and
        value are bound parameters; no SQL text is built from them. Each dialect writes
        the comparison in :meth:`json_member_equals`.

        Args:
            column: The JSON metadata column.
            key: Top-level key.
            value: JSON value: str, int, float, bool, None, list or dict.
            dialect: The dialect of the connection that runs the query. A ``mysql://`` URL
                may reach a MariaDB server, which SQLAlchemy learns on connecting; MariaDB
                and MySQL compare JSON differently.
            bind: Makes the bound parameters of what depends on ``value`` (not on
                ``key``): the same calls, in the same order, for every value of the
                same type under the same key (a :data:`Binder`).

        Raises:
            TypeError: ``key`` is not a string or ``value`` is not JSON.
            ValueError: ``value`` holds NaN, an infinite float or a 64-bit overflow.
        """
        key, text = self.check_filter(key, value)
        return self.json_member_equals(column, key, scalar_as_stored(value), text, dialect, bind)

    @abstractmethod
    def json_member_equals(
        self, column: Any, key: str, value: Any, text: str, dialect: Dialect | None, bind: Binder
    ) -> ColumnElement[bool]:
        """Condition of :meth:`metadata_equals` for a checked ``key`` and ``value``
        (``text``: the value as canonical JSON text), every part that depends on the
        value made by ``bind``."""

    def metadata_index_filter(
        self, table: Table, key: str, text: str, indexed: bool
    ) -> ColumnElement[bool] | None:
        """An indexed condition implied by :meth:`metadata_equals` of ``key`` and JSON
        ``text`` (which still decides), or None. Default, when ``indexed`` (the key's
        :data:`.schema.metadata_index` rows are complete): the checkpoint key ``IN`` the
        key's index rows for the filter value's coarse index value (``EXPLAIN``: SQLite and
        MariaDB read that range, then the checkpoints by primary key)."""
        if not indexed:
            return None
        mi, c = metadata_index.c, table.c
        values = filter_value(text)  # two for zero only; ``=`` keeps MariaDB's plan
        value = mi.value == values[0] if len(values) == 1 else mi.value.in_(values)
        rows = select(mi.thread_id, mi.checkpoint_ns, mi.checkpoint_id).where(mi.key == key, value)
        return tuple_(c.thread_id, c.checkpoint_ns, c.checkpoint_id).in_(rows)

    @abstractmethod
    def json_has_key(self, column: Any, key: str | BindParameter[str]) -> ColumnElement[bool]:
        """Condition: the JSON object in ``column`` has the top-level key ``key``: a name
        (bound as a parameter), or a bound parameter whose value is :meth:`json_key_value`
        of the name (a statement built once for any key)."""

    def json_key_value(self, key: str) -> str:
        """The value of a bound ``key`` of :meth:`json_has_key` testing for ``key``: itself."""
        return key

    # -- the store (langgraph.store.sqlalchemy) -------------------------------------

    #: The end-of-text anchor of :meth:`regexp_match`'s syntax: Python's ``\\Z`` (SQLite
    #: runs Python's ``re``); ``$`` also matches before a final newline there and in PCRE.
    regexp_end: ClassVar[str] = "\\Z"

    def regexp_match(self, column: Any, pattern: str) -> ColumnElement[bool]:
        """Condition: ``column`` matches the regular expression ``pattern`` (a bound
        parameter, written by :func:`..store.namespaces.match_pattern` for every
        dialect's engine). Default: SQLAlchemy's ``regexp_match`` (``~`` on PostgreSQL,
        ``REGEXP`` on MySQL/MariaDB, and on SQLite the ``regexp`` function SQLAlchemy's
        pysqlite dialect registers)."""
        return column.regexp_match(pattern)  # type: ignore[no-any-return]

    #: Items under a search prefix from which a search newest first should walk the
    #: ``updated_at`` index (checking each entry's namespace) rather than read the
    #: prefix's range of the primary key and sort it; None: the planner decides from its
    #: statistics (PostgreSQL, MySQL/MariaDB).
    walk_from: int | None = None

    def walk_column(self, column: Any) -> Any:
        """``column`` as a walk newest first checks it (:attr:`walk_from`): default as is."""
        return column

    def walking(self, connection: Connection, on: bool) -> None:
        """Make the planner walk the ``updated_at`` index for the rest of the read
        transaction (``on``), or decide again (not ``on``); told at every search under a
        prefix, so a call that changes nothing should cost nothing. Default: nothing."""

    def vector_index(self) -> VectorIndex | None:
        """The server's native vector column and ANN index (a
        :class:`~langgraph.checkpoint.sqlalchemy.dialects.VectorIndex`, the same object
        at every call), or None: the store scores vectors exactly.
        Default: None."""
        return None

    def vector_similarity(
        self, connection: Connection, column: Any, query: bytes | None, distance: str = "cosine"
    ) -> ColumnElement[float] | None:
        """The score of a packed float32 vector ``column`` against ``query`` by the index
        config's ``distance`` (``"cosine"``, ``"l2"``, ``"inner_product"``; higher is
        closer, the formulas of :mod:`langgraph.store.sqlalchemy.vectors`) computed by the
        database, or None when the store scores vectors itself in batches
        (:func:`langgraph.store.sqlalchemy.vectors.vector_scores`). Default: None."""
        return None

    # -- value sizes and errors ------------------------------------------------------
    # (The driver errors a user can fix, a full disk among them: ._errors.DriverErrors.)

    def value_limit(self, connection: Connection) -> int | None:
        """Largest value (bytes) a statement may carry here, or None (default: no check)."""
        return None

    def too_large(self, size: int, limit: int) -> ValueTooLargeError:
        """The error for a value of ``size`` bytes over ``limit`` (see :meth:`value_limit`).

        Every dialect whose :meth:`value_limit` returns a limit overrides it.

        Raises:
            NotImplementedError: Always, in the base class.
        """
        raise NotImplementedError(f"{type(self).__name__} has no value limit")

    def text_limit(self, connection: Connection) -> int | None:
        """Largest JSON text one statement may carry here, in bytes as :meth:`sent_size`
        counts them (escaped), or None (no check): the packet that :meth:`value_limit`
        keeps half of for unescaped values (MySQL/MariaDB's ``max_allowed_packet``), less
        64 KiB for the rest of the statement."""
        limit = self.value_limit(connection)
        return None if limit is None else max(2 * limit - 65536, 0)

    @staticmethod
    def sent_size(text: str) -> int:
        """The bytes JSON ``text`` (ASCII, as SQLAlchemy and the store write JSON) takes
        in a statement at most: its length plus one for each character escaped in a
        quoted literal (backslash and quotes), the form PyMySQL and asyncmy send
        parameters in. Measured on MariaDB 10.11 (16 MiB packet): 15.5 MiB of plain text
        passes, 9 MiB of quotes (18 MiB escaped) is refused."""
        return len(text) + text.count("\\") + text.count('"') + text.count("'")

    def small_reads(self, connection: Connection) -> None:
        """No parallel plan or JIT for the rest of this read transaction (default: nothing)."""

    def table_estimates(
        self, connection: Connection, sizes: Mapping[Table, ColumnElement[Any]]
    ) -> dict[str, dict[str, int]] | None:
        """``{table name: {"rows": n, "bytes": b}}`` of the tables of ``sizes`` (each
        with the expression of a row's serialised bytes), non-negative estimates from the
        database's own statistics in O(1) (``storage_stats(estimate=True)``), or None
        (the default: no statistics; the caller counts exactly). The connection's
        ``schema_translate_map`` names the schema."""
        return None

    # -- schema and migrations -------------------------------------------------------

    def ensure_schema(self, connection: Connection, schema: str | None) -> None:
        """Create the schema ``schema`` if it does not exist (``CREATE SCHEMA IF NOT
        EXISTS``); no-op when ``schema`` is None."""
        if schema:
            connection.execute(CreateSchema(schema, if_not_exists=True))

    def primary_key_name(self, name: str) -> str | None:
        """The name to give a primary key constraint in DDL: ``name`` by default."""
        return name

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
        """DDL that turns server-side compression of binary value columns on or off
        (revision ``0004``): for a database that stores long values uncompressed and
        out of the row's page. The default is none: the database compresses already
        (PostgreSQL's TOAST) or has no such option.

        Args:
            dialect: The migration's dialect (server version, identifier quoting).
            table: The table's name.
            columns: ``(column, nullable)`` of each binary column.
            schema: The table's schema, or None.
            compressed: Turn compression on (upgrade) or off (downgrade).
            offline: Alembic's ``--sql`` mode: no server to ask its version.

        Returns:
            Statements to run, in order.
        """
        return []

    def ensure_version_table(self, connection: Connection, name: str, schema: str | None) -> None:
        """Create Alembic's version table ahead of Alembic where Alembic's own DDL would
        draw a warning. The default does nothing: Alembic creates it."""
        return None

    @abstractmethod
    @contextmanager
    def migration_lock(self, connection: Connection) -> Iterator[None]:
        """Serialise schema migrations across processes, within the open transaction.

        Args:
            connection: A connection inside the migration transaction.
        """
        yield  # pragma: no cover

    # -- per-thread locks ------------------------------------------------------------

    @abstractmethod
    @contextmanager
    def write_lock(
        self, connection: Connection, thread_id: str, checkpoint_ns: str
    ) -> Iterator[None]:
        """Serialise the writers of one ``(thread_id, checkpoint_ns)`` until the open
        transaction ends (the conflict check of ``detect_conflicts``)."""
        yield  # pragma: no cover

    # -- transient failures -------------------------------------------------------------

    @classmethod
    def is_disconnect(cls, error: BaseException | None) -> bool:
        """Whether a driver error means the connection (or the server behind it) is
        gone or unusable, beyond what SQLAlchemy's dialect already knows: the pool then
        drops the connection and every older one (SQLAlchemy's ``handle_error`` event,
        installed by :meth:`configure`). The default: nothing more."""
        return False

    def transient(self, error: DBAPIError) -> str | None:
        """What kind of transient failure ``error`` is, for the saver's retry:
        ``"read-only"`` (the server takes no writes: a standby, a promotion under way),
        ``"connection"`` (the connection was lost or could not be made),
        ``"conflict"`` (the transaction lost to a concurrent one: a deadlock, a
        serialization failure, a Galera certification conflict), or None (not
        transient: raise it). Every operation of the saver is idempotent, so each kind
        may be re-run.

        A lost connection is known by SQLAlchemy's mark (``connection_invalidated``) or
        by the dialect's own :meth:`is_disconnect`: SQLAlchemy does not mark an error
        raised while it handles another (a rollback failing after a failed statement,
        seen on a Galera node leaving the primary component: 1047 on the rollback of a
        refused commit)."""
        if error.connection_invalidated or self.is_disconnect(error.orig):
            return "connection"
        return None


_LISTENERS: dict[type[QueryBuilder], Callable[[ExceptionContext], None]] = {}


def _disconnect_listener(cls: type[QueryBuilder]) -> Callable[[ExceptionContext], None]:
    """The ``handle_error`` listener of a dialect family (one function per family, so
    that installing it twice is detected)."""
    found = _LISTENERS.get(cls)
    if found is None:

        def on_error(context: ExceptionContext) -> None:
            if not context.is_disconnect and cls.is_disconnect(context.original_exception):
                context.is_disconnect = True

        found = _LISTENERS[cls] = on_error
    return found
