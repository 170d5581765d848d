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

Bounded by bytes (:data:`MAX_BYTES`), least recently stored first out. Thread-safe.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Any

#: Most bytes of serialised values kept per saver.
MAX_BYTES = 32 * 1024 * 1024
#: Values smaller than this are serialised again rather than kept (cheaper than the
#: bookkeeping, and scalars are shared objects).
MIN_BYTES = 256

Key = tuple[str, str, str]
"""``(thread_id, checkpoint_ns, channel)``."""
_Entry = tuple[Any, Any, str, bytes]
"""``(version, value, type, bytes)``."""


class ValueCache:
    """Serialised channel values by ``(thread_id, checkpoint_ns, channel)``, valid for one
    version and one object (see the module docstring).

    Args:
        max_bytes: Most bytes of serialised values kept; 0 keeps none.
    """

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        _CACHES.add(self)

    def get(self, key: Key, version: Any, value: Any) -> tuple[str, bytes] | None:
        """``(type, bytes)`` of ``value`` at ``version`` if this cache serialised it, else
        None."""
        entry = self._entries.get(key)
        if entry is not None and entry[1] is value and entry[0] == version:
            return entry[2], entry[3]
        return None

    def keep(self, key: Key, version: Any, value: Any, type_: str, blob: bytes | None) -> None:
        """Remember the bytes of ``value`` at ``version`` (unless too small or too large
        to be worth it)."""
        if blob is None or not MIN_BYTES <= len(blob) <= self.max_bytes // 4:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old[3])
            self._entries[key] = (version, value, type_, blob)
            self._bytes += len(blob)
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped[3])

    def clear(self) -> None:
        """Forget everything (the saver closed, or a thread was deleted)."""
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
