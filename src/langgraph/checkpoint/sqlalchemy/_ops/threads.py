"""Operator operations: prune, copy_thread, delete_for_runs, blob clean-up, reindex_metadata.

Sync functions on a ``Connection`` inside the caller's transaction, like :mod:`._ops.checkpoints`;
the saver runs them directly (sync) or through ``run_sync`` (async).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.damage import checked_versions
from langgraph.checkpoint.sqlalchemy._ops import history as _history
from langgraph.checkpoint.sqlalchemy._ops import metaindex as _metaindex
from langgraph.checkpoint.sqlalchemy._ops.checkpoints import Statements, chunks
from langgraph.checkpoint.sqlalchemy.errors import ThreadNotEmptyError
from langgraph.checkpoint.sqlalchemy.schema import (
    blobs,
    checkpoints,
    metadata_index,
    read_json,
    stored_full,
    writes,
)
from sqlalchemy import (
    Connection,
    and_,
    delete,
    func,
    insert,
    literal,
    select,
    tuple_,
)
from sqlalchemy.exc import IntegrityError

logger = logging.getLogger("langgraph.checkpoint.sqlalchemy")

PendingChannels = Callable[[Any], Sequence[str]]
"""Given a checkpoint row, the channels it versions but holds no value for (DeltaChannel
channels that must be rebuilt from history). Decodes the checkpoint: pure CPU."""


def prune_keep_latest(
    conn: Connection, st: Statements, thread_id: str, pending_channels: PendingChannels
) -> None:
    """Keep the newest checkpoint of every namespace of a thread and what resuming it needs.

    Kept: the newest checkpoint of each namespace with its pending writes; for a
    checkpoint whose DeltaChannel values must be rebuilt from history, its ancestors
    (with their writes) back to the nearest one storing a value for each such channel,
    or to the root. Everything else of the thread goes, and so do the blobs that no kept
    checkpoint holds.

    Args:
        conn: Connection inside the thread's transaction.
        st: The saver's statements.
        thread_id: The thread.
        pending_channels: See :data:`PendingChannels`.
    """
    c = checkpoints
    latest_ids = conn.execute(
        select(c.c.checkpoint_ns, func.max(c.c.checkpoint_id))
        .where(c.c.thread_id == thread_id)
        .group_by(c.c.checkpoint_ns)
    ).all()
    keep: list[tuple[str, str, set[str]]] = []
    for checkpoint_ns, latest_id in latest_ids:
        kept = {latest_id}
        keep.append((checkpoint_ns, latest_id, kept))
        row = conn.execute(
            select(
                c.c.type,
                c.c.checkpoint,
                read_json(c.c.metadata),
                read_json(c.c.value_versions),
            ).where(
                c.c.thread_id == thread_id,
                c.c.checkpoint_ns == checkpoint_ns,
                c.c.checkpoint_id == latest_id,
            )
        ).one()
        channels = _pending(pending_channels, row, thread_id, latest_id)
        if channels:
            walked = _history.chain(conn, st, thread_id, checkpoint_ns, latest_id, channels)
            kept.update(r.checkpoint_id for r in walked)
    stored_blobs = _blob_keys(conn, thread_id)
    for checkpoint_ns, latest_id, kept_ids in keep:
        ids = sorted(kept_ids)
        for table in (writes, metadata_index, checkpoints):
            # Only what is older than the latest checkpoint read above: a checkpoint (or
            # writes) another process commits meanwhile has a newer id and survives.
            conn.execute(
                delete(table).where(
                    table.c.thread_id == thread_id,
                    table.c.checkpoint_ns == checkpoint_ns,
                    table.c.checkpoint_id < latest_id,
                    *(
                        table.c.checkpoint_id.not_in(chunk)
                        for chunk in chunks(ids, st.qb.row_chunk)
                    ),
                )
            )
    _delete_orphans(conn, st, thread_id, stored_blobs)


def _pending(
    pending_channels: PendingChannels, row: Any, thread_id: str, checkpoint_id: str
) -> list[str]:
    """``pending_channels(row)``, or none (logged) for a row that is damaged or forged:
    its metadata not a JSON object, its ``value_versions`` not ``{channel: version}``,
    or its checkpoint undecodable. Such a checkpoint cannot be resumed; prune keeps it
    and none of its ancestors for it."""
    if isinstance(row.metadata, dict) and checked_versions(row.value_versions) is not None:
        try:
            channels = pending_channels(row)
            return [ch for ch in channels if isinstance(ch, str)]
        except Exception as e:
            why = f"{type(e).__name__}: {e}"
    else:
        why = "metadata or value_versions is not what the saver writes"
    logger.error(
        "prune: checkpoint %r of thread %r is damaged (%s); kept without its history",
        checkpoint_id,
        thread_id,
        why,
    )
    return []


BlobKeys = dict[tuple[str, str, str], str | None]
"""``(checkpoint_ns, channel, version)`` of a thread's blobs, each with the version its
row extends (a piece, :mod:`._codec.pieces`) or None."""


def _blob_keys(conn: Connection, thread_id: str) -> BlobKeys:
    rows = conn.execute(
        select(blobs.c.checkpoint_ns, blobs.c.channel, blobs.c.version, blobs.c.base_version).where(
            blobs.c.thread_id == thread_id
        )
    )
    return {(ns, ch, v): base for ns, ch, v, base in rows}


def _delete_orphans(conn: Connection, st: Statements, thread_id: str, stored: BlobKeys) -> None:
    """Delete the blobs among ``stored`` that no checkpoint of the thread holds now,
    directly or as the base of a piece it holds.

    ``stored`` must be read BEFORE the holders: a put commits its blobs and its
    checkpoint together, so a blob seen in ``stored`` has its checkpoint visible below
    (PostgreSQL/MySQL read committed), while a blob committed after ``stored`` was read
    is not a candidate at all. Reading in the other order deletes the blobs of a
    checkpoint committed in between.
    """
    held: set[tuple[str, str, str]] = set()
    for checkpoint_ns, value_versions in conn.execute(
        select(checkpoints.c.checkpoint_ns, read_json(checkpoints.c.value_versions)).where(
            checkpoints.c.thread_id == thread_id
        )
    ):
        # A forged value_versions (not {channel: version}) holds nothing.
        versions = checked_versions(value_versions) or {}
        held.update((checkpoint_ns, ch, v) for ch, v in versions.items())
    key = (blobs.c.checkpoint_ns, blobs.c.channel, blobs.c.version)
    # A held piece holds the rows it is rebuilt from: its base, the base's base, ...
    # The bases of rows committed after ``stored`` was read are read now.
    bases = dict(stored)
    todo = list(held)
    while todo:
        unread = [k for k in todo if k not in bases]
        for chunk in chunks(unread, st.qb.in_list_chunk):
            found = conn.execute(
                select(*key, blobs.c.base_version).where(
                    blobs.c.thread_id == thread_id, st.qb.keys_in(key, len(chunk))
                ),
                st.qb.keys_params(chunk),
            )
            bases.update(((ns, ch, v), base) for ns, ch, v, base in found)
        step = []
        for checkpoint_ns, ch, v in todo:
            base = bases.get((checkpoint_ns, ch, v))
            if base is not None and (checkpoint_ns, ch, base) not in held:
                held.add((checkpoint_ns, ch, base))
                step.append((checkpoint_ns, ch, base))
        todo = step
    orphans = [k for k in stored if k not in held]
    for chunk in chunks(orphans, st.qb.in_list_chunk):
        conn.execute(
            delete(blobs).where(blobs.c.thread_id == thread_id, st.qb.keys_in(key, len(chunk))),
            st.qb.keys_params(chunk),
        )


def copy_thread(conn: Connection, source: str, target: str) -> None:
    """Copy every checkpoint, blob and write of ``source`` to ``target`` in the database.

    ``INSERT ... SELECT`` per table: ids, parents, metadata, ``task_path`` and every
    namespace are kept; no value passes through Python. Run in a savepoint: when another
    writer creates the target meanwhile, nothing is copied.

    Raises:
        ThreadNotEmptyError: ``target`` already has checkpoints (or is ``source``), or
            another writer gave it rows during the copy.
    """
    try:
        with conn.begin_nested():
            _copy_rows(conn, source, target)
    except IntegrityError as e:
        # Another writer created the target meanwhile: the same refusal, nothing copied.
        raise ThreadNotEmptyError(
            f"copy_thread: thread {target!r} already has rows; delete it first or copy to "
            "a new thread id."
        ) from e


def _copy_rows(conn: Connection, source: str, target: str) -> None:
    taken = conn.execute(
        select(checkpoints.c.checkpoint_id).where(checkpoints.c.thread_id == target).limit(1)
    ).first()
    if taken is not None:
        raise ThreadNotEmptyError(
            f"copy_thread: thread {target!r} already has checkpoints; delete it first "
            "(delete_thread) or copy to a new thread id."
        )
    for table in (checkpoints, blobs, writes, metadata_index):
        # The target's key (a digest for a long id) and, in the checkpoints table, its
        # full text; every other column as the source has it.
        given: dict[str, Any] = {"thread_id": literal(target, table.c.thread_id.type)}
        if "thread_id_full" in table.c:
            given["thread_id_full"] = literal(stored_full(target), table.c.thread_id_full.type)
        columns = [col for col in table.c if col.name not in given]
        conn.execute(
            insert(table).from_select(
                [*given, *(col.name for col in columns)],
                select(*(v.label(k) for k, v in given.items()), *columns).where(
                    table.c.thread_id == source
                ),
            )
        )


def delete_for_runs(conn: Connection, st: Statements, run_ids: Sequence[str]) -> None:
    """Delete the checkpoints whose ``run_id`` is listed, their writes, and blobs left
    unreferenced in their threads. Uses the indexed ``run_id`` column.

    Args:
        conn: Connection in a transaction.
        run_ids: Values of the ``run_id`` column (:func:`.schema.run_key`).
    """
    c = checkpoints
    for chunk in chunks(list(run_ids), st.qb.row_chunk):
        threads = [
            t
            for (t,) in conn.execute(select(c.c.thread_id).where(c.c.run_id.in_(chunk)).distinct())
        ]
        if not threads:
            continue
        stored_blobs = {t: _blob_keys(conn, t) for t in threads}
        doomed = select(c.c.thread_id, c.c.checkpoint_ns, c.c.checkpoint_id).where(
            c.c.run_id.in_(chunk)
        )
        conn.execute(
            delete(writes).where(
                and_(
                    writes.c.thread_id.in_(threads),
                    tuple_(writes.c.thread_id, writes.c.checkpoint_ns, writes.c.checkpoint_id).in_(
                        doomed
                    ),
                )
            )
        )
        mi = metadata_index.c
        conn.execute(
            delete(metadata_index).where(
                mi.thread_id.in_(threads),
                tuple_(mi.thread_id, mi.checkpoint_ns, mi.checkpoint_id).in_(doomed),
            )
        )
        conn.execute(delete(c).where(c.c.run_id.in_(chunk)))
        for t in threads:
            _delete_orphans(conn, st, t, stored_blobs[t])


def reindex_metadata(
    conn: Connection,
    st: Statements,
    keys: Sequence[str],
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Index the stored checkpoints for the ``keys`` that :data:`.schema.metadata_keys`
    does not list yet, and list them (:func:`._ops.metaindex.backfill`, which tells
    ``progress`` the checkpoints read): after this, filters on them read the index. One
    transaction; nothing to do where the dialect keeps no index rows (PostgreSQL).

    Returns:
        The keys indexed now.
    """
    if not st.qb.metadata_index_rows:
        return []
    todo = [k for k in keys if k not in _metaindex.registered(conn)]
    if todo:
        _metaindex.backfill(conn, st.put_metadata_index, todo, progress)
    return todo
