"""Delta-channel history: walk the parent chain in SQL, then fetch writes and seeds.

A ``DeltaChannel`` stores its value only every ``snapshot_frequency`` updates; in between,
LangGraph rebuilds it from the writes of the ancestors back to the nearest checkpoint
that stores a value (the seed). Two stages, each one statement (stage 2 more only when
its bound-parameter lists must be split):

1. :func:`chain`: a recursive CTE that starts at the target's parent and follows
   ``parent_checkpoint_id`` upwards, reading per row the id, the parent id and
   ``value_versions`` (the channels that row stores a value for). It stops at the first
   row where every requested channel has been seeded, or at the root. Parent pointers,
   not id ranges: ids need not sort in parent order.
2. :func:`fetch`: one ``UNION ALL`` with, per channel, a branch of its writes on its own
   chain (the rows up to and including its seed) and branches of its seed: the seed
   checkpoint's ``inline_values`` and the blob of the seed version.

Like :mod:`._ops.checkpoints`, these are sync functions on a ``Connection``, run directly by the
sync methods and through ``run_sync`` by the async ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec import inline as _inline
from langgraph.checkpoint.sqlalchemy._codec.damage import checked_versions
from langgraph.checkpoint.sqlalchemy._codec.records import ChannelHistory
from langgraph.checkpoint.sqlalchemy._ops.checkpoints import Statements, chunks
from langgraph.checkpoint.sqlalchemy.errors import CheckpointDecodeError, CheckpointHistoryError
from langgraph.checkpoint.sqlalchemy.schema import (
    ID_MAX_LENGTH,
    KeyText,
    StoredKey,
    Undecodable,
    blobs,
    checkpoints,
    name_key,
    read_json,
    writes,
)
from sqlalchemy import (
    Connection,
    Integer,
    Select,
    String,
    Table,
    Text,
    and_,
    case,
    literal,
    literal_column,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.sql import cast as sql_cast
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.elements import ColumnElement

#: Longest parent chain walked; a longer one (or a cycle forged with raw SQL or by
#: re-putting ids) raises instead of running without end.
MAX_CHAIN = 100_000
#: Channels walked by one stage-1 statement: each adds a column and a condition, and
#: SQLite caps expression depth at 1,000, PostgreSQL target lists at 1,664 columns.
CHANNELS_PER_WALK = 200

#: Most parameters bound in one stage-2 statement, over all its branches (well under
#: SQLite's 32,766 and PostgreSQL's parser stack limits). Ids in one IN list: the
#: dialect's :attr:`.QueryBuilder.row_chunk`.
_PARAMS_PER_STATEMENT = 2000


@dataclass
class ChainRow:
    """One checkpoint of the walk: its id, its depth (0 = the target's parent) and
    ``{channel: version}`` of the values it stores; ``damaged`` says why its stored
    ``value_versions`` is not that (a forged row, read as storing nothing)."""

    checkpoint_id: str
    depth: int
    value_versions: dict[str, str]
    damaged: str | None = None


def history(
    conn: Connection,
    st: Statements,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str | None,
    channels: list[str],
) -> dict[str, ChannelHistory]:
    """The raw history of each channel of a checkpoint: :func:`chain` then :func:`fetch`,
    :data:`CHANNELS_PER_WALK` channels a walk.

    Args:
        conn: Connection in a read transaction (one snapshot for both stages).
        st: The saver's statements.
        thread_id: Thread of the target.
        checkpoint_ns: Namespace of the target.
        checkpoint_id: The target; None for the latest of the namespace.
        channels: Channel names, without repeats.

    Returns:
        ``{channel: ChannelHistory}`` for every channel, undecoded.
    """
    result: dict[str, ChannelHistory] = {}
    step = CHANNELS_PER_WALK
    for group in (channels[i : i + step] for i in range(0, len(channels), step)):
        walked = chain(conn, st, thread_id, checkpoint_ns, checkpoint_id, group)
        result.update(fetch(conn, st, thread_id, checkpoint_ns, walked, group))
    return result


def chain(
    conn: Connection,
    st: Statements,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str | None,
    channels: Sequence[str],
) -> list[ChainRow]:
    """Stage 1: the ancestors of a checkpoint, nearest first, until every channel is seeded.

    Each step of the recursion looks its checkpoint up by primary key (correlated scalar
    subqueries on ``(thread_id, checkpoint_ns, checkpoint_id)``), so a step costs one
    index lookup whatever the thread's length and whatever the planner's statistics.
    A row carries ``done_i``: channel ``i`` was seeded at a NEARER row; the walk goes on
    from a row while some channel is seeded neither before nor at it.

    Args:
        conn: Connection.
        st: The saver's statements (for its query builder).
        thread_id: Thread of the target.
        checkpoint_ns: Namespace of the target.
        checkpoint_id: The target; None for the latest of the namespace.
        channels: Channels whose seeds end the walk (at most :data:`CHANNELS_PER_WALK`);
            empty walks to the root.

    Returns:
        The chain from the target's parent upwards; empty when the target does not
        exist or is a root. A parent id that names no stored checkpoint ends the chain.

    Raises:
        CheckpointHistoryError: The chain is longer than :data:`MAX_CHAIN` (or loops).
    """
    c = checkpoints
    same = (c.c.thread_id == thread_id, c.c.checkpoint_ns == checkpoint_ns)
    target = select(c.c.parent_checkpoint_id).where(*same)
    if checkpoint_id:
        target = target.where(c.c.checkpoint_id == checkpoint_id)
    else:
        target = target.order_by(c.c.checkpoint_id.desc()).limit(1)
    qb = st.qb
    anchor = select(
        c.c.checkpoint_id,
        c.c.parent_checkpoint_id,
        c.c.value_versions,
        literal(0, Integer).label("depth"),
        *(literal(0, Integer).label(f"done_{i}") for i in range(len(channels))),
    ).where(*same, c.c.checkpoint_id == target.scalar_subquery())
    walk = anchor.cte("lgsa_chain", recursive=True)
    p = c.alias("lgsa_parent")

    def parent_column(column: Any) -> Any:
        return (
            select(column)
            .where(
                p.c.thread_id == thread_id,
                p.c.checkpoint_ns == checkpoint_ns,
                p.c.checkpoint_id == walk.c.parent_checkpoint_id,
            )
            .scalar_subquery()
        )

    seeded_here = [qb.json_has_key(walk.c.value_versions, ch) for ch in channels]
    step = select(
        walk.c.parent_checkpoint_id,
        parent_column(p.c.parent_checkpoint_id),
        parent_column(p.c.value_versions),
        walk.c.depth + 1,
        *(
            case((walk.c[f"done_{i}"] == 1, 1), (seeded_here[i], 1), else_=0)
            for i in range(len(channels))
        ),
    ).where(
        walk.c.parent_checkpoint_id.is_not(None),
        walk.c.value_versions.is_not(None),
        walk.c.depth < MAX_CHAIN,
    )
    if channels:
        step = step.where(
            or_(*(and_(walk.c[f"done_{i}"] == 0, ~seeded_here[i]) for i in range(len(channels))))
        )
    walk = walk.union_all(step)
    rows = conn.execute(
        select(walk.c.checkpoint_id, walk.c.depth, read_json(walk.c.value_versions)).order_by(
            walk.c.depth
        )
    ).all()
    if len(rows) > MAX_CHAIN:
        raise CheckpointHistoryError(
            f"the parent chain of checkpoint {checkpoint_id!r} (thread {thread_id!r}) is "
            f"longer than {MAX_CHAIN} checkpoints or loops back on itself; prune the thread "
            "or let a DeltaChannel snapshot more often"
        )
    # A NULL value_versions is a parent id with no stored checkpoint: the chain ends.
    # A value_versions that is not {channel: version} (a forged row) stores nothing.
    out: list[ChainRow] = []
    for row in rows:
        if row.value_versions is None:
            break
        versions = checked_versions(row.value_versions)
        if versions is None:
            why = row.value_versions
            damaged = why.error if isinstance(why, Undecodable) else "not {channel: version}"
            out.append(ChainRow(row.checkpoint_id, row.depth, {}, damaged))
        else:
            out.append(ChainRow(row.checkpoint_id, row.depth, versions))
    return out


def fetch(
    conn: Connection,
    st: Statements,
    thread_id: str,
    checkpoint_ns: str,
    walked: Sequence[ChainRow],
    channels: Sequence[str],
) -> dict[str, ChannelHistory]:
    """Stage 2: each channel's writes along its own chain, and its seed blob.

    Args:
        conn: Connection.
        st: The saver's statements (for its query builder's ``row_chunk``).
        thread_id: Thread.
        checkpoint_ns: Namespace.
        walked: The chain from :func:`chain`.
        channels: The requested channels.

    Returns:
        ``{channel: ChannelHistory}`` for every requested channel.

    Raises:
        CheckpointDecodeError: A checkpoint of a channel's chain has a ``value_versions``
            or a seed's ``inline_values`` that cannot be read (a damaged or forged row).
    """
    depth_of = {row.checkpoint_id: row.depth for row in walked}
    branches: list[tuple[str, list[str], tuple[str, str] | None]] = []
    for ch in channels:
        ids: list[str] = []
        seed: tuple[str, str] | None = None
        for row in walked:
            if row.damaged is not None:
                raise CheckpointDecodeError(
                    thread_id, checkpoint_ns, row.checkpoint_id, "value_versions", row.damaged
                )
            ids.append(row.checkpoint_id)
            if ch in row.value_versions:
                seed = (row.checkpoint_id, row.value_versions[ch])
                break
        branches.append((ch, ids, seed))
    result = {ch: ChannelHistory() for ch in channels}
    seed_ids = {ch: seed[0] for ch, _ids, seed in branches if seed is not None}
    inline_seeds: dict[str, tuple[str, bytes | None]] = {}
    for stmt in _statements(thread_id, checkpoint_ns, branches, st.qb.row_chunk):
        for kind, ch, checkpoint_id, task_path, task_id, idx, type_, blob in conn.execute(stmt):
            history = result[ch]
            if kind == "s":
                history.seed = (type_, blob)
            elif kind == "i":
                # The seed checkpoint's row: its value, when stored there.
                try:
                    value = _inline.unpack(blob).get(ch)
                except ValueError as e:
                    raise CheckpointDecodeError(
                        thread_id, checkpoint_ns, seed_ids[ch], "inline_values", str(e)
                    ) from None
                if value is not None:
                    inline_seeds[ch] = value
            else:
                history.writes.append(
                    (depth_of[checkpoint_id], task_path, task_id, idx, type_, blob, checkpoint_id)
                )
    for ch, value in inline_seeds.items():
        result[ch].seed = value
    # A seed stored as a piece (:mod:`._codec.pieces`) is not read by the branches
    # above: read rebuilt.
    pieced = [
        (StoredKey(name_key(thread_id)), StoredKey(name_key(checkpoint_ns)), ch, seed[1])
        for ch, _ids, seed in branches
        if seed is not None and result[ch].seed is None
    ]
    for chunk in chunks(pieced, st.qb.in_list_chunk):
        for key, found in st.values_in(conn, chunk).items():
            if found.error is not None:
                raise CheckpointDecodeError(
                    thread_id, checkpoint_ns, seed_ids[key[2]], f"channel {key[2]}", found.error
                )
            result[key[2]].seed = (found.type, found.blob)
    for ch, seed_id in seed_ids.items():
        result[ch].seed_id = seed_id
    return result


def _statements(
    thread_id: str,
    checkpoint_ns: str,
    branches: Sequence[tuple[str, list[str], tuple[str, str] | None]],
    in_list: int,
) -> list[Executable]:
    """UNION ALL statements of write and seed branches, each within the parameter cap.

    Rows carry their channel name, so branches differ only in bound parameters and the
    compiled statement is cached per shape. The kind column is a constant of this code
    (PostgreSQL needs typed UNION columns, which a bound parameter would not give).
    """
    parts: list[tuple[Select[Any], int]] = []
    for ch, ids, seed in branches:
        for start in range(0, len(ids), in_list):
            chunk = ids[start : start + in_list]
            write_rows = select(
                literal_column("'w'", String).label("kind"),
                writes.c.channel,
                writes.c.checkpoint_id,
                writes.c.task_path,
                writes.c.task_id,
                writes.c.idx,
                writes.c.type,
                writes.c.blob,
            ).where(
                *_in_namespace(writes, thread_id, checkpoint_ns),
                writes.c.channel == ch,
                writes.c.checkpoint_id.in_(chunk),
            )
            parts.append((write_rows, len(chunk) + 3))
        if seed is not None:
            seed_id, seed_version = seed
            seed_row = _seed_branch(
                "s", sql_cast(blobs.c.channel, Text), blobs.c.type, blobs.c.blob
            ).where(
                *_in_namespace(blobs, thread_id, checkpoint_ns),
                blobs.c.channel == ch,
                blobs.c.version == seed_version,
                blobs.c.base_version.is_(None),  # a piece is read rebuilt, after
            )
            # The value is in the seed checkpoint's row or in the blobs table.
            inline_row = _seed_branch(
                "i",
                sql_cast(literal(ch, Text), Text),
                sql_cast(null(), String),
                checkpoints.c.inline_values,
            ).where(
                *_in_namespace(checkpoints, thread_id, checkpoint_ns),
                checkpoints.c.checkpoint_id == seed_id,
                checkpoints.c.inline_values.is_not(None),
            )
            parts.append((seed_row, 4))
            parts.append((inline_row, 4))
    statements: list[Executable] = []
    batch: list[Select[Any]] = []
    bound = 0
    for part, weight in parts:
        if batch and bound + weight > _PARAMS_PER_STATEMENT:
            statements.append(batch[0] if len(batch) == 1 else union_all(*batch))
            batch, bound = [], 0
        batch.append(part)
        bound += weight
    if batch:
        statements.append(batch[0] if len(batch) == 1 else union_all(*batch))
    return statements


def _in_namespace(table: Table, thread_id: str, checkpoint_ns: str) -> list[ColumnElement[bool]]:
    return [table.c.thread_id == thread_id, table.c.checkpoint_ns == checkpoint_ns]


def _seed_branch(kind: str, channel: Any, type_: Any, value: Any) -> Select[Any]:
    """A seed branch's columns: its kind, the channel, NULL write columns (typed as the
    write branch's: PostgreSQL needs typed UNION columns), the type and the value."""
    return select(
        literal_column(f"'{kind}'", String),
        channel,
        sql_cast(null(), KeyText(ID_MAX_LENGTH)),
        sql_cast(null(), Text),
        sql_cast(null(), KeyText(ID_MAX_LENGTH)),
        sql_cast(null(), Integer),
        type_,
        value,
    )
