"""``lock_thread``'s SQL: the lease row of a thread's lock, taken, renewed and dropped.

On a database server the lock is a lease row in ``lgsa_locks``
(:meth:`.QueryBuilder.take_lease`), not a lock of the database session: a session lock
(``pg_try_advisory_lock``, ``GET_LOCK``) is one server's (two Galera nodes each grant
it), outlives its holder's transaction on a pooled server connection that a transaction
pooler (PgBouncer) then hands to another client, and vanishes in a failover while its
holder goes on. A lease row is replicated like any other row, certified by Galera,
needs no session state, and survives a promotion to a synchronous standby.

A lease lasts :data:`LEASE` seconds on the database server's clock. Each function here is
one statement on a ``Connection``, run through the owner's
:class:`~._engine.runner.Runner` (its retries through failover and certification
conflicts apply); the waiting between tries, the renewal while the block runs and the
release are the plans of :mod:`._plans.locks`. SQLite (one host) keeps the dialect's own
lock (:meth:`.QueryBuilder.try_thread_lock`), which is no SQL of the saver's.
"""

from __future__ import annotations

import hashlib

from langgraph.checkpoint.sqlalchemy._engine.doors import Access
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from sqlalchemy import Connection

__all__ = ["LEASE", "drop_lease", "lease_name", "renew_lease", "take_access", "take_lease"]

#: Seconds a ``lock_thread`` lease lasts without renewal.
LEASE = 30.0


def lease_name(thread_id: str) -> str:
    """The ``lgsa_locks`` row of a thread's lock (a digest: names are 64 characters)."""
    digest = hashlib.sha256(f"lgsa/thread/{thread_id}".encode("utf-8", "surrogatepass"))
    return "thread:" + digest.hexdigest()[:57]


def take_access(qb: QueryBuilder) -> Access:
    """How :func:`take_lease` runs: without a transaction around it where the dialect
    takes a lease in one statement."""
    return Access.WRITE_ONE if qb.lease_in_one_statement else Access.WRITE


def take_lease(conn: Connection, qb: QueryBuilder, name: str, owner: str) -> bool:
    """Take the lease ``name`` for ``owner`` for :data:`LEASE` seconds; False when
    another owner holds it and it has not expired."""
    return qb.take_lease(conn, name, owner, LEASE)


def renew_lease(conn: Connection, qb: QueryBuilder, name: str, owner: str) -> bool:
    """Extend ``owner``'s lease ``name`` by :data:`LEASE` seconds; False when it is no
    longer ``owner``'s (it expired and was taken over)."""
    return qb.renew_lease(conn, name, owner, LEASE)


def drop_lease(conn: Connection, qb: QueryBuilder, name: str, owner: str) -> None:
    """Drop ``owner``'s lease ``name`` (nothing when it is no longer ``owner``'s)."""
    qb.drop_lease(conn, name, owner)
