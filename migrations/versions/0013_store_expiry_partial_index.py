"""``ix_lgsa_store_items_expires_at`` holds the items that expire, not every item: a
partial index (``WHERE expires_at IS NOT NULL``) on SQLite and PostgreSQL.

The index serves the TTL sweep and the count of expired items, both ``expires_at <=
now``, which no item without a TTL matches; both databases use a partial index for such
a query (a comparison on the column implies it is not NULL). The full index wrote an
entry for every item, most of them NULL: on SQLite, whose index entries carry the
primary key (``NULL, namespace, key``), a batch of puts across namespaces wrote them at
as many places as the primary key's own rows (a batch of 500 puts over 20 namespaces of
a 100,000-item store: 300 pages written to the WAL before, 234 after). MySQL/MariaDB
have no partial index: there the index stays as it is.

The upgrade rebuilds the index (O(items with a TTL)) in the migration's transaction;
the downgrade builds the full one again.

Revision ID: 0013_store_expiry_partial_index
Revises: 0012_store_namespace_index
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_store_expiry_partial_index"
down_revision: str | None = "0012_store_namespace_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_store_items"
_INDEX = "ix_lgsa_store_items_expires_at"
_PARTIAL = ("sqlite", "postgresql")


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _rebuild(partial: bool) -> None:
    dialect = op.get_context().dialect.name
    if dialect not in _PARTIAL:
        return
    where = sa.text("expires_at IS NOT NULL") if partial else None
    op.drop_index(_INDEX, _TABLE, schema=_schema())
    op.create_index(_INDEX, _TABLE, ["expires_at"], schema=_schema(), **{f"{dialect}_where": where})


def upgrade() -> None:
    _rebuild(partial=True)


def downgrade() -> None:
    _rebuild(partial=False)
