"""``SQLAlchemyStore``: LangGraph's long-term memory store on any SQLAlchemy engine.

Built the way :class:`~langgraph.checkpoint.sqlalchemy.SQLAlchemySaver` is: the same URL
rules, the same two engines (sync and async) shared with savers of the same URL, the same
Alembic history (revision ``0009_store``), the same retries through transient failures.
A ``batch()`` is checked here, then run as one plan that both doors drive: the
embedding calls (sync ``embed_documents`` or async ``aembed_documents``, as the door
performs an embedding step), then one database operation that runs the batch's reads and
writes, and the TTL refreshes of its reads. Dialect differences live in
:mod:`langgraph.checkpoint.sqlalchemy.dialects`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    NotProvided,
    Op,
    PutOp,
    Result,
    TTLConfig,
)
from typing_extensions import Self

from langgraph.checkpoint.sqlalchemy._codec.configs import check_on_retry
from langgraph.checkpoint.sqlalchemy._engine import shared as _shared
from langgraph.checkpoint.sqlalchemy._engine.doors import Access, Plan
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.checkpoint.sqlalchemy._engine.owner import RAN, EngineOwner, wire
from langgraph.checkpoint.sqlalchemy._engine.steps import Embed, EmbedQueries
from langgraph.checkpoint.sqlalchemy.errors import (
    RetryEvent,
    SchemaOutOfDateError,
)
from langgraph.store.sqlalchemy import _items, _nearest
from langgraph.store.sqlalchemy._loading import StoredItem, load_rows, seconds
from langgraph.store.sqlalchemy._options import check_indexed_fields, create_field_indexes
from langgraph.store.sqlalchemy._options import check_omit_expired as _check_omit_expired
from langgraph.store.sqlalchemy._options import ttl_minutes as _ttl_minutes
from langgraph.store.sqlalchemy._prepared import Prepared, finish, get_plan, prepare
from langgraph.store.sqlalchemy._reads import get_one
from langgraph.store.sqlalchemy._rounds import Rounds
from langgraph.store.sqlalchemy._route import route
from langgraph.store.sqlalchemy._shapes import (
    Batch,
    Native,
    PrefixSizes,
    StoreStats,
)
from langgraph.store.sqlalchemy._sweeper import TTLSweepers
from langgraph.store.sqlalchemy.vectors import IndexSpec
from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["SQLAlchemyStore", "StoreStats", "StoredItem"]

log = logging.getLogger("langgraph.store.sqlalchemy")
#: The store's retries: a WARNING per retried failure, an ERROR when a call gives up
#: (the saver's go to ``langgraph.checkpoint.sqlalchemy.retry``; docs/observability.md).
retry_log = logging.getLogger("langgraph.store.sqlalchemy.retry")


#: Errors of a round of queued calls that every part of it would meet alike: given to
#: all its callers rather than running its halves again.
_FINAL = (ConnectionError, SchemaOutOfDateError, PoolTimeoutError)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class SQLAlchemyStore(EngineOwner, TTLSweepers, BaseStore):
    """LangGraph's ``BaseStore`` (long-term memory) on SQLite, PostgreSQL and MySQL/MariaDB.

    Items are JSON documents under a namespace and key; ``search`` filters them in the
    database, ranks them by semantic similarity when an ``index`` config is given, and
    ``list_namespaces`` pages the namespaces in the database. The sync methods use a sync
    engine and the async ones (``aget``, ``aput``, ``asearch``, ...) an async engine for the
    same database; give either or both. The usual entry point is :meth:`from_conn_string`;
    an engine shared with a :class:`~langgraph.checkpoint.sqlalchemy.SQLAlchemySaver`
    (``SQLAlchemyStore(saver.engine, saver.async_engine)``) keeps both in one pool.

    Its tables are created and migrated by :meth:`setup` (blocking: it migrates before it
    returns); in async code ``await store.asetup()`` is the non-blocking path, which
    keeps the event loop free.

    Semantics the same on every dialect (see docs/store.md): search filters as
    ``InMemoryStore`` (:mod:`.filters`; ``True`` does not match ``1``), newest first
    without a query; namespaces listed in tuple order.

    Args:
        engine: Sync engine. Made from ``async_engine``'s URL when omitted.
        async_engine: Async engine. Made from ``engine``'s URL when omitted.
        schema: PostgreSQL schema holding the tables (default: the search path).
        index: Semantic search: ``{"dims": int, "embed": Embeddings | function | name,
            "fields": [paths], "distance_type": "cosine" | "l2" | "inner_product"}``
            (LangGraph's ``IndexConfig``; ``SqliteStore``'s ``text_fields`` is read as
            ``fields``, and ``distance_type``, default ``"cosine"``, scores as
            ``PostgresStore`` does). Without it, puts embed nothing and ``query`` is
            ignored.
        ttl: LangGraph's ``TTLConfig``: ``default_ttl`` (minutes, at most 4,000,000,000)
            for puts that give none, ``refresh_on_read`` (default True),
            ``sweep_interval_minutes`` for :meth:`start_ttl_sweeper`. Expired items are
            never read, swept or not: ``omit_expired`` is accepted, and always in effect.
        retry_timeout: Seconds an operation is retried through transient failures (lost
            connection, deadlock, failover) before its typed error (default 15).
        on_retry: Called with a :class:`~langgraph.checkpoint.sqlalchemy.RetryEvent` at
            each retried failure (for metrics), in the thread that retries; an exception
            it raises is logged and ignored. Each retry is logged too, on the
            ``langgraph.store.sqlalchemy.retry`` logger (docs/observability.md).
        clock: Returns the current time (aware ``datetime``); default UTC now. Expiry
            times are written and compared with it, so hosts sharing a database need
            synchronised clocks (NTP); tests pass a clock they move.
        indexed_fields: Top-level value fields (identifiers) whose equality and range
            filters an expression index serves; :meth:`setup` creates the indexes
            (docs/store.md, "Filters in SQL"). Run it before searching: on MySQL/MariaDB
            the searches read the index's generated column.

    Attributes:
        index_config: The ``index`` given, or None.
        embeddings: The ``Embeddings`` the index config makes of its ``embed`` (as the
            official stores have it), or None without an index config.
        ttl_config: The ``ttl`` given, or None.

    Raises:
        ValueError: Neither engine given, a bad ``index`` (``dims``, ``embed``,
            ``fields``, ``distance_type``), ``ttl["omit_expired"]`` not a bool, a bad
            ``retry_timeout`` or ``indexed_fields`` entry.
        TypeError: ``on_retry`` is neither callable nor None.
        StoreRequestError: A ``default_ttl`` out of range (a put's ``ttl`` out of range
            raises it at the put, before anything is written).
        UnsupportedDialectError: The engine's dialect is not supported.
        DriverNotInstalledError: The missing engine needs a driver that is not installed.
    """

    supports_ttl = True

    def __init__(
        self,
        engine: Engine | None = None,
        async_engine: AsyncEngine | None = None,
        *,
        schema: str | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        retry_timeout: float = 15.0,
        on_retry: Callable[[RetryEvent], object] | None = None,
        clock: Callable[[], datetime] | None = None,
        indexed_fields: Sequence[str] | None = None,
    ) -> None:
        if not retry_timeout >= 0:
            raise ValueError(
                f"retry_timeout must be a number of seconds >= 0, not {retry_timeout!r}"
            )
        on_retry = check_on_retry(on_retry)
        self._index = IndexSpec(index) if index else None
        self.index_config = index
        self.embeddings: Embeddings | None = self._index.embeddings if self._index else None
        self.ttl_config = ttl
        _ttl_minutes((ttl or {}).get("default_ttl"))  # refused here, not at the first put
        _check_omit_expired(ttl)
        self._clock = clock or _utc_now
        indexed = check_indexed_fields(indexed_fields)
        wire(self, engine, async_engine, schema, retry_timeout, on_retry, retry_log)
        self._qb.indexed_fields = indexed
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()
        self._asweeper: asyncio.Task[None] | None = None
        self._rounds: Rounds[Prepared, Result] = Rounds(self._around, final=_FINAL)
        #: The native vector column's state (:mod:`._nearest`), probed at the first
        #: batch that needs it (``_UNPROBED`` until then) and again by setup().
        self._native: Native | object | None = _UNPROBED if self._index else None
        #: Whether each searched prefix held many items (:func:`._scan.many_under`).
        self._sizes: PrefixSizes = {}

    @property
    def ann(self) -> str | None:
        """``"hnsw"`` when vector searches use the database's ANN index (pgvector's HNSW
        on PostgreSQL, see docs/store.md), else None: exact search, in the database
        where it has a native vector column, else scored by the store. Known after
        :meth:`setup` or the first batch."""
        native = self._native
        return "hnsw" if isinstance(native, Native) and native.index else None

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str | URL,
        *,
        schema: str | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        retry_timeout: float = 15.0,
        on_retry: Callable[[RetryEvent], object] | None = None,
        clock: Callable[[], datetime] | None = None,
        indexed_fields: Sequence[str] | None = None,
        **engine_kwargs: Any,
    ) -> Self:
        """Build a store, and its sync and async engines, from a URL or a SQLite path.

        The same URL rules as :meth:`.SQLAlchemySaver.from_conn_string`; stores and savers
        built for the same URL, schema and plain engine arguments share one engine pair.
        The result is the store itself: use it directly, or as a context manager (``with``
        or ``async with``) that closes it on exit.

        Args:
            conn_string: ``sqlite:///path.db``, a bare file path, ``:memory:``,
                ``postgresql://user@host/db``, a libpq connection string
                (``"host=db dbname=app user=u"``), ``mysql://...``.
            schema: See :class:`SQLAlchemyStore`.
            index: See :class:`SQLAlchemyStore`.
            ttl: See :class:`SQLAlchemyStore`.
            retry_timeout: See :class:`SQLAlchemyStore`.
            on_retry: See :class:`SQLAlchemyStore`.
            clock: See :class:`SQLAlchemyStore`.
            indexed_fields: See :class:`SQLAlchemyStore`.
            **engine_kwargs: Passed to ``create_engine`` and ``create_async_engine``,
                ``connect_args`` split between them as for
                :meth:`.SQLAlchemySaver.from_conn_string`: each engine gets the keys its
                driver takes.

        Returns:
            The store. Run :meth:`setup` once to create the tables.

        Raises:
            DatabaseURLError: A URL SQLAlchemy would refuse or read otherwise.
            UnsupportedDialectError: The URL's dialect is not supported.
            DriverNotInstalledError: A driver it needs is not installed.
        """
        if index:
            IndexSpec(index)  # refused before any engine is made
        _check_omit_expired(ttl)
        check_indexed_fields(indexed_fields)
        check_on_retry(on_retry)
        urls = resolve_urls(conn_string, engine_kwargs.get("connect_args"))
        urls.require_async()
        options: dict[str, Any] = {"schema": schema, "index": index, "ttl": ttl}
        options.update(retry_timeout=retry_timeout, on_retry=on_retry, clock=clock)
        options["indexed_fields"] = indexed_fields
        return _shared.open_owner(cls, urls, options, engine_kwargs)

    # -- lifecycle -------------------------------------------------------------------

    def setup(self) -> Awaitable[None]:
        """Create or migrate the tables to the newest revision (Alembic ``upgrade head``:
        the checkpoint tables and the store's); idempotent, safe from several processes
        at once, retried through transient failures once the database has been reached.

        Blocking: the migration runs on the calling thread, and has run when ``setup()``
        returns, however it is called. In async code ``await store.asetup()`` is the
        non-blocking path (the event loop stays free); ``await store.setup()`` still
        works, but blocks the loop for the migration.

        Returns:
            A coroutine that is already done (``inspect.isawaitable`` is true; awaiting
            it does nothing more); it need not be awaited.

        Raises:
            SchemaOutOfDateError: The database was migrated by a newer version.
            CheckpointConnectionError: The database stayed unreachable, or could not
                be reached at its first connection.
        """
        self._migrate()
        self._setup_native()
        return RAN

    async def asetup(self) -> None:
        """Async :meth:`setup`, the non-blocking path in async code: the migration runs
        in a worker thread, the event loop free meanwhile.

        Raises:
            SchemaOutOfDateError: As :meth:`setup`.
            CheckpointConnectionError: As :meth:`setup`.
        """
        await asyncio.to_thread(self._migrate)
        await asyncio.to_thread(self._setup_native)

    def _setup_native(self) -> None:
        """The indexed fields' expression indexes. With an index config, on a dialect
        with a native vector column: add it if the
        server gained the capability since the migration, build the config's ANN index
        (concurrently: writes go on), and probe the state again."""
        if self._qb.indexed_fields:
            self._runner.run(Access.WRITE, create_field_indexes, (self._qb,))
        if self._index is None or self._qb.vector_index() is None:
            return
        self._runner.run(Access.WRITE, _nearest.enable, (self._qb,))
        self._runner.run(Access.WRITE_ONE, _nearest.build_index, (self._qb, self._index))
        self._native = self._runner.run(Access.READ, _nearest.probe, (self._qb, self._index))

    def close(self) -> None:
        """Stop the TTL sweeper thread and dispose the engines this store created."""
        self.stop_ttl_sweeper(timeout=1.0)
        self._runner.close()

    async def aclose(self) -> None:
        """Wait for the running loop's queued calls, stop the TTL sweepers and dispose
        the engines this store created, closing the async connections of the running
        loop properly."""
        await self._rounds.finish()
        await self.astop_ttl_sweeper()
        self.stop_ttl_sweeper(timeout=1.0)
        await self._runner.aclose()

    # -- the BaseStore contract ------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``GetOp``, ``PutOp``, ``SearchOp`` and ``ListNamespacesOp`` operations in one
        transaction: reads first (they see the store as it was before the batch), then
        TTL refreshes, then writes (the last put of a key wins).

        Args:
            ops: The operations.

        Returns:
            One result per operation, in order: ``Item | None`` for a get,
            ``list[SearchItem]`` for a search, ``list[tuple[str, ...]]`` for a namespace
            listing, None for a put.

        Raises:
            InvalidNamespaceError: A namespace breaks LangGraph's rules or the store's
                (no ``"\\x01"``, at most 300 characters joined), or a match condition
                could only match a longer one.
            TypeError: A value or filter is not JSON, a key not a string.
            StoreRequestError: A request over one of the store's limits (docs/store.md,
                "Limits"): a top-level ``$`` key or an unknown operator in a filter, a
                filter over 100 keys or 1 MiB of JSON, over 100 match conditions, a value
                over 64 MiB of JSON (on MySQL/MariaDB, over
                ``max_allowed_packet``), a TTL out of range. Nothing is written.
            ValueError: NaN, 64-bit overflow, a negative ``limit``/``offset``/
                ``max_depth``, an embedding of the wrong size.
            CheckpointConnectionError: The database stayed unreachable.
        """
        return self._runner.drive(self._batch_plan(self._prepare(ops)))

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """One item, as ``batch([GetOp(...)])`` returns it, without the batch's plan: one
        statement (the engine's short door where it may), then, for an item with a TTL
        and ``refresh_ttl``, the refresh in a write of its own.

        Args:
            namespace: The item's namespace.
            key: Its key.
            refresh_ttl: Whether to push back its expiry (default: the TTL config's
                ``refresh_on_read``, True without one).

        Returns:
            The item, or None when there is none (or it expired).

        Raises:
            InvalidNamespaceError: A bad namespace (see :meth:`batch`).
            TypeError, ValueError: A bad key.
            CheckpointConnectionError: The database stayed unreachable.
        """
        if refresh_ttl is None:
            refresh_ttl = (self.ttl_config or {}).get("refresh_on_read", True)
        plan = get_plan(namespace, str(key), refresh_ttl)
        now = self._now()
        item, refresh = self._runner.run(Access.READ_ONE, get_one, (self._qb, plan, now))
        if refresh:
            self._runner.run(Access.WRITE, _items.refresh_ttl, ([(plan.namespace, plan.key)], now))
        return item

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None,
        *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """Store or replace one item, as ``batch([PutOp(...)])`` does. A put with nothing
        to embed that the dialect writes in one statement (PostgreSQL: the vectors'
        delete in the upsert's ``WITH`` clause) runs without the batch's plan, on the
        engine's short door where it may.

        Args:
            namespace: The item's namespace.
            key: Its key.
            value: Its value, a mapping of JSON values.
            index: The fields to embed (None: the index config's, False: none).
            ttl: Minutes until it expires (None: never; default: the TTL config's
                ``default_ttl``).

        Raises:
            InvalidNamespaceError, TypeError, ValueError, StoreRequestError: As
                :meth:`batch`.
            CheckpointConnectionError: The database stayed unreachable.
        """
        if isinstance(namespace, tuple) and namespace[:1] == ("langgraph",):
            # BaseStore.put's rule (not the batch's): LangGraph's own root label
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {namespace}'
            )
        if isinstance(ttl, NotProvided):
            ttl = (self.ttl_config or {}).get("default_ttl")
        prepared = self._prepare([PutOp(namespace, str(key), value, index, ttl=ttl)])
        if not prepared.texts:
            batch = self._finish(prepared, [], {})
            access, run = route(self._qb, batch)
            if access is Access.WRITE_ONE:
                self._runner.run(access, run, (self._qb, batch))
                return
        self._runner.drive(self._batch_plan(prepared))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async :meth:`batch`: the same plan through the async door, the embedding
        model called through its async methods.

        A batch of one operation (what ``aget``, ``aput``, ``asearch``, ``adelete`` and
        ``alist_namespaces`` send) is checked, then queued: the concurrent calls of an
        event loop run together as one batch (up to 1,000 a round), as LangGraph's
        official stores do, each caller getting its own result or error.
        """
        prepared = self._prepare(ops)
        if prepared.count == 1:
            return [await self._rounds.submit(prepared)]
        return await self._runner.adrive(self._batch_plan(prepared))

    async def _around(self, parts: Sequence[Prepared]) -> list[Result]:
        """A round of queued one-operation calls, as one batch."""
        return await self._runner.adrive(self._batch_plan(Prepared.joined(parts, self._now())))

    def _batch_plan(self, prepared: Prepared) -> Plan[list[Result]]:
        """The steps of a checked batch, for either door: its texts and queries embedded
        (:class:`~langgraph.checkpoint.sqlalchemy._engine.steps.Embed` and
        :class:`~langgraph.checkpoint.sqlalchemy._engine.steps.EmbedQueries`: the
        model's sync or async methods, as the door calls them), then the batch in one
        database operation, then the TTL refreshes of its reads in a write of their own
        when it ran in a read."""
        embedded: list[list[float]] = []
        queries: dict[str, list[float]] = {}
        if self._index:
            embeddings = self._index.embeddings
            if prepared.texts:
                embedded = yield Embed(embeddings, [text for _, _, text in prepared.texts])
            if prepared.queries:
                asked = sorted(prepared.queries)
                found = yield EmbedQueries(embeddings, asked)
                queries = dict(zip(asked, found, strict=False))
        if self._native is _UNPROBED:
            self._native = yield from self._probe_native()
        batch = self._finish(prepared, embedded, queries)
        done = yield *route(self._qb, batch), (self._qb, batch)
        if done.refresh:
            yield Access.WRITE, _items.refresh_ttl, (done.refresh, batch.now)
        results: list[Result] = done.results
        return results

    def _now(self) -> float:
        if self._clock is _utc_now:  # the default clock: the same number, directly
            return time.time()
        return seconds(self._clock())

    def _prepare(self, ops: Iterable[Op]) -> Prepared:
        """Check every operation (nothing runs when one is bad) and plan the reads
        (:func:`._prepared.prepare`)."""
        default_ttl = (self.ttl_config or {}).get("default_ttl")
        return prepare(list(ops), self._now(), self._index, default_ttl, self._sizes)

    def _finish(
        self,
        prepared: Prepared,
        embedded: Sequence[Sequence[float]],
        queries: dict[str, list[float]],
    ) -> Batch:
        """The batch with its put rows (values, expiry, vectors) and query vectors."""
        native = self._native if isinstance(self._native, Native) else None
        return finish(prepared, embedded, queries, self._index, native)

    # -- TTL -------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete the expired items (and their vectors) now.

        Returns:
            The number of items deleted.
        """
        return self._runner.run(Access.WRITE, _items.delete_expired, (self._now(),))

    async def asweep_ttl(self) -> int:
        """Async :meth:`sweep_ttl`."""
        return await self._runner.arun(Access.WRITE, _items.delete_expired, (self._now(),))

    # -- tools -----------------------------------------------------------------------

    def stats(self) -> StoreStats:
        """Count what the store holds (items, namespaces, vectors, expired items)."""
        return self._runner.run(Access.READ, _items.stats, (self._now(),))

    async def astats(self) -> StoreStats:
        """Async :meth:`stats`."""
        return await self._runner.arun(Access.READ, _items.stats, (self._now(),))

    def held(
        self, keys: Sequence[tuple[str, str]], *, with_vectors: bool = False
    ) -> tuple[dict[tuple[str, str], Any], set[tuple[str, str]]]:
        """What the store holds for ``keys`` (``(stored namespace text, key)``), expired
        items included and no TTL refreshed: for copies, which compare it with their
        source."""
        return self._runner.run(Access.READ, _items.held, (list(keys), with_vectors))

    def load_items(self, items: Iterable[StoredItem], *, batch_size: int = 500) -> int:
        """Write items as they are, timestamps and expiry included (copies from another
        store): an item already here is overwritten. Vectors given are kept when their
        size matches the index config, else computed with it.

        Args:
            items: The items.
            batch_size: Items a transaction.

        Returns:
            The number of items written.

        Raises:
            InvalidNamespaceError: As :meth:`batch`, for a bad namespace.
            TypeError: As :meth:`batch`, for a key or value that is not JSON.
            ValueError: As :meth:`batch`, for a bad value or embedding.
        """
        written = 0
        chunk: list[StoredItem] = []
        for item in items:
            chunk.append(item)
            if len(chunk) >= batch_size:
                written += self._load(chunk)
                chunk = []
        if chunk:
            written += self._load(chunk)
        return written

    def _load(self, chunk: Sequence[StoredItem]) -> int:
        rows = load_rows(self._index, chunk)
        if self._native is _UNPROBED:
            self._native = self._runner.drive(self._probe_native())
        native = isinstance(self._native, Native)
        self._runner.run(Access.WRITE, _items.put_rows, (self._qb, rows, self._now(), native))
        return len(rows)

    def _probe_native(self) -> Plan[Native | None]:
        if self._index is None or self._qb.vector_index() is None:
            return None
        native: Native | None = yield Access.READ, _nearest.probe, (self._qb, self._index)
        return native


_UNPROBED = object()
