"""The codec: checkpoints turned into rows and rows into tuples.

No database here. The saver checks a call's config (:mod:`._codec.configs`), encodes what
it stores with :class:`Codec` (rows ready for :mod:`._ops.checkpoints`), runs the
operation, and decodes the records the operation read back
(:mod:`._codec.records`) into ``CheckpointTuple`` objects, after the connection went
back to the pool.

The names are public (no underscore) because the module itself is private: it serves
the saver and :mod:`.transfer`.
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.sqlalchemy._codec import inline as _inline
from langgraph.checkpoint.sqlalchemy._codec import opaque as _opaque
from langgraph.checkpoint.sqlalchemy._codec import pieces as _pieces
from langgraph.checkpoint.sqlalchemy._codec import strict as _strict
from langgraph.checkpoint.sqlalchemy._codec.canonical import TooDeepError, canonical_json
from langgraph.checkpoint.sqlalchemy._codec.configs import (
    ConfigMetadata,
    SaverOptions,
    check_channel,
    check_stored_channel,
    checkpoint_config,
    checkpoint_key,
    own_id,
    text_id,
)
from langgraph.checkpoint.sqlalchemy._codec.damage import write_damage
from langgraph.checkpoint.sqlalchemy._codec.metakeys import COLUMN_KEYS, index_rows
from langgraph.checkpoint.sqlalchemy._codec.records import (
    ChannelHistory,
    CheckpointRecord,
    CheckpointRows,
    Pending,
    PendingWrite,
)
from langgraph.checkpoint.sqlalchemy._codec.valuecache import Entry, ValueCache
from langgraph.checkpoint.sqlalchemy.errors import (
    CheckpointConfigError,
    CheckpointDecodeError,
    CheckpointMetadataError,
)
from langgraph.checkpoint.sqlalchemy.schema import (
    ID_MAX_LENGTH,
    promoted_source,
    promoted_step,
    run_key,
    stored_full,
)

__all__ = ["Codec", "next_version"]

logger = logging.getLogger("langgraph.checkpoint.sqlalchemy")


def _metadata_source(config: RunnableConfig, keys: ConfigMetadata) -> RunnableConfig:
    """``config`` as ``get_checkpoint_metadata`` may read it: its ``metadata`` and
    ``configurable`` cut to ``keys`` (all of them for True)."""
    if keys is True:
        return config
    metadata = config.get("metadata") or {}
    configurable = config.get("configurable") or {}
    return {
        "metadata": {k: v for k, v in metadata.items() if k in keys},
        "configurable": {k: v for k, v in configurable.items() if k in keys},
    }


def _metadata_json(
    config: RunnableConfig, metadata: CheckpointMetadata, keys: ConfigMetadata = True
) -> Any:
    try:
        source = _metadata_source(config, keys)
        return canonical_json(get_serializable_checkpoint_metadata(source, metadata))
    except TooDeepError as e:
        raise CheckpointMetadataError(f"checkpoint metadata is too deep: {e}.") from e
    except (TypeError, ValueError) as e:
        raise CheckpointMetadataError(
            f"checkpoint metadata must be JSON ({e}); keep metadata values to str, int, "
            "float, bool, None, lists and dicts with string keys."
        ) from e


def next_version(current: str | int | None) -> str:
    """The channel version after ``current`` (see ``SQLAlchemySaver.get_next_version``)."""
    if current is None:
        n = 0
    elif isinstance(current, int):
        n = current
    else:
        n = int(str(current).split(".")[0])
    return f"{n + 1:032}.{random.random():016}"


class Codec:
    """Rows to store from a checkpoint and its writes, ``CheckpointTuple`` from records.

    Args:
        serde: The saver's serializer.
        options: The saver's ``inline_limit`` (largest serialised value stored in the
            checkpoint row), ``config_metadata`` (the config keys ``put`` copies into the
            stored metadata) and ``metadata_index_keys`` (the keys ``put`` writes index
            rows for, see :mod:`._codec.metakeys`), checked
            (:func:`._codec.configs.saver_options`).
        metadata_index_rows: Whether the dialect keeps index rows at all
            (:attr:`.QueryBuilder.metadata_index_rows`; PostgreSQL does not).
        strict: Decode with :mod:`._codec.strict` (the saver's ``strict_decode``).

    Attributes:
        values: The bytes of values serialised by earlier puts, so that an unchanged
            value is not serialised again (:mod:`._codec.valuecache`).
    """

    def __init__(
        self,
        serde: SerializerProtocol,
        options: SaverOptions,
        metadata_index_rows: bool,
        *,
        strict: bool,
    ) -> None:
        self.serde = serde  # (sets _opaque)
        self.metadata_index_rows = metadata_index_rows
        self.inline_limit = options.inline_limit
        self.strict = strict
        self.config_metadata = options.config_metadata
        self.index_keys = options.index_keys
        # Where the dialect keeps index rows: the keys put writes them for.
        self._row_keys = self.index_keys if metadata_index_rows else ()
        self.values = ValueCache()
        #: Store a new value that extends the channel's stored one as a piece
        #: (:mod:`._codec.pieces`); off, every value is stored whole.
        self.pieces = True

    @property
    def serde(self) -> SerializerProtocol:
        """The serializer values are decoded with."""
        return self._serde

    @serde.setter
    def serde(self, serde: SerializerProtocol) -> None:
        # Once, not at every value: isinstance on a subclass of a typing.Protocol goes
        # through _ProtocolMeta.__instancecheck__ (9 calls a get_tuple, 7% of its
        # instructions with the rest of the read checks).
        self._serde = serde
        self._opaque = serde if isinstance(serde, _opaque.OpaqueSerializer) else None

    def index_also(self, keys: Collection[str]) -> None:
        """Write index rows for ``keys`` too: the keys the database lists as complete
        (read by ``setup()``), which a writer without them in its ``metadata_index_keys``
        (the CLI's ``import`` and ``copy``, a process not yet redeployed) would leave
        incomplete, hiding its checkpoints from filters through the index."""
        wider = set(self.index_keys).union(k for k in keys if k not in COLUMN_KEYS)
        self.index_keys = tuple(sorted(wider))
        self._row_keys = self.index_keys if self.metadata_index_rows else ()

    def with_serde(self, serde: SerializerProtocol, *, strict: bool) -> Codec:
        """A codec like this one with another serializer (its own value cache)."""
        clone = copy.copy(self)
        clone.serde = serde  # (sets _opaque)
        clone.strict = strict
        clone.values = ValueCache()
        return clone

    # -- decoding -------------------------------------------------------------------------

    def loads(self, type_: str, data: bytes | None) -> Any:
        """Decode a stored value with ``serde``, checked by :mod:`._codec.strict` when
        ``strict`` is on. With an :class:`._codec.opaque.OpaqueSerializer` (the operator
        tools) the value is not decoded at all: a :class:`._codec.opaque.Stored`, written back
        byte for byte (decrypted when the serializer has the cipher)."""
        if self._opaque is not None:
            return self._opaque.stored(type_, data if data is not None else b"")
        if self.strict:
            return _strict.loads(self.serde, type_, data if data is not None else b"")
        return self.serde.loads_typed((type_, data if data is not None else b""))

    def to_tuple(self, rec: CheckpointRecord) -> CheckpointTuple:
        """Decode a record.

        Raises:
            CheckpointDecodeError: The checkpoint, a channel value, a write or a column
                of the row cannot be decoded (damaged or forged row, other serializer or
                key); never another error, whatever the row holds.
        """
        row = rec.row
        key = (str(rec.thread_id), str(rec.checkpoint_ns), str(row.checkpoint_id))
        if rec.damaged is not None:
            raise CheckpointDecodeError(*key, *rec.damaged)
        try:
            return self._decoded(rec, key)
        except CheckpointDecodeError:
            raise
        except Exception as e:  # a forged row no check above foresaw: still typed
            raise CheckpointDecodeError(*key, "row", f"{type(e).__name__}: {e}") from e

    def _decoded(self, rec: CheckpointRecord, key: tuple[str, str, str]) -> CheckpointTuple:
        row = rec.row

        def load(part: str, type_: str, data: bytes | None) -> Any:
            try:
                if part == "checkpoint" and self._opaque is not None:
                    return self.serde.loads_typed((type_, data or b""))  # the document, as data
                return self.loads(type_, data)
            except Exception as e:
                raise CheckpointDecodeError(*key, part, f"{type(e).__name__}: {e}") from e

        checkpoint = load("checkpoint", row.type, row.checkpoint)
        if isinstance(checkpoint, _opaque.Stored) and "+" in checkpoint.type:
            raise CheckpointDecodeError(
                *key,
                "checkpoint",
                f"it is encrypted ({checkpoint.type}) and this reader has no key",
            )
        if not isinstance(checkpoint, dict):
            raise CheckpointDecodeError(
                *key, "checkpoint", f"decoded to {type(checkpoint).__name__}, not a dict"
            )
        checkpoint["channel_values"] = {
            ch: load(f"channel {ch}", t, b) for ch, (t, b) in rec.values.items() if t != "empty"
        }
        for w in rec.writes:
            if (why := write_damage(w)) is not None:
                raise CheckpointDecodeError(*key, f"write {w[0]}/{w[3]}", why)
        rec.writes.sort(key=lambda w: writes_sort_key(w[1], w[0], w[2]))
        pending = [
            (task_id, channel, load(f"write {task_id}/{channel}", t, b))
            for task_id, _path, _idx, channel, t, b in rec.writes
        ]
        thread_id, checkpoint_ns, checkpoint_id = key
        parent = row.parent_checkpoint_id
        return CheckpointTuple(
            config=checkpoint_config(thread_id, checkpoint_ns, checkpoint_id),
            checkpoint=cast(Checkpoint, checkpoint),
            metadata=cast(CheckpointMetadata, row.metadata),
            parent_config=checkpoint_config(thread_id, checkpoint_ns, parent) if parent else None,
            pending_writes=pending,
        )

    def listed(self, rec: CheckpointRecord) -> CheckpointTuple | None:
        """A listed record decoded, or None (logged) when it cannot be: one damaged row
        must not hide a thread's whole history."""
        try:
            return self.to_tuple(rec)
        except CheckpointDecodeError as e:
            logger.error("list() skipped a checkpoint: %s", e)
            return None

    def histories(
        self,
        raw: Mapping[str, ChannelHistory],
        channels: Sequence[str],
        thread_id: str,
        checkpoint_ns: str,
    ) -> dict[str, DeltaChannelHistory]:
        """Decode the raw histories of ``channels`` (LangGraph's order of writes).

        Raises:
            CheckpointDecodeError: A write or seed cannot be decoded, naming the
                checkpoint that holds it (damaged or forged row, other serializer).
        """

        def load(
            checkpoint_id: str, what: str, task_id: str, ch: str, type_: Any, data: Any
        ) -> Any:
            try:
                return self.loads(type_, data)
            except Exception as e:
                # the part named only for the error: no string made a value
                part = f"write {task_id}/{ch}" if what == "write" else f"channel {ch}"
                raise CheckpointDecodeError(
                    thread_id, checkpoint_ns, checkpoint_id, part, f"{type(e).__name__}: {e}"
                ) from e

        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            history = raw[ch]
            for w in history.writes:
                why = write_damage((w[2], w[1], w[3], ch, w[4], w[5]))
                if why is not None:
                    raise CheckpointDecodeError(
                        thread_id, checkpoint_ns, w[6], f"write {w[2]}/{ch}", why
                    )
            # Oldest checkpoint first (deepest), then writes_sort_key within one.
            history.writes.sort(key=lambda w: (-w[0], *writes_sort_key(w[1], w[2], w[3])))
            entry: DeltaChannelHistory = {
                "writes": [
                    (task_id, ch, load(at, "write", task_id, ch, t, b))
                    for _depth, _path, task_id, _idx, t, b, at in history.writes
                ]
            }
            if history.seed is not None:
                t, b = history.seed
                entry["seed"] = load(history.seed_id, "channel", "", ch, t, b)
            result[ch] = entry
        return result

    def pending_delta_channels(self, row: Any) -> Sequence[str]:
        """DeltaChannel channels a checkpoint row versions but holds no value for: the
        ones LangGraph rebuilds from history. DeltaChannels leave their update counters
        in ``metadata["counters_since_delta_snapshot"]``. The row's ``metadata`` and
        ``value_versions`` are checked by the caller (:func:`._ops.threads.prune_keep_latest`)."""
        counters = row.metadata.get("counters_since_delta_snapshot") or {}
        if not isinstance(counters, dict):
            return []
        missing = [ch for ch in counters if ch not in row.value_versions]
        if not missing:
            return []
        # Only the channel versions are needed: read as data, no object rebuilt (a
        # forged document naming a callable must not run it during a prune).
        try:
            checkpoint = _opaque.document(self.serde, row.type, row.checkpoint)
            versions = checkpoint.get("channel_versions", {})
            return [ch for ch in missing if ch in versions]
        except Exception:  # unreadable: keep the history of all of them (the safe side)
            return missing

    # -- encoding -------------------------------------------------------------------------

    def put_rows(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        bases: Mapping[tuple[str, str, str], Pending] | None = None,
    ) -> tuple[CheckpointRows, RunnableConfig]:
        """The rows that store a checkpoint (``put``), and the config of the checkpoint.

        ``bases`` are values stored earlier in the same transaction (transfer's puts of
        one thread), which a new version may be stored as a piece of besides the ones
        the value cache knows committed.

        Raises:
            CheckpointConfigError: Bad thread, namespace, ids or channel names.
            CheckpointMetadataError: Metadata that is not JSON.
        """
        thread_id, checkpoint_ns, parent_id = checkpoint_key(config)
        checkpoint_id = own_id(checkpoint, parent_id)
        meta = _metadata_json(config, metadata, self.config_metadata)
        values = checkpoint.get("channel_values") or {}
        versions = checkpoint.get("channel_versions", {})
        inline, blob_rows, learnt = self._place_values(
            thread_id, checkpoint_ns, values, versions, new_versions, bases or {}
        )
        type_, data = self.serde.dumps_typed({**checkpoint, "channel_values": {}})
        checkpoint_row = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "thread_id_full": stored_full(thread_id),
            "checkpoint_ns_full": stored_full(checkpoint_ns),
            "checkpoint_id": checkpoint_id,
            "parent_checkpoint_id": parent_id,
            "run_id": run_key(meta.get("run_id")),
            "source": promoted_source(meta.get("source")),
            "step": promoted_step(meta.get("step")),
            "type": type_,
            "checkpoint": data,
            "metadata": meta,
            "value_versions": {ch: str(v) for ch, v in versions.items() if ch in values},
            "inline_values": _inline.pack(inline),
        }
        indexed = index_rows(checkpoint_row, self._row_keys) if self._row_keys else ()
        rows = CheckpointRows(checkpoint_row, blob_rows, metadata_rows=indexed, learnt=learnt)
        return rows, checkpoint_config(thread_id, checkpoint_ns, checkpoint_id)

    def _place_values(
        self,
        thread_id: str,
        checkpoint_ns: str,
        values: Mapping[str, Any],
        versions: ChannelVersions,
        new_versions: ChannelVersions,
        bases: Mapping[tuple[str, str, str], Pending],
    ) -> tuple[list[_inline.InlineValue], list[dict[str, Any]], list[Pending]]:
        """Serialise the channel values: ``(inline values, blob rows, what the value
        cache learns once the put commits)`` (see :mod:`._codec.inline` for which goes
        where, :mod:`._codec.pieces` for when a blob row is a piece).

        A value known to be in the blobs table at its version is not serialised again
        when it did not change, and an unchanged value serialised by an earlier put is
        not serialised again (:mod:`._codec.valuecache`)."""
        blob_rows = []
        inline: list[_inline.InlineValue] = []
        learnt: list[Pending] = []
        budget = _inline.INLINE_BUDGET
        cache = self.values
        for channel, value in values.items():
            if channel not in versions:
                continue  # no version: nothing can reference the value
            check_stored_channel(channel)
            key = (thread_id, checkpoint_ns, channel)
            version = str(versions[channel])
            changed = channel in new_versions
            earlier = bases.get(key)
            if cache.in_blobs(key, version) or (
                earlier is not None and str(earlier[1].version) == version
            ):
                continue  # in the blobs table at this version: referenced by it
            hit = cache.get(key, version, value)
            if hit is None:
                type_, blob = self.serde.dumps_typed(value)
            else:
                type_, blob = hit
            size = len(blob) if blob is not None else 0
            if size <= self.inline_limit and size <= budget:
                inline.append((channel, type_, blob))
                budget -= size
                if hit is None and blob is not None:
                    cache.keep(key, Entry(version, value, type_, blob))
            elif changed or size <= _inline.INLINE_VALUE_LIMIT:
                # New, or small enough to have been inline in the parent (under any
                # inline_limit) but not here: into the blobs table, first-write-wins;
                # a new value that extends the channel's stored one as a piece.
                stored_as = str(new_versions.get(channel, version))
                base = earlier if changed else None
                row, entry = self._blob_row(key, stored_as, value, type_, blob, changed, base)
                blob_rows.append(row)
                cache.keep(key, entry)
                learnt.append((key, entry, row["chain"]))
            # else: unchanged and large, so stored in the blobs table when it was new.
        return inline, blob_rows, learnt

    def _blob_row(
        self,
        key: tuple[str, str, str],
        version: str,
        value: Any,
        type_: str,
        blob: bytes | None,
        changed: bool,
        earlier: Pending | None = None,
    ) -> tuple[dict[str, Any], Entry]:
        """The blobs-table row of a value: a piece of the channel's value known to be
        stored (``earlier`` in this transaction, else :meth:`.ValueCache.base`) when it
        extends it and the chain's schedule allows (:func:`._codec.pieces.next_piece`),
        else whole; and its cache entry."""
        data = blob if blob is not None else b""
        row = {
            "thread_id": key[0],
            "checkpoint_ns": key[1],
            "channel": key[2],
            "version": version,
            "type": type_,
            "blob": blob,
            "base_version": None,
            "chain": version,
            "size": len(data),
        }
        base: Entry | None
        chain: str | None
        if earlier is not None:
            base, chain = earlier[1], earlier[2]
        else:
            base = self.values.base(key) if changed else None
            chain = base.chain if base is not None else None
        if base is not None and self.pieces and base.type == type_ and str(base.version) != version:
            piece = _pieces.next_piece(base.blob, base.whole_size, base.appended, data)
            if piece is not None:
                row.update(blob=piece[0], base_version=str(base.version), chain=chain)
                return row, Entry(version, value, type_, data, None, base.whole_size, piece[1])
        return row, Entry(version, value, type_, data, None, len(data), 0)

    def stored(self, learnt: Sequence[Pending]) -> None:
        """Record in the value cache that the put that made ``learnt`` committed: its
        values are in the blobs table, and may be extended."""
        for key, entry, chain in learnt:
            self.values.committed(key, entry, chain)

    def remember(self, rec: CheckpointRecord, values: Mapping[str, Any]) -> None:
        """Record in the value cache the values a read found in the blobs table
        (``rec.stored``) and decoded (``values``): unchanged, they are not serialised
        again; grown, they may be extended."""
        thread_id, checkpoint_ns = rec.thread_id, rec.checkpoint_ns
        for channel, found in rec.stored.items():
            version = rec.versions.get(channel)
            blob = found.blob
            if version is None or channel not in values:
                continue
            if not isinstance(blob, bytes):
                if not isinstance(blob, (bytearray, memoryview)):
                    continue  # (a forged row's column may hold anything)
                blob = bytes(blob)  # psycopg2 reads bytea as a memoryview
            entry = Entry(
                version,
                values[channel],
                found.type,
                blob,
                found.chain,
                found.whole_size,
                found.appended,
            )
            self.values.keep((thread_id, checkpoint_ns, channel), entry)

    def write_rows(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[list[dict[str, Any]], bool]:
        """The rows of a task's pending writes (``put_writes``), and whether they replace
        what the task stored before.

        Raises:
            CheckpointConfigError: No ``checkpoint_id``, bad ids or channel names.
        """
        thread_id, checkpoint_ns, checkpoint_id = checkpoint_key(config)
        if checkpoint_id is None:
            raise CheckpointConfigError(
                "put_writes needs config['configurable']['checkpoint_id'] (the checkpoint "
                "the writes belong to)."
            )
        task = text_id(task_id, "task_id", ID_MAX_LENGTH, required=True)
        rows = []
        for i, (channel, value) in enumerate(writes):
            check_channel(channel)
            type_, blob = self.serde.dumps_typed(value)
            rows.append(
                {
                    "thread_id": thread_id,
                    "checkpoint_ns": checkpoint_ns,
                    "checkpoint_id": checkpoint_id,
                    "task_id": task,
                    "idx": WRITES_IDX_MAP.get(channel, i),
                    "task_path": task_path or "",
                    "channel": channel,
                    "type": type_,
                    "blob": blob,
                }
            )
        # A batch of special channels only (error, interrupt, resume, scheduled) replaces
        # what the task stored before; regular writes are first-write-wins (LangGraph
        # contract: a retried task must not change what was recorded).
        replace = all(w[0] in WRITES_IDX_MAP for w in writes)
        return rows, replace

    def pending_rows(
        self, config: RunnableConfig, pending: Sequence[PendingWrite]
    ) -> list[dict[str, Any]]:
        """The rows of pending writes stored with their checkpoint (transfer).

        Writes keep their ``idx`` when the source gave it; without any, regular writes
        are numbered per task in their order.
        """
        write_rows: list[dict[str, Any]] = []
        for w in pending:
            rows, _ = self.write_rows(config, [(w.channel, w.value)], w.task_id, w.task_path)
            if w.idx is not None:
                rows[0]["idx"] = w.idx
            write_rows.extend(rows)
        if write_rows and not any(w.idx is not None for w in pending):
            # No idx from the source: number regular writes per task in their order.
            counters: dict[str, int] = {}
            for r in write_rows:
                if r["channel"] not in WRITES_IDX_MAP:
                    r["idx"] = counters.get(r["task_id"], 0)
                    counters[r["task_id"]] = r["idx"] + 1
        return write_rows
