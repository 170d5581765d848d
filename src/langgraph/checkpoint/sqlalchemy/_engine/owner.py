"""What the saver and the store share as owners of engines: how they get their engines
and runner, migrate, and close as context managers.

:func:`wire` gives an instance its engines (the shared pair ``from_conn_string`` set on it,
or the pair made from what the caller gave), query builder and :class:`~._engine.runner.Runner`;
:class:`EngineOwner` adds ``setup``'s migration and ``with``/``async with`` around the
owner's ``close``/``aclose``.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Generator
from functools import partial
from types import TracebackType
from typing import Any

from typing_extensions import Self

from langgraph.checkpoint.sqlalchemy import migrate
from langgraph.checkpoint.sqlalchemy._codec.configs import OnRetry
from langgraph.checkpoint.sqlalchemy._engine.doors import Access, access_options
from langgraph.checkpoint.sqlalchemy._engine.engines import engine_pair
from langgraph.checkpoint.sqlalchemy._engine.retry import LOG
from langgraph.checkpoint.sqlalchemy._engine.runner import Runner
from langgraph.checkpoint.sqlalchemy._engine.shared import SharedDoors
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder, query_builder
from sqlalchemy import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["RAN", "EngineOwner", "Ran", "wire"]


def wire(
    owner: Any,
    engine: Engine | None,
    async_engine: AsyncEngine | None,
    schema: str | None,
    retry_timeout: float,
    on_retry: OnRetry | None = None,
    log: logging.Logger = LOG,
) -> None:
    """Set ``owner``'s ``engine``, ``async_engine``, ``schema``, ``_qb`` and ``_runner``
    (retrying for ``retry_timeout`` seconds, each retry logged on ``log`` and given to
    ``on_retry``).

    ``from_conn_string`` sets ``_pending_shared`` on the instance before ``__init__``: the
    shared engine pair, disposed when its last user closes. Otherwise the engines given
    are completed into a pair (:func:`._engine.engines.engine_pair`), the ones made here owned.

    Raises:
        ValueError: Neither engine given.
        UnsupportedDialectError: The engine's dialect is not supported.
        DriverNotInstalledError: The missing engine needs a driver that is not installed.
    """
    shared: SharedDoors | None = owner.__dict__.pop("_pending_shared", None)
    if shared is None:
        engine, async_engine, owned = engine_pair(engine, async_engine)
    else:
        engine, async_engine = shared.engine, shared.async_engine
        owned = [engine, async_engine]  # disposed when the last of its users closes
    owner.schema = schema
    owner.engine = engine
    owner.async_engine = async_engine
    owner._qb = qb = query_builder(engine.dialect.name)
    if shared is None:
        options = access_options(qb, schema)
        owner._runner = Runner.own(
            engine,
            async_engine,
            options,
            qb,
            schema,
            owned=owned,
            retry_timeout=retry_timeout,
            on_retry=on_retry,
            log=log,
        )
    else:  # the shared doors, and the count of their users
        owner._runner = Runner(
            shared.sync,
            shared.per_loop,
            qb,
            schema,
            owned=owned,
            release=shared.release,
            retry_timeout=retry_timeout,
            on_retry=on_retry,
            log=log,
        )


class Ran(Coroutine[Any, Any, None]):
    """What ``setup()`` returns once it has migrated: a coroutine that is already done,
    so that ``await saver.setup()`` (the idiom of the official async savers) and
    whatever takes a coroutine (``asyncio.run``, ``create_task``, ``gather``,
    ``wait_for``, a later ``await``) take it and do nothing more. Not awaiting it is
    harmless: it is no real coroutine, and Python does not warn about it."""

    __slots__ = ()

    def send(self, value: Any) -> Any:
        raise StopIteration

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        raise typ if val is None else val

    def close(self) -> None:
        return None

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()

    def __repr__(self) -> str:
        return "<setup done>"


#: The one done :class:`Ran`, returned by every ``setup()``.
RAN = Ran()


class EngineOwner:
    """``setup``'s migration and the context-manager protocol of an engine owner (the
    saver, the store), which provides ``close`` and ``aclose``."""

    schema: str | None
    engine: Engine
    async_engine: AsyncEngine
    _qb: QueryBuilder
    _runner: Runner

    def close(self) -> None:  # provided by the owner
        raise NotImplementedError

    async def aclose(self) -> None:  # provided by the owner
        raise NotImplementedError

    def _migrate(self) -> None:
        """Alembic ``upgrade head`` through the sync door (the migration lock, retries),
        then no schema check is needed for this owner's operations."""
        connect = self._runner.sync.connect
        read, write = partial(connect, Access.READ), partial(connect, Access.WRITE)
        self._runner.call(migrate.to_head, read, write, self.schema)
        self._runner.schema_checked = True

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
