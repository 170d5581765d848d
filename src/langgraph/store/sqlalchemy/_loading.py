"""Copies into the store: :class:`StoredItem`, an item with everything the store keeps of
it, and :func:`load_rows`, the rows that write such items as they are (for
:meth:`.SQLAlchemyStore.load_items`, which the CLI's ``store copy`` uses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import GetOp, InvalidNamespaceError, validate_op_namespace

from langgraph.checkpoint.sqlalchemy._codec.canonical import (
    MAX_DEPTH,
    canonical_json,
    canonical_text,
)
from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy._items import MAX_TTL_MINUTES
from langgraph.store.sqlalchemy._shapes import PutRow
from langgraph.store.sqlalchemy.vectors import IndexSpec, field_name, pack, texts_to_embed

__all__ = ["MAX_TTL_MINUTES", "StoredItem", "item_value", "load_rows", "seconds"]


def item_value(namespace: tuple[str, ...], key: str, value: object) -> tuple[dict[str, Any], str]:
    """An item's value checked and made canonical JSON (NUL characters removed), and the
    JSON text stored for it (``json.dumps`` of the canonical value, whichever path of
    :func:`~langgraph.checkpoint.sqlalchemy._codec.canonical.canonical_text` wrote it).

    Raises:
        TypeError: Not a dict, or holding something that is not JSON.
        ValueError: NaN or infinity, an integer beyond 64 bits, a lone surrogate, or
            dicts and lists nested more than 31 levels.
    """
    try:
        if type(value) is dict:  # canonical_text of a dict is a dict
            return canonical_text(value, depth=MAX_DEPTH)
        if isinstance(value, Mapping):
            checked, text = canonical_text(value, depth=MAX_DEPTH)
        else:  # refused below, after any error of its content
            checked, text = canonical_json(value, depth=MAX_DEPTH), ""
    except (TypeError, ValueError) as e:
        raise type(e)(
            f"the value of item {key!r} in {tuple(namespace)} cannot be stored: {e}. Store "
            "JSON values (str, int, float, bool, None, list, dict), e.g. a datetime as "
            "isoformat() text"
        ) from None
    if not isinstance(checked, dict):
        raise TypeError(
            f"the value of item {key!r} in {tuple(namespace)} is a "
            f"{type(value).__name__}; an item's value is a dict"
        )
    return checked, text


@dataclass(frozen=True)
class StoredItem:
    """An item with everything the store keeps of it, for copies
    (:meth:`SQLAlchemyStore.load_items`).

    Attributes:
        namespace: Its namespace.
        key: Its key.
        value: Its JSON value.
        created_at: Creation time (aware; naive is read as UTC).
        updated_at: Last update time.
        expires_at: Expiry time, or None.
        ttl_minutes: TTL refreshed on reads, or None.
        vectors: ``{field: embedding}`` to keep (computed anew when their size is not the
            index config's), ``{}`` for none (an item put with ``index=False``), or None
            to compute them with the store's index config.
    """

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    ttl_minutes: float | None = None
    vectors: dict[str, list[float]] | None = None


def seconds(when: datetime) -> float:
    """``when`` in seconds since the epoch (a naive time is read as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def load_rows(index: IndexSpec | None, chunk: Sequence[StoredItem]) -> list[PutRow]:
    """The rows that write ``chunk`` as it is (timestamps kept); vectors kept when given
    in the index's size, else computed with ``index`` (sync: the embedding model is
    called here).

    Raises:
        InvalidNamespaceError, TypeError, ValueError: A bad namespace, key or value.
    """
    rows: dict[tuple[str, str], PutRow] = {}
    to_embed: list[tuple[tuple[str, str], str, str]] = []
    kept: dict[tuple[str, str], list[tuple[str, bytes]]] = {}
    for item in chunk:
        ns = namespaces.encode(item.namespace)
        key = (ns, namespaces.check_key(item.key))
        if not item.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        validate_op_namespace(GetOp(tuple(item.namespace), item.key))
        value, text = item_value(item.namespace, item.key, item.value)
        if item.ttl_minutes is not None and not (
            isinstance(item.ttl_minutes, (int, float)) and 0 < item.ttl_minutes <= MAX_TTL_MINUTES
        ):
            raise ValueError(
                f"item {item.key!r} in {tuple(item.namespace)}: ttl_minutes must be a "
                f"number > 0 and at most {MAX_TTL_MINUTES:,}, or None, not {item.ttl_minutes!r}"
            )
        rows[key] = PutRow(
            ns,
            key[1],
            value,
            None if item.expires_at is None else seconds(item.expires_at),
            item.ttl_minutes,
            (),
            seconds(item.created_at),
            seconds(item.updated_at),
            text,
        )
        if index is None:
            continue
        dims = index.dims
        given = item.vectors
        if given is not None and not given:
            continue  # {}: stored without vectors (put with index=False): none computed
        if given and all(len(v) == dims for v in given.values()):
            kept[key] = [(field_name(f), pack(v, dims)) for f, v in given.items()]
        else:
            to_embed.extend((key, f, t) for f, t in texts_to_embed(index, value, None))
    if to_embed and index is not None:
        vectors = index.embeddings.embed_documents([t for _, _, t in to_embed])
        for (key, f, _), v in zip(to_embed, vectors, strict=False):
            kept.setdefault(key, []).append((field_name(f), pack(v, index.dims)))
    return [r._replace(vectors=kept[k]) if k in kept else r for k, r in rows.items()]
