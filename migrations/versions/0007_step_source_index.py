"""One index for the promoted ``step`` and ``source`` columns: ``(step, source)``.

Revisions 0001 and 0006 kept two, ``ix_lgsa_checkpoints_source_step`` (``source, step``)
and ``ix_lgsa_checkpoints_step``. Every checkpoint has an entry in each, on a page of its
own step (a thread's ten checkpoints: ten pages an index), so deleting or pruning a thread
wrote twice as many scattered index pages as one index needs: at 1,000,000 checkpoints on
SQLite, where those pages come from the disk, ``delete_thread`` took 1.5-2.1 ms with both
and 0.8-1.3 ms without ``ix_lgsa_checkpoints_step``, a pruned thread 5.3-5.8 ms and
3.7-4.0 ms. One index ``(step, source)`` serves a filter on ``step`` (a rare step is
found by index) and on ``step`` and ``source``; a filter on ``source`` alone reads the
checkpoints newest first through ``ix_lgsa_checkpoints_checkpoint_id`` until it has its
page (PostgreSQL: its GIN index serves every key).

Revision ID: 0007_step_source_index
Revises: 0006_metadata_index
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0007_step_source_index"
down_revision: str | None = "0006_metadata_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoints"
_NEW = "ix_lgsa_checkpoints_step_source"
_OLD = {"ix_lgsa_checkpoints_source_step": ["source", "step"], "ix_lgsa_checkpoints_step": ["step"]}


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _indexes() -> set[str] | None:
    """The table's index names; None offline (every step is emitted)."""
    if context.is_offline_mode():
        return None
    found = sa.inspect(op.get_bind()).get_indexes(_TABLE, schema=_schema())
    return {str(i["name"]) for i in found}


def upgrade() -> None:
    # Re-runnable step by step: DDL commits on its own on MySQL/MariaDB. The new index
    # first, so that a filter on step always has one.
    have = _indexes()
    if have is None or _NEW not in have:
        op.create_index(_NEW, _TABLE, ["step", "source"], schema=_schema())
    for name in _OLD:
        if have is None or name in have:
            op.drop_index(name, _TABLE, schema=_schema())


def downgrade() -> None:
    have = _indexes()
    for name, columns in _OLD.items():
        if have is None or name not in have:
            op.create_index(name, _TABLE, columns, schema=_schema())
    if have is None or _NEW in have:
        op.drop_index(_NEW, _TABLE, schema=_schema())
