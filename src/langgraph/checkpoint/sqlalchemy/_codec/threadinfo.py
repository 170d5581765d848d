"""A thread as ``list_threads`` reports it, and the times LangGraph's checkpoint ids carry.

LangGraph's checkpoint ids are UUIDv6, whose leading bits are a timestamp: the time of a
checkpoint is read from its id (:func:`checkpoint_time`), and "idle since" becomes the
smallest id of a moment (:func:`id_at`), which the browsing queries compare ids with.
Pure Python: the browsing operations, the saver and the command line share these.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

__all__ = ["ThreadInfo", "checkpoint_time", "id_at"]

_UUID_EPOCH_OFFSET = 0x01B21DD213814000  # 100-ns intervals from 1582-10-15 to 1970-01-01


def checkpoint_time(checkpoint_id: str) -> datetime | None:
    """When a checkpoint was created, read from its id: LangGraph's ids are UUIDv6,
    whose leading 60 bits are a 100-ns timestamp. None for an id of another form."""
    try:
        value = uuid.UUID(checkpoint_id)
    except (ValueError, AttributeError, TypeError):
        return None
    if value.version != 6:
        return None
    ticks = ((value.int >> 80) << 12) | ((value.int >> 64) & 0x0FFF)
    return datetime.fromtimestamp((ticks - _UUID_EPOCH_OFFSET) / 1e7, tz=timezone.utc)


def id_at(moment: datetime) -> str:
    """The smallest UUIDv6 checkpoint id of ``moment``: ids created before it sort below
    it (LangGraph's ids are UUIDv6, which sort by creation time as text)."""
    ticks = max(int(moment.timestamp() * 1e7) + _UUID_EPOCH_OFFSET, 0)  # 1582 at the least
    value = ((ticks >> 12) & 0xFFFFFFFFFFFF) << 80 | (ticks & 0x0FFF) << 64 | 6 << 76
    return str(uuid.UUID(int=value))


@dataclass(frozen=True)
class ThreadInfo:
    """One thread as :meth:`.SQLAlchemySaver.list_threads` reports it.

    Attributes:
        thread_id: The thread.
        checkpoints: Number of checkpoints, all namespaces.
        namespaces: Number of distinct ``checkpoint_ns`` (1 without subgraphs).
        last_checkpoint_id: Its newest checkpoint id.
        last_activity: Creation time of that checkpoint (from its UUIDv6 id), or None.
        bytes: Serialised bytes stored for the thread: checkpoints, values, writes.
    """

    thread_id: str
    checkpoints: int
    namespaces: int
    last_checkpoint_id: str
    last_activity: datetime | None
    bytes: int
