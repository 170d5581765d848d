"""Database operations of the saver, each written once as a sync function on a Connection.

The saver's sync methods call these directly inside ``engine.begin()`` /
``engine.connect()``; its async methods call the very same functions through
``AsyncConnection.run_sync``. Nothing here decodes channel values or writes: the
functions move rows, and the saver turns rows into ``CheckpointTuple`` objects after the
connection went back to the pool.

Statements are built once per dialect (:class:`Statements`) with bound parameters.
Those of a graph step (store a checkpoint, its values and pending writes; read a
checkpoint and its values) run through :mod:`._engine.cursor`: compiled once, executed on the
DBAPI cursor. The others go through ``Connection.execute`` and SQLAlchemy's
compiled-statement cache.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec import pieces as _pieces
from langgraph.checkpoint.sqlalchemy._codec.batching import by_bytes
from langgraph.checkpoint.sqlalchemy._codec.pieces import StoredRow, StoredValue
from langgraph.checkpoint.sqlalchemy._codec.records import (
    BlobKey,
    CheckpointKey,
    CheckpointRecord,
    CheckpointRows,
)
from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.checkpoint.sqlalchemy._engine.lane import capable
from langgraph.checkpoint.sqlalchemy._ops import metaindex as _metaindex
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import CheckpointConflictError
from langgraph.checkpoint.sqlalchemy.schema import (
    blobs,
    checkpoints,
    metadata_index,
    read_json,
    writes,
)
from sqlalchemy import Connection, Select, and_, bindparam, delete, null, select, union_all

CHECKPOINT_COLUMNS = (
    checkpoints.c.thread_id,
    checkpoints.c.checkpoint_ns,
    checkpoints.c.checkpoint_id,
    checkpoints.c.parent_checkpoint_id,
    checkpoints.c.type,
    checkpoints.c.checkpoint,
    # JSON read so that a forged document cannot fail the fetch (schema.JsonRead).
    read_json(checkpoints.c.metadata),
    read_json(checkpoints.c.value_versions),
    checkpoints.c.inline_values,
    checkpoints.c.thread_id_full,
    checkpoints.c.checkpoint_ns_full,
)
_WRITE_COLUMNS = (
    writes.c.thread_id,
    writes.c.checkpoint_ns,
    writes.c.checkpoint_id,
    writes.c.task_id,
    writes.c.task_path,
    writes.c.idx,
    writes.c.channel,
    writes.c.type,
    writes.c.blob,
)


#: Rounds of reads of bases outside a value's chain (see :meth:`Statements.values_in`).
_BASE_ROUNDS = 4
#: The columns of a blobs-table row a value read returns after its thread, namespace and
#: channel.
_PIECE_COLUMNS = ("version", "type", "blob", "base_version", "chain", "size")


class Statements:
    """The saver's fixed statements, built once from a :class:`QueryBuilder`."""

    def __init__(self, qb: QueryBuilder) -> None:
        self.qb = qb
        self.put_checkpoint = qb.upsert(
            checkpoints,
            [
                "parent_checkpoint_id",
                "run_id",
                "source",
                "step",
                "type",
                "checkpoint",
                "metadata",
                "value_versions",
                "inline_values",
            ],
        )
        self.put_blobs = qb.insert_ignore(blobs)
        self.put_metadata_index = qb.insert_ignore(metadata_index)
        # The keys whose index rows are complete, read once (:meth:`indexed_keys`).
        self._registered: frozenset[str] | None = None
        # The keys an unindexed filter was logged for (:meth:`first_scan`).
        self._scanned: frozenset[str] = frozenset()
        self.put_writes_first_wins = qb.insert_ignore(writes)
        self.put_writes_replace = qb.upsert(writes, ["task_path", "channel", "type", "blob"])
        where_ns = (
            checkpoints.c.thread_id == bindparam("thread_id"),
            checkpoints.c.checkpoint_ns == bindparam("checkpoint_ns"),
        )
        latest = qb.newest_first(select(*CHECKPOINT_COLUMNS), checkpoints)
        by_id = select(*CHECKPOINT_COLUMNS).where(
            *where_ns, checkpoints.c.checkpoint_id == bindparam("checkpoint_id")
        )
        # One statement reads a checkpoint and its writes: the row joined to its writes
        # (one result row a write, or one with NULL write columns).
        self.latest = _with_writes(latest)
        self.by_id = _with_writes(by_id)
        self.newest_id = qb.newest_first(select(checkpoints.c.checkpoint_id), checkpoints)
        self._write_key = (writes.c.thread_id, writes.c.checkpoint_ns, writes.c.checkpoint_id)
        # Statements per number of keys, built once (the dict holds at most
        # qb.in_list_chunk entries each).
        self._blobs_in: dict[int, Any] = {}
        self._writes_in: dict[int, Any] = {}
        self.delete_thread = [
            delete(t).where(t.c.thread_id == bindparam("thread_id"))
            for t in (writes, blobs, metadata_index, checkpoints)
        ]
        # Multi-row forms of the inserts (see cursor.insert_rows).
        self._many: dict[tuple[int, tuple[str, ...], int], Any] = {}
        self._combined: dict[tuple[tuple[str, ...], int], Any] = {}
        # Where the dialect runs data-changing statements in a WITH clause: deleting a
        # thread is one statement (one round trip, atomic on its own).
        self.delete_thread_one = (
            qb.combine_writes(self.delete_thread[-1], *self.delete_thread[:-1])
            if qb.dml_in_cte
            else None
        )

    def put_with_blobs(
        self, blobs: Sequence[dict[str, Any]], checkpoint: dict[str, Any]
    ) -> tuple[Any, dict[str, Any]]:
        """The checkpoint upsert carrying the insert of its blob rows in its ``WITH``
        clause (:meth:`.QueryBuilder.combine_writes`), and its parameters."""
        columns = tuple(blobs[0])
        stmt = self._combined.get((columns, len(blobs)))
        if stmt is None:
            form = cursor.many_form(self.put_blobs, columns, len(blobs), self._many)
            stmt = self._combined[(columns, len(blobs))] = self.qb.combine_writes(
                self.put_checkpoint, form
            )
        return stmt, {**cursor.many_params(blobs, columns), **checkpoint}

    def indexed_keys(self, conn: Connection, *, fresh: bool = False) -> frozenset[str]:
        """The keys a metadata filter may find through :data:`.schema.metadata_index`
        (:func:`._ops.metaindex.registered`), read on the first filtered listing (or again
        when ``fresh``: ``setup()``) and kept for the saver's life (a key registered later
        is found by a scan until a restart: slower, never wrong). Empty where the dialect
        keeps no such rows."""
        if self._registered is None or fresh:
            found = _metaindex.registered(conn) if self.qb.metadata_index_rows else frozenset()
            self._registered = found
        return self._registered

    def first_scan(self, key: str) -> bool:
        """Whether ``key`` is new among this saver's metadata filters that no index
        serves (then recorded): the listing logs a warning once per key and saver. The
        set is rebound, never changed in place: the copies :func:`statements_for` makes
        each have their own."""
        if key in self._scanned:
            return False
        self._scanned = self._scanned | {key}
        return True

    def key(self, conn: Connection) -> Any:
        """What SQL compiled for ``conn`` depends on (:meth:`.QueryBuilder.compile_key`)."""
        return self.qb.compile_key(conn.dialect)

    def insert_rows(self, conn: Connection, name: str, rows: Sequence[dict[str, Any]]) -> None:
        """Run the insert ``name`` (``put_blobs``, ``put_writes_first_wins`` or
        ``put_writes_replace``) for ``rows`` (:func:`._engine.cursor.insert_rows`)."""
        cursor.insert_rows(conn, getattr(self, name), rows, self.key(conn), self._many)

    def values_in(
        self, conn: Connection, keys: Sequence[BlobKey], *, _depth: int = 0
    ) -> dict[BlobKey, StoredValue]:
        """The values stored in the blobs table under these ``(thread_id, checkpoint_ns,
        channel, version)`` keys (at most ``qb.in_list_chunk``), each rebuilt from its
        pieces (:func:`._codec.pieces.assemble`): one statement reads the rows of the
        keys and, for a piece, the rows of its chain. Thread and namespace as read from
        a key column (:class:`.schema.StoredKey`), not names: PostgreSQL binds them as
        text arrays, which :class:`.schema.NameKey` does not map.

        Returns:
            The found keys (a key with no row is left out), each a :class:`StoredValue`
            whose ``error`` says why a piece cannot be rebuilt (a damaged row).
        """
        stmt = self._blobs_in.get(len(keys))
        if stmt is None:
            # Two branches, each served by an index: the rows of the keys (primary
            # key), and for a piece the other rows of its chain (the chain index).
            # A chain row returns what assembling it needs (its ``chain`` is its
            # key's, known from the key's own row): a read fetches up to a few hundred.
            t, p = blobs.alias("lgsa_t"), blobs.alias("lgsa_p")
            target = (t.c.thread_id, t.c.checkpoint_ns, t.c.channel, t.c.version)
            own = select(*target[:3], *(t.c[name] for name in _PIECE_COLUMNS)).where(
                self.qb.keys_in(target, len(keys))
            )
            on = and_(
                p.c.thread_id == t.c.thread_id,
                p.c.checkpoint_ns == t.c.checkpoint_ns,
                p.c.channel == t.c.channel,
                p.c.chain == t.c.chain,
                p.c.version != t.c.version,  # (the piece itself: read by ``own``)
            )
            chain = (
                select(
                    *target[:3],
                    *(null() if name == "chain" else p.c[name] for name in _PIECE_COLUMNS),
                )
                .select_from(t.join(p, on))
                .where(self.qb.keys_in(target, len(keys)), t.c.base_version.is_not(None))
            )
            stmt = union_all(own, chain)
            self._blobs_in[len(keys)] = stmt
        rows: dict[tuple[str, str, str], dict[str, StoredRow]] = {}
        chains: dict[BlobKey, str | None] = {}
        params = self.qb.keys_params(keys)
        found = cursor.rows(conn, stmt, params, self.key(conn), repeated=3, values=True, plain=True)
        _pieces.collect(found, rows, chains)
        values = {
            key: _pieces.value_of(rows, chains, key)
            for key in keys
            if key[3] in rows.get(key[:3], ())
        }
        missing = {(k[0], k[1], k[2], v.missing) for k, v in values.items() if v.missing}
        if missing and _depth < _BASE_ROUNDS:
            # A base outside the chain read (its row was stored first by another
            # writer, in a chain of its own): read it by its key, rebuilt, as a whole.
            bases = self.values_in(conn, sorted(missing), _depth=_depth + 1)
            for base_key, base in bases.items():
                if base.error is None:
                    whole = StoredRow(base.type, base.blob, None, len(base.blob or b""))
                    rows[base_key[:3]][base_key[3]] = whole
            for key, value in values.items():
                if value.missing:
                    values[key] = _pieces.value_of(rows, chains, key)
        return values

    def writes_in(self, conn: Connection, keys: Sequence[CheckpointKey]) -> Any:
        """Rows of the writes of these ``(thread_id, checkpoint_ns, checkpoint_id)``
        checkpoints (at most ``qb.in_list_chunk``); keys as read, as for :meth:`blobs_in`."""
        stmt = self._writes_in.get(len(keys))
        if stmt is None:
            stmt = select(*_WRITE_COLUMNS).where(self.qb.keys_in(self._write_key, len(keys)))
            self._writes_in[len(keys)] = stmt
        return cursor.rows(conn, stmt, self.qb.keys_params(keys), self.key(conn), values=True)


_SHARED: dict[type[QueryBuilder], Statements] = {}


def statements_for(qb: QueryBuilder) -> Statements:
    """The saver's :class:`Statements`, their constructs built once per dialect.

    The constructs depend only on the builder's class (its dialect family), never on a
    saver's engine or schema (the schema is an execution option), so the savers of one
    dialect share them: a short-lived saver does not rebuild them (about 2 ms), and
    SQLAlchemy's compiled cache, keyed by construct, serves all of them. ``qb`` stays the
    saver's own: it holds per-server facts (MySQL's packet limit).

    Args:
        qb: The saver's query builder.

    Returns:
        Statements whose :attr:`~Statements.qb` is ``qb``.
    """
    shared = _SHARED.get(type(qb))
    if shared is None:
        shared = _SHARED.setdefault(type(qb), Statements(qb))
    st = copy.copy(shared)
    st.qb = qb
    return st


def _with_writes(checkpoint: Select[Any]) -> Select[Any]:
    c = checkpoint.subquery("lgsa_c")
    w = writes
    return select(
        *c.c,
        w.c.task_id,
        w.c.task_path,
        w.c.idx,
        w.c.channel,
        w.c.type.label("write_type"),
        w.c.blob.label("write_blob"),
    ).select_from(
        c.outerjoin(
            w,
            (w.c.thread_id == c.c.thread_id)
            & (w.c.checkpoint_ns == c.c.checkpoint_ns)
            & (w.c.checkpoint_id == c.c.checkpoint_id),
        )
    )


@capable
def put(conn: Connection, st: Statements, rows: CheckpointRows) -> None:
    """Store one checkpoint row, the channel values it introduces and its pending writes
    (if any, first), in one transaction.

    Blobs and writes are first-write-wins (a version names one value; a write is
    recorded once); the checkpoint row is an upsert, so storing a checkpoint id twice
    keeps the last one (LangGraph contract). Storing the writes first means a checkpoint
    present in the database always has them.
    """
    if rows.writes:
        put_writes(conn, st, rows.writes, False)
    if rows.metadata_rows:
        # First-write-wins: a row left by an earlier put of this checkpoint id with
        # other metadata only widens what a filter rechecks.
        st.insert_rows(conn, "put_metadata_index", rows.metadata_rows)
    batches = _by_size(conn, st, rows.blobs)
    if len(batches) == 1 and one_statement(st, rows):
        stmt, params = st.put_with_blobs(batches[0], rows.checkpoint)
        cursor.execute(conn, stmt, params, st.key(conn))
        return
    for batch in batches:
        st.insert_rows(conn, "put_blobs", batch)
    cursor.execute(conn, st.put_checkpoint, rows.checkpoint, st.key(conn))


def one_statement(st: Statements, rows: CheckpointRows) -> bool:
    """Whether :func:`put` stores ``rows`` in one statement, atomic on its own (no
    transaction needed around it): a checkpoint row alone, or, where the dialect runs
    inserts in a ``WITH`` clause, with blob rows that fit one multi-row insert."""
    if rows.writes or rows.metadata_rows:
        return False
    if not rows.blobs:
        return True
    return (
        st.qb.dml_in_cte
        and len(rows.blobs) <= cursor.MANY_ROWS
        and sum(len(b["blob"] or b"") for b in rows.blobs) <= BATCH_BYTES
    )


def one_insert(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether :func:`put_writes` stores ``rows`` in one multi-row INSERT, atomic on its
    own (no transaction needed around it): at most :data:`._engine.cursor.MANY_ROWS`
    rows, at most :data:`BATCH_BYTES` of values."""
    return len(rows) <= cursor.MANY_ROWS and (
        sum(len(r["blob"] or b"") for r in rows) <= BATCH_BYTES
    )


def put_checked(conn: Connection, st: Statements, rows: CheckpointRows) -> None:
    """:func:`put`, refusing a checkpoint whose parent is no longer the newest checkpoint
    of its ``(thread_id, checkpoint_ns)`` (``detect_conflicts``).

    The check and the write run under the namespace's write lock
    (:meth:`.QueryBuilder.write_lock`), so two runs that started from the same checkpoint
    cannot both pass it.

    Raises:
        CheckpointConflictError: Another checkpoint was stored since the parent.
    """
    row = rows.checkpoint
    thread_id, ns = row["thread_id"], row["checkpoint_ns"]
    with st.qb.write_lock(conn, thread_id, ns):
        newest = conn.execute(st.newest_id, {"thread_id": thread_id, "checkpoint_ns": ns}).scalar()
        parent = row["parent_checkpoint_id"]
        if newest is not None and newest not in (parent, row["checkpoint_id"]):
            raise CheckpointConflictError(thread_id, ns, parent, newest)
        put(conn, st, rows)


@capable
def put_writes(
    conn: Connection, st: Statements, rows: Sequence[dict[str, Any]], replace: bool
) -> None:
    """Store the pending writes of one task.

    Args:
        conn: Connection inside a transaction.
        st: The saver's statements.
        rows: One dict a write: the columns of the writes table.
        replace: Overwrite existing rows (a batch of special channels only: errors,
            interrupts, resumes, scheduled) instead of first-write-wins.
    """
    name = "put_writes_replace" if replace else "put_writes_first_wins"
    for batch in _by_size(conn, st, rows):
        st.insert_rows(conn, name, batch)


@capable
def delete_thread(conn: Connection, st: Statements, thread_id: str) -> None:
    """Delete every row of ``thread_id`` in every table and namespace: one statement
    where the dialect runs deletes in a ``WITH`` clause, else three (in a transaction)."""
    if st.delete_thread_one is not None:
        cursor.execute(conn, st.delete_thread_one, {"thread_id": thread_id}, st.key(conn))
        return
    for stmt in st.delete_thread:
        conn.execute(stmt, {"thread_id": thread_id})


@capable
def get_checkpoint(
    conn: Connection,
    st: Statements,
    thread_id: str,
    checkpoint_ns: str,
    checkpoint_id: str | None,
) -> CheckpointRecord | None:
    """Fetch one checkpoint (the latest of the namespace when ``checkpoint_id`` is None).

    The saver runs it outside a transaction first (one statement needs none; see
    :attr:`.QueryBuilder.one_statement_read_options`) and again inside one when a blob
    was missing (``incomplete``).

    One statement for a checkpoint whose values are all in its row (``inline_values``):
    the row joined to its writes; a second one reads the blobs of its other channel
    values (``value_versions``).
    """
    params = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
    # The checkpoint's columns repeat in each joined write row: read (processed) once.
    once = len(CHECKPOINT_COLUMNS)
    if checkpoint_id:
        params["checkpoint_id"] = checkpoint_id
        rows = cursor.rows(conn, st.by_id, params, st.key(conn), first_only=once, values=True)
    else:
        rows = cursor.rows(conn, st.latest, params, st.key(conn), first_only=once, values=True)
    if not rows:
        return None
    row = rows[0]
    record = CheckpointRecord.of(row)
    if (record.thread_id, record.checkpoint_ns) != (thread_id, checkpoint_ns):
        return None  # another name with the same digest key: never trust a digest alone
    record.writes = [
        (w.task_id, w.task_path, w.idx, w.channel, w.write_type, w.write_blob)
        for w in rows
        if w.task_id is not None
    ]
    keys = [
        (row.thread_id, row.checkpoint_ns, ch, v)  # keys as stored
        for ch, v in record.versions.items()  # empty for a damaged row
        if ch not in record.values
    ]
    for chunk in chunks(keys, st.qb.in_list_chunk):
        for key, value in st.values_in(conn, chunk).items():
            record.take(key[2], value)
    record.incomplete = any(k[2] not in record.values for k in keys)
    return record


#: Bytes of values sent in one multi-row INSERT. Rows are batched by SQLAlchemy by
#: count; large values are split here so that one statement stays well under MySQL's
#: ``max_allowed_packet`` (a value larger on its own still goes alone).
BATCH_BYTES = 4 * 1024 * 1024


def _by_size(
    conn: Connection, st: Statements, rows: Sequence[dict[str, Any]]
) -> list[list[dict[str, Any]]]:
    """Rows in batches of at most :data:`BATCH_BYTES` of values (and under the server's
    per-statement limit), checking every value against that limit before anything is
    sent.

    Raises:
        ValueTooLargeError: A value is larger than the server takes in one statement.
    """
    limit = st.qb.value_limit(conn)
    budget = min(BATCH_BYTES, limit) if limit else BATCH_BYTES
    if limit:
        for row in rows:
            n = len(row["blob"] or b"")
            if n > limit:
                raise st.qb.too_large(n, limit)
    return by_bytes(((row, len(row["blob"] or b"")) for row in rows), budget)


def chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """``items`` in slices of at most ``size`` (at least 1)."""
    size = max(1, size)
    return [items[i : i + size] for i in range(0, len(items), size)]


def registered_keys(conn: Connection, st: Statements) -> frozenset[str]:
    """The metadata keys the database indexes completely, read now
    (:meth:`Statements.indexed_keys`)."""
    return st.indexed_keys(conn, fresh=True)
