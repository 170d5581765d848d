"""Sizes of the store's writes: each item value checked against the store's cap before
anything is written, and multi-row statements kept under what a server takes in one
packet (:func:`._items.put_rows`, in runs cut by
:func:`langgraph.checkpoint.sqlalchemy._codec.batching.by_bytes`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import StoreRequestError
from langgraph.store.sqlalchemy import namespaces
from sqlalchemy import Connection

__all__ = ["BATCH_BYTES", "MAX_VALUE_BYTES", "value_sizes"]

#: Largest item value, in bytes of its JSON text, on every dialect; on MySQL/MariaDB
#: also what the server takes in one statement, escaped (``max_allowed_packet``, read
#: once, as the saver does: a statement larger is refused and its connection dropped).
MAX_VALUE_BYTES = 64 * 1024 * 1024
#: Bytes of values (and embeddings) sent in one multi-row INSERT: rows are split into
#: statements of at most this much (a larger value goes alone).
BATCH_BYTES = 4 * 1024 * 1024


def value_sizes(
    conn: Connection, qb: QueryBuilder, rows: Sequence[Any]
) -> tuple[list[int], list[str | None], int]:
    """The size of each row's value, in bytes as the statement carries it
    (:meth:`.QueryBuilder.sent_size` where the server limits a statement, else its JSON
    text), its JSON text (the row's own, made when the value was checked, else
    ``json.dumps`` of it; None for a delete), and the bytes a multi-row statement may
    carry; each value is checked against the caps before anything is written.

    Raises:
        StoreRequestError: A value of more than :data:`MAX_VALUE_BYTES` of JSON, or
            larger than a MySQL/MariaDB server takes in one statement
            (``max_allowed_packet``).
    """
    limit = qb.text_limit(conn)
    sizes: list[int] = []
    texts: list[str | None] = []
    dumps = json.dumps  # with its defaults: what SQLAlchemy's JSON types write
    for row in rows:
        size = 0
        text = row.text
        if row.value is not None:
            if text is None:
                text = dumps(row.value)
            size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
            if size > MAX_VALUE_BYTES:
                raise _too_large(row, f"{size:,} bytes of JSON", MAX_VALUE_BYTES, None)
            if limit is not None:
                size = qb.sent_size(text)
                if size > limit:
                    raise _too_large(row, f"{size:,} bytes in a statement", limit, limit)
        sizes.append(size)
        texts.append(text)
    return sizes, texts, BATCH_BYTES if limit is None else min(BATCH_BYTES, limit)


def _too_large(row: Any, size: str, cap: int, server: int | None) -> StoreRequestError:
    why = (
        "the store's cap on every database"
        if server is None
        else "this MySQL/MariaDB server's max_allowed_packet less 64 KiB, JSON escaped "
        "as the statement carries it: raise max_allowed_packet in the server's config "
        f"to store more, up to the store's cap of {MAX_VALUE_BYTES:,} bytes of JSON"
    )
    return StoreRequestError(
        f"the value of item {row.key[:40]!r} in {namespaces.decode(row.namespace)[:3]} is "
        f"{size}; the store takes at most {cap:,} ({why}). Keep large content elsewhere "
        "(a file or object store) with a reference in the item, or split it into several "
        "items. Nothing was written."
    )
