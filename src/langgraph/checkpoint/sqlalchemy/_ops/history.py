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

Both statements are built once per dialect family and shape (:class:`_Shapes`: the number
of channels of a walk; the branches of a fetch and the sizes of their id lists, each list
padded to a power of two), never per call, with every value a bound parameter, and run
as the hot path's statements are (:mod:`._engine.cursor`: compiled once, executed on the
DBAPI cursor). Like :mod:`._ops.checkpoints`, these are sync functions on a
``Connection``, run directly by the sync methods and through ``run_sync`` by the async ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph.checkpoint.sqlalchemy._codec import inline as _inline
from langgraph.checkpoint.sqlalchemy._codec.damage import checked_versions
from langgraph.checkpoint.sqlalchemy._codec.records import ChannelHistory
from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.checkpoint.sqlalchemy._ops.checkpoints import Statements, chunks
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import CheckpointDecodeError, CheckpointHistoryError
from langgraph.checkpoint.sqlalchemy.schema import (
    ID_MAX_LENGTH,
    JsonRead,
    KeyText,
    StoredKey,
    Undecodable,
    blobs,
    checkpoints,
    load_json,
    name_key,
    writes,
)
from sqlalchemy import (
    Connection,
    Integer,
    Select,
    String,
    Text,
    and_,
    bindparam,
    case,
    literal,
    literal_column,
    null,
    or_,
    select,
    type_coerce,
    union_all,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql import cast as sql_cast
from sqlalchemy.sql.elements import BindParameter, ColumnElement

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
    qb = st.qb
    stmt = _shapes(qb).walk(len(channels), bool(checkpoint_id))
    params: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
    if checkpoint_id:
        params["checkpoint_id"] = checkpoint_id
    for i, ch in enumerate(channels):
        params[f"ch_{i}"] = qb.json_key_value(ch)
    rows = cursor.rows(conn, stmt, params, st.key(conn), plain=True)
    if len(rows) > MAX_CHAIN:
        raise CheckpointHistoryError(
            f"the parent chain of checkpoint {checkpoint_id!r} (thread {thread_id!r}) is "
            f"longer than {MAX_CHAIN} checkpoints or loops back on itself; prune the thread "
            "or let a DeltaChannel snapshot more often"
        )
    # A NULL value_versions is a parent id with no stored checkpoint: the chain ends.
    # A value_versions that is not {channel: version} (a forged row) stores nothing.
    out: list[ChainRow] = []
    for row_id, depth, text in rows:
        if text is None:
            break
        versions, damaged = _versions(text)
        out.append(ChainRow(row_id, depth, versions, damaged))
    return out


class _VersionsText(JsonRead):
    """``value_versions`` read as its text, as :class:`.schema.JsonRead` selects it
    (``CAST(... AS TEXT)`` where it must be), not parsed: :func:`_versions` parses a
    text once."""

    cache_ok = True

    def column_expression(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        selected = super().column_expression(column)
        return column if selected is column else type_coerce(selected, _VersionsText())

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        return None


#: ``value_versions`` texts read by walks, with what :func:`_versions` made of them: a
#: thread's walk reads the same ancestors at every step. A text is its own key (an entry
#: never goes stale); at most :data:`MAX_VERSIONS`, the oldest go first.
_VERSIONS: dict[str, tuple[dict[str, str], str | None]] = {}
MAX_VERSIONS = 4096
_VERSIONS_LOCK = threading.Lock()


def _versions(text: Any) -> tuple[dict[str, str], str | None]:
    """``({channel: version}, None)`` of a ``value_versions`` as read, or ``({}, why)``
    for a damaged or forged one (read as storing nothing). The dict is shared: read it,
    never change it."""
    if type(text) is str:
        found = _VERSIONS.get(text)
        if found is not None:
            return found
    value = load_json(text)
    versions = checked_versions(value)
    if versions is None:
        why = value.error if isinstance(value, Undecodable) else "not {channel: version}"
        return {}, why
    if type(text) is str:
        with _VERSIONS_LOCK:
            _VERSIONS[text] = (versions, None)
            while len(_VERSIONS) > MAX_VERSIONS:
                del _VERSIONS[next(iter(_VERSIONS))]
    return versions, None


def _walk(qb: QueryBuilder, count: int, by_id: bool) -> Select[Any]:
    """The statement of :func:`chain` for ``count`` channels (bound ``ch_<i>``, each
    :meth:`.QueryBuilder.json_key_value` of its name), the target by ``checkpoint_id``
    or the latest of ``thread_id`` and ``checkpoint_ns``."""
    c = checkpoints
    thread_id = bindparam("thread_id", type_=c.c.thread_id.type)
    checkpoint_ns = bindparam("checkpoint_ns", type_=c.c.checkpoint_ns.type)
    same = (c.c.thread_id == thread_id, c.c.checkpoint_ns == checkpoint_ns)
    target = select(c.c.parent_checkpoint_id).where(*same)
    if by_id:
        target_id = bindparam("checkpoint_id", type_=c.c.checkpoint_id.type)
        target = target.where(c.c.checkpoint_id == target_id)
    else:
        target = target.order_by(c.c.checkpoint_id.desc()).limit(1)
    anchor = select(
        c.c.checkpoint_id,
        c.c.parent_checkpoint_id,
        c.c.value_versions,
        literal(0, Integer).label("depth"),
        *(literal(0, Integer).label(f"done_{i}") for i in range(count)),
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

    names: list[BindParameter[str]] = [bindparam(f"ch_{i}", type_=Text) for i in range(count)]
    seeded_here = [qb.json_has_key(walk.c.value_versions, name) for name in names]
    # One channel: a row the walk goes on from has it unseeded (the condition below),
    # so its parent's flag is 0, without testing the document a second time.
    done = (
        [literal(0, Integer)]
        if count == 1
        else [
            case((walk.c[f"done_{i}"] == 1, 1), (seeded_here[i], 1), else_=0) for i in range(count)
        ]
    )
    step = select(
        walk.c.parent_checkpoint_id,
        parent_column(p.c.parent_checkpoint_id),
        parent_column(p.c.value_versions),
        walk.c.depth + 1,
        *done,
    ).where(
        walk.c.parent_checkpoint_id.is_not(None),
        walk.c.value_versions.is_not(None),
        walk.c.depth < MAX_CHAIN,
    )
    if count:
        step = step.where(
            or_(*(and_(walk.c[f"done_{i}"] == 0, ~seeded_here[i]) for i in range(count)))
        )
    walk = walk.union_all(step)
    versions = type_coerce(walk.c.value_versions, _VersionsText()).label("value_versions")
    return select(walk.c.checkpoint_id, walk.c.depth, versions).order_by(walk.c.depth)


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
    in_list = st.qb.row_chunk
    # Each channel's parts: write branches of at most ``in_list`` ids, and its seed.
    parts: list[tuple[str, str, Sequence[str]]] = []
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
        parts.extend(("w", ch, ids[i : i + in_list]) for i in range(0, len(ids), in_list))
        if seed is not None:
            parts.append(("s", ch, seed))
    result = {ch: ChannelHistory() for ch in channels}
    seed_ids = {ch: ids[0] for kind, ch, ids in parts if kind == "s"}
    inline_seeds: dict[str, tuple[str, bytes | None]] = {}
    shapes = _shapes(st.qb)
    key = st.key(conn)
    for batch in _batches(parts, in_list):
        stmt, params = shapes.fetch(batch, in_list, thread_id, checkpoint_ns)
        for kind, ch, checkpoint_id, task_path, task_id, idx, type_, blob in cursor.rows(
            conn, stmt, params, key, values=True, plain=True
        ):
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
        for kind, ch, seed in parts
        if kind == "s" and result[ch].seed is None
    ]
    for chunk in chunks(pieced, st.qb.in_list_chunk):
        for (_t, _ns, ch, _v), found in st.values_in(conn, chunk).items():
            if found.error is not None:
                raise CheckpointDecodeError(
                    thread_id, checkpoint_ns, seed_ids[ch], f"channel {ch}", found.error
                )
            result[ch].seed = (found.type, found.blob)
    for ch, seed_id in seed_ids.items():
        result[ch].seed_id = seed_id
    return result


def _size(count: int, in_list: int) -> int:
    """The bound-list size that holds ``count`` ids: the next power of two, at most
    ``in_list`` (a list is padded to it by repeating its last id)."""
    size = 1
    while size < count:
        size *= 2
    return min(size, in_list)


def _weight(part: tuple[str, str, Sequence[str]], in_list: int) -> int:
    """Parameters a part binds: a write branch its padded ids, thread, namespace and
    channel; a seed its two branches' four each."""
    return _size(len(part[2]), in_list) + 3 if part[0] == "w" else 8


def _batches(
    parts: Sequence[tuple[str, str, Sequence[str]]], in_list: int
) -> list[list[tuple[str, str, Sequence[str]]]]:
    """``parts`` in order, in statements of at most :data:`_PARAMS_PER_STATEMENT` bound
    parameters (a part heavier than that alone)."""
    batches: list[list[tuple[str, str, Sequence[str]]]] = []
    batch: list[tuple[str, str, Sequence[str]]] = []
    bound = 0
    for part in parts:
        weight = _weight(part, in_list)
        if batch and bound + weight > _PARAMS_PER_STATEMENT:
            batches.append(batch)
            batch, bound = [], 0
        batch.append(part)
        bound += weight
    if batch:
        batches.append(batch)
    return batches


#: Statements of each kind kept per dialect family (a walk per number of channels and
#: target kind, a fetch per shape): beyond, the oldest go first.
MAX_SHAPES = 64

K = TypeVar("K")
V = TypeVar("V")


class _Shapes:
    """The history statements of one dialect family (:func:`_shapes`), each built on its
    first use and kept (at most :data:`MAX_SHAPES` of each kind): the constructs depend
    on the query builder's class only, as :func:`._ops.checkpoints.statements_for`'s do."""

    def __init__(self, qb: QueryBuilder) -> None:
        self.qb = qb
        self._walks: dict[tuple[int, bool], Select[Any]] = {}
        self._fetches: dict[tuple[tuple[str, int], ...], _Fetch] = {}
        self._lock = threading.Lock()

    def walk(self, count: int, by_id: bool) -> Select[Any]:
        """:func:`_walk` of ``count`` channels."""
        return self._kept(self._walks, (count, by_id), lambda: _walk(self.qb, count, by_id))

    def fetch(
        self,
        batch: Sequence[tuple[str, str, Sequence[str]]],
        in_list: int,
        thread_id: str,
        checkpoint_ns: str,
    ) -> tuple[ClauseElement, dict[str, Any]]:
        """The UNION ALL of ``batch``'s parts, and its parameters."""
        shape = tuple(
            (kind, _size(len(ids), in_list) if kind == "w" else 0) for kind, _ch, ids in batch
        )
        found = self._kept(self._fetches, shape, lambda: _Fetch(shape))
        return found.stmt, found.params(batch, thread_id, checkpoint_ns)

    def _kept(self, kept: dict[K, V], key: K, build: Callable[[], V]) -> V:
        found = kept.get(key)
        if found is None:
            found = build()
            with self._lock:
                kept[key] = found
                while len(kept) > MAX_SHAPES:
                    del kept[next(iter(kept))]
        return found


_SHARED: dict[type[QueryBuilder], _Shapes] = {}


def _shapes(qb: QueryBuilder) -> _Shapes:
    """The history statements of ``qb``'s dialect family."""
    shapes = _SHARED.get(type(qb))
    if shapes is None:
        shapes = _SHARED.setdefault(type(qb), _Shapes(qb))
    return shapes


class _Fetch:
    """One stage-2 statement: per part, a write branch (bound ``c<b>``, ``i<b>_<j>``) or
    the two branches of a seed (``c<b>``, ``v<b>``, ``n<b>``, ``s<b>``); thread and
    namespace bound once (``thread_id``, ``checkpoint_ns``).

    Rows carry their channel name. The kind column is a constant of this code
    (PostgreSQL needs typed UNION columns, which a bound parameter would not give).
    """

    def __init__(self, shape: tuple[tuple[str, int], ...]) -> None:
        thread_id = bindparam("thread_id", type_=writes.c.thread_id.type)
        checkpoint_ns = bindparam("checkpoint_ns", type_=writes.c.checkpoint_ns.type)
        selects: list[Select[Any]] = []
        #: Per part, its bound names in the order :meth:`params` fills them.
        self.names: list[tuple[str, ...]] = []
        for b, (kind, size) in enumerate(shape):
            if kind == "w":
                ids = [f"i{b}_{j}" for j in range(size)]
                self.names.append((f"c{b}", *ids))
                id_type = writes.c.checkpoint_id.type
                selects.append(
                    select(
                        literal_column("'w'", String).label("kind"),
                        writes.c.channel,
                        writes.c.checkpoint_id,
                        writes.c.task_path,
                        writes.c.task_id,
                        writes.c.idx,
                        writes.c.type,
                        writes.c.blob,
                    ).where(
                        writes.c.thread_id == thread_id,
                        writes.c.checkpoint_ns == checkpoint_ns,
                        writes.c.channel == bindparam(f"c{b}", type_=writes.c.channel.type),
                        writes.c.checkpoint_id.in_([bindparam(n, type_=id_type) for n in ids]),
                    )
                )
                continue
            self.names.append((f"c{b}", f"n{b}", f"s{b}", f"v{b}"))
            blob_channel = sql_cast(blobs.c.channel, Text)
            selects.append(
                _seed_branch("s", blob_channel, blobs.c.type, blobs.c.blob).where(
                    blobs.c.thread_id == thread_id,
                    blobs.c.checkpoint_ns == checkpoint_ns,
                    blobs.c.channel == bindparam(f"c{b}", type_=blobs.c.channel.type),
                    blobs.c.version == bindparam(f"v{b}", type_=blobs.c.version.type),
                    blobs.c.base_version.is_(None),  # a piece is read rebuilt, after
                )
            )
            # The value is in the seed checkpoint's row or in the blobs table.
            selects.append(
                _seed_branch(
                    "i",
                    sql_cast(bindparam(f"n{b}", type_=Text), Text),
                    sql_cast(null(), String),
                    checkpoints.c.inline_values,
                ).where(
                    checkpoints.c.thread_id == thread_id,
                    checkpoints.c.checkpoint_ns == checkpoint_ns,
                    checkpoints.c.checkpoint_id
                    == bindparam(f"s{b}", type_=checkpoints.c.checkpoint_id.type),
                    checkpoints.c.inline_values.is_not(None),
                )
            )
        self.stmt: ClauseElement = selects[0] if len(selects) == 1 else union_all(*selects)

    def params(
        self, batch: Sequence[tuple[str, str, Sequence[str]]], thread_id: str, checkpoint_ns: str
    ) -> dict[str, Any]:
        """The bound values for ``batch`` (the parts this statement was built for)."""
        params: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
        for names, (kind, ch, ids) in zip(self.names, batch, strict=True):
            if kind == "w":
                # ids padded to the bound list's size with the last one
                padded = [*ids, *(ids[-1],) * (len(names) - 1 - len(ids))]
                params.update(zip(names, (ch, *padded), strict=True))
            else:
                seed_id, version = ids
                params.update(zip(names, (ch, ch, seed_id, version), strict=True))
        return params


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
