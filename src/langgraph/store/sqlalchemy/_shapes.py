"""The shapes the store's operations share: a ``batch()`` ready for the database (its
plans and the rows it writes), the condition of a live item, and items read back.

The reads (:mod:`._reads`, :mod:`._scan`) and the writes (:mod:`._items`) both use them,
and the store builds them (:mod:`._prepared`, :mod:`._loading`): here, so that neither
side of the store imports the other for a definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

from langgraph.store.base import Item, MatchCondition, SearchItem

from langgraph.checkpoint.sqlalchemy.dialects import AnnParams
from langgraph.checkpoint.sqlalchemy.errors import StoreDecodeError
from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy.filters import Filter
from langgraph.store.sqlalchemy.tables import items
from langgraph.store.sqlalchemy.vectors import Distance
from sqlalchemy import func

__all__ = [
    "NEVER",
    "PAGE",
    "Batch",
    "GetPlan",
    "ListPlan",
    "Native",
    "PrefixSizes",
    "PutRow",
    "SearchPlan",
    "StoreStats",
    "alive",
    "item_of",
    "search_item_of",
]

#: Rows read a round trip while a filter the database cannot decide alone, or a
#: vector search, goes through the candidates.
PAGE = 500


class PutRow(NamedTuple):
    """One item to write (``value`` None: delete it); a named tuple, built per put of
    a batch at a tenth of a frozen dataclass's cost.

    Attributes:
        namespace: Stored namespace text.
        key: The key.
        value: The canonical JSON value, or None to delete.
        expires_at: Seconds since the epoch, or None.
        ttl_minutes: The item's TTL, or None.
        vectors: ``(field, packed embedding)`` pairs that replace the item's vectors.
        created_at: For copies: the creation time to keep (else the write's clock).
        updated_at: For copies: the update time to keep.
        text: The value's JSON text as stored, made when the value was checked (None
            for a delete).
    """

    namespace: str
    key: str
    value: dict[str, Any] | None
    expires_at: float | None = None
    ttl_minutes: float | None = None
    vectors: Sequence[tuple[str, bytes]] = ()
    created_at: float | None = None
    updated_at: float | None = None
    text: str | None = None


class GetPlan(NamedTuple):
    """A ``GetOp``: namespace text, key, whether to refresh its TTL (a named tuple: made
    at every ``get``, where a frozen dataclass's ``__init__`` costs three
    ``object.__setattr__``)."""

    namespace: str
    key: str
    refresh: bool


@dataclass(frozen=True)
class Native:
    """The database's native vector column, which a store with an index config searches
    and fills (:meth:`.QueryBuilder.vector_index`).

    Attributes:
        index: The ANN index's name, or None (exact, in the database).
        dims: The index config's dimensions.
        distance: Its distance.
        fields: How many field paths it embeds (estimates the vector rows an item has).
        ann: Its ANN settings.
    """

    index: str | None
    dims: int
    distance: Distance
    fields: int
    ann: AnnParams


#: What a store knows of its prefixes' sizes: ``{prefix text: (many, time.monotonic())}``,
#: whether a prefix held many items when that was read (:func:`._scan.many_under`).
PrefixSizes = dict[str, tuple[bool, float]]


@dataclass(frozen=True)
class SearchPlan:
    """A ``SearchOp`` checked: prefix text, filter, paging, the query's embedding and the
    index config's distance; ``sizes``, the store's :data:`PrefixSizes` (a plan of its
    own without a store)."""

    prefix: str
    filter: Filter
    limit: int
    offset: int
    refresh: bool
    text: str | None = None
    query: Sequence[float] | None = None
    query_blob: bytes | None = None
    distance: Distance = "cosine"
    native: Native | None = None
    sizes: PrefixSizes = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class ListPlan:
    """A ``ListNamespacesOp`` checked: its conditions and paging."""

    conditions: tuple[MatchCondition, ...]
    max_depth: int | None
    limit: int
    offset: int


@dataclass
class Batch:
    """A ``batch()`` ready for the database: ``reads`` as ``(result index, plan)``."""

    now: float
    count: int = 0
    reads: list[tuple[int, GetPlan | SearchPlan | ListPlan]] = field(default_factory=list)
    puts: list[PutRow] = field(default_factory=list)
    native: bool = False

    @property
    def one_get(self) -> bool:
        """Whether the batch is one ``get`` (one statement: no transaction needed)."""
        return not self.puts and len(self.reads) == 1 and isinstance(self.reads[0][1], GetPlan)

    @property
    def one_native_search(self) -> bool:
        """Whether the batch is one vector search by the database's native column
        (its statements each stand alone: no transaction needed)."""
        if self.puts or len(self.reads) != 1:
            return False
        plan = self.reads[0][1]
        return (
            isinstance(plan, SearchPlan) and plan.native is not None and plan.query_blob is not None
        )


@dataclass(frozen=True)
class StoreStats:
    """What a store holds.

    Attributes:
        items: Items not expired.
        namespaces: Distinct namespaces of those items.
        vectors: Stored embeddings (one per embedded field of an item).
        expired: Expired items a sweep would delete.
    """

    items: int
    namespaces: int
    vectors: int
    expired: int


#: ``expires_at`` of an item that never expires, in conditions (:func:`alive`).
NEVER = 1e300


def alive(now: Any) -> Any:
    """Condition: the item has not expired at ``now`` (a value or bound parameter).

    Written ``COALESCE(expires_at, NEVER) > now``, which no index serves: with ``IS
    NULL OR >`` SQLite read the expiry index twice (``MULTI-INDEX OR``) for every search,
    instead of the namespace's range."""
    return func.coalesce(items.c.expires_at, NEVER) > now


def _value(row: Any) -> dict[str, Any]:
    value = row[2]
    if not isinstance(value, dict):
        cause = getattr(value, "error", None) or f"a JSON {type(value).__name__}, not an object"
        raise StoreDecodeError(namespaces.decode(row[0]), str(row[1]), cause)
    return value


def _times(row: Any) -> tuple[datetime, datetime]:
    """``created_at`` and ``updated_at`` of a row; a stored number that is no time (a
    forged 1e300, NaN, text) is :class:`StoreDecodeError`, never ``OverflowError``."""
    try:
        return (
            datetime.fromtimestamp(float(row[3]), tz=timezone.utc),
            datetime.fromtimestamp(float(row[4]), tz=timezone.utc),
        )
    except (OverflowError, OSError, ValueError, TypeError) as e:
        raise StoreDecodeError(
            namespaces.decode(row[0]),
            str(row[1]),
            f"created_at {row[3]!r} or updated_at {row[4]!r} is not a time ({e})",
        ) from None


def item_of(row: Any) -> Item:
    """The ``Item`` of a row ``(namespace, key, value, created_at, updated_at)``.

    Raises:
        StoreDecodeError: Its value is not a JSON object or a time is no time.
    """
    created, updated = _times(row)
    return Item(
        value=_value(row),
        key=str(row[1]),
        namespace=namespaces.decode(row[0]),
        created_at=created,
        updated_at=updated,
    )


def search_item_of(row: Any, score: float | None = None) -> SearchItem:
    """The ``SearchItem`` of a row, as :func:`item_of`, with its ``score``."""
    created, updated = _times(row)
    return SearchItem(
        namespace=namespaces.decode(row[0]),
        key=str(row[1]),
        value=_value(row),
        created_at=created,
        updated_at=updated,
        score=score,
    )
