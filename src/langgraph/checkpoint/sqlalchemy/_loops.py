"""The two doors of the saver: how its operations reach the database, sync and async.

:class:`Access` names how an operation reaches the database; :class:`Doors` holds an
engine's four handles (one per access, each with its execution options) and opens a
connection for an access. The sync engine has one set; async engines have one set per
event loop (:class:`PerLoopEngines`), because an async connection is used only on its own
loop. :class:`Runner` runs an operation, a sync function on a ``Connection``, through
either door (checking the schema once and retrying through transient failures, see
:class:`~._retry.Retry`), and
runs a method's plan (:data:`Plan`) of operations.

The async drivers (asyncmy, asyncpg, psycopg's async connection) bind a connection to the
event loop that opened it, and SQLAlchemy's async pool waits on an ``asyncio.Queue`` of
one loop. A saver used from successive ``asyncio.run()`` calls, or from threads each
running a loop, therefore gives each loop an engine of its own: the first loop uses the
saver's ``async_engine`` itself; any other loop that runs while it is in use gets a copy
of it (same URL, dialect, options and pool settings, a new pool of its own, made by
``Pool.recreate()``, which SQLAlchemy's ``Engine.dispose(close=False)`` uses too). When a
loop is found closed, its engine's connections, which can no longer be awaited on, are
dropped (``dispose(close=False)``) and the saver's engine is free for the next loop.
"""

from __future__ import annotations

import asyncio
import copy
import enum
import sqlite3
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sqlalchemy import Connection, Engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from . import migrate
from ._display import shown_url
from ._retry import RETRY_TIMEOUT, Retry

if TYPE_CHECKING:
    from ._shared import SharedDoors
from .dialects import WRITE_OPTION, QueryBuilder
from .errors import SchemaOutOfDateError

#: Seconds a new loop waits for the primary engine's first connection (on another
#: thread) to initialise the dialect; past it, it goes on and connects itself.
_DIALECT_WAIT = 30.0


class Access(enum.Enum):
    """How an operation reaches the database."""

    READ = "read"
    """A read transaction (several statements, one snapshot where the database gives
    one)."""
    READ_ONE = "read-one"
    """One statement, no transaction around it."""
    WRITE = "write"
    """A write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
    WRITE_ONE = "write-one"
    """One statement, atomic on its own, no transaction around it."""


R = TypeVar("R")

Call = tuple[Access, Any, tuple[Any, ...]]
"""One operation to run: ``(access, op, args)``, run as ``op(conn, *args)`` on a
connection opened for ``access``."""

Plan = Generator[Call, Any, R]
"""The steps of a saver method: yields each operation to run, is sent its result, and
returns the method's result. Run by :meth:`Runner.drive` (sync) or :meth:`Runner.adrive`
(async), so that a method and its async twin share every step."""

AccessOptions = Mapping[Access, Mapping[str, Any]]
"""Execution options of each :class:`Access` (schema map, dialect options)."""

_WRITES = (Access.WRITE, Access.WRITE_ONE)

E = TypeVar("E", Engine, AsyncEngine)


class Doors(Generic[E]):
    """An engine (sync or async) and its four handles, one per :class:`Access`.

    Args:
        engine: The engine.
        options: Execution options of each access.
    """

    __slots__ = ("_open", "engine")

    def __init__(self, engine: E, options: AccessOptions) -> None:
        self.engine: E = engine
        self._open: dict[Access, Callable[[], Any]] = {}
        for access, opts in options.items():
            handle: Any = engine.execution_options(**opts)
            self._open[access] = handle.begin if access in _WRITES else handle.connect

    def connect(self, access: Access) -> Any:
        """A connection context for ``access``: ``begin()`` for a write (a transaction,
        committed at the end), ``connect()`` for a read (sync ``with`` or ``async
        with`` as the engine is)."""
        return self._open[access]()


def _copy_engine(engine: AsyncEngine) -> AsyncEngine:
    given: Any = engine.sync_engine
    # An engine made by .execution_options() proxies its parent's pool: copy the parent,
    # then apply the same options to the copy.
    base = getattr(given, "_proxied", given)
    sync = copy.copy(base)
    sync.pool = base.pool.recreate()
    if base is not given:
        sync = sync.execution_options(**given.get_execution_options())
    return AsyncEngine(sync)


class PerLoopEngines:
    """The saver's async engines, one per running event loop (see the module docstring).

    Args:
        primary: The saver's ``async_engine``.
        options: Execution options of each access (see :class:`Doors`).
    """

    def __init__(self, primary: AsyncEngine, options: AccessOptions) -> None:
        self.primary = primary
        self._options = options
        self._by_loop: dict[asyncio.AbstractEventLoop, Doors[AsyncEngine]] = {}
        self._lock = threading.Lock()
        # A copy shares the primary's dialect, which SQLAlchemy initialises on the
        # primary's first connection (once, for all copies): copies wait for it.
        self._dialect_ready = threading.Event()
        if hasattr(primary.sync_engine.dialect, "default_isolation_level"):
            self._dialect_ready.set()  # initialised already (the engine was used)
        else:
            event.listen(primary.sync_engine, "connect", self._on_primary_connect)

    def current(self) -> Doors[AsyncEngine]:
        """The engines of the running event loop (made on its first use)."""
        loop = asyncio.get_running_loop()
        found = self._by_loop.get(loop)
        return found if found is not None else self._add(loop)

    def _on_primary_connect(self, _dbapi_connection: Any, _record: Any) -> None:
        # Runs after SQLAlchemy's own first-connect listener has initialised the dialect.
        self._dialect_ready.set()

    def _add(self, loop: asyncio.AbstractEventLoop) -> Doors[AsyncEngine]:
        with self._lock:
            for old in [known for known in self._by_loop if known.is_closed()]:
                # Its loop is gone: nothing can be awaited on its connections any more.
                self._by_loop.pop(old).engine.sync_engine.dispose(close=False)
            if loop in self._by_loop:
                return self._by_loop[loop]
            if all(e.engine is not self.primary for e in self._by_loop.values()):
                found = self._by_loop[loop] = Doors(self.primary, self._options)
                return found
        # The primary serves another loop, on another thread: wait (this thread only)
        # until its first connection has initialised the shared dialect, then copy it.
        self._dialect_ready.wait(_DIALECT_WAIT)
        engine = _copy_engine(self.primary)
        with self._lock:
            return self._by_loop.setdefault(loop, Doors(engine, self._options))

    def _take_all(self) -> list[tuple[asyncio.AbstractEventLoop, AsyncEngine]]:
        with self._lock:
            taken = [(loop, e.engine) for loop, e in self._by_loop.items()]
            self._by_loop.clear()
        return taken

    def close(self, *, dispose_primary: bool) -> None:
        """Drop every loop's pooled connections without awaiting (sync ``close()``);
        the primary engine's too only if ``dispose_primary`` (the saver made it)."""
        for _, engine in self._take_all():
            if engine is not self.primary or dispose_primary:
                engine.sync_engine.dispose(close=False)
        if dispose_primary:
            self.primary.sync_engine.dispose(close=False)

    async def aclose(self, *, dispose_primary: bool) -> None:
        """Close the running loop's connections properly; those of another loop are
        closed on that loop if it still runs, else dropped."""
        running = asyncio.get_running_loop()
        for loop, engine in self._take_all():
            if engine is self.primary and not dispose_primary:
                continue
            if loop is running:
                await engine.dispose()
            elif loop.is_closed() or not loop.is_running():
                engine.sync_engine.dispose(close=False)
            else:
                asyncio.run_coroutine_threadsafe(engine.dispose(), loop)
        if dispose_primary:
            await self.primary.dispose()  # no-op unless connections were made since


def access_options(qb: QueryBuilder, schema: str | None) -> dict[Access, dict[str, Any]]:
    """Execution options of each :class:`Access` for a dialect and a schema.

    Args:
        qb: The dialect's query builder (its one-statement options).
        schema: The schema of the tables (a ``schema_translate_map``), or None.

    Returns:
        The options of each access.
    """
    base: dict[str, Any] = {"schema_translate_map": {None: schema}} if schema else {}
    return {
        Access.READ: base,
        Access.READ_ONE: {**base, **qb.one_statement_read_options},
        Access.WRITE: {**base, WRITE_OPTION: True},
        Access.WRITE_ONE: {**base, **qb.one_statement_write_options},
    }


class Runner:
    """Runs the saver's operations through its two doors.

    Args:
        engine: The sync engine.
        async_engine: The async engine (copied for other event loops).
        options: Execution options of each access.
        qb: The dialect's query builder (errors, ``async_in_thread``).
        schema: The PostgreSQL schema of the tables, for the schema check.
        owned: The engines the saver made, disposed by :meth:`close`.
        shared: The shared doors of ``from_conn_string`` (or None: the saver's own).
        retry_timeout: Seconds to retry an operation through transient failures
            (:class:`~._retry.Retry`).

    Attributes:
        keeper: The connection that keeps a shared in-memory SQLite database alive
            (``from_conn_string(":memory:")``), closed by :meth:`close`.
    """

    def __init__(
        self,
        engine: Engine,
        async_engine: AsyncEngine,
        options: AccessOptions,
        qb: QueryBuilder,
        schema: str | None,
        *,
        owned: list[Engine | AsyncEngine],
        shared: SharedDoors | None = None,
        retry_timeout: float = RETRY_TIMEOUT,
    ) -> None:
        self.owned = owned
        self.retry_timeout = retry_timeout
        self.keeper: sqlite3.Connection | None = None
        self.shared = shared
        self._released = False
        if shared is not None:
            self.sync, self.per_loop = shared.sync, shared.per_loop
        else:
            self.sync = Doors(engine, options)
            # One async engine per event loop: any loop, any thread.
            self.per_loop = PerLoopEngines(async_engine, options)
        self.qb = qb
        self.schema = schema
        self.schema_checked = False

    def close(self) -> None:
        """Dispose the engines the saver made (shared ones when their last user
        closes); async pools are dropped without awaiting."""
        if self._disposes():
            self._dispose_sync()
            self.per_loop.close(dispose_primary=self._owns(self.per_loop.primary))
        self._release_keeper()

    async def aclose(self) -> None:
        """Dispose the engines the saver made (shared ones when their last user
        closes), closing async connections properly."""
        if self._disposes():
            self._dispose_sync()
            await self.per_loop.aclose(dispose_primary=self._owns(self.per_loop.primary))
        self._release_keeper()

    def _disposes(self) -> bool:
        """Whether this close disposes the engines: always for the saver's own; for
        shared doors only at the close of their last user, and once per saver."""
        if self.shared is None:
            return not self._released
        shared, self.shared = self.shared, None
        self._released = True
        return shared.release()

    def _dispose_sync(self) -> None:
        for engine in self.owned:
            if not isinstance(engine, AsyncEngine):
                engine.dispose()

    def _owns(self, engine: Engine | AsyncEngine) -> bool:
        return any(e is engine for e in self.owned)

    def _release_keeper(self) -> None:
        if self.keeper is not None:
            self.keeper.close()
            self.keeper = None

    def run(self, access: Access, op: Callable[..., R], args: tuple[Any, ...]) -> R:
        """Run ``op(conn, *args)`` on a sync connection for ``access``, retried through
        transient failures (see :class:`~._retry.Retry`)."""
        retry: Retry | None = None
        while True:
            try:
                with self.sync.connect(access) as conn:
                    if not self.schema_checked:
                        self.check_schema(conn)
                    return op(conn, *args)
            except (DBAPIError, ConnectionError) as e:
                retry = retry or self.retry()
                time.sleep(retry.pause(e))

    async def arun(self, access: Access, op: Callable[..., R], args: tuple[Any, ...]) -> R:
        """:meth:`run` for the async methods: the same function through
        ``AsyncConnection.run_sync`` on the running loop's engine, or, where the dialect
        says so, :meth:`run` itself in a worker thread."""
        if self.qb.async_in_thread:
            # The same sync function on the sync engine, in one worker thread (see
            # QueryBuilder.async_in_thread): the event loop is never blocked.
            return await asyncio.to_thread(self.run, access, op, args)
        conn: AsyncConnection
        retry: Retry | None = None
        while True:
            try:
                async with self.per_loop.current().connect(access) as conn:
                    if not self.schema_checked:
                        await conn.run_sync(self.check_schema)
                    return await conn.run_sync(op, *args)
            except (DBAPIError, ConnectionError) as e:
                retry = retry or self.retry()
                await asyncio.sleep(retry.pause(e))

    def call(self, fn: Callable[..., R], *args: Any) -> R:
        """``fn(*args)`` (work that opens its own connections, such as a migration),
        retried through transient failures like :meth:`run`."""
        retry: Retry | None = None
        while True:
            try:
                return fn(*args)
            except (DBAPIError, ConnectionError) as e:
                retry = retry or self.retry()
                time.sleep(retry.pause(e))

    def retry(self) -> Retry:
        """A new :class:`~._retry.Retry` for one call (its clock starts now)."""
        return Retry(self.qb, self.retry_timeout, self.sync.engine.url)

    def drive(self, plan: Plan[R]) -> R:
        """Run a plan's operations one after the other through the sync door."""
        steps = _Steps(plan)
        for access, op, args in steps:
            steps.result = self.run(access, op, args)
        return steps.value

    async def adrive(self, plan: Plan[R]) -> R:
        """Run a plan's operations one after the other through the async door."""
        steps = _Steps(plan)
        for access, op, args in steps:
            steps.result = await self.arun(access, op, args)
        return steps.value

    def check_schema(self, conn: Connection) -> None:
        """Once per saver: the database must be at the migration head this library ships,
        so that a missing ``setup()`` is a clear error rather than raw SQL failing."""
        current = migrate.current_revision(conn, schema=self.schema)
        head = migrate.head_revision()
        if current != head:
            where = shown_url(conn.engine.url)
            if current is None or current in migrate.known_revisions():
                raise SchemaOutOfDateError(
                    f"The checkpoint tables at {where} are at revision {current or 'none'}, "
                    f"this version of langgraph-checkpoint-sqlalchemy needs {head}. Run "
                    "saver.setup() (or: python -m langgraph.checkpoint.sqlalchemy upgrade "
                    "--url URL)."
                )
            raise migrate.newer_schema_error(conn, current)
        self.schema_checked = True


class _Steps(Generic[R]):
    """The operations of a plan, for a driver's loop: iterating yields each operation,
    the driver sets :attr:`result` before the next; :attr:`value` is the plan's result."""

    __slots__ = ("_plan", "result", "value")

    def __init__(self, plan: Plan[R]) -> None:
        self._plan = plan
        self.result: Any = None
        self.value: R

    def __iter__(self) -> Iterator[Call]:
        try:
            while True:
                yield self._plan.send(self.result)
        except StopIteration as done:
            self.value = done.value
