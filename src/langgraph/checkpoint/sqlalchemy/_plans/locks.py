"""``lock_thread``'s plans: take a thread's lock (waiting between tries), renew it while
the block runs, release it; written once for the sync and the async door.

:class:`ThreadLock` holds one ``lock_thread`` call's lock. Its plans yield the lease
statements of :mod:`._ops.locks` (on SQLite, the dialect's own lock, a
:class:`~._engine.steps.Blocking` step) and :class:`~._engine.steps.Pause` steps between
two tries: ``time.sleep`` when the sync door drives them, ``asyncio.sleep`` when the async
door does. :func:`hold` and :func:`ahold` are the context managers around them, which
differ only in what renews the lease every :data:`RENEW_EVERY` seconds while the block
runs: a daemon thread, or a task of the running loop. Each renewal takes a pooled
connection for its one statement: no connection is held while the block runs. A holder
that dies stops renewing, and its lease is taken :data:`~._ops.locks.LEASE` seconds later
at most.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

from langgraph.checkpoint.sqlalchemy._engine.doors import Access, Plan, SyncRunner
from langgraph.checkpoint.sqlalchemy._engine.runner import Runner
from langgraph.checkpoint.sqlalchemy._engine.steps import Blocking, Pause
from langgraph.checkpoint.sqlalchemy._ops.locks import (
    LEASE,
    drop_lease,
    lease_name,
    renew_lease,
    take_access,
    take_lease,
)
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import ThreadLockTimeout

__all__ = ["RENEW_EVERY", "ThreadLock", "ahold", "hold"]

logger = logging.getLogger(__name__)

#: Seconds between two renewals of a held lease.
RENEW_EVERY = 10.0
#: Seconds between two tries of a lease held elsewhere (doubling up to :data:`_POLL_MAX`);
#: a SQLite lock is tried every ``_POLL_MAX / 5`` seconds.
_POLL = 0.02
_POLL_MAX = 0.25


class ThreadLock:
    """The lock of one ``lock_thread`` call: its plans, driven by either door.

    Args:
        qb: The dialect's query builder (the lease statements, or SQLite's own lock).
        url: The database's URL (SQLite's lock files live beside the database).
        thread_id: The thread (its stored key).
        timeout: Seconds to wait for the lock.

    Attributes:
        leased: Whether the lock is a lease row (a database server), renewed while held;
            else the dialect's own lock (SQLite).
    """

    def __init__(self, qb: QueryBuilder, url: Any, thread_id: str, timeout: float) -> None:
        self.qb = qb
        self.url = url
        self.thread_id = thread_id
        self.timeout = timeout
        self.leased = qb.thread_lock_lease
        self.lease = (lease_name(thread_id), qb.new_owner()) if self.leased else ("", "")
        self._handle: Any = None

    def acquire(self) -> Plan[None]:
        """Take the lock, trying again after a pause while another holder has it.

        Raises:
            ThreadLockTimeout: Another holder kept the lock for ``timeout`` seconds.
            CheckpointConnectionError: The database could not be reached (``Retry``).
        """
        qb = self.qb
        if not self.leased:
            # One try at a time (a worker thread on the async door: a waiter blocking a
            # thread for its whole wait would starve the holder's own SQLite calls).
            deadline = time.monotonic() + self.timeout
            try_local = Blocking(qb.try_thread_lock, (None, self.url, self.thread_id))
            while (handle := (yield try_local)) is None:
                if time.monotonic() >= deadline:
                    raise self._timeout()
                yield Pause(_POLL_MAX / 5)
            self._handle = handle
            return
        # The wait starts at the first refusal (a first try retried through a failover
        # does not eat it).
        waited_from, pause = None, _POLL
        while not (yield take_access(qb), take_lease, (qb, *self.lease)):
            waited_from = time.monotonic() if waited_from is None else waited_from
            if time.monotonic() >= waited_from + self.timeout:
                raise self._timeout()
            yield Pause(pause)
            pause = min(pause * 2, _POLL_MAX)

    def renew(self) -> Plan[bool]:
        """Extend the held lease; False (logged) when it was lost: not renewed for
        :data:`~._ops.locks.LEASE` seconds, it was taken over."""
        held: bool = yield Access.WRITE_ONE, renew_lease, (self.qb, *self.lease)
        if not held:
            logger.error(
                "lock_thread(%r): the lease was taken over by another holder (not renewed "
                "for %s s: the database was unreachable or this process stalled); the rest "
                "of the block ran unlocked",
                self.thread_id,
                LEASE,
            )
        return held

    def renewal_failed(self, method: str) -> None:
        """Log a renewal that raised: the next one tries again, the lease may still hold."""
        logger.warning("%s(%r): renewal failed", method, self.thread_id, exc_info=True)

    def release(self) -> Plan[None]:
        """Release the lock taken by :meth:`acquire`."""
        if not self.leased:
            self.qb.release_thread_lock(None, self._handle)
            return
        yield Access.WRITE_ONE, drop_lease, (self.qb, *self.lease)

    def _timeout(self) -> ThreadLockTimeout:
        return ThreadLockTimeout(
            f"thread {self.thread_id!r} stayed locked by another run for {self.timeout} s; "
            "wait for it to finish or raise lock_thread(timeout=...)"
        )


@contextmanager
def hold(runner: SyncRunner, url: Any, thread_id: str, timeout: float) -> Iterator[None]:
    """Hold the lock of ``thread_id`` for the block (the saver's ``lock_thread``), renewed
    by a daemon thread while the block runs.

    Args:
        runner: The saver's runner (its sync door and retries).
        url: The database's URL (SQLite's lock files live beside the database).
        thread_id: The thread (its stored key).
        timeout: Seconds to wait for the lock.

    Raises:
        ThreadLockTimeout: Another holder kept the lock for ``timeout`` seconds.
        CheckpointConnectionError: The database could not be reached (see ``Retry``).
    """
    lock = ThreadLock(runner.qb, url, thread_id, timeout)
    runner.drive(lock.acquire())
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(RENEW_EVERY):
            try:
                if not runner.drive(lock.renew()):
                    return
            except Exception:
                lock.renewal_failed("lock_thread")

    name = f"lgsa-lease-{lock.lease[0][7:15]}"
    beat = threading.Thread(target=renew, name=name, daemon=True) if lock.leased else None
    if beat is not None:
        beat.start()
    try:
        yield
    finally:
        stop.set()
        if beat is not None:
            beat.join()
        runner.drive(lock.release())


@asynccontextmanager
async def ahold(runner: Runner, url: Any, thread_id: str, timeout: float) -> AsyncIterator[None]:
    """:func:`hold` for the saver's ``alock_thread``: waits and renews without blocking
    the event loop (the renewal is a task of the running loop)."""
    lock = ThreadLock(runner.qb, url, thread_id, timeout)
    await runner.adrive(lock.acquire())

    async def renew() -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY)
            try:
                if not await runner.adrive(lock.renew()):
                    return
            except Exception:
                lock.renewal_failed("alock_thread")

    beat = asyncio.ensure_future(renew()) if lock.leased else None
    try:
        yield
    finally:
        if beat is not None:
            beat.cancel()
            with suppress(asyncio.CancelledError):
                await beat
        await runner.adrive(lock.release())
