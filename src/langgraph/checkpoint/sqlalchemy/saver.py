"""``SQLAlchemySaver``: one LangGraph checkpoint saver for SQLite, PostgreSQL and MySQL.

Each database operation is written once, as a sync function on a SQLAlchemy ``Connection``
(the operations layer). Each public method runs a plan: it checks and encodes its
arguments, names the operations to run and decodes what they return. A sync method runs
the plan's operations on the sync engine; its async twin runs the same plan on the async
engine, each operation through ``AsyncConnection.run_sync`` (the two doors). Both engines
are made from one URL and see the same data. docs/concepts.md ("One operation, two
doors") draws the layers; docs/development.md says which folder holds each.

On SQLite the async methods run each operation, the same sync function on the sync
engine, in a worker thread (as ``asyncio.to_thread`` would, at a third of its cost; see
:attr:`.QueryBuilder.async_in_thread`): the event loop is never blocked, and an
operation costs two thread hops instead of two a statement through aiosqlite.

Every dialect difference lives in :mod:`.dialects`. The module is the saver class: the
contract and its documentation (about 300 of its lines), which is why it is longer than
the others.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol, maybe_add_typed_methods
from typing_extensions import Self

from langgraph.checkpoint.sqlalchemy._codec import strict as _strict
from langgraph.checkpoint.sqlalchemy._codec.configs import check_on_retry, saver_options
from langgraph.checkpoint.sqlalchemy._codec.rows import Codec, next_version
from langgraph.checkpoint.sqlalchemy._engine import shared as _shared
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.checkpoint.sqlalchemy._engine.owner import RAN, EngineOwner, wire
from langgraph.checkpoint.sqlalchemy._operator import OperatorMethods
from langgraph.checkpoint.sqlalchemy._ops import checkpoints as _checkpoints
from langgraph.checkpoint.sqlalchemy._ops import listing as _listing
from langgraph.checkpoint.sqlalchemy._plans import methods as _methods
from langgraph.checkpoint.sqlalchemy.errors import RetryEvent
from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["SQLAlchemySaver"]

R = TypeVar("R")

# The contract's parameter types under short names: an async twin declares its
# parameters on one line instead of repeating its sync method's block (whose signature
# the reference shows in full).
_Config = RunnableConfig
_Where = RunnableConfig | None
_Filter = dict[str, Any] | None
_Limit = int | None
_Meta = CheckpointMetadata
_Versions = ChannelVersions
_Writes = Sequence[tuple[str, Any]]

#: Checkpoints fetched per round trip while ``list()`` iterates; no connection is held
#: between pages, so the caller may use the saver inside the loop.
LIST_PAGE_SIZE = 100


class SQLAlchemySaver(EngineOwner, OperatorMethods, BaseCheckpointSaver[str]):
    """A LangGraph checkpoint saver on any SQLAlchemy engine: SQLite, PostgreSQL, MySQL.

    Implements the ``BaseCheckpointSaver`` contract of ``langgraph-checkpoint`` 4 (get_tuple,
    list, put, put_writes, delete_thread, get_next_version), each sync and async. Sync
    methods use a sync engine, async methods an async engine for the same database; give
    either or both, the missing one is made from the other's URL (and disposed by
    :meth:`close`). The usual entry point is :meth:`from_conn_string`.

    The tables are created and migrated by Alembic: call :meth:`setup` once (blocking:
    it migrates before it returns; in async code ``await saver.asetup()``, which keeps
    the event loop free), or run ``alembic upgrade head`` / ``python -m
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
            16,384): a checkpoint whose values are all small is one row, read without
            a blob lookup.
        detect_conflicts: Refuse, with :class:`CheckpointConflictError`, a checkpoint of a
            run (metadata ``source`` ``"input"`` or ``"loop"``) whose parent is no longer
            the newest checkpoint of its namespace: a second run started from the same
            state fails at its first write instead of silently forking the thread.
            Deliberate forks (``update_state``, replays: sources ``"update"``/``"fork"``)
            pass. Costs a lock and a primary-key lookup a put.
        strict_decode: Raise :class:`CheckpointDecodeError` (naming the thread, checkpoint
            and channel or write) when a stored object cannot be rebuilt as its class
            (module gone, constructor rejects the stored fields, type not allowed),
            instead of LangGraph's default of handing back its raw fields as a dict.
            Default False, in strict mode too: the saver then gives back exactly what
            LangGraph's serializer gives back (a pydantic model whose class is defined
            inside a function, which the allowlist leaves as its fields, is rebuilt by
            the graph's state schema). Pass True to refuse such values.
        retry_timeout: Seconds an idempotent operation is retried through a lost or
            refused connection, a read-only server (a promotion) or a lost conflict
            (deadlock, Galera certification) before its typed error is raised (default
            15); the pauses between tries double from 50 ms up to 1 s.
        on_retry: Called with a :class:`RetryEvent` at each retried failure (for
            metrics), in the thread that retries; an exception it raises is logged and
            ignored. Each retry is logged too (docs/observability.md). Default None.
        strict: Strict deserialisation: stored objects are rebuilt only for LangGraph's
            built-in safe types, ``allowed_msgpack_modules`` and the state types a
            graph passes through :meth:`with_allowlist`; any other object a row names
            (a forged ``os.system``) is never imported or called: reading it hands it
            back as its raw fields (what LangGraph's strict serializer returns), or
            with ``strict_decode=True`` refused as :class:`CheckpointDecodeError`. None
            (default): ``LANGGRAPH_CHECKPOINT_STRICT`` (1/true/yes/on or
            0/false/no/off; anything else is an error) when set, else
            ``LANGGRAPH_STRICT_MSGPACK`` as LangGraph reads it, else off (LangGraph's
            permissive default). See docs/security.md.
        allowed_msgpack_modules: In strict mode, more types to rebuild: classes or
            ``(module, name)`` tuples (LangGraph's ``allowed_msgpack_modules``).
        config_metadata: Which keys of ``config["metadata"]`` (and scalar values of
            ``config["configurable"]``) are copied into each checkpoint's stored
            metadata, as LangGraph's ``get_checkpoint_metadata`` does: True (default,
            LangGraph's behaviour: all), False (none: only the metadata LangGraph
            passes to ``put``) or a list of key names (e.g. ``["run_id"]``, which
            :meth:`delete_for_runs` needs). Metadata is stored in clear even under
            ``EncryptedSerializer``: see docs/guarantees.md.
        metadata_index_keys: More metadata keys whose equality filters an index
            serves on SQLite and MySQL/MariaDB (PostgreSQL's GIN index serves every key),
            besides ``thread_id``, ``user_id``, ``assistant_id`` and ``graph_id``, always
            indexed (``source``, ``step`` and ``run_id`` have columns of their own,
            see docs/concepts.md). Every
            process writing to the database must list the same keys; a key added later
            serves filters once :meth:`reindex_metadata` has indexed the stored
            checkpoints (until then a filter on it scans). See docs/concepts.md.

    Raises:
        ValueError: Neither engine was given, ``inline_limit`` is out of range,
            ``retry_timeout`` is negative, ``LANGGRAPH_CHECKPOINT_STRICT`` holds an
            unknown value, ``strict`` with LangGraph's permissive serializer, or
            ``allowed_msgpack_modules`` without ``strict``, or ``config_metadata`` is not
            a bool or a list of key names, or a ``metadata_index_keys`` key is empty,
            holds a NUL or is over 40 characters.
        TypeError: ``on_retry`` is neither callable nor None, or ``metadata_index_keys``
            is a bare string or holds a non-string.
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
        strict_decode: bool = False,
        retry_timeout: float = 15.0,
        on_retry: Callable[[RetryEvent], object] | None = None,
        strict: bool | None = None,
        allowed_msgpack_modules: Iterable[tuple[str, ...] | type] | None = None,
        config_metadata: bool | Collection[str] = True,
        metadata_index_keys: Collection[str] | None = None,
    ) -> None:
        options = saver_options(inline_limit, config_metadata, metadata_index_keys, retry_timeout)
        on_retry = check_on_retry(on_retry)
        is_strict, serde = _strict.saver_serde(serde, strict, allowed_msgpack_modules)
        super().__init__(serde=serde)
        self.strict = is_strict
        # Engines: the shared pair from_conn_string set on the instance, or those given.
        wire(self, engine, async_engine, schema, retry_timeout, on_retry)
        self._st = _checkpoints.statements_for(self._qb)
        self._codec = Codec(self.serde, options, self._qb.metadata_index_rows, strict=strict_decode)
        self._plans = _methods.Plans(self._codec, self._st, detect_conflicts=detect_conflicts)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> Self:
        """A saver sharing this one's engines whose serializer also rebuilds the types
        of ``extra_allowlist`` (LangGraph contract: ``graph.compile`` calls it with the
        graph's state types when ``LANGGRAPH_STRICT_MSGPACK`` is on).

        Args:
            extra_allowlist: ``(module, name)`` tuples of the types to allow.

        Returns:
            This saver when nothing changes, else a shallow clone with the merged
            allowlist (closing either closes the shared engines).
        """
        clone = super().with_allowlist(extra_allowlist)
        if clone is self:
            return self
        return self._with_serde(clone.serde, strict_decode=self._codec.strict)

    def _with_serde(self, serde: SerializerProtocol, *, strict_decode: bool) -> Self:
        """A shallow clone using ``serde`` (same engines, statements and options)."""
        clone = copy.copy(self)
        clone.serde = maybe_add_typed_methods(serde)
        clone._codec = self._codec.with_serde(clone.serde, strict=strict_decode)
        clone._plans = self._plans.with_codec(clone._codec)
        return clone

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str | URL,
        *,
        serde: SerializerProtocol | None = None,
        schema: str | None = None,
        inline_limit: int = 16_384,
        detect_conflicts: bool = False,
        strict_decode: bool = False,
        retry_timeout: float = 15.0,
        on_retry: Callable[[RetryEvent], object] | None = None,
        strict: bool | None = None,
        allowed_msgpack_modules: Iterable[tuple[str, ...] | type] | None = None,
        config_metadata: bool | Collection[str] = True,
        metadata_index_keys: Collection[str] | None = None,
        **engine_kwargs: Any,
    ) -> Self:
        """Build a saver, and its sync and async engines, from a URL or a SQLite path.

        Unlike the official savers' ``from_conn_string``, the result is the saver itself:
        pass it straight to ``graph.compile(checkpointer=...)``, or use it as a context
        manager (``with`` or ``async with``) to dispose its engines on exit.

        Savers built here for the same URL, schema and plain engine arguments share one
        engine pair (one engine per database per process, as SQLAlchemy advises), whose
        connections are closed when the last of them closes: a short-lived saver skips
        making and initialising engines (~5 ms on SQLite).

        Args:
            conn_string: ``sqlite:///path.db``, a bare file path, ``:memory:`` (one
                in-memory database shared by both engines, alive until :meth:`close`),
                ``postgresql://user@host/db`` (psycopg 3 for sync and async), a libpq
                connection string (``"host=db dbname=app user=u"``, read as that
                PostgreSQL URL), ``mysql://...``. A password holding ``@`` is written
                ``%40``.
            serde: See :class:`SQLAlchemySaver`.
            schema: See :class:`SQLAlchemySaver`.
            inline_limit: See :class:`SQLAlchemySaver`.
            detect_conflicts: See :class:`SQLAlchemySaver`.
            strict_decode: See :class:`SQLAlchemySaver`.
            retry_timeout: See :class:`SQLAlchemySaver`.
            on_retry: See :class:`SQLAlchemySaver`.
            strict: See :class:`SQLAlchemySaver`.
            allowed_msgpack_modules: See :class:`SQLAlchemySaver`.
            config_metadata: See :class:`SQLAlchemySaver`.
            metadata_index_keys: See :class:`SQLAlchemySaver`.
            **engine_kwargs: Passed to ``create_engine`` and ``create_async_engine``
                (``pool_size``, ...); each gets the ``connect_args`` its driver takes.

        Returns:
            The saver. Run :meth:`setup` once to create the tables.

        Raises:
            DatabaseURLError: A URL SQLAlchemy would refuse or read otherwise (e.g.
                ``sqlite://relative.db``, an unencoded ``@`` in the password, a bad
                libpq connection string); the message lists the valid forms.
            UnsupportedDialectError: The URL's dialect is not supported.
            UnsupportedDriverError: The URL names a driver the saver cannot use.
            DriverNotInstalledError: A driver it needs is not installed; the message
                names the extra to install.
        """
        saver_options(inline_limit, config_metadata, metadata_index_keys, retry_timeout)
        check_on_retry(on_retry)
        urls = resolve_urls(conn_string, engine_kwargs.get("connect_args"))
        urls.require_async()
        options: dict[str, Any] = {"serde": serde, "schema": schema, "strict_decode": strict_decode}
        options.update(inline_limit=inline_limit, detect_conflicts=detect_conflicts)
        options.update(retry_timeout=retry_timeout, on_retry=on_retry, strict=strict)
        options.update(allowed_msgpack_modules=allowed_msgpack_modules)
        options.update(config_metadata=config_metadata, metadata_index_keys=metadata_index_keys)
        return _shared.open_owner(cls, urls, options, engine_kwargs)

    @property
    def strict_decode(self) -> bool:
        """Whether stored objects that cannot be rebuilt as their class raise
        :class:`CheckpointDecodeError` (see the ``strict_decode`` argument)."""
        return self._codec.strict

    @strict_decode.setter
    def strict_decode(self, value: bool) -> None:
        self._codec.strict = value

    @property
    def detect_conflicts(self) -> bool:
        """Whether a run's checkpoint whose parent is no longer the newest of its namespace
        is refused (see the ``detect_conflicts`` argument)."""
        return self._plans.detect_conflicts

    @detect_conflicts.setter
    def detect_conflicts(self, value: bool) -> None:
        self._plans.detect_conflicts = value

    # -- lifecycle -------------------------------------------------------------------

    def setup(self) -> Awaitable[None]:
        """Create or migrate the tables to the newest revision (Alembic ``upgrade head``).

        Idempotent and safe to run from several processes at once (the migration lock of
        :meth:`.QueryBuilder.migration_lock`) and from several threads of one process
        (Alembic commands run one at a time). A database already at head costs one
        version query, and one of ``lgsa_metadata_keys``: the saver then writes index rows
        for every key listed there, besides its own ``metadata_index_keys``.

        Retried through transient failures like every operation (``retry_timeout``),
        once the database has been reached; a first connection that fails (a wrong host
        or port) raises at once.

        Blocking: the migration runs on the calling thread, and has run when ``setup()``
        returns, however it is called (from sync code, a notebook cell, a coroutine,
        ``asyncio.wait_for``, ``gather``, ``create_task``, a subclass). In async code
        ``await saver.asetup()`` is the non-blocking path: the same migration in a worker
        thread, the event loop free meanwhile (another process's migration may hold the
        migration lock for as long as it runs). ``await saver.setup()`` still works (the
        idiom of the official async savers), but it blocks the loop for the migration.

        Returns:
            A coroutine that is already done (``inspect.isawaitable`` is true), so that
            ``await saver.setup()``, ``asyncio.run(saver.setup())`` or ``create_task``
            take it and do nothing more; it need not be awaited.

        Raises:
            SchemaOutOfDateError: The database was migrated by a newer version of this
                package (a revision it does not know): upgrade the package.
            CheckpointConnectionError: The database stayed unreachable.
        """
        self._setup_here()
        return RAN

    async def asetup(self) -> None:
        """Async :meth:`setup`, the non-blocking path in async code: the same migration
        on the sync engine, in a worker thread (``asyncio.to_thread``), so that the event
        loop runs other tasks while it migrates or waits for another process's migration
        lock; the process's Alembic commands, whose context is process-global, run one
        at a time from any number of threads and loops (see :func:`.migrate.upgrade`).

        Raises:
            SchemaOutOfDateError: As :meth:`setup`.
            CheckpointConnectionError: As :meth:`setup`.
        """
        await asyncio.to_thread(self._setup_here)

    def _setup_here(self) -> None:
        self._migrate()
        # Index rows for every key another process registered (reindex_metadata), so
        # that this writer keeps them complete whatever its metadata_index_keys.
        self._codec.index_also(self._runner.drive(self._plans.registered_keys()))

    def close(self) -> None:
        """Dispose the engines this saver created (not the ones it was given), and the
        async engines it made for other event loops. Any thread may call it.

        Connections of an async pool belong to an event loop: they are dropped without
        awaiting their close (call :meth:`aclose` to close them properly).
        """
        self._codec.values.clear()
        self._runner.close()

    async def aclose(self) -> None:
        """Dispose the engines this saver created, closing the async connections of the
        running event loop properly (those of another loop on that loop if it still
        runs). Any thread and loop may call it."""
        self._codec.values.clear()
        await self._runner.aclose()

    # -- the saver contract: each sync method beside its async twin, one plan for both ----

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch a checkpoint with its channel values and pending writes.

        Args:
            config: ``{"configurable": {"thread_id", "checkpoint_ns"?, "checkpoint_id"?}}``;
                without ``checkpoint_id`` the latest checkpoint of the namespace.

        Returns:
            The checkpoint tuple (pending writes in ``writes_sort_key`` order), or None.

        Raises:
            CheckpointConfigError: No ``thread_id``, or an id of the wrong type or length.
            CheckpointDecodeError: The checkpoint, a channel value or a pending write
                cannot be decoded (damaged or forged row, another serializer or key, or
                a class ``strict_decode`` refuses); the message names which.
        """
        return self._runner.drive(self._plans.get_tuple(config))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await self._runner.adrive(self._plans.get_tuple(config))

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
        pages = self._pages(config, filter, before, limit)
        for access, op, args in pages:
            yield from pages.decoded(self._runner.run(access, op, args))

    async def alist(
        self, config: _Where, *, filter: _Filter = None, before: _Where = None, limit: _Limit = None
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`; no connection is held while a checkpoint is yielded."""
        pages = self._pages(config, filter, before, limit)
        for access, op, args in pages:
            for tup in pages.decoded(await self._runner.arun(access, op, args)):
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
            CheckpointConflictError: ``detect_conflicts`` is on and another checkpoint of
                the namespace was stored since this one's parent (a run's step only).
            CheckpointClockSkewError: The checkpoint's id sorts before its parent's (the
                writing host's clock is behind): it would never be the latest.
        """
        return self._runner.drive(self._plans.put(config, checkpoint, metadata, new_versions))

    async def aput(
        self, config: _Config, checkpoint: Checkpoint, metadata: _Meta, new_versions: _Versions
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await self._runner.adrive(
            self._plans.put(config, checkpoint, metadata, new_versions)
        )

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
        self._runner.drive(self._plans.put_writes(config, writes, task_id, task_path))

    async def aput_writes(
        self, config: _Config, writes: _Writes, task_id: str, task_path: str = ""
    ) -> None:
        """Async :meth:`put_writes`."""
        await self._runner.adrive(self._plans.put_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of a thread, in every namespace.

        One transaction; deleting a thread that does not exist does nothing.
        """
        self._runner.drive(self._plans.delete_thread(thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._runner.adrive(self._plans.delete_thread(thread_id))

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

        Raises:
            CheckpointDecodeError: A value on the chain, or a chain row, is damaged.
        """
        return self._runner.drive(self._plans.delta_history(config, channels))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async :meth:`get_delta_channel_history`."""
        return await self._runner.adrive(self._plans.delta_history(config, channels))

    # -- versions ------------------------------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Next channel version: ``f"{n:032}.{random():016}"``.

        The counter ``n`` grows by one; the random fraction makes versions unique across
        forks of a thread, which blobs keyed by version rely on (LangGraph contract).
        Integer versions written by other savers are accepted as ``current``.
        """
        return next_version(current)

    # -- list pages (kept here: LIST_PAGE_SIZE is this module's) ----------------------

    def _pages(
        self, config: _Where, filter: _Filter, before: _Where, limit: _Limit
    ) -> _methods.Pages:
        query = _listing.list_query(self._qb, config, filter, before, self._codec.index_keys)
        return _methods.Pages(self._codec, self._st, query, limit, LIST_PAGE_SIZE)
