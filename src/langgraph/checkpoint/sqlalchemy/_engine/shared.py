"""Engines shared by the owners (savers and stores) that ``from_conn_string`` builds for
one database.

SQLAlchemy's advice is one engine per database per process. :class:`DoorRegistry` keeps
the process's engine pairs (:class:`SharedDoors`) by URL, schema and engine arguments;
:func:`open_owner` builds a saver or a store on them (or on engines of its own when they
cannot be shared: in-memory SQLite, engine arguments that are not plain values).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from langgraph.checkpoint.sqlalchemy._engine.doors import AccessOptions, Doors, access_options
from langgraph.checkpoint.sqlalchemy._engine.engines import EngineURLs, engine_pair, url_engine
from langgraph.checkpoint.sqlalchemy._engine.runner import PerLoopEngines
from langgraph.checkpoint.sqlalchemy.dialects import query_builder
from sqlalchemy import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "SHARED",
    "DoorRegistry",
    "SharedDoors",
    "open_owner",
    "own_engines",
    "per_engine_kwargs",
    "shared_key",
]

S = TypeVar("S")


def shared_key(urls: EngineURLs, schema: str | None, kwargs: Mapping[str, Any]) -> Any:
    """The key of the shared engines of ``from_conn_string`` (:class:`DoorRegistry`), or
    None when an engine argument or a connection argument is not a plain value
    (callables, SSL contexts) or the database is in memory: such savers get engines of
    their own.

    Args:
        urls: The engines' URLs and connection arguments (each engine's own).
        schema: The saver's schema.
        kwargs: The engine arguments (their ``connect_args`` is read from ``urls``).

    Returns:
        A hashable key: both URLs, the database file, the schema, the other engine
        arguments and each engine's connection arguments.
    """
    plain = (str, int, float, bool, type(None))
    others = {k: v for k, v in kwargs.items() if k != "connect_args"}
    values = [*others.values(), *urls.sync_args.values(), *urls.async_args.values()]
    if urls.memory or not all(isinstance(v, plain) for v in values):
        return None
    # A relative SQLite path names a file of the current folder: the same URL text opened
    # from another folder is another database, and must not get the first one's engines.
    where = type(query_builder(urls.sync.get_backend_name())).database_file(urls.sync)
    return (
        urls.sync.render_as_string(hide_password=False),
        urls.async_.render_as_string(hide_password=False),
        where,
        schema,
        tuple(sorted(others.items())),
        tuple(sorted(urls.sync_args.items())),
        tuple(sorted(urls.async_args.items())),
    )


def per_engine_kwargs(urls: EngineURLs, kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The keyword arguments of ``create_engine`` and of ``create_async_engine``: the
    engine arguments given, each with its own engine's ``connect_args`` (``urls``)."""
    others = {k: v for k, v in kwargs.items() if k != "connect_args"}
    return (
        {**others, "connect_args": dict(urls.sync_args)},
        {**others, "connect_args": dict(urls.async_args)},
    )


def own_engines(
    urls: EngineURLs, kwargs: Mapping[str, Any]
) -> tuple[Engine, AsyncEngine, sqlite3.Connection | None]:
    """Engines of a saver's own (not shared), and the connection that keeps an in-memory
    SQLite database alive while the saver is open (or None)."""
    # check_same_thread=False: construction, use and close() may be on any threads.
    keeper = (
        sqlite3.connect(urls.memory, uri=True, check_same_thread=False) if urls.memory else None
    )
    sync_kwargs, async_kwargs = per_engine_kwargs(urls, kwargs)
    return (
        url_engine(urls.sync, **sync_kwargs),
        url_engine(urls.async_, is_async=True, **async_kwargs),
        keeper,
    )


class SharedDoors:
    """An engine pair and its doors, shared by the savers that ``from_conn_string``
    builds for the same URLs, engine arguments and schema (see :class:`DoorRegistry`).

    Args:
        engine: The sync engine.
        async_engine: The async engine.
        options: Execution options of each access.
    """

    def __init__(self, engine: Engine, async_engine: AsyncEngine, options: AccessOptions) -> None:
        self.engine = engine
        self.async_engine = async_engine
        self.sync = Doors(engine, options)
        self.per_loop = PerLoopEngines(async_engine, options)
        self.users = 0
        self.registry: DoorRegistry | None = None

    def release(self) -> bool:
        """Count one user less in its registry; True when it was the last (the caller
        disposes the pools then)."""
        assert self.registry is not None
        return self.registry.release(self)

    @classmethod
    def make(cls, urls: EngineURLs, kwargs: Mapping[str, Any], schema: str | None) -> SharedDoors:
        """New engines for ``urls`` (configured for the saver) and their doors."""
        sync_kwargs, async_kwargs = per_engine_kwargs(urls, kwargs)
        engine, async_engine, _ = engine_pair(
            url_engine(urls.sync, **sync_kwargs),
            url_engine(urls.async_, is_async=True, **async_kwargs),
        )
        qb = query_builder(engine.dialect.name)
        return cls(engine, async_engine, access_options(qb, schema))


class DoorRegistry:
    """The process's :class:`SharedDoors`, by key (URLs, engine arguments, schema).

    SQLAlchemy's advice is one engine per database per process: an engine is made once,
    its dialect initialised at its first connection, its statements compiled once. A
    saver opened for a few calls (a request handler, a job) and closed again would
    otherwise make and initialise two engines each time (~5 ms on SQLite, more than
    its calls). Savers built by ``from_conn_string`` for the same key therefore share
    one engine pair, its pool and its per-loop engines; the pools are disposed (every
    connection closed) when the last of them closes, and the engines are kept for the
    next saver (at most :attr:`max_idle` unused pairs, the least recently used dropped).
    """

    max_idle = 8

    def __init__(self) -> None:
        self._entries: OrderedDict[Any, SharedDoors] = OrderedDict()
        self._lock = threading.Lock()

    def acquire(self, key: Any, make: Callable[[], SharedDoors]) -> SharedDoors:
        """The shared doors of ``key`` (made by ``make`` the first time), counted as used
        until :meth:`release`."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = make()
                entry.registry = self
            self._entries.move_to_end(key)
            entry.users += 1
            idle = [k for k, e in self._entries.items() if e.users == 0]
            for k in idle[: max(0, len(idle) - self.max_idle)]:
                del self._entries[k]  # disposed when its last user closed
            return entry

    def forget_after_fork(self) -> None:
        """In a child process after ``fork()``: the engines shared with the parent hold
        the parent's sockets, which two processes must not use. Drop their pooled
        connections without closing them (the parent still uses them: SQLAlchemy's
        ``Engine.dispose(close=False)``), and forget them, so that the child's
        ``from_conn_string`` makes engines of its own."""
        self._lock = threading.Lock()  # another thread of the parent may have held it
        for entry in self._entries.values():
            entry.engine.dispose(close=False)
            entry.async_engine.sync_engine.dispose(close=False)
            entry.per_loop.close(dispose_primary=False)
        self._entries.clear()

    def release(self, entry: SharedDoors) -> bool:
        """Count one user less; True when it was the last (dispose the pools then)."""
        with self._lock:
            entry.users -= 1
            return entry.users == 0


#: The registry of savers built by ``from_conn_string``.
SHARED = DoorRegistry()
if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=SHARED.forget_after_fork)


def open_owner(
    cls: type[S],
    urls: EngineURLs,
    options: Mapping[str, Any],
    engine_kwargs: Mapping[str, Any],
) -> S:
    """An owner of class ``cls`` (a saver or a store: their ``from_conn_string``) on the
    shared engines of its key (:class:`DoorRegistry`), or on engines of its own.

    Args:
        cls: The saver or store class (its ``__init__`` calls
            :func:`._engine.owner.wire`, which takes the shared engines set here).
        urls: The engines' URLs and connection arguments, as
            :func:`._engine.engines.resolve_urls` made them from the URL and
            ``engine_kwargs``' ``connect_args``.
        options: The owner's keyword arguments (``schema`` among them).
        engine_kwargs: Passed to both ``create_engine`` and ``create_async_engine``,
            ``connect_args`` as ``urls`` split it: each engine gets its own.

    Returns:
        The saver or store.
    """
    schema = options.get("schema")
    key = shared_key(urls, schema, engine_kwargs)
    if key is None:
        engine, async_engine, keeper = own_engines(urls, engine_kwargs)
        own: Any = cls(engine, async_engine, **options)  # type: ignore[call-arg]
        own._runner.owned, own._runner.keeper = [engine, async_engine], keeper
        return own  # type: ignore[no-any-return]
    shared = SHARED.acquire(key, partial(SharedDoors.make, urls, engine_kwargs, schema))
    owner = cls.__new__(cls)
    owner.__dict__["_pending_shared"] = shared
    try:
        owner.__init__(**options)  # type: ignore[misc]
    except BaseException:
        SHARED.release(shared)
        raise
    return owner
