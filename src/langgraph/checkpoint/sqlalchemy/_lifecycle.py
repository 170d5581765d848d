"""What the saver and the store share as owners of engines: how they get their engines
and doors, migrate, and close as context managers.

:func:`wire` gives an instance its engines (the shared pair ``from_conn_string`` set on it,
or the pair made from what the caller gave), query builder and :class:`~._loops.Runner`;
:class:`EngineOwner` adds ``setup``'s migration and ``with``/``async with`` around the
owner's ``close``/``aclose``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator
from functools import partial
from types import TracebackType
from typing import Any

from typing_extensions import Self

from sqlalchemy import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from . import migrate
from ._door import Access, access_options
from ._engines import engine_pair
from ._loops import Runner
from ._shared import SharedDoors
from .dialects import QueryBuilder, query_builder

__all__ = ["EngineOwner", "Ran", "wire"]


def wire(
    owner: Any,
    engine: Engine | None,
    async_engine: AsyncEngine | None,
    schema: str | None,
    retry_timeout: float,
) -> None:
    """Set ``owner``'s ``engine``, ``async_engine``, ``schema``, ``_qb`` and ``_doors``.

    ``from_conn_string`` sets ``_pending_shared`` on the instance before ``__init__``: the
    shared engine pair, disposed when its last user closes. Otherwise the engines given
    are completed into a pair (:func:`._engines.engine_pair`), the ones made here owned.

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
    options = access_options(qb, schema)
    doors = Runner(engine, async_engine, options, qb, schema, owned=owned, shared=shared)
    doors.retry_timeout = retry_timeout
    owner._doors = doors


class Ran:
    """What ``setup()`` returns when called inside a running event loop: the migration
    has run already (synchronously, as every sync method called inside a loop runs), and
    awaiting this does nothing more, so that ``await saver.setup()``, the idiom of the
    async official savers, works instead of failing after the migration with "object
    NoneType can't be used in 'await' expression". Not awaiting it is harmless."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()

    def __repr__(self) -> str:
        return "<setup ran; use await asetup() to keep the event loop free>"


_RAN = Ran()


def ran_in_loop() -> Awaitable[None] | None:
    """``setup()``'s result: None, or :class:`Ran` when an event loop is running in this
    thread (the caller may be ``await saver.setup()``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return _RAN


class EngineOwner:
    """``setup``'s migration and the context-manager protocol of an engine owner (the
    saver, the store), which provides ``close`` and ``aclose``."""

    schema: str | None
    engine: Engine
    async_engine: AsyncEngine
    _qb: QueryBuilder
    _doors: Runner

    def close(self) -> None:  # provided by the owner
        raise NotImplementedError

    async def aclose(self) -> None:  # provided by the owner
        raise NotImplementedError

    def _migrate(self) -> None:
        """Alembic ``upgrade head`` through the sync door (the migration lock, retries),
        then no schema check is needed for this owner's operations."""
        connect = self._doors.sync.connect
        read, write = partial(connect, Access.READ), partial(connect, Access.WRITE)
        self._doors.call(migrate.to_head, read, write, self.schema)
        self._doors.schema_checked = True

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
