"""``step`` and ``source`` move into ``ix_lgsa_checkpoints_checkpoint_id``; the ``(step,
source)`` index stays on PostgreSQL only.

On SQLite and MySQL/MariaDB every checkpoint has an entry in ``(step, source)`` on a page
of its own step: deleting or pruning a thread of ten checkpoints reads and writes back ten
scattered pages of that index. At 1,000,000 checkpoints, where those pages come from the
disk, ``delete_thread`` grew from 0.95 to 2.07 ms and a prune of 100 threads from 289 to
587 ms on SQLite; on MariaDB a prune grew 2.02x from 10,000 to 300,000 checkpoints with
the index, 1.19x without. PostgreSQL's ``DELETE`` leaves index entries to VACUUM: it
keeps the index.

A filter on ``step`` or ``source`` then reads ``ix_lgsa_checkpoints_checkpoint_id``
newest first until it has its page. With both columns in that index the walk checks them
in the index entry and reads a checkpoint row only for a match (the 100 checkpoints of
``{"source": "loop", "step": 5}`` among 10,000: 21 ms, as with the ``(step, source)``
index; 24 ms with the walk reading every row). A rare value reads the whole index.

The upgrade rebuilds ``ix_lgsa_checkpoints_checkpoint_id``: O(N), and on PostgreSQL
writes wait for it (``CREATE INDEX``).

Revision ID: 0008_step_source_in_id_index
Revises: 0007_step_source_index
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0008_step_source_in_id_index"
down_revision: str | None = "0007_step_source_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoints"
_STEP = "ix_lgsa_checkpoints_step_source"
_ID = "ix_lgsa_checkpoints_checkpoint_id"
_ID_BEFORE = ["checkpoint_id", "thread_id", "checkpoint_ns"]
_ID_AFTER = [*_ID_BEFORE, "step", "source"]


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _indexes() -> dict[str, list[str]] | None:
    """The table's indexes and their columns; None offline (every step is emitted)."""
    if context.is_offline_mode():
        return None
    found = sa.inspect(op.get_bind()).get_indexes(_TABLE, schema=_schema())
    return {str(i["name"]): [str(c) for c in i["column_names"]] for i in found}


def _id_index(have: dict[str, list[str]] | None, columns: list[str]) -> None:
    # Re-runnable step by step: DDL commits on its own on MySQL/MariaDB.
    if have is not None and have.get(_ID) == columns:
        return
    if have is None or _ID in have:
        op.drop_index(_ID, _TABLE, schema=_schema())
    op.create_index(_ID, _TABLE, columns, schema=_schema())


def upgrade() -> None:
    have = _indexes()
    _id_index(have, _ID_AFTER)
    if op.get_context().dialect.name != "postgresql" and (have is None or _STEP in have):
        op.drop_index(_STEP, _TABLE, schema=_schema())


def downgrade() -> None:
    have = _indexes()
    if op.get_context().dialect.name != "postgresql" and (have is None or _STEP not in have):
        op.create_index(_STEP, _TABLE, ["step", "source"], schema=_schema())
    _id_index(have, _ID_BEFORE)
