"""``ix_lgsa_checkpoints_thread`` (``thread_id, checkpoint_id, checkpoint_ns``): one
thread listed newest first across its namespaces.

``list({"configurable": {"thread_id": t}})`` without a namespace lists the thread's
checkpoints of every namespace by ``checkpoint_id`` descending. The primary key
(``thread_id, checkpoint_ns, checkpoint_id``) orders them by namespace first, so the
database either sorted the whole thread or, on PostgreSQL without statistics, walked
``ix_lgsa_checkpoints_checkpoint_id`` backwards across every newer thread until it had
its page: 587 buffers at 100,000 checkpoints against 8 at 10,000 (``EXPLAIN (ANALYZE,
BUFFERS)``, ``limit=10``). This index gives that order for one thread, whatever the
statistics. A put writes one entry more, next to the thread's others (as in the primary
key); deleting a thread removes a contiguous range of it.

The upgrade builds the index: O(N), and on PostgreSQL writes wait for it
(``CREATE INDEX``).

Revision ID: 0010_thread_index
Revises: 0009_store
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0010_thread_index"
down_revision: str | None = "0009_store"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoints"
_INDEX = "ix_lgsa_checkpoints_thread"
_COLUMNS = ["thread_id", "checkpoint_id", "checkpoint_ns"]


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
