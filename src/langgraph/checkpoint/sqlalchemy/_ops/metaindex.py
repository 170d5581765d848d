"""The metadata index's SQL on SQLite and MySQL/MariaDB: the keys a database lists as
complete, and the backfill that indexes stored checkpoints for a key.

Which keys are indexed, their index values and the rows ``put`` adds are pure Python
(:mod:`._codec.metakeys`, where the index is described).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.metakeys import COLUMN_KEYS, index_rows
from langgraph.checkpoint.sqlalchemy.schema import checkpoints, metadata_keys, read_json
from sqlalchemy import Connection, select, tuple_

__all__ = ["backfill", "registered"]

_BATCH = 2000


def registered(conn: Connection) -> frozenset[str]:
    """The keys whose index rows are complete (:data:`.schema.metadata_keys`)."""
    return frozenset(str(k) for (k,) in conn.execute(select(metadata_keys.c.key)))


def backfill(
    conn: Connection,
    insert_ignore: Any,
    keys: Collection[str],
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the index rows of ``keys`` for every stored checkpoint, then list the keys
    in :data:`.schema.metadata_keys`: run in the caller's transaction (migration 0006,
    :meth:`.SQLAlchemySaver.reindex_metadata`).

    The checkpoints are read by primary key in batches of 2,000; metadata that is not a
    JSON object (a damaged row) has no index row, and a filter never matches it either.

    Args:
        conn: Connection in a transaction.
        insert_ignore: The dialect's ``INSERT`` ignoring taken keys
            (:meth:`.QueryBuilder.insert_ignore`) of :data:`.schema.metadata_index`.
        keys: Keys to index (checked by :func:`._codec.metakeys.checked_keys`).
        progress: Called after each batch with the number of checkpoints read so far.

    Returns:
        Index rows written.
    """
    keys = [k for k in keys if k not in COLUMN_KEYS]
    if not keys:
        return 0
    c = checkpoints.c
    key_columns = (c.thread_id, c.checkpoint_ns, c.checkpoint_id)
    after: tuple[Any, ...] | None = None
    written = read = 0
    while True:
        query = select(*key_columns, read_json(c.metadata)).order_by(*key_columns).limit(_BATCH)
        if after is not None:
            query = query.where(tuple_(*key_columns) > tuple_(*after))
        batch = conn.execute(query).all()
        if not batch:
            break
        rows = []
        for thread_id, ns, checkpoint_id, meta in batch:
            if isinstance(meta, dict):
                row = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
                rows += index_rows({**row, "metadata": meta}, keys)
        if rows:
            conn.execute(insert_ignore, rows)
            written += len(rows)
        after = tuple(batch[-1][:3])
        read += len(batch)
        if progress is not None:
            progress(read)
    known = registered(conn)
    new = [{"key": k} for k in keys if k not in known]
    if new:
        conn.execute(metadata_keys.insert(), new)
    return written
