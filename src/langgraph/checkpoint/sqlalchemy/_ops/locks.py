"""``lock_thread``: a lock on a thread that holds on every topology the saver supports.

On a database server the lock is a lease row in ``lgsa_locks``
(:meth:`.QueryBuilder.take_lease`), not a lock of the database session: a session lock
(``pg_try_advisory_lock``, ``GET_LOCK``) is one server's (two Galera nodes each grant
it), outlives its holder's transaction on a pooled server connection that a transaction
pooler (PgBouncer) then hands to another client, and vanishes in a failover while its
holder goes on. A lease row is replicated like any other row, certified by Galera,
needs no session state, and survives a promotion to a synchronous standby.

A lease lasts :data:`LEASE` seconds on the database server's clock and is renewed
every :data:`RENEW_EVERY` seconds while the block runs (a daemon thread for
``lock_thread``, a task for ``alock_thread``), each time on a pooled connection taken
for that one statement: no connection is held while the block runs. A holder that dies
stops renewing, and its lease is taken :data:`LEASE` seconds later at most. Every
statement runs through the saver's :class:`~._engine.runner.Runner`, so its retries (failover,
certification conflicts) apply.

SQLite (one host) keeps the dialect's own lock (:meth:`.QueryBuilder.try_thread_lock`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

from langgraph.checkpoint.sqlalchemy._engine.doors import Access
from langgraph.checkpoint.sqlalchemy._engine.runner import Runner
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import ThreadLockTimeout
from sqlalchemy import Connection

__all__ = ["LEASE", "RENEW_EVERY", "athread_lock", "thread_lock"]

logger = logging.getLogger(__name__)

#: Seconds a ``lock_thread`` lease lasts without renewal.
LEASE = 30.0
#: Seconds between two renewals of a held lease.
RENEW_EVERY = 10.0
#: Seconds between two tries of a lock held elsewhere (doubling up to :data:`_POLL_MAX`).
_POLL = 0.02
_POLL_MAX = 0.25


def lease_name(thread_id: str) -> str:
    """The ``lgsa_locks`` row of a thread's lock (a digest: names are 64 characters)."""
    digest = hashlib.sha256(f"lgsa/thread/{thread_id}".encode("utf-8", "surrogatepass"))
    return "thread:" + digest.hexdigest()[:57]


def _take_access(qb: QueryBuilder) -> Access:
    """A one-statement take runs without a transaction around it where it can."""
    return Access.WRITE_ONE if qb.lease_in_one_statement else Access.WRITE


def _take(conn: Connection, qb: QueryBuilder, name: str, owner: str) -> bool:
    return qb.take_lease(conn, name, owner, LEASE)


def _renew(conn: Connection, qb: QueryBuilder, name: str, owner: str) -> bool:
    return qb.renew_lease(conn, name, owner, LEASE)


def _drop(conn: Connection, qb: QueryBuilder, name: str, owner: str) -> None:
    qb.drop_lease(conn, name, owner)


def _timeout(thread_id: str, timeout: float) -> ThreadLockTimeout:
    return ThreadLockTimeout(
        f"thread {thread_id!r} stayed locked by another run for {timeout} s; wait for it to "
        "finish or raise lock_thread(timeout=...)"
    )


def _lost(thread_id: str) -> None:
    logger.error(
        "lock_thread(%r): the lease was taken over by another holder (not renewed for %s s: "
        "the database was unreachable or this process stalled); the rest of the block ran "
        "unlocked",
        thread_id,
        LEASE,
    )


def _pauses(thread_id: str, timeout: float) -> Iterator[float]:
    """Seconds to wait before each new try of a lease (doubling from the first poll up
    to the longest); raises :class:`ThreadLockTimeout` once ``timeout`` has passed. One
    schedule for the sync and the async waiter."""
    deadline, pause = time.monotonic() + timeout, _POLL
    while True:
        if time.monotonic() >= deadline:
            raise _timeout(thread_id, timeout)
        yield pause
        pause = min(pause * 2, _POLL_MAX)


@contextmanager
def thread_lock(runner: Runner, url: Any, thread_id: str, timeout: float) -> Iterator[None]:
    """Hold the lock of ``thread_id`` for the block (the saver's ``lock_thread``).

    Args:
        runner: The saver's runner (its sync door and retries).
        url: The database's URL (SQLite's lock files live beside the database).
        thread_id: The thread (its stored key).
        timeout: Seconds to wait for the lock.

    Raises:
        ThreadLockTimeout: Another holder kept the lock for ``timeout`` seconds.
        CheckpointConnectionError: The database could not be reached (see ``Retry``).
    """
    qb = runner.qb
    if not qb.thread_lock_lease:
        handle = _wait_local(qb, url, thread_id, timeout)
        try:
            yield
        finally:
            qb.release_thread_lock(None, handle)
        return
    name, owner = lease_name(thread_id), qb.new_owner()
    pauses = _pauses(thread_id, timeout)
    while not runner.run(_take_access(qb), _take, (qb, name, owner)):
        time.sleep(next(pauses))
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(RENEW_EVERY):
            try:
                if not runner.run(Access.WRITE_ONE, _renew, (qb, name, owner)):
                    _lost(thread_id)
                    return
            except Exception:  # the next renewal tries again; the lease may still hold
                logger.warning("lock_thread(%r): renewal failed", thread_id, exc_info=True)

    beat = threading.Thread(target=renew, name=f"lgsa-lease-{name[7:15]}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join()
        runner.run(Access.WRITE_ONE, _drop, (qb, name, owner))


@asynccontextmanager
async def athread_lock(
    runner: Runner, url: Any, thread_id: str, timeout: float
) -> AsyncIterator[None]:
    """:func:`thread_lock` for the saver's ``alock_thread``: waits and renews without
    blocking the event loop (the renewal is a task of the running loop)."""
    qb = runner.qb
    if not qb.thread_lock_lease:
        deadline = time.monotonic() + timeout
        # One try a worker thread, waiting on the loop: a waiter blocking a thread for
        # its whole wait would starve the holder's own SQLite calls of threads.
        while (handle := await asyncio.to_thread(qb.try_thread_lock, None, url, thread_id)) is None:
            if time.monotonic() >= deadline:
                raise _timeout(thread_id, timeout)
            await asyncio.sleep(_POLL_MAX / 5)
        try:
            yield
        finally:
            qb.release_thread_lock(None, handle)
        return
    name, owner = lease_name(thread_id), qb.new_owner()
    pauses = _pauses(thread_id, timeout)
    while not await runner.arun(_take_access(qb), _take, (qb, name, owner)):
        await asyncio.sleep(next(pauses))

    async def renew() -> None:
        while True:
            await asyncio.sleep(RENEW_EVERY)
            try:
                if not await runner.arun(Access.WRITE_ONE, _renew, (qb, name, owner)):
                    _lost(thread_id)
                    return
            except Exception:
                logger.warning("alock_thread(%r): renewal failed", thread_id, exc_info=True)

    beat = asyncio.ensure_future(renew())
    try:
        yield
    finally:
        beat.cancel()
        with suppress(asyncio.CancelledError):
            await beat
        await runner.arun(Access.WRITE_ONE, _drop, (qb, name, owner))


def _wait_local(qb: QueryBuilder, url: Any, thread_id: str, timeout: float) -> Any:
    """Take the dialect's own lock (SQLite), trying every :data:`_POLL_MAX` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        handle = qb.try_thread_lock(None, url, thread_id)
        if handle is not None:
            return handle
        if time.monotonic() >= deadline:
            raise _timeout(thread_id, timeout)
        time.sleep(_POLL_MAX / 5)
