"""The long-term memory store (``langgraph.store.sqlalchemy``): its tables, operations and
class. Import it from :mod:`langgraph.store.sqlalchemy`."""

from __future__ import annotations

from ._items import StoreStats
from .store import SQLAlchemyStore, StoredItem

__all__ = ["SQLAlchemyStore", "StoreStats", "StoredItem"]
