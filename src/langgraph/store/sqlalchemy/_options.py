"""Options of a store checked at construction: the TTLs, ``omit_expired`` and the
``indexed_fields`` whose expression indexes :meth:`.SQLAlchemyStore.setup` creates."""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.store.base import TTLConfig

from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.dialects._json_filters import check_indexed_field
from langgraph.checkpoint.sqlalchemy.errors import StoreRequestError
from langgraph.store.sqlalchemy import _items
from langgraph.store.sqlalchemy.tables import items
from sqlalchemy import Connection

__all__ = ["check_indexed_fields", "check_omit_expired", "create_field_indexes", "ttl_minutes"]


def ttl_minutes(ttl: object) -> float | None:
    """A put's TTL in minutes: None or infinity (never expires), else a number from 0
    (exclusive) to :data:`._items.MAX_TTL_MINUTES`.

    Raises:
        StoreRequestError: Any other TTL (NaN, 0 or less, above the maximum, not a number).
    """
    if ttl is None or ttl == float("inf"):
        return None
    if (
        not isinstance(ttl, (int, float))
        or isinstance(ttl, bool)
        or not 0 < ttl <= _items.MAX_TTL_MINUTES
    ):
        raise StoreRequestError(
            f"ttl must be a number of minutes above 0 and at most "
            f"{_items.MAX_TTL_MINUTES:,} (about 7,600 years), None or math.inf (never "
            f"expires), not {ttl!r}. Nothing was written."
        )
    return float(ttl)


def check_omit_expired(ttl: TTLConfig | None) -> None:
    """Accept ``omit_expired`` as a bool: this store never reads an expired item, so both
    values read alike (docs/store.md, "TTL and the sweeper").

    Raises:
        ValueError: Not a bool.
    """
    omit = (ttl or {}).get("omit_expired")
    if omit is not None and not isinstance(omit, bool):
        raise ValueError(f"ttl['omit_expired'] must be True or False, not {omit!r}")


def check_indexed_fields(fields: Iterable[str] | None) -> frozenset[str]:
    """The ``indexed_fields`` option checked: top-level field names, identifiers.

    Raises:
        ValueError: A string given for the list, or a name that is not an identifier.
    """
    if fields is None:
        return frozenset()
    if isinstance(fields, (str, bytes)) or not isinstance(fields, Iterable):
        raise ValueError(f"indexed_fields is a list of field names, not {fields!r}")
    return frozenset(check_indexed_field(f) for f in fields)


def create_field_indexes(conn: Connection, qb: QueryBuilder) -> None:
    """Create the expression indexes of the query builder's indexed fields if missing."""
    for field in sorted(qb.indexed_fields):
        qb.create_field_indexes(conn, items, field)
