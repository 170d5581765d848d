"""``ix_lgsa_store_items_namespace_updated`` holds ``expires_at`` too: ``(namespace,
updated_at, expires_at)``.

``list_namespaces`` reads the distinct namespaces of a prefix that hold an item not
expired: with the expiry in this index it reads the index alone. Without it, on SQLite's
rowid table (revision 0014) each index entry read its row for the expiry, and without
statistics (SQLite has none until ``ANALYZE``) the read grew with the items: 100
namespaces took 2.1 ms at 10,000 items and 3.8 ms at 100,000, against 0.85 ms at both
with the expiry in the index. A filtered search of one namespace also checks the expiry
in the index before it reads a row. An entry grows by the expiry (one byte when NULL on
SQLite; eight on PostgreSQL, MySQL and MariaDB).

The upgrade builds the index again (O(N); on PostgreSQL writes wait for it): in the
migration's transaction on SQLite and PostgreSQL; on MySQL/MariaDB, where DDL commits on
its own, a run interrupted between the drop and the create builds it on the next run.
Its downgrade builds ``(namespace, updated_at)`` again.

Revision ID: 0015_store_namespace_expiry
Revises: 0014_store_items_rowid
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0015_store_namespace_expiry"
down_revision: str | None = "0014_store_items_rowid"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_store_items"
_INDEX = "ix_lgsa_store_items_namespace_updated"


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _columns() -> list[str] | None:
    """The index's columns now; [] when it is missing, None offline (every step is
    emitted)."""
    if context.is_offline_mode():
        return None
    for index in sa.inspect(op.get_bind()).get_indexes(_TABLE, schema=_schema()):
        if index["name"] == _INDEX:
            return [str(c) for c in index["column_names"]]
    return []


def _rebuild(columns: list[str]) -> None:
    have = _columns()
    if have == columns:
        return  # re-run after MySQL/MariaDB committed this step
    if have != []:
        op.drop_index(_INDEX, _TABLE, schema=_schema())
    op.create_index(_INDEX, _TABLE, columns, schema=_schema())


def upgrade() -> None:
    _rebuild(["namespace", "updated_at", "expires_at"])


def downgrade() -> None:
    _rebuild(["namespace", "updated_at"])
