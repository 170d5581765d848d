"""The saver's engine handles by kind of access, and one async set per event loop.

:class:`Access` names how an operation reaches the database; :class:`Doors` holds an
engine's four handles (one per access, each with its execution options) and opens a
connection for an access. The sync engine has one set; async engines have one set per
event loop (:class:`PerLoopEngines`), because an async connection is used only on its own
loop.

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
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine, event
from sqlalchemy.ext.asyncio import AsyncEngine

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
