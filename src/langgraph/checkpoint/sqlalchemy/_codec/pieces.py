"""Channel values stored as pieces: what a new version appended to an earlier one.

A chat's ``messages`` list grows by a message or two a step, and every saver stores the
whole list again at each step: a thread's storage and each step's writes grow with its
length. ``serde.dumps_typed`` of a msgpack container (a list, a dict; or a string, a
byte string) is a header followed by a body: a list's header holds its length, its body
the bytes of its items in order. A list extended at its end encodes as a new header
followed by the old body and the new items' bytes. When the body of the bytes stored for
a channel's earlier version is, byte for byte, a prefix of the body of the new bytes
(same type, same kind of container), the blobs table stores only a *piece*: the new
header and the bytes after the old body, with a reference to the version it extends
(``base_version``). Anything else (a message removed or replaced, a value that shrank,
another type, an ``EncryptedSerializer``'s output, which never extends) is stored whole.

Nothing is assumed from the objects: only the bytes decide, so a node that mutated a
message in place gets its value stored whole. A read rebuilds exactly the bytes
``dumps_typed`` returned (:func:`assemble`: the newest piece's header, the whole value's
body, each piece's appended bytes, oldest first), and checks the length of each step
against the ``size`` the writer recorded.

Rows (columns of the blobs table): a whole value has no ``base_version``, its ``chain``
is its own version; a piece has the ``base_version`` it extends and the ``chain`` of
that base (the version of the whole value the pieces rest on), so that a read fetches a
value's pieces with one condition. ``size`` is the length of the value the row stands
for. Rows written before pieces existed have neither ``chain`` nor ``size``: they are
whole values, never extended (the next version of their channel is stored whole).

How long a chain grows (:func:`next_piece`): a piece is written while the bytes
appended since the chain's whole value stay within that whole value's size; past it,
the value is stored whole again and starts a new chain. The whole copies of a growing
value then double in size: their sum stays within twice its final size, the pieces sum
to what was appended, and a read fetches at most twice the bytes of the value.

No database here: the codec (:mod:`.rows`) decides what to store, the operations fetch
the rows and hand them to :func:`assemble`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "MAX_PIECES",
    "MIN_BASE",
    "PieceError",
    "StoredRow",
    "StoredValue",
    "assemble",
    "body_start",
    "collect",
    "extension",
    "missing_base",
    "next_piece",
    "value_of",
]

#: Smallest stored value a new version is stored as a piece of, in bytes: below it a
#: value is stored whole (a piece saves little and costs a row more to read).
MIN_BASE = 1024

#: Longest chain of pieces :func:`assemble` follows (a forged cycle stops here).
MAX_PIECES = 100_000

# Kinds of container a header opens (msgpack format families).
_ARRAY, _MAP, _STR, _BIN = 1, 2, 3, 4


def _header(data: bytes) -> tuple[int, int] | None:
    """``(kind, length)`` of the msgpack container, string or byte-string header at the
    start of ``data``; None for any other value (or too few bytes)."""
    if not data:
        return None
    found = _HEADS[data[0]]
    return found if found is not None and len(data) >= found[1] else None


#: Headers with a length field: first byte to ``(kind, header length)``.
_LONG = {
    0xDC: (_ARRAY, 3),
    0xDD: (_ARRAY, 5),
    0xDE: (_MAP, 3),
    0xDF: (_MAP, 5),
    0xD9: (_STR, 2),
    0xDA: (_STR, 3),
    0xDB: (_STR, 5),
    0xC4: (_BIN, 2),
    0xC5: (_BIN, 3),
    0xC6: (_BIN, 5),
}
#: ``(kind, header length)`` by first byte (None: not a container msgpack extends): the
#: fixed-size headers (fixarray, fixmap, fixstr) and :data:`_LONG`.
_HEADS: tuple[tuple[int, int] | None, ...] = tuple(
    (_ARRAY, 1)
    if 0x90 <= b <= 0x9F
    else (_MAP, 1)
    if 0x80 <= b <= 0x8F
    else (_STR, 1)
    if 0xA0 <= b <= 0xBF
    else _LONG.get(b)
    for b in range(256)
)


def body_start(data: bytes) -> int | None:
    """Where the body of ``data`` starts (the length of its header), or None when
    ``data`` is not a container, string or byte string msgpack can extend."""
    found = _header(data)
    return None if found is None else found[1]


def extension(old: bytes, new: bytes) -> bytes | None:
    """The piece that stores ``new`` as an extension of ``old``: ``new``'s header and
    the bytes of ``new`` after ``old``'s body. None when ``new`` does not extend ``old``
    (another kind of value, or ``old``'s body is not a prefix of ``new``'s, checked byte
    for byte). Both are bytes ``serde.dumps_typed`` returned with one type."""
    h_old, h_new = _header(old), _header(new)
    if h_old is None or h_new is None or h_old[0] != h_new[0]:
        return None
    old_body = len(old) - h_old[1]
    start = h_new[1]
    if len(new) - start < old_body or not new.startswith(memoryview(old)[h_old[1] :], start):
        return None
    return new[:start] + new[start + old_body :]


class StoredRow(NamedTuple):
    """A row of the blobs table as :func:`assemble` reads it.

    Attributes:
        type: The serializer's type of the value.
        blob: The row's bytes: a whole value, or a piece.
        base_version: The version a piece extends; None for a whole value.
        size: The length of the value the row stands for (None on rows written before
            pieces existed).
    """

    type: str
    blob: bytes | None
    base_version: str | None
    size: int | None


class PieceError(ValueError):
    """A stored value cannot be rebuilt: a piece whose base is missing, of another type,
    or of a length that disagrees with what the writer recorded (a damaged or forged
    row). The message says why; the caller names the checkpoint.

    Attributes:
        missing: The version of a base that was not among the rows, if that is why.
    """

    def __init__(self, why: str, missing: str | None = None) -> None:
        super().__init__(why)
        self.missing = missing


class StoredValue(NamedTuple):
    """A value read from the blobs table, rebuilt (:func:`rebuilt`).

    Attributes:
        type: The serializer's type ("" when ``error`` is set).
        blob: The bytes ``serde.dumps_typed`` returned.
        chain: The ``chain`` of its row: where a new version may extend it; None for a
            row written before pieces existed (never extended) or a damaged one.
        whole_size: The size of the whole value its chain rests on.
        appended: Bytes of the pieces from that whole value to this one.
        error: Why it cannot be rebuilt (a damaged or forged row), else None.
        missing: The version of a base that was not among the rows read, if that is
            why (the caller may read it and rebuild again).
    """

    type: str
    blob: bytes | None
    chain: str | None = None
    whole_size: int = 0
    appended: int = 0
    error: str | None = None
    missing: str | None = None


Owner = tuple[str, str, str]
"""``(thread_id, checkpoint_ns, channel)`` keys as read."""


def assemble(rows: Mapping[str, StoredRow], version: str) -> tuple[str, bytes, int, int]:
    """The value stored at ``version``, rebuilt from its pieces.

    Args:
        rows: The rows of one channel of one thread and namespace, by version: the
            row of ``version`` and every row its pieces rest on (more do no harm).
        version: The version to rebuild.

    Returns:
        ``(type, bytes, whole size, appended)``: the type and the bytes
        ``serde.dumps_typed`` returned for the value, the size of the whole value its
        pieces rest on and the bytes of those pieces (0 for a whole value).

    Raises:
        PieceError: A base is not in ``rows``, or the rows disagree (see the class).
        KeyError: ``version`` itself is not in ``rows``.
    """
    row = rows[version]
    if row.base_version is None:
        blob = row.blob if row.blob is not None else b""
        # A forged row may hold anything (SQLite stores any type in any column): the
        # value is handed on as it is, and its decoding says what is wrong with it.
        return (
            row.type,
            blob,
            len(blob) if isinstance(blob, (bytes, bytearray, memoryview)) else 0,
            0,
        )
    path = [row]  # newest first
    while row.base_version is not None:
        base = rows.get(row.base_version)
        if base is None:
            raise PieceError(missing_base(row.base_version), row.base_version)
        if len(path) > MAX_PIECES:
            raise PieceError(f"its pieces form a chain longer than {MAX_PIECES} (a cycle?)")
        path.append(base)
        row = base
    whole = row.blob or b""
    start = _header(whole)
    if start is None:
        raise PieceError("the value its pieces extend is not a container")
    kind = start[0]
    parts: list[bytes | memoryview] = [b"", memoryview(whole)[start[1] :]]
    length = len(whole) - start[1]
    appended = 0
    for piece in reversed(path[:-1]):  # oldest piece first
        blob = piece.blob or b""
        head = _header(blob)
        if head is None or head[0] != kind or piece.type != row.type:
            raise PieceError("a piece does not extend its base (another type or kind)")
        skip = head[1]
        parts.append(memoryview(blob)[skip:])
        length += len(blob) - skip
        appended += len(blob)
        if piece.size is not None and piece.size != skip + length:
            raise PieceError(
                f"a piece rebuilds {skip + length} bytes where its writer stored {piece.size}"
            )
    newest = path[0].blob or b""
    head = _header(newest)
    assert head is not None  # checked in the loop
    parts[0] = newest[: head[1]]  # the newest header first: the bytes copied once
    return row.type, b"".join(parts), len(whole), appended


def collect(
    found: Iterable[Sequence[Any]],
    rows: dict[Owner, dict[str, StoredRow]],
    chains: dict[tuple[str, str, str, str], str | None],
) -> None:
    """File the rows of a value read into ``rows`` and ``chains``.

    Args:
        found: The rows read, ``(thread_id, checkpoint_ns, channel, version, type,
            blob, base_version, chain, size)``: the rows of the keys asked for, with
            their ``chain``, and the rows of their chains, whose ``chain`` may be None
            (it is their key's).
        rows: Rows by ``(thread_id, checkpoint_ns, channel)`` and version (filled).
        chains: The ``chain`` column by ``(thread_id, checkpoint_ns, channel,
            version)``, for the rows that returned it (filled).
    """
    for t, ns, ch, version, type_, blob, base, chain, size in found:
        owner = (t, ns, ch)
        group = rows.get(owner)
        if group is None:
            group = rows[owner] = {}
        # (tuple.__new__: the row made in C, not through the named tuple's __new__)
        group[version] = _new_row(StoredRow, (type_, blob, base, size))
        if chain is not None:
            chains[(t, ns, ch, version)] = chain


_new_row = tuple.__new__


def value_of(
    rows: dict[Owner, dict[str, StoredRow]],
    chains: dict[tuple[str, str, str, str], str | None],
    key: tuple[str, str, str, str],
) -> StoredValue:
    """The value of ``key`` rebuilt from ``rows`` (:func:`collect`), or its ``error``
    (and ``missing`` when a base was not among the rows)."""
    try:
        type_, data, whole, appended = assemble(rows[key[:3]], key[3])
    except PieceError as e:
        return StoredValue("", None, error=str(e), missing=e.missing)
    except (TypeError, ValueError, AttributeError) as e:  # a forged row's columns
        return StoredValue("", None, error=f"its rows are not what the saver writes ({e})")
    return StoredValue(type_, data, chains.get(key), whole, appended)


def missing_base(version: str) -> str:
    """The reason given for a piece whose base row is not stored."""
    return f"it is stored as a piece of version {version} of the channel, which is missing"


def next_piece(
    base_bytes: bytes, whole_size: int, appended: int, new: bytes
) -> tuple[bytes, int] | None:
    """The piece to store ``new`` as, after the stored ``base_bytes`` of the same
    channel, and the bytes appended to its chain with it; or None to store ``new``
    whole.

    Args:
        base_bytes: The bytes of the version ``new`` would extend (as stored).
        whole_size: The size of the whole value the base's chain rests on.
        appended: Bytes of the pieces from that whole value to the base.
        new: The new bytes (same type as the base; the caller checks).

    Returns:
        ``(piece, appended + len(piece))``, or None: ``new`` does not extend the base,
        the base is smaller than :data:`MIN_BASE`, or the chain would carry more bytes
        than its whole value (see the module docstring).
    """
    if len(base_bytes) < MIN_BASE:
        return None
    piece = extension(base_bytes, new)
    if piece is None or appended + len(piece) > whole_size:
        return None
    return piece, appended + len(piece)
