"""Browsing: threads newest first through the checkpoint-id index, and storage totals.

Sync functions on a ``Connection``, like :mod:`._ops.checkpoints`; the saver runs them through its
plans (:mod:`._plans.methods`; :func:`._plans.browse.threads_plan` is ``list_threads``' own,
which the command line runs without a saver). Nothing here decodes a checkpoint: threads and
totals come from key columns, lengths and counts.

How :func:`list_threads` finds a page without reading the whole table: it walks the
index ``ix_lgsa_checkpoints_checkpoint_id`` (``checkpoint_id, thread_id, checkpoint_ns,
step, source``) backwards, newest checkpoint first, index only, in growing batches below
a keyset cursor, and keeps each thread the first time it meets it (that row is the
thread's newest checkpoint). It stops once it holds the page's threads, then reads the
counts and sizes of those threads only, by the primary key's prefix. The cost is the
number of index entries walked: every checkpoint newer than the page's last thread's
newest one (one thread with a thousand recent checkpoints costs a thousand entries), not
the size of the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.threadinfo import ThreadInfo, checkpoint_time
from langgraph.checkpoint.sqlalchemy._ops.checkpoints import Statements, chunks
from langgraph.checkpoint.sqlalchemy.errors import CheckpointConfigError
from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, full_name, name_key, writes
from sqlalchemy import Connection, Select, distinct, func, or_, select
from sqlalchemy.sql.elements import ColumnElement

#: Index entries read by the walk's first batch at the least, and by any later batch at
#: most (each batch doubles the last). Small next to any large table, so that a planner
#: without statistics still prefers the index to a scan and sort.
FIRST_BATCH, LARGEST_BATCH = 64, 1024
#: Largest ``offset + limit`` found by the walk; beyond it, one grouped query over the
#: table is cheaper than thousands of batches.
WALK_MOST = 10_000

#: A checkpoint row's serialised bytes: the checkpoint and its inline values.
_CHECKPOINT_SIZE = func.length(checkpoints.c.checkpoint) + func.coalesce(
    func.length(checkpoints.c.inline_values), 0
)

Cursor = tuple[str, str]
"""``(last_checkpoint_id, thread_id)`` of the last thread of the previous page."""


def walk_select(region: Sequence[ColumnElement[bool]], below: str | None, size: int) -> Select[Any]:
    """One batch of the walk: ``(checkpoint_id, thread_id)`` newest first, from the
    checkpoint-id index alone (a backward index-only scan on every dialect).

    Args:
        region: Conditions on ``checkpoint_id`` (the part of the index walked).
        below: Only ids strictly below this one (the keyset cursor), or None.
        size: Most rows.
    """
    c = checkpoints.c
    stmt = select(c.checkpoint_id, c.thread_id).where(*region)
    if below is not None:
        stmt = stmt.where(c.checkpoint_id < below)
    return stmt.order_by(c.checkpoint_id.desc()).limit(size)


def list_threads(
    conn: Connection,
    st: Statements,
    limit: int | None,
    offset: int,
    idle_before: str | None,
    after: Cursor | str | None,
) -> list[ThreadInfo]:
    """Threads, newest activity first (``max(checkpoint_id)``, ties by thread id).

    With a ``limit``, O(offset + limit) threads through the index walk (see the module
    docstring); ``limit=None`` (or ``offset + limit`` over :data:`WALK_MOST`) lists every
    thread with one grouped query over the table.

    Args:
        conn: Connection.
        st: The saver's statements (for its query builder's chunk sizes).
        limit: Page size (None: all).
        offset: Threads skipped (O(offset): they are walked).
        idle_before: Only threads whose newest checkpoint id sorts below this id
            (:func:`._codec.threadinfo.id_at` of a cutoff time).
        after: The previous page's last thread (:func:`._plans.browse.cursor`): only
            threads after it.

    Returns:
        The page of :class:`ThreadInfo`.

    Raises:
        CheckpointConfigError: ``after`` names a thread that has no checkpoint.
    """
    c = checkpoints.c
    if isinstance(after, str):
        newest = conn.execute(select(func.max(c.checkpoint_id)).where(c.thread_id == after))
        last_id = newest.scalar()
        if last_id is None:
            raise CheckpointConfigError(
                f"list_threads: after={after!r} names a thread that has no checkpoint; pass "
                "the last ThreadInfo of the previous page, or a thread id it listed"
            )
        after = (str(last_id), after)
    region: list[ColumnElement[bool]] = []
    above: list[ColumnElement[bool]] = []
    if idle_before is not None:
        region.append(c.checkpoint_id < idle_before)
        above.append(c.checkpoint_id >= idle_before)
    if after is not None:
        region.append(c.checkpoint_id <= after[0])
        above.append(c.checkpoint_id > after[0])
    if limit is None or offset + limit > WALK_MOST:
        keys = _all_threads(conn, idle_before, after)[offset:]
        keys = keys if limit is None else keys[:limit]
    else:
        keys = _walk(conn, st, offset + limit, region, above, after)[offset:]
    return _infos(conn, st, keys)


def _walk(
    conn: Connection,
    st: Statements,
    want: int,
    region: Sequence[ColumnElement[bool]],
    above: Sequence[ColumnElement[bool]],
    after: Cursor | None,
) -> list[str]:
    """The keys of the first ``want`` threads in the walk's ``region``, in page order.

    A thread met first inside the region is newest there; it belongs to the page only if
    it has no checkpoint ``above`` the region (checked by the primary key's prefix, in
    chunks) and, at the cursor's own id, sorts after the cursor's thread.
    """
    c = checkpoints.c
    after_key = name_key(after[1]) if after is not None else None
    seen: set[str] = set()
    found: list[str] = []
    below: str | None = None
    size = max(FIRST_BATCH, min(2 * want, LARGEST_BATCH))
    while len(found) < want:
        rows = conn.execute(walk_select(region, below, size)).all()
        done = len(rows) < size
        if not done:  # the last id may go on past the batch: take all of its rows
            below = str(rows[-1][0])
            rows = [r for r in rows if r[0] != below]
            rows += conn.execute(
                select(c.checkpoint_id, c.thread_id).where(c.checkpoint_id == below)
            ).all()
        fresh: list[tuple[int, str]] = []  # (group of equal ids, key), in walk order
        group, previous = 0, None
        for checkpoint_id, key in rows:
            if checkpoint_id != previous:
                group, previous = group + 1, checkpoint_id
            if key in seen:
                continue
            seen.add(key)
            if after is not None and checkpoint_id == after[0] and str(key) <= str(after_key):
                continue  # on an earlier page: ties at the cursor's id go by thread id
            fresh.append((group, key))
        newer = _with_rows(conn, st, [k for _, k in fresh], above) if above else set()
        found += [k for _, k in sorted(fresh, key=lambda f: (f[0], str(f[1]))) if k not in newer]
        if done:
            break
        size = min(2 * size, LARGEST_BATCH)
    return found[:want]


def _with_rows(
    conn: Connection, st: Statements, keys: Sequence[str], where: Sequence[ColumnElement[bool]]
) -> set[str]:
    """Which of the threads ``keys`` have a checkpoint meeting any of ``where``."""
    c = checkpoints.c
    out: set[str] = set()
    for chunk in chunks(keys, st.qb.row_chunk):
        query = select(c.thread_id).where(c.thread_id.in_(chunk), or_(*where)).distinct()
        out.update(str(k) for (k,) in conn.execute(query))
    return out


def _all_threads(conn: Connection, idle_before: str | None, after: Cursor | None) -> list[str]:
    """Every thread's key in page order: one grouped query over the whole table."""
    c = checkpoints.c
    newest = func.max(c.checkpoint_id)
    stmt = select(c.thread_id).group_by(c.thread_id).order_by(newest.desc(), c.thread_id)
    if idle_before is not None:
        stmt = stmt.having(newest < idle_before)
    if after is not None:
        key = name_key(after[1])
        stmt = stmt.having(or_(newest < after[0], (newest == after[0]) & (c.thread_id > key)))
    return [k for (k,) in conn.execute(stmt)]


def _infos(conn: Connection, st: Statements, keys: Sequence[str]) -> list[ThreadInfo]:
    """The :class:`ThreadInfo` of the threads ``keys`` (in that order; a thread deleted
    meanwhile is left out), by the primary key's prefix, in chunks."""
    c = checkpoints.c
    rows: dict[str, Any] = {}
    extra: dict[str, int] = {}
    st.qb.small_reads(conn)  # a few hundred rows: no parallel plan, no JIT (PostgreSQL)
    for chunk in chunks(keys, st.qb.row_chunk):
        stmt = (
            select(
                c.thread_id,
                func.count(),
                func.count(distinct(c.checkpoint_ns)),
                func.max(c.checkpoint_id),
                func.sum(_CHECKPOINT_SIZE),
                func.max(c.thread_id_full),  # the text of a digest key (one per key)
            )
            .where(c.thread_id.in_(chunk))
            .group_by(c.thread_id)
        )
        rows.update((str(r[0]), r) for r in conn.execute(stmt))
        for table in (blobs, writes):
            for thread_id, size in conn.execute(
                select(table.c.thread_id, func.sum(func.length(table.c.blob)))
                .where(table.c.thread_id.in_(chunk))
                .group_by(table.c.thread_id)
            ):
                extra[str(thread_id)] = extra.get(str(thread_id), 0) + int(size or 0)
    out = []
    for key in keys:
        if (row := rows.get(str(key))) is None:
            continue
        t, n, ns, last, size, full = row
        out.append(
            ThreadInfo(
                full_name(t, full),
                int(n),
                int(ns),
                last,
                checkpoint_time(last),
                int(size or 0) + extra.get(str(t), 0),
            )
        )
    return out


def storage_stats(
    conn: Connection, st: Statements, thread_id: str | None, estimate: bool
) -> dict[str, dict[str, int]]:
    """Rows and serialised bytes per table: ``{table: {"rows": n, "bytes": b}}``.

    Exact (the default): counts and the lengths of the serialised columns (checkpoint and
    ``inline_values``, blob values, write values), three scans of the tables (O(N)), or
    of one thread's rows. ``estimate`` (whole database only): the database's own
    statistics, read in O(1) (:meth:`.QueryBuilder.table_estimates`); where the dialect
    keeps none, the exact totals.
    """
    sizes = {
        checkpoints: _CHECKPOINT_SIZE,
        blobs: func.coalesce(func.length(blobs.c.blob), 0),
        writes: func.coalesce(func.length(writes.c.blob), 0),
    }
    if estimate and thread_id is None:
        known = st.qb.table_estimates(conn, sizes)
        if known is not None:
            return known
    out: dict[str, dict[str, int]] = {}
    for table, size in sizes.items():
        # The blobs table: also the bytes of the values its rows stand for (a piece's
        # row holds what its version appended; ``size`` is the whole value's length).
        logical = (func.coalesce(blobs.c.size, size),) if table is blobs else ()
        stmt = select(
            func.count(), *(func.coalesce(func.sum(s), 0) for s in (size, *logical))
        ).select_from(table)
        if thread_id is not None:
            stmt = stmt.where(table.c.thread_id == thread_id)
        n, total, *values = conn.execute(stmt).one()
        out[table.name] = {"rows": int(n), "bytes": int(total)}
        if values:
            out[table.name]["value_bytes"] = int(values[0])
    return out
