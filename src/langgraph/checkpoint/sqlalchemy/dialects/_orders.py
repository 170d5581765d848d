"""The orders of the checkpoint reads (a mixin of the :class:`~.base.QueryBuilder`):
how a read of one thread, one namespace or every thread is narrowed, ordered and paged
so that one index serves it newest first whatever the planner's statistics.

Each read is spelled for the index that gives its order: the primary key (``thread_id,
checkpoint_ns, checkpoint_id``) for one namespace, ``ix_lgsa_checkpoints_thread``
(``thread_id, checkpoint_id, checkpoint_ns``) for one thread in every namespace,
``ix_lgsa_checkpoints_checkpoint_id`` across threads. A dialect whose planner, without
statistics, picks another index or a sort overrides the spelling (``EXPLAIN`` after a
bulk load is what ``tests/dialects/test_plans.py`` checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Select, Table, bindparam, tuple_
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["ListingOrders"]


class ListingOrders:
    """Conditions, orders and keyset pages of the reads newest first."""

    def newest_first(self, stmt: Select[Any], table: Table) -> Select[Any]:
        """``stmt`` (a SELECT of ``table``, the checkpoints table) narrowed to one thread
        and namespace, bound as ``thread_id`` and ``checkpoint_ns``, newest checkpoint
        first, one row: the read of ``get_tuple`` without a checkpoint id.

        The conditions and order of :meth:`one_namespace`, bound, ``LIMIT 1``.
        """
        where, order = self.one_namespace(table, bindparam("thread_id"), bindparam("checkpoint_ns"))
        return stmt.where(*where).order_by(*(c.desc() for c in order)).limit(1)

    def one_namespace(
        self, table: Table, thread_id: Any, checkpoint_ns: Any
    ) -> tuple[list[ColumnElement[bool]], tuple[Any, ...]]:
        """Conditions selecting one thread and namespace of ``table`` (the checkpoints
        table), and the ``ORDER BY`` columns (descending) that list them newest first,
        spelled so that a backward scan of the primary key serves the read whatever the
        planner's statistics (``get_tuple`` of the latest, ``list(thread, limit=10)``).
        ``thread_id`` and ``checkpoint_ns`` are values or bound parameters.

        Default: both columns equal to their value, ordered by ``checkpoint_id``: SQLite
        and MariaDB read the key's range for the equal prefix backwards (``EXPLAIN``: no
        sort, no other index).
        """
        c = table.c
        return [c.thread_id == thread_id, c.checkpoint_ns == checkpoint_ns], (c.checkpoint_id,)

    def one_thread(
        self, table: Table, thread_id: Any
    ) -> tuple[list[ColumnElement[bool]], tuple[Any, ...]]:
        """Conditions selecting one thread of ``table`` (the checkpoints table) in every
        namespace, and the ``ORDER BY`` columns (descending) that list it newest first,
        ``checkpoint_id`` then ``checkpoint_ns`` (the order of ``list()``), spelled so
        that a backward scan of ``ix_lgsa_checkpoints_thread`` serves ``list(thread)``
        without a namespace (:meth:`walk_thread` makes sure of it where needed).

        Default: the thread equal to its value, ordered by ``checkpoint_id,
        checkpoint_ns``: SQLite reads that index's range of the thread backwards
        (``EXPLAIN``: no sort, no other index).
        """
        c = table.c
        return [c.thread_id == thread_id], (c.checkpoint_id, c.checkpoint_ns)

    def walk_thread(self, connection: Connection, stmt: Select[Any], table: Table) -> Select[Any]:
        """``stmt``, a listing of one thread in every namespace (:meth:`one_thread`)
        without metadata filters, made to walk ``ix_lgsa_checkpoints_thread`` backwards,
        run on ``connection`` in its read transaction. Default: as is (SQLite does)."""
        return stmt

    def walk_newest_first(self, stmt: Select[Any], table: Table) -> Select[Any]:
        """``stmt``, a listing across threads whose conditions the entries of
        ``ix_lgsa_checkpoints_checkpoint_id`` decide (``step``, ``source``, ``before``),
        made to walk that index newest first. Default: as is (SQLite and PostgreSQL do)."""
        return stmt

    def rows_before(self, columns: Sequence[Any], values: Sequence[Any]) -> ColumnElement[bool]:
        """Condition: ``columns`` sort strictly before ``values`` (keyset pagination of
        ``list()``, newest first).

        Default: a row-value comparison ``(a, b, c) < (?, ?, ?)``, which SQLite and
        PostgreSQL turn into a range scan of the index on those columns.
        """
        return tuple_(*columns) < tuple_(*values)
