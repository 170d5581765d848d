"""The time of the official TTL bodies: a clock their sleeps move, not the wall clock.

The official bodies let TTLs run out by sleeping (``time.sleep(ttl_seconds - 0.5)``
next to a TTL of one second, then ``assert item is not None``): on a busy machine a
stall of half a second between two lines turns the sleep into a race the body loses,
and upstream marks them ``flaky(retries=3)``. Here the bodies stay as they are, and
``conftest.py`` hands the modules of :data:`SIMULATED` a ``time`` and an ``asyncio``
whose ``sleep`` moves the clock of the test's stores (their ``clock=``) by that much at
once. Between sleeps the clock moves a microsecond each time it is read, so that time
still passes from one call to the next (``updated_at > created_at`` after an update).
A TTL sweeper the body started still runs on its own interval, in its thread or task: a
sleep returns once every running sweeper has swept after the clock moved, as it would
have in that much time. Nothing else of ``time`` or ``asyncio`` changes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from langgraph.store.sqlalchemy import SQLAlchemyStore

from ...conftest import Clock
from ...waiting import until, until_async

__all__ = ["SIMULATED", "SimulatedTime"]

#: The official modules whose bodies sleep for their TTLs to run out.
SIMULATED = ("test_sqlite_ttl", "test_sqlite_async_ttl", "test_postgres_store")


class TickingClock(Clock):
    """A :class:`Clock` that moves a microsecond each time it is read."""

    def __call__(self) -> datetime:
        return self.advance(microseconds=1)


class SimulatedTime:
    """The clock of one test's stores (:meth:`watch`), moved by :meth:`sleep` and
    :meth:`asleep`, which stand for ``time.sleep`` and ``asyncio.sleep`` in the body
    (:meth:`modules`)."""

    def __init__(self) -> None:
        self.clock = TickingClock(datetime.now(timezone.utc))
        self.moves = 0  # how many times the clock has moved
        self.sweepers: dict[int, SQLAlchemyStore] = {}  # id: store, whose sweeper runs
        self.swept: dict[int, int] = {}  # id: ``moves`` when its last finished sweep began

    def time(self) -> float:
        """``time.time()`` on this clock."""
        return self.clock.now.timestamp()

    def watch(self, store: SQLAlchemyStore) -> None:
        """Follow ``store``'s sweeps and sweepers (its public methods, wrapped on the
        instance: the sweeper calls ``self.sweep_ttl()``)."""
        key = id(store)
        sweep, asweep = store.sweep_ttl, store.asweep_ttl
        start, stop = store.start_ttl_sweeper, store.stop_ttl_sweeper
        astart, astop = store.astart_ttl_sweeper, store.astop_ttl_sweeper

        def swept(began: int) -> None:
            self.swept[key] = max(self.swept.get(key, -1), began)

        def sweep_ttl() -> int:
            began = self.moves
            deleted = sweep()
            swept(began)
            return deleted

        async def asweep_ttl() -> int:
            began = self.moves
            deleted = await asweep()
            swept(began)
            return deleted

        def start_ttl_sweeper(*args: Any, **kwargs: Any) -> Any:
            future = start(*args, **kwargs)
            self.sweepers[key] = store
            return future

        def stop_ttl_sweeper(*args: Any, **kwargs: Any) -> bool:
            self.sweepers.pop(key, None)
            return stop(*args, **kwargs)

        async def astart_ttl_sweeper(*args: Any, **kwargs: Any) -> Any:
            task = await astart(*args, **kwargs)
            self.sweepers[key] = store
            return task

        async def astop_ttl_sweeper(*args: Any, **kwargs: Any) -> bool:
            self.sweepers.pop(key, None)
            return await astop(*args, **kwargs)

        wrapped: dict[str, Callable[..., Any]] = {
            "sweep_ttl": sweep_ttl,
            "asweep_ttl": asweep_ttl,
            "start_ttl_sweeper": start_ttl_sweeper,
            "stop_ttl_sweeper": stop_ttl_sweeper,
            "astart_ttl_sweeper": astart_ttl_sweeper,
            "astop_ttl_sweeper": astop_ttl_sweeper,
        }
        for name, method in wrapped.items():
            setattr(store, name, method)

    def _move(self, seconds: float) -> Callable[[], bool]:
        """Move the clock; the check that every running sweeper has swept since."""
        self.clock.advance(seconds=seconds)
        self.moves += 1
        moved = self.moves
        return lambda: all(self.swept.get(key, -1) >= moved for key in self.sweepers)

    def sleep(self, seconds: float) -> None:
        """``time.sleep``: the clock moves at once; a running sweeper sweeps first."""
        until(self._move(seconds), "the TTL sweeper to sweep after the clock moved")

    async def asleep(self, seconds: float) -> None:
        """``asyncio.sleep``, as :meth:`sleep`; the event loop runs meanwhile."""
        await until_async(self._move(seconds), "the TTL sweeper to sweep after the clock moved")

    def modules(self) -> dict[str, Any]:
        """What the body's ``time`` and ``asyncio`` become: the real modules, but for
        their ``sleep`` (and ``time.time``, for our helpers that backdate a row)."""
        return {
            "time": _Module(time, sleep=self.sleep, time=self.time),
            "asyncio": _Module(asyncio, sleep=self.asleep),
        }


class _Module:
    """A module with some of its names replaced."""

    def __init__(self, module: Any, **replaced: Any) -> None:
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)
