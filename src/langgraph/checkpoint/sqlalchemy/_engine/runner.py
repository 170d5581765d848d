"""The two doors of an owner (the saver, the store): how its operations reach the
database, sync and async.

The sync door (:class:`~.doors.Doors` of the sync engine, :class:`~.doors.SyncRunner`) lives
in :mod:`._engine.doors`; this module adds the async one. Async engines have one set of
doors per event loop (:class:`PerLoopEngines`), because an async connection is used only on
its own loop. :class:`Runner` runs an operation, a sync function on a ``Connection``,
through either door (checking the schema once and retrying through transient failures, see
:class:`~._engine.retry.Retry`), and runs a method's plan (:data:`~._engine.doors.Plan`) of
operations and other steps (:mod:`._engine.steps`: a pause, an embedding call), each
performed the way its door does it.

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
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

from langgraph.checkpoint.sqlalchemy._codec.configs import OnRetry
from langgraph.checkpoint.sqlalchemy._engine import hop
from langgraph.checkpoint.sqlalchemy._engine.doors import (
    ONE,
    Access,
    AccessOptions,
    Doors,
    Plan,
    Steps,
    SyncRunner,
    has_connected,
    not_retried,
)
from langgraph.checkpoint.sqlalchemy._engine.lane import CAPABLE, Detour
from langgraph.checkpoint.sqlalchemy._engine.retry import LOG, RETRY_TIMEOUT, Retry
from langgraph.checkpoint.sqlalchemy._engine.steps import Step
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.dialects._sqlalchemy_private import base_engine
from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util import greenlet_spawn

#: Seconds a new loop waits for the primary engine's first connection (on another
#: thread) to initialise the dialect; past it, it goes on and connects itself.
_DIALECT_WAIT = 30.0


R = TypeVar("R")


def _copy_engine(engine: AsyncEngine) -> AsyncEngine:
    given: Any = engine.sync_engine
    # An engine made by .execution_options() (of such an engine, perhaps) proxies its
    # engine's pool: copy that engine, then apply the given options to the copy.
    base = base_engine(given)
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
        if has_connected(primary.sync_engine):
            self._dialect_ready.set()  # initialised already (the engine was used)
        else:
            event.listen(primary.sync_engine, "connect", self._on_primary_connect)
        _PER_LOOP.add(self)

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

    def after_fork_in_child(self) -> None:
        """In a child process after ``fork()`` (:func:`_after_fork_in_child`): a new lock
        and a new dialect event, which another thread of the parent may have held at the
        moment of the fork. The parent's loops stay known, their engines holding the
        parent's connections: the child's first loop gets a copy of the engine with a
        pool of its own while such a loop is open, or the engine itself once that loop
        is found closed (its pool dropped first, never closed)."""
        self._lock = threading.Lock()
        ready = threading.Event()
        if self._dialect_ready.is_set():
            ready.set()
        self._dialect_ready = ready


#: Every :class:`PerLoopEngines` of the process, for :func:`_after_fork_in_child`.
_PER_LOOP: weakref.WeakSet[PerLoopEngines] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """Reset every :class:`PerLoopEngines` in a child process after ``fork()``
    (:meth:`PerLoopEngines.after_fork_in_child`). Registered before the shared engines'
    handler (:mod:`._engine.shared` imports this module), which closes their loops'
    engines under the same lock."""
    for engines in list(_PER_LOOP):
        engines.after_fork_in_child()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Runner(SyncRunner):
    """Runs the operations of an owner (the saver, the store) through its two doors: the
    sync one of :class:`~._engine.doors.SyncRunner` (``run``, ``drive``, ``call``, the
    schema check) and the async one of each event loop (``arun``, ``adrive``).

    The runner is handed its doors, not the owner of shared engines
    (:class:`~._engine.shared.SharedDoors`): shared doors come with the ``release``
    callable that counts their user out.

    Args:
        sync: The sync engine's doors.
        per_loop: The async engine's doors, one set per event loop.
        qb: The dialect's query builder (errors, ``async_in_thread``).
        schema: The PostgreSQL schema of the tables, for the schema check.
        owned: The engines the owner made (or shares), disposed by :meth:`close`.
        release: For shared doors, counts this runner out of their users and says
            whether it was the last (who disposes the engines); None for the owner's own
            doors, disposed at every close.
        retry_timeout: Seconds to retry an operation through transient failures
            (:class:`~._engine.retry.Retry`).
        on_retry: The owner's callback, given each retried failure, or None.
        log: The logger of the retries (the saver's, or the store's own).

    Attributes:
        keeper: The connection that keeps a shared in-memory SQLite database alive
            (``from_conn_string(":memory:")``), closed by :meth:`close`.
    """

    def __init__(
        self,
        sync: Doors[Engine],
        per_loop: PerLoopEngines,
        qb: QueryBuilder,
        schema: str | None,
        *,
        owned: list[Engine | AsyncEngine],
        release: Callable[[], bool] | None = None,
        retry_timeout: float = RETRY_TIMEOUT,
        on_retry: OnRetry | None = None,
        log: logging.Logger = LOG,
    ) -> None:
        super().__init__(sync, qb, schema, retry_timeout=retry_timeout, on_retry=on_retry, log=log)
        self.per_loop = per_loop
        self.owned = owned
        self.keeper: sqlite3.Connection | None = None
        self._release = release
        self._released = False

    @classmethod
    def own(
        cls,
        engine: Engine,
        async_engine: AsyncEngine,
        options: AccessOptions,
        qb: QueryBuilder,
        schema: str | None,
        *,
        owned: list[Engine | AsyncEngine],
        retry_timeout: float = RETRY_TIMEOUT,
        on_retry: OnRetry | None = None,
        log: logging.Logger = LOG,
    ) -> Runner:
        """A runner on doors of its own for ``engine`` and ``async_engine`` (not shared).

        Args:
            engine: The sync engine.
            async_engine: The async engine (copied for other event loops).
            options: Execution options of each access.
            qb: See :class:`Runner`.
            schema: See :class:`Runner`.
            owned: See :class:`Runner`.
            retry_timeout: See :class:`Runner`.
            on_retry: See :class:`Runner`.
            log: See :class:`Runner`.
        """
        # One async engine per event loop: any loop, any thread.
        per_loop = PerLoopEngines(async_engine, options)
        doors = Doors(engine, options)
        return cls(
            doors,
            per_loop,
            qb,
            schema,
            owned=owned,
            retry_timeout=retry_timeout,
            on_retry=on_retry,
            log=log,
        )

    def reached(self) -> bool:
        """Whether the sync engine or the async one (on any loop) has connected once."""
        return super().reached() or has_connected(self.per_loop.primary.sync_engine)

    def close(self) -> None:
        """Dispose the engines the owner made (shared ones when their last user
        closes); async pools are dropped without awaiting."""
        if self._disposes():
            self._dispose_sync()
            self.per_loop.close(dispose_primary=self._owns(self.per_loop.primary))
        self._release_keeper()

    async def aclose(self) -> None:
        """Dispose the engines the owner made (shared ones when their last user
        closes), closing async connections properly."""
        if self._disposes():
            self._dispose_sync()
            await self.per_loop.aclose(dispose_primary=self._owns(self.per_loop.primary))
        self._release_keeper()

    def _disposes(self) -> bool:
        """Whether this close disposes the engines: always for the owner's own; for
        shared doors only at the close of their last user, and once per owner."""
        if self._release is None:
            return not self._released
        release, self._release = self._release, None
        self._released = True
        return release()

    def _dispose_sync(self) -> None:
        self.sync.lane.release()  # its kept connection first: dispose leaves it alone
        for engine in self.owned:
            if not isinstance(engine, AsyncEngine):
                engine.dispose()

    def _owns(self, engine: Engine | AsyncEngine) -> bool:
        return any(e is engine for e in self.owned)

    def _release_keeper(self) -> None:
        if self.keeper is not None:
            self.keeper.close()
            self.keeper = None

    async def arun(self, access: Access, op: Callable[..., R], args: tuple[Any, ...]) -> R:
        """:meth:`run` for the async methods: the same function through
        ``AsyncConnection.run_sync`` on the running loop's engine, or, where the dialect
        says so, :meth:`run` itself in a worker thread."""
        if self.qb.async_in_thread:
            # The same sync function on the sync engine, in one worker thread (see
            # QueryBuilder.async_in_thread): the event loop is never blocked.
            return await hop.run(self.run, access, op, args)
        conn: AsyncConnection
        retry: Retry | None = None
        while True:
            try:
                doors = self.per_loop.current()
                lane = doors.lane
                if self.schema_checked and op in CAPABLE and access in ONE and lane.open(access):
                    write = access is Access.WRITE_ONE
                    try:
                        return await greenlet_spawn(lane.run, access, write, op, args)
                    except Detour:
                        pass  # through the full door
                async with doors.connect(access) as conn:
                    if not self.schema_checked:
                        await conn.run_sync(self.check_schema)
                    return await conn.run_sync(op, *args)
            except (DBAPIError, ConnectionError) as e:
                not_retried(e)
                retry = retry or self.retry()
                await asyncio.sleep(retry.pause(e))

    async def adrive(self, plan: Plan[R]) -> R:
        """Run a plan's steps one after the other through the async door: its operations
        by :meth:`arun`, its other steps by :meth:`.Step.ado`."""
        steps = Steps(plan)
        for step in steps:
            if type(step) is tuple:  # an operation: the common case, checked first
                access, op, args = step
                steps.result = await self.arun(access, op, args)
            else:
                steps.result = await cast(Step, step).ado()
        return steps.value
