"""What our tables hold of a copied thread: the keys transfer skips and verifies by.

Sync functions on a ``Connection``, run through :meth:`.SQLAlchemySaver.run_read` (the
door of every read) by :mod:`.transfer` and :mod:`._transfer.writing`; the counting of
pending-write keys is shared with the sources that read another saver's tables
(:mod:`._transfer.sources`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from langgraph.checkpoint.sqlalchemy.schema import (
    checkpoints,
    full_name,
    name_key,
    stored_full,
    writes,
)
from sqlalchemy import Connection, select

__all__ = ["WriteKeys", "checkpoint_keys", "counted", "held_keys", "ns_by_key"]

WriteKeys = Counter[tuple[str, str, str, str]]
"""``(checkpoint_ns, checkpoint_id, task_id, channel)`` of pending writes, counted."""


def checkpoint_keys(conn: Connection, thread_id: str) -> set[tuple[str, str]]:
    """``(checkpoint_ns, checkpoint_id)`` of a thread's checkpoints, one query: what a copy
    or import into our tables skips (transfer)."""
    c = checkpoints.c
    query = select(c.checkpoint_ns, c.checkpoint_id, c.checkpoint_ns_full).where(
        c.thread_id == thread_id
    )
    if stored_full(thread_id) is not None:
        query = query.where(c.thread_id_full == thread_id)
    return {(full_name(r[0], r[2]), str(r[1])) for r in conn.execute(query)}


def held_keys(
    conn: Connection, thread_id: str, keys: Sequence[tuple[str, str]]
) -> tuple[set[tuple[str, str]], WriteKeys]:
    """Which of the checkpoints ``keys`` (``(checkpoint_ns, checkpoint_id)``) of a thread
    our tables hold, and the keys of their pending writes (:func:`counted`): two queries,
    by which transfer verifies a copy."""
    wanted = set(keys)
    ids = sorted({k[1] for k in keys})
    c = checkpoints.c
    w = writes.c
    found = select(c.checkpoint_ns, c.checkpoint_id).where(
        c.thread_id == thread_id, c.checkpoint_id.in_(ids)
    )
    written = select(w.checkpoint_ns, w.checkpoint_id, w.task_id, w.channel).where(
        w.thread_id == thread_id, w.checkpoint_id.in_(ids)
    )
    by_key = ns_by_key(keys)
    rows = conn.execute(found)
    present = {(by_key.get(str(r[0]), str(r[0])), str(r[1])) for r in rows} & wanted
    return present, counted(conn.execute(written), wanted, by_key)


def ns_by_key(keys: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The namespaces of ``keys`` by what the key column of our tables holds for them
    (a long namespace's digest key, :func:`.schema.name_key`)."""
    return {name_key(ns): ns for ns, _ in keys}


def counted(
    rows: Iterable[Any],
    wanted: set[tuple[str, str]],
    by_key: dict[str, str] | None = None,
) -> WriteKeys:
    """Pending-write keys ``(ns, checkpoint_id, task_id, channel)`` of ``rows`` whose
    checkpoint is ``wanted``, with their multiplicity; ``by_key`` (:func:`ns_by_key`)
    maps our tables' key column back to the namespace."""
    found: WriteKeys = Counter()
    for ns_key, checkpoint_id, task_id, channel in rows:
        ns = by_key.get(str(ns_key), str(ns_key)) if by_key else str(ns_key)
        if (ns, str(checkpoint_id)) in wanted:
            found[(ns, str(checkpoint_id), str(task_id), str(channel))] += 1
    return found
