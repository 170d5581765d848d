"""The serialised bytes of channel values a saver stored, so that an unchanged value is
not serialised again at the next put.

LangGraph passes every channel value to each ``put`` but only the changed channels in
``new_versions``; an unchanged channel keeps its version and, within one run, the very
same Python object (a channel's ``checkpoint()`` returns the value it holds). A channel
version names one value in its thread and namespace (LangGraph contract; the blobs
table relies on it too), so bytes serialised for ``(thread_id, checkpoint_ns, channel)``
at a version, for this object, are the bytes of that value at any later put that
carries the same version and the same object. The object is compared by identity: a
value restored from the database (a new run, a fork from an older checkpoint) is a new
object and is serialised again, whatever its version says.

It also knows where the latest value of each channel is stored: a value known to be in
the blobs table (the put that stored it committed, or a read found it there) is not
serialised again while its version does not change, and its bytes are what a new version
is checked against to be stored as a piece of it (:mod:`._codec.pieces`).

Bounded by bytes (:data:`MAX_BYTES`), least recently stored first out. Thread-safe.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["MAX_BYTES", "MIN_BYTES", "Entry", "Key", "ValueCache"]

#: Most bytes of serialised values kept per saver.
MAX_BYTES = 32 * 1024 * 1024
#: Values smaller than this are serialised again rather than kept (cheaper than the
#: bookkeeping, and scalars are shared objects).
MIN_BYTES = 256

Key = tuple[str, str, str]
"""``(thread_id, checkpoint_ns, channel)``."""


class Entry:
    """What the cache knows of the value of a channel at one version.

    Attributes:
        version: The channel version.
        value: The object the bytes were serialised from or decoded into.
        type: The serializer's type of the value.
        blob: The value's bytes, as ``serde.dumps_typed`` returned them.
        chain: Where the value is in the blobs table, committed: the ``chain`` of its
            row (:mod:`._codec.pieces`); None when it is not known to be there (inline,
            not yet committed, or a row written before pieces existed).
        whole_size: The size of the whole value its chain rests on.
        appended: Bytes of the pieces from that whole value to this one.
    """

    __slots__ = ("appended", "blob", "chain", "type", "value", "version", "whole_size")

    def __init__(
        self,
        version: Any,
        value: Any,
        type_: str,
        blob: bytes,
        chain: str | None = None,
        whole_size: int = 0,
        appended: int = 0,
    ) -> None:
        self.version = version
        self.value = value
        self.type = type_
        self.blob = blob
        self.chain = chain
        self.whole_size = whole_size
        self.appended = appended


class ValueCache:
    """Serialised channel values by ``(thread_id, checkpoint_ns, channel)``, the latest
    version stored or read of each, valid for one version and one object (see the
    module docstring).

    Args:
        max_bytes: Most bytes of serialised values kept; 0 keeps none.
    """

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        _CACHES.add(self)

    def get(self, key: Key, version: Any, value: Any) -> tuple[str, bytes] | None:
        """``(type, bytes)`` of ``value`` at ``version`` if this cache serialised it, else
        None."""
        entry = self._entries.get(key)
        if entry is not None and entry.value is value and entry.version == version:
            return entry.type, entry.blob
        return None

    def in_blobs(self, key: Key, version: Any) -> bool:
        """Whether the value of ``key`` at ``version`` is known to be in the blobs table
        (committed): a checkpoint that keeps it unchanged references it by version,
        without serialising it again."""
        entry = self._entries.get(key)
        return entry is not None and entry.chain is not None and entry.version == version

    def base(self, key: Key) -> Entry | None:
        """The latest value of ``key`` known to be in the blobs table (committed), which
        a new version may be stored as a piece of; None if there is none."""
        entry = self._entries.get(key)
        return entry if entry is not None and entry.chain is not None else None

    def keep(self, key: Key, entry: Entry) -> None:
        """Remember ``entry`` as the latest value of ``key`` (unless too small or too
        large to be worth it)."""
        if not MIN_BYTES <= len(entry.blob) <= self.max_bytes // 4:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old.blob)
            self._entries[key] = entry
            self._bytes += len(entry.blob)
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped.blob)

    def committed(self, key: Key, entry: Entry, chain: str) -> None:
        """Record that ``entry`` (kept by :meth:`keep` before its put ran) is now in the
        blobs table, in ``chain``: called after the put committed."""
        if self._entries.get(key) is entry:
            entry.chain = chain

    def forget(self, thread_id: str) -> None:
        """Forget the values of ``thread_id`` (its rows were deleted or pruned: none may
        be extended any more)."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == thread_id]:
                self._bytes -= len(self._entries.pop(key).blob)

    def clear(self) -> None:
        """Forget everything (the saver closed)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0


#: Every :class:`ValueCache` of the process, for :func:`_after_fork_in_child`.
_CACHES: weakref.WeakSet[ValueCache] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: another thread of the parent may have been
    in :meth:`ValueCache.keep` (holding the lock, its entries and byte count half
    updated) at the moment of the fork. Each cache starts again empty, with a new lock:
    what it held is only serialised again at the next put."""
    for cache in list(_CACHES):
        cache._lock = threading.Lock()
        cache._entries = OrderedDict()
        cache._bytes = 0


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)
