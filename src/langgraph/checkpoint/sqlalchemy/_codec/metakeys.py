"""The keys and values of the metadata index, in pure Python: which keys are indexed, the
index value of a metadata value, the index rows of a checkpoint, a filter's operands.

``list(None, filter={"user_id": "u1"})`` scanned every checkpoint's metadata document
(``json_each`` per row on SQLite, ``JSON_EXTRACT`` on MySQL/MariaDB): seconds at ten
million checkpoints. For the keys that matter, ``put`` now also writes one row of
:data:`.schema.metadata_index` per key present, ``(key, index_value, checkpoint key)``,
and a filter on such a key reads the checkpoints whose row matches (an index range)
before the exact JSON comparison rechecks them. PostgreSQL needs none of this: its GIN
index on the JSONB column serves every key through containment
(:meth:`.QueryBuilder.metadata_index_filter`).

Keys served without this table, by the checkpoints table's own columns: ``run_id``
(indexed), ``source`` and ``step`` (in the entries of
``ix_lgsa_checkpoints_checkpoint_id``, walked newest first; PostgreSQL also has an index
``(step, source)``, migration 0008). Keys indexed by default:
:data:`DEFAULT_KEYS` (what the LangGraph server and applications filter threads by),
always. The saver's ``metadata_index_keys`` option names more; a key is used for filters once
:data:`.schema.metadata_keys` lists it, that is once every stored checkpoint has its row
(migration 0006 for the defaults, :meth:`.SQLAlchemySaver.reindex_metadata` for others).
Filters on other keys still work, by a scan.

The SQL (the keys a database lists as complete, the backfill) is :mod:`._ops.metaindex`;
the dialects read filter operands from here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.canonical import json_text
from langgraph.checkpoint.sqlalchemy.schema import (
    INDEX_KEY_MAX_LENGTH,
    INDEX_VALUE_MAX_LENGTH,
    utf8_encodable,
)

__all__ = [
    "COLUMN_KEYS",
    "DEFAULT_KEYS",
    "checked_keys",
    "filter_value",
    "index_rows",
    "index_value",
    "metadata_json_key",
]

#: Metadata keys indexed by default (:data:`.schema.metadata_index`): LangGraph's own
#: ``thread_id``, and what the LangGraph server and applications look threads up by.
DEFAULT_KEYS: tuple[str, ...] = ("thread_id", "user_id", "assistant_id", "graph_id")
#: Keys with columns of their own in the checkpoints table; never in the index table.
COLUMN_KEYS: frozenset[str] = frozenset({"source", "step", "run_id"})


def checked_keys(keys: Collection[str] | None) -> tuple[str, ...]:
    """The saver's ``metadata_index_keys`` option checked: the keys to index besides
    :data:`DEFAULT_KEYS`, which are always indexed (a writer that left one out would
    hide its checkpoints from every other process's filters). Returns the union, sorted,
    without :data:`COLUMN_KEYS`.

    Raises:
        TypeError: ``keys`` is a bare string or holds a non-string.
        ValueError: A key is empty, holds a NUL or is longer than
            :data:`.schema.INDEX_KEY_MAX_LENGTH` characters.
    """
    if keys is None:
        return DEFAULT_KEYS
    if isinstance(keys, (str, bytes)):
        raise TypeError("metadata_index_keys must be a collection of keys, not a string")
    out = set(DEFAULT_KEYS)
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"metadata_index_keys holds {type(key).__name__}, not a key")
        if not key or "\x00" in key or len(key) > INDEX_KEY_MAX_LENGTH:
            raise ValueError(
                f"metadata_index_keys: {key!r} cannot be indexed: keys are 1 to "
                f"{INDEX_KEY_MAX_LENGTH} characters without NUL"
            )
        if key not in COLUMN_KEYS:
            out.add(key)
    return tuple(sorted(out))


def index_value(value: Any) -> str:
    """The ``value`` column of a metadata value: equal JSON values (as
    :meth:`.QueryBuilder.metadata_equals` compares them) give equal index values.

    Strings keep their text, numbers become their float (``1`` and ``1.0`` meet; two
    integers beyond 2**53 may share one: a superset, rechecked), booleans and null a
    word each, and every list or dict one common value (filters on them are rechecked
    among all such rows). Longer than :data:`.schema.INDEX_VALUE_MAX_LENGTH` characters
    (or not UTF-8 encodable): ``"h:"`` and the SHA-256 of the text.

    Args:
        value: A JSON value as stored (NUL already removed from strings).

    Returns:
        Text of at most :data:`.schema.INDEX_VALUE_MAX_LENGTH` characters.
    """
    if isinstance(value, str):
        text = "s:" + value
    elif isinstance(value, bool):
        text = "b:true" if value else "b:false"
    elif value is None:
        text = "z:null"
    elif isinstance(value, (int, float)):
        try:
            text = "n:" + repr(float(value) + 0.0)  # + 0.0: -0.0 is 0, as in JSON
        except OverflowError:  # an integer beyond a double: one bucket for all of them
            text = "n:big"
    else:
        text = "c:"
    if len(text) > INDEX_VALUE_MAX_LENGTH or not utf8_encodable(text):
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        text = "h:" + digest
    return text


def filter_value(text: str) -> tuple[str, ...]:
    """The index values of the rows a filter value given as its canonical JSON ``text``
    (as :meth:`.QueryBuilder.check_filter` returns it: the stored form, NUL removed)
    may match: its :func:`index_value`, and for zero also ``n:-0.0``, the value of
    ``-0.0`` in rows written before :func:`index_value` made it ``n:0.0``."""
    value = index_value(json.loads(text))
    return (value, "n:-0.0") if value == "n:0.0" else (value,)


def index_rows(row: Mapping[str, Any], keys: Iterable[str]) -> list[dict[str, Any]]:
    """The :data:`.schema.metadata_index` rows of a checkpoints-table row ``row`` (with
    ``thread_id``, ``checkpoint_ns``, ``checkpoint_id`` and its canonical ``metadata``
    dict): one per key of ``keys`` the metadata holds."""
    meta = row["metadata"]
    if not isinstance(meta, Mapping):
        return []
    return [
        {
            "key": key,
            "value": index_value(meta[key]),
            "checkpoint_id": row["checkpoint_id"],
            "thread_id": row["thread_id"],
            "checkpoint_ns": row["checkpoint_ns"],
        }
        for key in keys
        if key in meta
    ]


def metadata_json_key(key: str, text: str) -> str:
    """JSON text of the one-key object ``{key: value}`` (``text``: the value's canonical
    JSON), the containment operand of PostgreSQL's filter."""
    return "{" + json_text(key) + ":" + text + "}"
