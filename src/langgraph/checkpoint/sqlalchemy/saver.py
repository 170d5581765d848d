"""``SQLAlchemySaver``: one LangGraph checkpoint saver for SQLite, PostgreSQL and MySQL.

Each database operation is written once, as a sync function on a SQLAlchemy
``Connection`` (:mod:`._ops`). Sync methods run it on the sync engine; async methods run
the same function on the async engine through ``AsyncConnection.run_sync``. Both engines
are made from one URL and see the same data. Every dialect difference lives in
:mod:`.dialects`.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
import random
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime, timedelta, timezone
from types import TracebackType
from typing import Any, Concatenate, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from typing_extensions import ParamSpec, Self

from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.sql.elements import ColumnElement

from . import _history, _inline, _maintenance, _ops, _strict, migrate
from ._canonical import canonical_json
from ._engines import configure_engine, resolve_urls
from ._loops import PerLoopEngines
from ._maintenance import ThreadInfo
from .dialects import WRITE_OPTION, query_builder
from .errors import (
    CheckpointConfigError,
    CheckpointConnectionError,
    CheckpointDecodeError,
    CheckpointMetadataError,
    SchemaOutOfDateError,
    ThreadLockTimeout,
    ThreadNotEmptyError,
    UnsupportedDriverError,
)
from .schema import (
    CHANNEL_MAX_LENGTH,
    CHECKPOINT_NS_MAX_LENGTH,
    ID_MAX_LENGTH,
    THREAD_ID_MAX_LENGTH,
    checkpoints,
    promoted_source,
    promoted_step,
    run_key,
    stored_full,
)

__all__ = ["SQLAlchemySaver"]

logger = logging.getLogger("langgraph.checkpoint.sqlalchemy")

P = ParamSpec("P")
R = TypeVar("R")

_PrunePlan = list[tuple[Callable[..., None], tuple[Any, ...]]]
"""Transactions of a prune: ``(op, args)`` each run as ``op(conn, *args)``."""

#: Tries of an operation when the server drops the connection under it (see
#: ``SQLAlchemySaver._raise_unless_retry``).
_ATTEMPTS = 2

# How an operation reaches the database (SQLAlchemySaver._connect).
_READ = "read"  # a read transaction (several statements, one snapshot where the
#: database gives one)
_READ_ONE = "read-one"  # one statement, no transaction around it
_WRITE = "write"  # a write transaction (BEGIN IMMEDIATE on SQLite)
_WRITE_ONE = "write-one"  # one statement, atomic on its own, no transaction around it
#: Seconds between two tries of a thread lock held elsewhere.
_LOCK_POLL = 0.05

#: Checkpoints fetched per round trip while ``list()`` iterates; no connection is held
#: between pages, so the caller may use the saver inside the loop.
LIST_PAGE_SIZE = 100


def _text_id(value: Any, name: str, limit: int, *, required: bool) -> str | None:
    if value is None or value == "":
        if required:
            raise CheckpointConfigError(
                f"config['configurable']['{name}'] is required: pass "
                f"{{'configurable': {{'{name}': ...}}}} when you invoke the graph."
            )
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, uuid.UUID)):
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] must be a string (or int/UUID), got "
            f"{type(value).__name__}."
        )
    text = _check_text(str(value), name)
    if len(text) > limit:
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] is {len(text)} characters long; the limit "
            f"is {limit}. Use a shorter id (for example a hash of it)."
        )
    return text


def _check_text(text: str, name: str) -> str:
    if "\x00" in text:
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] contains a NUL character, which databases "
            "cannot store in text columns; remove it."
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] is not valid Unicode (it holds a lone "
            "surrogate); pass a proper string."
        ) from None
    return text


def _check_channel(channel: str) -> None:
    # As for ids: PostgreSQL text (and JSONB keys) cannot hold NUL, and no driver encodes
    # a lone surrogate; refuse both on every dialect rather than fail with a driver error
    # on some and store on others.
    if not isinstance(channel, str):
        raise CheckpointConfigError(f"channel names must be strings, got {type(channel).__name__}.")
    if "\x00" in channel or not _encodable(channel):
        raise CheckpointConfigError(
            f"channel name {channel[:40]!r} contains a NUL character or a lone surrogate, "
            "which databases cannot store; rename the channel."
        )


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _namespace(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CheckpointConfigError(
            f"config['configurable']['checkpoint_ns'] must be a string, got {type(value).__name__}."
        )
    _check_text(value, "checkpoint_ns")
    if len(value) > CHECKPOINT_NS_MAX_LENGTH:
        raise CheckpointConfigError(
            f"checkpoint_ns is {len(value)} characters long; the limit is "
            f"{CHECKPOINT_NS_MAX_LENGTH} (subgraphs nested too deep to store)."
        )
    return value


def _configurable(config: RunnableConfig | None) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise CheckpointConfigError(f"config must be a dict, got {type(config).__name__}.")
    configurable = config.get("configurable")
    if configurable is None:
        return {}
    if not isinstance(configurable, dict):
        raise CheckpointConfigError("config['configurable'] must be a dict.")
    return configurable


def _checkpoint_key(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id or None)`` of a config (LangGraph rules:
    thread_id required; checkpoint_ns defaults to ""; an empty checkpoint_id means latest).
    """
    c = _configurable(config)
    thread_id = _text_id(c.get("thread_id"), "thread_id", THREAD_ID_MAX_LENGTH, required=True)
    checkpoint_id = _text_id(c.get("checkpoint_id"), "checkpoint_id", ID_MAX_LENGTH, required=False)
    return cast(str, thread_id), _namespace(c.get("checkpoint_ns")), checkpoint_id


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


class SQLAlchemySaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpoint saver on any SQLAlchemy engine: SQLite, PostgreSQL, MySQL.

    Implements the ``BaseCheckpointSaver`` contract of ``langgraph-checkpoint`` 4 (get_tuple,
    list, put, put_writes, delete_thread, get_next_version), each sync and async. Sync
    methods use a sync engine, async methods an async engine for the same database; give
    either or both, the missing one is made from the other's URL (and disposed by
    :meth:`close`). The usual entry point is :meth:`from_conn_string`.

    The tables are created and migrated by Alembic: call :meth:`setup` (or
    :meth:`asetup`) once, or run ``alembic upgrade head`` / ``python -m
    langgraph.checkpoint.sqlalchemy upgrade --url URL``.

    No lock is held by the saver itself: concurrent calls use the engines' connection
    pools, and ``list()`` releases its connection before it yields each page.

    Any event loop, any thread: the async methods work from successive ``asyncio.run()``
    calls and from threads each running a loop; each loop uses an async engine of its own
    (the first one ``async_engine``, others a copy of it with its own pool), so a
    connection is never used on a loop other than its own. Construction, every method,
    :meth:`close` and :meth:`aclose` may run on any thread.

    Args:
        engine: Sync engine. Made from ``async_engine``'s URL when omitted.
        async_engine: Async engine. Made from ``engine``'s URL when omitted.
        serde: Serializer of checkpoints, channel values and writes (default:
            ``JsonPlusSerializer``; wrap it in ``EncryptedSerializer`` to encrypt at rest).
        schema: PostgreSQL schema holding the tables (default: the search path).
        inline_limit: Largest serialised channel value, in bytes, stored in the
            checkpoint's own row rather than in the blobs table (0 to 16,384; default
            16,384). See :mod:`._inline`.
        detect_conflicts: Refuse, with :class:`CheckpointConflictError`, a checkpoint of a
            run (metadata ``source`` ``"input"`` or ``"loop"``) whose parent is no longer
            the newest checkpoint of its namespace: a second run started from the same
            state fails at its first write instead of silently forking the thread.
            Deliberate forks (``update_state``, replays: sources ``"update"``/``"fork"``)
            pass. Costs a lock and a primary-key lookup a put.
        strict_decode: Raise :class:`CheckpointDecodeError` (naming the thread, checkpoint
            and channel or write) when a stored object cannot be rebuilt as its class
            (module gone, constructor rejects the stored fields, type not allowed),
            instead of LangGraph's default of handing back its raw fields as a dict. None
            (default): on when ``LANGGRAPH_STRICT_MSGPACK`` is 1/true/yes at
            construction. See :mod:`._strict`.

    Raises:
        ValueError: Neither engine was given, or ``inline_limit`` is out of range.
        UnsupportedDialectError: The engine's dialect is not supported.
        UnsupportedDriverError: ``engine`` is an async driver's engine.
        DriverNotInstalledError: The missing engine needs a driver of the other side
            (sync or async) and none of its dialect is installed; the message names the
            extra to install.

    Example:
        ```python
        with SQLAlchemySaver.from_conn_string("sqlite:///checkpoints.sqlite") as saver:
            saver.setup()
            graph = builder.compile(checkpointer=saver)
            graph.invoke(inputs, {"configurable": {"thread_id": "1"}})
        ```
    """

    def __init__(
        self,
        engine: Engine | None = None,
        async_engine: AsyncEngine | None = None,
        *,
        serde: SerializerProtocol | None = None,
        schema: str | None = None,
        inline_limit: int = 16_384,
        detect_conflicts: bool = False,
        strict_decode: bool | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self._inline_limit = _check_inline_limit(inline_limit)
        self.detect_conflicts = detect_conflicts
        self.strict_decode = _strict.strict_from_env() if strict_decode is None else strict_decode
        if engine is None and async_engine is None:
            raise ValueError("SQLAlchemySaver needs an engine or an async_engine (or both).")
        self._owned: list[Engine | AsyncEngine] = []
        self._keeper: sqlite3.Connection | None = None
        if engine is not None and engine.dialect.is_async:
            raise UnsupportedDriverError(
                f"engine= takes a sync engine; {engine.url.drivername} is an async driver: "
                "pass create_async_engine(url) as async_engine= instead."
            )
        if engine is None:
            assert async_engine is not None
            engine = create_engine(resolve_urls(async_engine.url).sync)
            self._owned.append(engine)
        if async_engine is None:
            twin = resolve_urls(engine.url)
            twin.require_async()
            async_engine = create_async_engine(twin.async_)
            self._owned.append(async_engine)
        configure_engine(engine)
        configure_engine(async_engine.sync_engine)
        self.schema = schema
        self.engine = engine
        self.async_engine = async_engine
        options: dict[str, Any] = {}
        if schema:
            options["schema_translate_map"] = {None: schema}
        self._qb = qb = query_builder(engine.dialect.name)
        self._read = engine.execution_options(**options)
        self._read_one = engine.execution_options(**options, **qb.one_statement_read_options)
        self._write = engine.execution_options(**options, **{WRITE_OPTION: True})
        self._write_one = engine.execution_options(**options, **qb.one_statement_write_options)
        # One async engine per event loop (see _loops): any loop, any thread.
        self._aengines = PerLoopEngines(
            async_engine,
            options,
            qb.one_statement_read_options,
            qb.one_statement_write_options,
            {WRITE_OPTION: True},
        )
        self._st = _ops.Statements(self._qb)
        self._schema_checked = False

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str | URL,
        *,
        serde: SerializerProtocol | None = None,
        schema: str | None = None,
        inline_limit: int = 16_384,
        detect_conflicts: bool = False,
        strict_decode: bool | None = None,
        **engine_kwargs: Any,
    ) -> Self:
        """Build a saver, and its sync and async engines, from a URL or a SQLite path.

        Unlike the official savers' ``from_conn_string``, the result is the saver itself:
        pass it straight to ``graph.compile(checkpointer=...)``, or use it as a context
        manager (``with`` or ``async with``) to dispose its engines on exit.

        Args:
            conn_string: ``sqlite:///path.db``, a bare file path, ``:memory:`` (one
                in-memory database shared by both engines, alive until :meth:`close`),
                ``postgresql://user@host/db`` (psycopg 3 for sync and async),
                ``mysql://...``.
            serde: See :class:`SQLAlchemySaver`.
            schema: See :class:`SQLAlchemySaver`.
            inline_limit: See :class:`SQLAlchemySaver`.
            detect_conflicts: See :class:`SQLAlchemySaver`.
            strict_decode: See :class:`SQLAlchemySaver`.
            **engine_kwargs: Passed to both ``create_engine`` and ``create_async_engine``
                (``pool_size``, ``echo``, ``connect_args``, ...).

        Returns:
            The saver. Run :meth:`setup` once to create the tables.

        Raises:
            DatabaseURLError: A URL SQLAlchemy would refuse or read otherwise (e.g.
                ``sqlite://relative.db``); the message lists the valid forms.
            UnsupportedDialectError: The URL's dialect is not supported.
            UnsupportedDriverError: The URL names a driver the saver cannot use.
            DriverNotInstalledError: A driver it needs is not installed; the message
                names the extra to install.
        """
        _check_inline_limit(inline_limit)
        urls = resolve_urls(conn_string)
        urls.require_async()
        # check_same_thread=False: construction, use and close() may be on any threads.
        keeper = (
            sqlite3.connect(urls.memory, uri=True, check_same_thread=False) if urls.memory else None
        )
        engine = create_engine(urls.sync, **engine_kwargs)
        async_engine = create_async_engine(urls.async_, **engine_kwargs)
        saver = cls(
            engine,
            async_engine,
            serde=serde,
            schema=schema,
            inline_limit=inline_limit,
            detect_conflicts=detect_conflicts,
            strict_decode=strict_decode,
        )
        saver._owned = [engine, async_engine]
        saver._keeper = keeper
        return saver

    # -- lifecycle -------------------------------------------------------------------

    def setup(self) -> None:
        """Create or migrate the tables to the newest revision (Alembic ``upgrade head``).

        Idempotent and safe to run from several processes at once (the migration lock of
        :meth:`.QueryBuilder.migration_lock`) and from several threads of one process
        (Alembic commands run one at a time). A database already at head costs one
        version query.

        Raises:
            SchemaOutOfDateError: The database was migrated by a newer version of this
                package (a revision it does not know): upgrade the package.
        """
        # Up to date: one version query, no Alembic environment and no migration lock.
        # A read of its own, ended before the migration's transaction begins (a MySQL
        # snapshot taken before another process creates the tables would fail the
        # migration with error 1412).
        with self._read.connect() as conn:
            up_to_date = migrate.current_revision(conn, schema=self.schema) == (
                migrate.head_revision()
            )
        if not up_to_date:
            with self._write.begin() as conn:
                migrate.upgrade(conn, schema=self.schema)
        self._schema_checked = True

    async def asetup(self) -> None:
        """Async :meth:`setup`: the same migration on the sync engine, in a worker thread
        (``asyncio.to_thread``), so that the event loop is not blocked and the process's
        Alembic commands, whose context is process-global, run one at a time from any
        number of threads and loops (see :func:`.migrate.upgrade`)."""
        await asyncio.to_thread(self.setup)

    def close(self) -> None:
        """Dispose the engines this saver created (not the ones it was given), and the
        async engines it made for other event loops. Any thread may call it.

        Connections of an async pool belong to an event loop: they are dropped without
        awaiting their close (call :meth:`aclose` to close them properly).
        """
        for engine in self._owned:
            if not isinstance(engine, AsyncEngine):
                engine.dispose()
        self._aengines.close(dispose_primary=self._owns(self.async_engine))
        self._release_keeper()

    async def aclose(self) -> None:
        """Dispose the engines this saver created, closing the async connections of the
        running event loop properly (those of another loop on that loop if it still
        runs). Any thread and loop may call it."""
        for engine in self._owned:
            if not isinstance(engine, AsyncEngine):
                engine.dispose()
        await self._aengines.aclose(dispose_primary=self._owns(self.async_engine))
        self._release_keeper()

    def _owns(self, engine: Engine | AsyncEngine) -> bool:
        return any(e is engine for e in self._owned)

    def _release_keeper(self) -> None:
        if self._keeper is not None:
            self._keeper.close()
            self._keeper = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- the two doors: one sync function on a Connection, run sync or async -----------

    def _connect(self, access: str) -> Any:
        """A connection context for ``access`` (see :data:`_WRITE` and friends)."""
        if access == _WRITE:
            return self._write.begin()
        if access == _WRITE_ONE:
            return self._write_one.begin()
        return (self._read_one if access == _READ_ONE else self._read).connect()

    def _aconnect(self, access: str) -> Any:
        engines = self._aengines.current()
        if access == _WRITE:
            return engines.write.begin()
        if access == _WRITE_ONE:
            return engines.write_one.begin()
        return (engines.read_one if access == _READ_ONE else engines.read).connect()

    def _run(
        self,
        access: str,
        op: Callable[Concatenate[Connection, P], R],
        *a: P.args,
        **k: P.kwargs,
    ) -> R:
        for attempt in range(_ATTEMPTS):
            try:
                with self._connect(access) as conn:
                    if not self._schema_checked:
                        self._check_schema(conn)
                    return op(conn, *a, **k)
            except DBAPIError as e:
                self._raise_unless_retry(e, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _arun(
        self,
        access: str,
        op: Callable[Concatenate[Connection, P], R],
        *a: P.args,
        **k: P.kwargs,
    ) -> R:
        if self._qb.async_in_thread:
            # The same sync function on the sync engine, in one worker thread (see
            # QueryBuilder.async_in_thread): the event loop is never blocked.
            return await asyncio.to_thread(functools.partial(self._run, access, op, *a, **k))
        conn: AsyncConnection
        for attempt in range(_ATTEMPTS):
            try:
                async with self._aconnect(access) as conn:
                    if not self._schema_checked:
                        await conn.run_sync(self._check_schema)
                    return await conn.run_sync(op, *a, **k)
            except DBAPIError as e:
                self._raise_unless_retry(e, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _raise_unless_retry(self, error: DBAPIError, attempt: int) -> None:
        """Return (to retry) when the server dropped the connection and this was the first
        attempt: SQLAlchemy has invalidated the pool's connections of before the drop, and
        every operation of the saver is idempotent (upserts, first-write-wins inserts,
        deletes), so running it again on a fresh connection stores nothing twice.
        Otherwise raise the typed error for ``error``."""
        if error.connection_invalidated:
            if attempt + 1 < _ATTEMPTS:
                return
            raise CheckpointConnectionError(
                "lost the database connection, and again on a fresh one: "
                f"{type(error.orig).__name__}: {error.orig}. Nothing of this call was "
                "stored half-way (its transaction was rolled back); retry later."
            ) from error
        raise self._qb.translate_error(error) or error from error

    def _check_schema(self, conn: Connection) -> None:
        """Once per saver: the database must be at the migration head this library ships,
        so that a missing ``setup()`` is a clear error rather than raw SQL failing."""
        current = migrate.current_revision(conn, schema=self.schema)
        head = migrate.head_revision()
        if current != head:
            where = conn.engine.url.render_as_string(hide_password=True)
            if current is None or current in migrate.known_revisions():
                raise SchemaOutOfDateError(
                    f"The checkpoint tables at {where} are at revision {current or 'none'}, "
                    f"this version of langgraph-checkpoint-sqlalchemy needs {head}. Run "
                    "saver.setup() (or: python -m langgraph.checkpoint.sqlalchemy upgrade "
                    "--url URL)."
                )
            raise migrate.newer_schema_error(conn, current)
        self._schema_checked = True

    # -- encoding and decoding (no database) -------------------------------------------

    def _to_tuple(self, rec: _ops.CheckpointRecord) -> CheckpointTuple:
        """Decode a record.

        Raises:
            CheckpointDecodeError: The checkpoint, a channel value or a write cannot be
                decoded (damaged or forged row, other serializer or key).
        """
        row = rec.row
        thread_id, checkpoint_ns = rec.thread_id, rec.checkpoint_ns
        key = (thread_id, checkpoint_ns, row.checkpoint_id)
        if rec.damaged is not None:
            raise CheckpointDecodeError(*key, "inline_values", rec.damaged)

        def load(part: str, type_: str, data: bytes | None) -> Any:
            try:
                return self._loads(type_, data)
            except Exception as e:
                raise CheckpointDecodeError(*key, part, f"{type(e).__name__}: {e}") from e

        checkpoint = load("checkpoint", row.type, row.checkpoint)
        if not isinstance(checkpoint, dict):
            raise CheckpointDecodeError(
                *key, "checkpoint", f"decoded to {type(checkpoint).__name__}, not a dict"
            )
        checkpoint["channel_values"] = {
            ch: load(f"channel {ch}", t, b) for ch, (t, b) in rec.values.items() if t != "empty"
        }
        rec.writes.sort(key=lambda w: writes_sort_key(w[1], w[0], w[2]))
        pending = [
            (task_id, channel, load(f"write {task_id}/{channel}", t, b))
            for task_id, _path, _idx, channel, t, b in rec.writes
        ]
        parent = row.parent_checkpoint_id
        return CheckpointTuple(
            config=_config(thread_id, checkpoint_ns, row.checkpoint_id),
            checkpoint=cast(Checkpoint, checkpoint),
            metadata=cast(CheckpointMetadata, row.metadata),
            parent_config=_config(thread_id, checkpoint_ns, parent) if parent else None,
            pending_writes=pending,
        )

    def _loads(self, type_: str, data: bytes | None) -> Any:
        """Decode a stored value with ``serde``, checked by :mod:`._strict` when
        ``strict_decode`` is on."""
        if self.strict_decode:
            return _strict.loads(self.serde, type_, data if data is not None else b"")
        return self.serde.loads_typed((type_, data if data is not None else b""))

    def _put_op(self, row: dict[str, Any]) -> Callable[..., None]:
        """The put operation: checked for conflicts when ``detect_conflicts`` is on and
        the checkpoint is a run's step (``source`` input/loop), plain otherwise."""
        if self.detect_conflicts and row["metadata"].get("source") in ("input", "loop"):
            return _ops.put_checked
        return _ops.put

    def _listed(self, rec: _ops.CheckpointRecord) -> CheckpointTuple | None:
        """A listed record decoded, or None (logged) when it cannot be: one damaged row
        must not hide a thread's whole history."""
        try:
            return self._to_tuple(rec)
        except CheckpointDecodeError as e:
            logger.error("list() skipped a checkpoint: %s", e)
            return None

    def _put_rows(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> tuple[dict[str, Any], list[dict[str, Any]], RunnableConfig]:
        thread_id, checkpoint_ns, parent_id = _checkpoint_key(config)
        checkpoint_id = _text_id(checkpoint.get("id"), "id", ID_MAX_LENGTH, required=True)
        assert checkpoint_id is not None
        if checkpoint_id == parent_id:
            raise CheckpointConfigError(
                f"checkpoint {checkpoint_id!r} names itself as its parent "
                "(config['configurable']['checkpoint_id']); pass the parent's id."
            )
        try:
            meta = canonical_json(get_serializable_checkpoint_metadata(config, metadata))
        except (TypeError, ValueError) as e:
            raise CheckpointMetadataError(
                f"checkpoint metadata must be JSON ({e}); keep metadata values to str, int, "
                "float, bool, None, lists and dicts with string keys."
            ) from e
        values = checkpoint.get("channel_values") or {}
        versions = checkpoint.get("channel_versions", {})
        blob_rows = []
        inline: list[_inline.InlineValue] = []
        budget = _inline.INLINE_BUDGET
        for channel, value in values.items():
            if channel not in versions:
                continue  # no version: nothing can reference the value
            _check_channel(channel)
            if len(channel) > CHANNEL_MAX_LENGTH:
                raise CheckpointConfigError(
                    f"channel name {channel[:40]!r}... is {len(channel)} characters long; "
                    f"the limit is {CHANNEL_MAX_LENGTH}."
                )
            type_, blob = self.serde.dumps_typed(value)
            size = len(blob) if blob is not None else 0
            if size <= self._inline_limit and size <= budget:
                inline.append((channel, type_, blob))
                budget -= size
            elif channel in new_versions or size <= _inline.INLINE_VALUE_LIMIT:
                # New, or small enough to have been inline in the parent (under any
                # inline_limit) but not here: into the blobs table, first-write-wins.
                blob_rows.append(
                    {
                        "thread_id": thread_id,
                        "checkpoint_ns": checkpoint_ns,
                        "channel": channel,
                        "version": str(new_versions.get(channel, versions[channel])),
                        "type": type_,
                        "blob": blob,
                    }
                )
            # else: unchanged and large, so stored in the blobs table when it was new.
        type_, data = self.serde.dumps_typed({**checkpoint, "channel_values": {}})
        checkpoint_row = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "thread_id_full": stored_full(thread_id),
            "checkpoint_ns_full": stored_full(checkpoint_ns),
            "checkpoint_id": checkpoint_id,
            "parent_checkpoint_id": parent_id,
            "run_id": run_key(meta.get("run_id")),
            "source": promoted_source(meta.get("source")),
            "step": promoted_step(meta.get("step")),
            "type": type_,
            "checkpoint": data,
            "metadata": meta,
            "value_versions": {ch: str(v) for ch, v in versions.items() if ch in values},
            "inline_values": _inline.pack(inline),
        }
        return checkpoint_row, blob_rows, _config(thread_id, checkpoint_ns, checkpoint_id)

    def _write_rows(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[list[dict[str, Any]], bool]:
        thread_id, checkpoint_ns, checkpoint_id = _checkpoint_key(config)
        if checkpoint_id is None:
            raise CheckpointConfigError(
                "put_writes needs config['configurable']['checkpoint_id'] (the checkpoint "
                "the writes belong to)."
            )
        task = _text_id(task_id, "task_id", ID_MAX_LENGTH, required=True)
        rows = []
        for i, (channel, value) in enumerate(writes):
            _check_channel(channel)
            type_, blob = self.serde.dumps_typed(value)
            rows.append(
                {
                    "thread_id": thread_id,
                    "checkpoint_ns": checkpoint_ns,
                    "checkpoint_id": checkpoint_id,
                    "task_id": task,
                    "idx": WRITES_IDX_MAP.get(channel, i),
                    "task_path": task_path or "",
                    "channel": channel,
                    "type": type_,
                    "blob": blob,
                }
            )
        # A batch of special channels only (error, interrupt, resume, scheduled) replaces
        # what the task stored before; regular writes are first-write-wins (LangGraph
        # contract: a retried task must not change what was recorded).
        replace = all(w[0] in WRITES_IDX_MAP for w in writes)
        return rows, replace

    def _list_query(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
    ) -> _ops.ListQuery:
        where: list[ColumnElement[bool]] = []
        if config is not None:
            c = _configurable(config)
            thread_id = _text_id(
                c.get("thread_id"), "thread_id", THREAD_ID_MAX_LENGTH, required=True
            )
            where.append(checkpoints.c.thread_id == thread_id)
            if stored_full(cast(str, thread_id)) is not None:
                # A digest key is never trusted alone: the text must match too.
                where.append(checkpoints.c.thread_id_full == thread_id)
            if c.get("checkpoint_ns") is not None:
                namespace = _namespace(c["checkpoint_ns"])
                where.append(checkpoints.c.checkpoint_ns == namespace)
                if stored_full(namespace) is not None:
                    where.append(checkpoints.c.checkpoint_ns_full == namespace)
            checkpoint_id = _text_id(
                c.get("checkpoint_id"), "checkpoint_id", ID_MAX_LENGTH, required=False
            )
            if checkpoint_id:
                where.append(checkpoints.c.checkpoint_id == checkpoint_id)
        if before is not None:
            before_id = _text_id(
                _configurable(before).get("checkpoint_id"),
                "checkpoint_id",
                ID_MAX_LENGTH,
                required=True,
            )
            where.append(checkpoints.c.checkpoint_id < before_id)
        if filter:
            if not isinstance(filter, dict):
                raise CheckpointMetadataError(
                    "filter must be a dict of metadata keys to JSON values, got "
                    f"{type(filter).__name__}."
                )
            json_filters = []
            for key, value in filter.items():
                try:
                    # Refuse a bad filter before any query runs.
                    self._qb.check_filter(key, value)
                except (TypeError, ValueError) as e:
                    raise CheckpointMetadataError(f"invalid metadata filter {key!r}: {e}") from e
                # The promoted, indexed columns answer LangGraph's own keys exactly (same
                # JSON semantics); other keys and values query the JSON document.
                if key == "source" and (source := promoted_source(value)) is not None:
                    where.append(checkpoints.c.source == canonical_json(source))
                elif key == "step" and (step := promoted_step(value)) is not None:
                    where.append(checkpoints.c.step == step)
                else:
                    json_filters.append((key, value))
            return _ops.ListQuery(tuple(where), tuple(json_filters))
        return _ops.ListQuery(tuple(where))

    # -- the saver contract: sync --------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint with its channel values and pending writes.

        Args:
            config: ``{"configurable": {"thread_id", "checkpoint_ns"?, "checkpoint_id"?}}``;
                without ``checkpoint_id`` the latest checkpoint of the namespace.

        Returns:
            The checkpoint tuple (pending writes in ``writes_sort_key`` order), or None.

        Raises:
            CheckpointConfigError: No ``thread_id``, or an id of the wrong type or length.
        """
        key = _checkpoint_key(config)
        rec = self._run(_READ_ONE, _ops.get_checkpoint, self._st, *key)
        if rec is not None and rec.incomplete:
            rec = self._run(_READ, _ops.get_checkpoint, self._st, *key)
        return self._to_tuple(rec) if rec is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints, newest first, fetched in pages of 100.

        No connection is held while a checkpoint is yielded, so the loop body may call the
        saver (or other threads may).

        Args:
            config: None for every thread; else a thread (``thread_id``), optionally one
                namespace (``checkpoint_ns``) and one checkpoint (``checkpoint_id``).
            filter: Metadata equality filter, ``{key: JSON value}``; see
                :meth:`.QueryBuilder.metadata_equals` for the semantics.
            before: Only checkpoints strictly older than this config's ``checkpoint_id``.
            limit: At most this many checkpoints (after filtering).

        Yields:
            Checkpoint tuples with their pending writes.

        Raises:
            CheckpointConfigError: A config without ``thread_id`` or with bad ids.
            CheckpointMetadataError: A filter value that is not JSON.
        """
        query = self._list_query(config, filter, before)
        pages = _Pages(limit)
        while (request := pages.next()) is not None:
            page = self._run(_READ, _ops.list_page, self._st, query, *request)
            pages.advance(page)
            for rec in page:
                if (tup := self._listed(rec)) is not None:
                    yield tup

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint, and the values of the channels in ``new_versions``.

        Channels whose version is unchanged are not stored again: their value is already
        stored under that version. The checkpoint is serialised before this returns, so
        later changes to the caller's dicts do not reach the database.

        Args:
            config: Config of the parent checkpoint (``thread_id``, ``checkpoint_ns``,
                ``checkpoint_id`` = parent id or absent for a root).
            checkpoint: The checkpoint.
            metadata: Its metadata; must be JSON.
            new_versions: ``{channel: version}`` of the channels updated since the parent.

        Returns:
            The config of the stored checkpoint.

        Raises:
            CheckpointConfigError: Bad thread, namespace or ids.
            CheckpointMetadataError: Metadata that is not JSON.
        """
        row, blob_rows, next_config = self._put_rows(config, checkpoint, metadata, new_versions)
        op = self._put_op(row)
        self._run(_write_access(op, blob_rows), op, self._st, row, blob_rows)
        return next_config

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store the pending writes of a task for the checkpoint in ``config``.

        Args:
            config: Config with ``thread_id``, ``checkpoint_ns`` and ``checkpoint_id``.
            writes: ``[(channel, value)]``.
            task_id: The task's id.
            task_path: The task's path, used to order writes (``writes_sort_key``).

        Raises:
            CheckpointConfigError: No ``checkpoint_id``, or bad ids.
        """
        rows, replace = self._write_rows(config, writes, task_id, task_path)
        if rows:
            self._run(_writes_access(rows), _ops.put_writes, self._st, rows, replace)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in every namespace.

        One transaction; deleting a thread that does not exist does nothing.
        """
        key = _text_id(thread_id, "thread_id", THREAD_ID_MAX_LENGTH, required=True)
        self._run(_WRITE, _ops.delete_thread, self._st, cast(str, key))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints whose ``metadata["run_id"]`` is listed, and their writes.

        Uses the indexed ``run_id`` column; blobs that no remaining checkpoint of the
        affected threads holds are removed too. One transaction. Deleting a run whose
        writes or snapshot a later DeltaChannel checkpoint still needs breaks that
        checkpoint's history (LangGraph contract note on ``delete_for_runs``).

        Args:
            run_ids: Run ids; an empty list does nothing.

        Raises:
            TypeError: ``run_ids`` is a bare string.
        """
        keys = _run_keys(run_ids)
        if keys:
            self._run(_WRITE, _maintenance.delete_for_runs, self._st, keys)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread: every checkpoint (same ids and parents), blob and write (with its
        ``task_path``), in every namespace, in one transaction. The source is untouched.

        Raises:
            ThreadNotEmptyError: The target thread already has checkpoints.
            CheckpointConfigError: A thread id of the wrong type or length.
        """
        source, target = _thread(source_thread_id), _thread(target_thread_id)
        self._run(_WRITE, _copy_thread, source, target)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads, each in its own transaction.

        ``"delete"`` removes the threads. ``"keep_latest"`` keeps the newest checkpoint of
        every namespace with its pending writes and, when it holds DeltaChannel channels
        (``metadata["counters_since_delta_snapshot"]``) without a value, its ancestors and
        their writes back to the nearest checkpoint storing a value for each of them, so
        that it can still be resumed. Blobs no kept checkpoint holds are removed.

        Args:
            thread_ids: Thread ids; an empty list does nothing.
            strategy: ``"keep_latest"`` (default) or ``"delete"``.

        Raises:
            TypeError: ``thread_ids`` is a bare string.
            ValueError: Unknown strategy.
        """
        for op, args in self._prune_plan(thread_ids, strategy):
            self._run(_WRITE, op, *args)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed of DeltaChannel channels along the parent chain of a checkpoint.

        Two statements whatever the thread's length: a recursive CTE walks
        ``parent_checkpoint_id`` from the target's parent upwards until every channel has
        met an ancestor that stores a value for it (its seed), then one ``UNION ALL``
        fetches each channel's writes on its own chain and its seed. The result follows
        the LangGraph contract: the target's own writes excluded, writes oldest
        checkpoint first and by ``writes_sort_key`` within one, no ``seed`` when the
        walk reached the root, ``{}`` for no channels.

        Args:
            config: The target checkpoint (latest of the namespace without an id).
            channels: Channel names.

        Returns:
            ``{channel: {"writes": [(task_id, channel, value)], "seed"?: value}}``.
        """
        if not channels:
            return {}
        key = _checkpoint_key(config)
        raw = self._run(_READ, _delta_history, self._st, *key, list(dict.fromkeys(channels)))
        return self._histories(raw, channels)

    # -- per-thread lock across processes ----------------------------------------------------

    @contextmanager
    def lock_thread(self, thread_id: str, *, timeout: float = 30.0) -> Iterator[None]:
        """Hold a cross-process lock on a thread for the block: wrap a run in it so that
        runs on one thread happen one after the other, on every process.

        The dialect's own primitive (:meth:`.QueryBuilder.try_thread_lock`): a PostgreSQL
        session advisory lock, MySQL/MariaDB ``GET_LOCK``, SQLite's write lock on a lock
        database beside the file. A process that dies releases it. The holder keeps one
        pooled connection (PostgreSQL, MySQL) for the block; waiters keep none between
        their tries.

        Args:
            thread_id: The thread.
            timeout: Seconds to wait for the lock.

        Raises:
            ThreadLockTimeout: Another holder kept the lock for ``timeout`` seconds.
        """
        key = _thread(thread_id)
        qb = self._qb
        deadline = time.monotonic() + timeout
        while True:
            conn = self.engine.connect() if qb.thread_lock_uses_connection else None
            try:
                handle = qb.try_thread_lock(conn, self.engine.url, key)
            except BaseException:
                if conn is not None:
                    conn.close()
                raise
            if handle is not None:
                break
            if conn is not None:
                conn.close()
            if time.monotonic() >= deadline:
                raise ThreadLockTimeout(_lock_timeout_message(key, timeout))
            time.sleep(_LOCK_POLL)
        try:
            yield
        finally:
            try:
                qb.release_thread_lock(conn, handle)
            finally:
                if conn is not None:
                    conn.close()

    @asynccontextmanager
    async def alock_thread(self, thread_id: str, *, timeout: float = 30.0) -> AsyncIterator[None]:
        """Async :meth:`lock_thread` (``async with saver.alock_thread(thread_id):``); waits
        without blocking the event loop."""
        key = _thread(thread_id)
        qb = self._qb
        url = self.engine.url
        deadline = time.monotonic() + timeout
        while True:
            if qb.thread_lock_uses_connection:
                aconn = await self._aengines.current().engine.connect()
                try:
                    handle = await aconn.run_sync(qb.try_thread_lock, url, key)
                except BaseException:
                    await aconn.close()
                    raise
                if handle is not None:
                    break
                await aconn.close()
            else:
                handle = await asyncio.to_thread(qb.try_thread_lock, None, url, key)
                if handle is not None:
                    aconn = None
                    break
            if time.monotonic() >= deadline:
                raise ThreadLockTimeout(_lock_timeout_message(key, timeout))
            await asyncio.sleep(_LOCK_POLL)
        try:
            yield
        finally:
            try:
                if aconn is not None:
                    await aconn.run_sync(qb.release_thread_lock, handle)
                else:
                    qb.release_thread_lock(None, handle)
            finally:
                if aconn is not None:
                    await aconn.close()

    # -- browsing: threads and storage (no checkpoint is decoded) --------------------------

    def list_threads(
        self,
        *,
        limit: int | None = 100,
        offset: int = 0,
        idle_for: timedelta | None = None,
    ) -> builtins.list[ThreadInfo]:
        """Threads with their checkpoint counts and sizes, newest activity first.

        Computed from columns and aggregates only: no checkpoint is deserialised, so
        listing 100 threads of 10,000 checkpoints is one grouped query (plus one per
        table for the sizes).

        Args:
            limit: Most threads returned (None: all).
            offset: Threads skipped, for paging.
            idle_for: Only threads whose newest checkpoint is older than this (judged by
                its UUIDv6 checkpoint id, which LangGraph makes from the clock).

        Returns:
            :class:`ThreadInfo` records, one a thread.

        Raises:
            ValueError: ``limit`` or ``offset`` negative.
        """
        return self._run(_READ, _maintenance.list_threads, *_thread_page(limit, offset, idle_for))

    async def alist_threads(
        self,
        *,
        limit: int | None = 100,
        offset: int = 0,
        idle_for: timedelta | None = None,
    ) -> builtins.list[ThreadInfo]:
        """Async :meth:`list_threads`."""
        page = _thread_page(limit, offset, idle_for)
        return await self._arun(_READ, _maintenance.list_threads, *page)

    def storage_stats(self, thread_id: str | None = None) -> dict[str, dict[str, int]]:
        """Rows and serialised bytes per table, for the database or one thread.

        Returns:
            ``{table name: {"rows": int, "bytes": int}}``; bytes are the lengths of the
            serialised columns, not the database's page usage.
        """
        key = _thread(thread_id) if thread_id is not None else None
        return self._run(_READ, _maintenance.storage_stats, key)

    async def astorage_stats(self, thread_id: str | None = None) -> dict[str, dict[str, int]]:
        """Async :meth:`storage_stats`."""
        key = _thread(thread_id) if thread_id is not None else None
        return await self._arun(_READ, _maintenance.storage_stats, key)

    # -- the saver contract: async -------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        key = _checkpoint_key(config)
        rec = await self._arun(_READ_ONE, _ops.get_checkpoint, self._st, *key)
        if rec is not None and rec.incomplete:
            rec = await self._arun(_READ, _ops.get_checkpoint, self._st, *key)
        return self._to_tuple(rec) if rec is not None else None

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`; no connection is held while a checkpoint is yielded."""
        query = self._list_query(config, filter, before)
        pages = _Pages(limit)
        while (request := pages.next()) is not None:
            page = await self._arun(_READ, _ops.list_page, self._st, query, *request)
            pages.advance(page)
            for rec in page:
                if (tup := self._listed(rec)) is not None:
                    yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        row, blob_rows, next_config = self._put_rows(config, checkpoint, metadata, new_versions)
        op = self._put_op(row)
        await self._arun(_write_access(op, blob_rows), op, self._st, row, blob_rows)
        return next_config

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        rows, replace = self._write_rows(config, writes, task_id, task_path)
        if rows:
            await self._arun(_writes_access(rows), _ops.put_writes, self._st, rows, replace)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        key = _text_id(thread_id, "thread_id", THREAD_ID_MAX_LENGTH, required=True)
        await self._arun(_WRITE, _ops.delete_thread, self._st, cast(str, key))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        keys = _run_keys(run_ids)
        if keys:
            await self._arun(_WRITE, _maintenance.delete_for_runs, self._st, keys)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        source, target = _thread(source_thread_id), _thread(target_thread_id)
        await self._arun(_WRITE, _copy_thread, source, target)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        for op, args in self._prune_plan(thread_ids, strategy):
            await self._arun(_WRITE, op, *args)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        if not channels:
            return {}
        key = _checkpoint_key(config)
        raw = await self._arun(_READ, _delta_history, self._st, *key, list(dict.fromkeys(channels)))
        return self._histories(raw, channels)

    # -- operator methods: planning and decoding (no database) -----------------------------

    def _prune_plan(self, thread_ids: Sequence[str], strategy: str) -> _PrunePlan:
        threads = [_thread(t) for t in _id_list(thread_ids, "thread_ids")]
        if strategy == "delete":
            return [(_ops.delete_thread, (self._st, t)) for t in threads]
        if strategy == "keep_latest":
            return [
                (_maintenance.prune_keep_latest, (self._st, t, self._pending_delta_channels))
                for t in threads
            ]
        raise ValueError(f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'")

    def _pending_delta_channels(self, row: Any) -> Sequence[str]:
        """DeltaChannel channels a checkpoint row versions but holds no value for: the
        ones LangGraph rebuilds from history. DeltaChannels leave their update counters
        in ``metadata["counters_since_delta_snapshot"]``."""
        counters = (row.metadata or {}).get("counters_since_delta_snapshot") or {}
        missing = [ch for ch in counters if ch not in row.value_versions]
        if not missing:
            return []
        checkpoint = self.serde.loads_typed((row.type, row.checkpoint))
        versions = checkpoint.get("channel_versions", {})
        return [ch for ch in missing if ch in versions]

    def _histories(
        self, raw: dict[str, _history.ChannelHistory], channels: Sequence[str]
    ) -> dict[str, DeltaChannelHistory]:
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            history = raw[ch]
            # Oldest checkpoint first (deepest), then writes_sort_key within one.
            history.writes.sort(key=lambda w: (-w[0], *writes_sort_key(w[1], w[2], w[3])))
            entry: DeltaChannelHistory = {
                "writes": [
                    (task_id, ch, self._loads(t, b))
                    for _depth, _path, task_id, _idx, t, b in history.writes
                ]
            }
            if history.seed is not None:
                t, b = history.seed
                entry["seed"] = self._loads(t, b)
            result[ch] = entry
        return result

    # -- versions ------------------------------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Next channel version: ``f"{n:032}.{random():016}"``.

        The counter ``n`` grows by one; the random fraction makes versions unique across
        forks of a thread, which blobs keyed by version rely on (LangGraph contract).
        Integer versions written by other savers are accepted as ``current``.
        """
        if current is None:
            n = 0
        elif isinstance(current, int):
            n = current
        else:
            n = int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"


def _write_access(op: Callable[..., None], blob_rows: Sequence[dict[str, Any]]) -> str:
    """A put whose values are all in the checkpoint row is one upsert: atomic on its own,
    it needs no transaction around it (saving BEGIN and COMMIT: two driver calls on
    SQLite, two round trips on PostgreSQL)."""
    return _WRITE_ONE if op is _ops.put and not blob_rows else _WRITE


def _writes_access(rows: Sequence[dict[str, Any]]) -> str:
    """put_writes sends one multi-row INSERT when its values fit one batch."""
    size = sum(len(r["blob"] or b"") for r in rows)
    return _WRITE_ONE if size <= _ops.BATCH_BYTES else _WRITE


def _lock_timeout_message(thread_id: str, timeout: float) -> str:
    return (
        f"thread {thread_id!r} stayed locked by another run for {timeout} s; wait for it to "
        "finish or raise lock_thread(timeout=...)"
    )


def _thread_page(
    limit: int | None, offset: int, idle_for: timedelta | None
) -> tuple[int | None, int, str | None]:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be None or an int >= 0, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an int >= 0, got {offset!r}")
    cutoff = None
    if idle_for is not None:
        try:
            since = datetime.now(timezone.utc) - idle_for
        except OverflowError:  # idle for longer than datetime reaches: no thread is
            since = datetime.min.replace(tzinfo=timezone.utc)
        cutoff = _maintenance.id_at(since)
    return limit, offset, cutoff


def _check_inline_limit(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"inline_limit must be an int (bytes), got {value!r}")
    if not 0 <= value <= _inline.INLINE_VALUE_LIMIT:
        raise ValueError(
            f"inline_limit must be from 0 to {_inline.INLINE_VALUE_LIMIT} bytes, got {value}"
        )
    return value


def _thread(value: Any) -> str:
    return cast(str, _text_id(value, "thread_id", THREAD_ID_MAX_LENGTH, required=True))


def _id_list(values: Sequence[str], name: str) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a list of ids, not a single string: use [{values!r}]")
    return [str(v) for v in values]


def _run_keys(run_ids: Sequence[str]) -> list[str]:
    if isinstance(run_ids, (str, bytes)):
        raise TypeError(f"run_ids must be a list of ids, not a single string: use [{run_ids!r}]")
    return [k for k in (run_key(r) for r in run_ids) if k is not None]


def _copy_thread(conn: Connection, source: str, target: str) -> None:
    try:
        with conn.begin_nested():
            _maintenance.copy_thread(conn, source, target)
    except IntegrityError as e:
        # Another writer created the target meanwhile: the same refusal, nothing copied.
        raise ThreadNotEmptyError(
            f"copy_thread: thread {target!r} already has rows; delete it first or copy to "
            "a new thread id."
        ) from e


def _delta_history(
    conn: Connection,
    st: _ops.Statements,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str | None,
    channels: list[str],
) -> dict[str, _history.ChannelHistory]:
    result: dict[str, _history.ChannelHistory] = {}
    step = _history.CHANNELS_PER_WALK
    for group in (channels[i : i + step] for i in range(0, len(channels), step)):
        walked = _history.chain(conn, st, thread_id, checkpoint_ns, checkpoint_id, group)
        result.update(_history.fetch(conn, thread_id, checkpoint_ns, walked, group))
    return result


class _Pages:
    """Page requests of one ``list()`` call: ``(cursor, size)`` until done or ``limit``."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise ValueError(f"limit must be None or an int >= 0, got {limit!r}")
        self.remaining = limit
        self.cursor: _ops.CheckpointKey | None = None
        self.done = limit == 0

    def next(self) -> tuple[_ops.CheckpointKey | None, int] | None:
        if self.done:
            return None
        size = LIST_PAGE_SIZE if self.remaining is None else min(LIST_PAGE_SIZE, self.remaining)
        return self.cursor, size

    def advance(self, page: list[_ops.CheckpointRecord]) -> None:
        requested = (
            LIST_PAGE_SIZE if self.remaining is None else min(LIST_PAGE_SIZE, self.remaining)
        )
        if self.remaining is not None:
            self.remaining -= len(page)
        if len(page) < requested or self.remaining == 0:
            self.done = True
        elif page:
            last = page[-1].row
            self.cursor = (last.thread_id, last.checkpoint_ns, last.checkpoint_id)
