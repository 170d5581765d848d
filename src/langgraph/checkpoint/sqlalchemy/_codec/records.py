"""The records the operations hand the codec: rows read back, not yet decoded, and the
rows of one checkpoint to store, encoded already; and a pending write as transfer
carries it.

Plain data with no SQL: the operations (:mod:`.._ops`) fill and take them, the codec
(:mod:`.rows`) decodes and builds them. They live at the codec's level so that neither
side imports the other's layer upwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langgraph.checkpoint.sqlalchemy._codec import inline as _inline
from langgraph.checkpoint.sqlalchemy._codec.damage import row_damage
from langgraph.checkpoint.sqlalchemy._codec.pieces import StoredValue
from langgraph.checkpoint.sqlalchemy._codec.valuecache import Entry
from langgraph.checkpoint.sqlalchemy.schema import full_name

__all__ = [
    "BlobKey",
    "ChannelHistory",
    "CheckpointKey",
    "CheckpointRecord",
    "CheckpointRows",
    "Pending",
    "PendingWrite",
]

CheckpointKey = tuple[str, str, str]
"""``(thread_id, checkpoint_ns, checkpoint_id)``."""
BlobKey = tuple[str, str, str, str]
"""``(thread_id, checkpoint_ns, channel, version)``."""
Pending = tuple[tuple[str, str, str], Entry, str]
"""What the value cache learns when a put commits: ``(thread_id, checkpoint_ns,
channel)``, the cache entry of the value it stored, and the ``chain`` of its row."""


@dataclass
class CheckpointRecord:
    """A checkpoint row with its decoded checkpoint, its channel values and its writes.

    Attributes:
        row: The 11 columns ``(thread_id, checkpoint_ns, checkpoint_id,
            parent_checkpoint_id, type, checkpoint, metadata, value_versions,
            inline_values, thread_id_full, checkpoint_ns_full)`` of the checkpoints
            table (all but ``run_id``, ``source`` and ``step``, which only filter), read
            by name; from :func:`get_checkpoint` also the columns of one joined write
            (``task_id``, ``task_path``, ``idx``, ``channel``, ``write_type``,
            ``write_blob``), read into :attr:`writes`. ``thread_id`` and
            ``checkpoint_ns`` are keys (:func:`.schema.name_key`), :attr:`thread_id` and
            :attr:`checkpoint_ns` the names.
        values: ``{channel: (type, blob)}`` of the channels that store a value (those in
            the row's ``inline_values`` first, then those found in the blobs table).
        writes: ``[(task_id, task_path, idx, channel, type, blob)]`` unordered.
    """

    row: Any  # a Row of CHECKPOINT_COLUMNS, read by attribute name
    values: dict[str, tuple[str, bytes | None]] = field(default_factory=dict)
    writes: list[tuple[str, str, int, str, str, bytes | None]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    """The row's ``value_versions``, checked (empty when the row is damaged)."""
    damaged: tuple[str, str] | None = None
    """``(part, why)`` of the first column of the row that cannot be read (a damaged or
    forged row: :func:`row_damage`), else None."""
    incomplete: bool = False
    """A channel's blob was not found: deleted between two statements of a read outside
    a transaction (a concurrent prune), or missing from the database."""
    stored: dict[str, StoredValue] = field(default_factory=dict)
    """The values found in the blobs table, by channel, with where they are stored (what
    the codec's value cache learns from a read)."""

    def take(self, channel: str, value: StoredValue) -> None:
        """Add the value of ``channel`` read from the blobs table; one that cannot be
        rebuilt marks the record damaged (:attr:`damaged`), naming the channel."""
        if value.error is not None:
            if self.damaged is None:
                self.damaged = (f"channel {channel}", value.error)
            return
        self.values[channel] = (value.type, value.blob)
        self.stored[channel] = value

    @property
    def thread_id(self) -> str:
        """The thread id (full text, not its key)."""
        return full_name(self.row.thread_id, self.row.thread_id_full)

    @property
    def checkpoint_ns(self) -> str:
        """The namespace (full text, not its key)."""
        return full_name(self.row.checkpoint_ns, self.row.checkpoint_ns_full)

    @classmethod
    def of(cls, row: Any) -> CheckpointRecord:
        """The record of a checkpoint row, its columns checked (:func:`row_damage`) and
        its ``inline_values`` unpacked (no value is decoded: the container holds only
        names and bytes). A row that fails a check is a record with :attr:`damaged`
        set, never an exception: one forged row must not break a listing."""
        damage = row_damage(row)
        if damage is not None:
            return cls(row, damaged=damage)
        try:
            values = _inline.unpack(row.inline_values)
        except ValueError as e:
            return cls(row, damaged=("inline_values", str(e)))
        return cls(row, values, versions=row.value_versions)


class CheckpointRows(NamedTuple):
    """What storing one checkpoint writes, encoded already (:mod:`._codec.rows`).

    Attributes:
        checkpoint: The checkpoints-table row.
        blobs: Rows of the blobs table: the channel values it introduces.
        writes: Rows of the writes table stored with it (transfer's copy and import);
            empty for ``put``.
        metadata_rows: Rows of the metadata index (:mod:`._ops.metaindex`), where the
            dialect keeps one.
        learnt: What the codec's value cache learns once the rows are committed
            (:meth:`.Codec.stored`).
    """

    checkpoint: dict[str, Any]
    blobs: Sequence[dict[str, Any]]
    writes: Sequence[dict[str, Any]] = ()
    metadata_rows: Sequence[dict[str, Any]] = ()
    learnt: Sequence[Pending] = ()


@dataclass
class ChannelHistory:
    """Raw history of one channel: its writes and its seed, undecoded.

    Attributes:
        writes: ``(depth, task_path, task_id, idx, type, blob, checkpoint_id)``, in no
            order.
        seed: ``(type, blob)`` of the nearest stored value, or None when the walk
            reached the root without one.
        seed_id: The checkpoint whose value the seed is ("" without a seed).
    """

    writes: list[tuple[int, str, str, int, str, bytes | None, str]] = field(default_factory=list)
    seed: tuple[str, bytes | None] | None = None
    seed_id: str = ""


@dataclass
class PendingWrite:
    """A pending write as transfer reads it from a source and stores it.

    Attributes:
        task_id: The task.
        task_path: Its path ("" when the source does not store it).
        channel: The channel written.
        idx: Its index within the task, or None when the source does not store it.
        value: The value, decoded.
    """

    task_id: str
    task_path: str
    channel: str
    idx: int | None
    value: Any
