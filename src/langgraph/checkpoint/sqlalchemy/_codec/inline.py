"""Small channel values stored in the checkpoint row itself.

A checkpoint's channel values live in one of two places: small ones (at most
:data:`INLINE_VALUE_LIMIT` bytes once serialised, :data:`INLINE_BUDGET` in all) in the
``inline_values`` column of its own row, the others in the blobs table under their
``(channel, version)``. A put whose values are all small is then one row, and a read of
it needs no blob lookup; a large value that does not change (a document, a 1 MB channel)
is still stored once and referenced by version.

The place of a value is decided by the size of its serialised bytes, the same each time
an unchanged value is serialised again, so an unchanged large value is always found in
the blobs table. An unchanged small value is copied into every checkpoint's row (as the
official PostgresSaver copies primitive values); one that no longer fits the budget is
written to the blobs table, first-write-wins.

The column holds a msgpack array ``[1, [[channel, type, bytes], ...]]``: the values
exactly as ``serde.dumps_typed`` returned them (encrypted by an ``EncryptedSerializer``),
in a container that holds only strings and bytes, so reading it never runs code.
"""

from __future__ import annotations

from collections.abc import Sequence

import ormsgpack

#: Largest serialised channel value stored in the checkpoint row, in bytes.
INLINE_VALUE_LIMIT = 16 * 1024
#: Most bytes of channel values stored in one checkpoint row.
INLINE_BUDGET = 64 * 1024

_FORMAT = 1

InlineValue = tuple[str, str, bytes | None]
"""``(channel, type, serialised bytes)`` as ``serde.dumps_typed`` returned them."""


def pack(values: Sequence[InlineValue]) -> bytes | None:
    """The ``inline_values`` column for these values (None for none)."""
    if not values:
        return None
    return ormsgpack.packb([_FORMAT, [list(v) for v in values]])


def unpack(data: bytes | None) -> dict[str, tuple[str, bytes | None]]:
    """``{channel: (type, bytes)}`` of an ``inline_values`` column.

    Raises:
        ValueError: The column is not in the format this module writes (a forged or
            damaged row).
    """
    if data is None:
        return {}
    if not isinstance(data, (bytes, bytearray, memoryview)):
        # SQLite stores any type in any column: a forged row may hold text or a number.
        raise ValueError(f"inline_values is {type(data).__name__}, not bytes")
    try:
        decoded = ormsgpack.unpackb(bytes(data))
    except (ormsgpack.MsgpackDecodeError, RecursionError, TypeError, ValueError) as e:
        raise ValueError(f"inline_values is not msgpack: {type(e).__name__}: {e}") from None
    if not (isinstance(decoded, list) and len(decoded) == 2 and decoded[0] == _FORMAT):
        raise ValueError("inline_values is not format 1: [1, [[channel, type, bytes], ...]]")
    out: dict[str, tuple[str, bytes | None]] = {}
    for item in decoded[1] if isinstance(decoded[1], list) else [None]:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and isinstance(item[1], str)
            and (item[2] is None or isinstance(item[2], bytes))
        ):
            raise ValueError("inline_values holds an entry that is not [channel, type, bytes]")
        out[item[0]] = (item[1], item[2])
    return out
