"""SQLAlchemy Core tables of the long-term memory store, and how a namespace is stored.

Two tables, on the saver's :data:`~langgraph.checkpoint.sqlalchemy.schema.metadata` (one
Alembic history: revision ``0009_store`` creates them):

* ``lgsa_store_items``: one row per item, keyed by ``(namespace, key)``. ``value`` is the
  item's JSON document (JSONB on PostgreSQL), which search filters query in the database.
  Times are float seconds since the epoch (UTC), the same type on every dialect:
  ``created_at``, ``updated_at``, ``expires_at`` (NULL: never expires) and the item's
  ``ttl_minutes`` (NULL: no TTL), which a read that refreshes TTLs adds to its clock.
* ``lgsa_store_vectors``: the embeddings of an item's indexed fields, keyed by
  ``(namespace, key, field)``; ``embedding`` holds little-endian float32 values (the
  format of ``sqlite-vec``).

A namespace is stored as its labels joined by :data:`SEPARATOR` (``"\\x01"``), which sorts
below every character a label may hold: the text order of the column is Python's order
of the tuples (``("a", "b") < ("a", "b", "c") < ("a", "b-c")``), so ``list_namespaces``
pages in the database, and the namespaces under ``("a",)`` are one range of the primary
key (``"a\\x01"`` to ``"a\\x02"``). The key columns compare byte for byte on every
dialect: :class:`~langgraph.checkpoint.sqlalchemy.schema.KeyText` (VARBINARY on
MySQL/MariaDB), and the C collation on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.sqlalchemy.schema import (
    BINARY,
    JSON_DOCUMENT,
    MYSQL_TABLE_OPTIONS,
    KeyText,
    metadata,
)
from sqlalchemy import Column, Double, Index, PrimaryKeyConstraint, String, Table
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

__all__ = [
    "FIELD_MAX_LENGTH",
    "KEY_MAX_LENGTH",
    "NAMESPACE_MAX_LENGTH",
    "SEPARATOR",
    "OrderedText",
    "items",
    "vectors",
]

#: Joins the labels of a stored namespace; sorts below any character of a label.
SEPARATOR = "\x01"
#: Longest namespace, in characters, its labels joined by one separator each; and the
#: longest key. Both fit the primary key in InnoDB's 3,072 bytes (VARBINARY of UTF-8, 4
#: bytes a character) and PostgreSQL's B-tree entry (about 2,700 bytes).
NAMESPACE_MAX_LENGTH = 300
KEY_MAX_LENGTH = 300
#: Longest indexed field path of a vector (``"text"``, ``"sections[*].body.2"``).
FIELD_MAX_LENGTH = 150


class OrderedText(KeyText):
    """:class:`KeyText` that also orders byte for byte: the ``C`` collation on
    PostgreSQL (a database's default collation may order ``"a-b"`` after ``"a.b"``
    or ignore punctuation), VARBINARY on MySQL/MariaDB, BINARY on SQLite."""

    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(String(self.length, collation="C"))
        return super().load_dialect_impl(dialect)


items = Table(
    "lgsa_store_items",
    metadata,
    Column("namespace", OrderedText(NAMESPACE_MAX_LENGTH), nullable=False),
    Column("key", OrderedText(KEY_MAX_LENGTH), nullable=False),
    Column("value", JSON_DOCUMENT, nullable=False),
    Column("created_at", Double(), nullable=False),
    Column("updated_at", Double(), nullable=False),
    Column("expires_at", Double(), nullable=True),
    Column("ttl_minutes", Double(), nullable=True),
    PrimaryKeyConstraint("namespace", "key", name="pk_lgsa_store_items"),
    # Searches newest first walk this index and stop at their page; the TTL sweep finds
    # expired items by the other.
    Index("ix_lgsa_store_items_updated_at", "updated_at", "namespace", "key"),
    # One namespace newest first (a filtered search of it: an index range); migration
    # 0012.
    Index("ix_lgsa_store_items_namespace_updated", "namespace", "updated_at"),
    # SQLite: rows in the primary key's B-tree (as InnoDB's are): listing namespaces
    # reads their range and the expiry beside it, without a lookup a row.
    sqlite_with_rowid=False,
    **MYSQL_TABLE_OPTIONS,
)

# The TTL sweep's index holds the items that expire (``expires_at <= now`` implies it is
# not NULL): an item without a TTL writes no entry. MySQL/MariaDB have no partial index;
# there it holds every item. Migration 0013.
Index(
    "ix_lgsa_store_items_expires_at",
    items.c.expires_at,
    sqlite_where=items.c.expires_at.is_not(None),
    postgresql_where=items.c.expires_at.is_not(None),
)

vectors = Table(
    "lgsa_store_vectors",
    metadata,
    Column("namespace", OrderedText(NAMESPACE_MAX_LENGTH), nullable=False),
    Column("key", OrderedText(KEY_MAX_LENGTH), nullable=False),
    Column("field", OrderedText(FIELD_MAX_LENGTH), nullable=False),
    Column("embedding", BINARY, nullable=False),
    PrimaryKeyConstraint("namespace", "key", "field", name="pk_lgsa_store_vectors"),
    sqlite_with_rowid=False,
    **MYSQL_TABLE_OPTIONS,
)
