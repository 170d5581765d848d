"""How a checked ``batch()`` reaches the database: the access it needs, and the
operation that runs it.

A lone ``get``, and a lone put that the dialect writes in one statement, are one
statement with no transaction around it: they run as :func:`run_alone`, which may take
the engine's short door (:mod:`langgraph.checkpoint.sqlalchemy._engine.lane`: a pooled
connection without SQLAlchemy's ``Connection``, its transaction and their events), as
the saver's graph-step statements do. Every other batch runs as
:func:`._reads.run_batch` through the full door.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.sqlalchemy._engine.doors import Access
from langgraph.checkpoint.sqlalchemy._engine.lane import capable
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.store.sqlalchemy import _items
from langgraph.store.sqlalchemy._reads import BatchResult, run_batch
from langgraph.store.sqlalchemy._shapes import Batch
from sqlalchemy import Connection

__all__ = ["route", "run_alone"]


@capable
def run_alone(conn: Connection, qb: QueryBuilder, batch: Batch) -> BatchResult:
    """:func:`._reads.run_batch` of a batch of one statement (a lone get, a lone vector
    search by the database's column, or a lone put written in one statement): its
    statements through the driver's cursor, so that it may run on the short door (a
    read that needs ``Connection.execute``, such as a prefix's first count or the items
    without vectors that follow the scored ones, goes on through the full door)."""
    return run_batch(conn, qb, batch)


def route(qb: QueryBuilder, batch: Batch) -> tuple[Access, Callable[..., Any]]:
    """The access and the operation of a batch: a write transaction for puts (their
    reads' TTL refreshes too) unless it is one put written in one statement; one
    statement for a lone get or a lone vector search by the database's column; else a
    read transaction (one snapshot where the database gives one), whose TTL refreshes
    follow in a write of their own."""
    if batch.puts:
        if not batch.reads and _items.one_statement(qb, batch.puts):
            return Access.WRITE_ONE, run_alone
        return Access.WRITE, run_batch
    if batch.one_get or batch.one_native_search:
        return Access.READ_ONE, run_alone
    return Access.READ, run_batch
