"""``ix_lgsa_store_items_namespace_updated`` (``namespace, updated_at``): one namespace's
items newest first, as an index range.

A store search under one namespace reads it newest first. The primary key (``namespace,
key``) gives the namespace's range in key order, which the database sorted; the
``updated_at`` index gives the order across every namespace, walked until the page is
full of the namespace's items. This index gives both for one namespace: a filtered
search of one namespace reads its entries newest first and stops at its page. A put
writes one index entry more, next to the namespace's others.

The upgrade builds the index: O(N), and on PostgreSQL writes wait for it
(``CREATE INDEX``).

Revision ID: 0012_store_namespace_index
Revises: 0011_store_vector_column
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0012_store_namespace_index"
down_revision: str | None = "0011_store_vector_column"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_store_items"
_INDEX = "ix_lgsa_store_items_namespace_updated"
_COLUMNS = ["namespace", "updated_at"]


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _indexes() -> set[str] | None:
    """The table's index names; None offline (every step is emitted)."""
    if context.is_offline_mode():
        return None
    found = sa.inspect(op.get_bind()).get_indexes(_TABLE, schema=_schema())
    return {str(i["name"]) for i in found}


def upgrade() -> None:
    # Re-runnable: DDL commits on its own on MySQL/MariaDB, so a failed run may have
    # created the index already.
    have = _indexes()
    if have is None or _INDEX not in have:
        op.create_index(_INDEX, _TABLE, _COLUMNS, schema=_schema())


def downgrade() -> None:
    have = _indexes()
    if have is None or _INDEX in have:
        op.drop_index(_INDEX, _TABLE, schema=_schema())
