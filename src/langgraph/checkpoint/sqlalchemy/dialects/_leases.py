"""Lease rows: the locks of the saver that hold across a cluster (a mixin of the
:class:`~.base.QueryBuilder`).

A lease is a row of ``lgsa_locks`` with an owner and an expiry on the database server's
clock (:meth:`LeaseRows.clock`, the one dialect difference). It is written with portable
Core statements, replicated and certified like any other row, and needs no state of a
database session. See :mod:`langgraph.checkpoint.sqlalchemy._ops.locks`.
"""

from __future__ import annotations

import secrets
from typing import Any, ClassVar

from langgraph.checkpoint.sqlalchemy.schema import locks
from sqlalchemy import Connection, Table, delete, func, or_, select, update
from sqlalchemy.engine import URL
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["LeaseRows"]


class LeaseRows:
    """Leases in ``lgsa_locks``, and the fallback lock of a dialect that takes none."""

    #: Whether ``lock_thread`` takes a lease row in ``lgsa_locks`` (:meth:`take_lease`):
    #: every database server, where a lock of the database session would not hold across
    #: a cluster's nodes, a transaction pooler or a failover. False: the dialect's own
    #: :meth:`try_thread_lock` (SQLite, one host).
    thread_lock_lease: ClassVar[bool] = True
    #: Whether :meth:`take_lease` is one statement (atomic on its own: run without a
    #: transaction around it where the dialect can).
    lease_in_one_statement: ClassVar[bool] = False

    def insert_ignore(self, table: Table) -> Insert:
        """An insert that skips rows whose key exists (the query builder's)."""
        raise NotImplementedError  # pragma: no cover  (QueryBuilder provides it)

    def try_thread_lock(self, connection: Connection | None, url: URL, thread_id: str) -> Any:
        """Try once to take the lock of ``thread_id`` (``lock_thread``) where
        :attr:`thread_lock_lease` is False; the caller waits and retries.

        Args:
            connection: Unused (None).
            url: The database's URL.
            thread_id: The thread.

        Returns:
            A handle for :meth:`release_thread_lock`, or None when the lock is taken.

        Raises:
            NotImplementedError: The dialect takes lease rows instead.
        """
        raise NotImplementedError(f"{type(self).__name__} locks threads by lease rows")

    def release_thread_lock(self, connection: Connection | None, handle: Any) -> None:
        """Release a lock taken by :meth:`try_thread_lock`.

        Raises:
            NotImplementedError: The dialect takes lease rows instead.
        """
        raise NotImplementedError(f"{type(self).__name__} locks threads by lease rows")

    # -- lease rows: locks that hold across a cluster ----------------------------------

    @staticmethod
    def new_owner() -> str:
        """A fresh lease owner token (32 hex digits) from the operating system's random
        source, never ``uuid.uuid4()``: an application's tests may make that stream
        deterministic (LangGraph's own do), and taking a lease must not shift it."""
        return secrets.token_hex(16)

    def clock(self) -> ColumnElement[Any]:
        """The database server's clock, in seconds since the epoch (a SQL expression):
        lease expiry is decided by the server, never by the holders' clocks. The
        default is SQLite's ``julianday('now')``."""
        return (func.julianday("now") - 2440587.5) * 86400.0

    def take_lease(self, connection: Connection, name: str, owner: str, seconds: float) -> bool:
        """Take the lease ``name`` for ``owner`` for ``seconds``, in the connection's
        transaction (the caller commits): insert its row if there is none, take it over
        if it expired (or is ``owner``'s already), then read who holds it.

        Two takers on one server serialise on the row (its unique key); on a Galera
        cluster both may pass here on two nodes, and certification refuses one of the two
        commits (a deadlock error, which the saver's retry re-runs: the retry sees the
        other's row). Portable Core statements; only :meth:`clock` differs.

        Args:
            connection: A connection inside a write transaction.
            name: The lease's name (at most 64 characters).
            owner: The taker's token (at most 64 characters).
            seconds: Length of the lease.

        Returns:
            Whether ``owner`` holds the lease.
        """
        c = locks.c
        now = self.clock()
        connection.execute(
            self.insert_ignore(locks).values(name=name, owner=owner, expires_at=now + seconds)
        )
        connection.execute(
            update(locks)
            .where(c.name == name, or_(c.expires_at < now, c.owner == owner))
            .values(owner=owner, expires_at=now + seconds)
        )
        holder = connection.execute(
            select(c.owner).where(c.name == name).with_for_update()
        ).scalar()
        return bool(holder == owner)

    def renew_lease(self, connection: Connection, name: str, owner: str, seconds: float) -> bool:
        """Extend ``owner``'s lease ``name`` by ``seconds`` from now.

        Returns:
            Whether ``owner`` still held it (False: it expired and was taken).
        """
        c = locks.c
        result = connection.execute(
            update(locks)
            .where(c.name == name, c.owner == owner)
            .values(expires_at=self.clock() + seconds)
        )
        return bool(result.rowcount)

    def drop_lease(self, connection: Connection, name: str, owner: str) -> None:
        """Release ``owner``'s lease ``name`` (no-op when it is not ``owner``'s)."""
        c = locks.c
        connection.execute(delete(locks).where(c.name == name, c.owner == owner))
