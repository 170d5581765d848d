"""``ix_lgsa_checkpoints_step_source`` on PostgreSQL only.

On SQLite and MySQL/MariaDB every checkpoint has an entry in ``(step, source)`` on a page
of its own step: deleting or pruning a thread of ten checkpoints reads and writes back ten
scattered pages of that index. At 1,000,000 checkpoints, where those pages come from the
disk, ``delete_thread`` grew from 0.95 to 2.07 ms and a prune of 100 threads from 289 to
587 ms on SQLite (MariaDB at 300,000: 2.30 to 3.73 ms a delete); without the index a
delete took 0.63 ms and a pruned thread 2.6 ms at 1,000,000, as at 10,000. PostgreSQL's
``DELETE`` leaves index entries to VACUUM, and keeps the index.

Without it, a filter on ``step`` or ``source`` reads the checkpoints newest first through
``ix_lgsa_checkpoints_checkpoint_id`` until it has its page (fast for the common values,
a scan for a rare one), or the metadata index when the saver's ``metadata_index_keys``
lists the key (``reindex_metadata()`` fills it for the stored checkpoints).

Revision ID: 0008_step_index_pg_only
Revises: 0007_step_source_index
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0008_step_index_pg_only"
down_revision: str | None = "0007_step_source_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoints"
_INDEX = "ix_lgsa_checkpoints_step_source"


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _has_index() -> bool | None:
    """Whether the index exists; None offline (the step is emitted)."""
    if context.is_offline_mode():
        return None
    found = sa.inspect(op.get_bind()).get_indexes(_TABLE, schema=_schema())
    return any(i["name"] == _INDEX for i in found)


def upgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        return
    if _has_index() is not False:
        op.drop_index(_INDEX, _TABLE, schema=_schema())


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        return
    if _has_index() is not True:
        op.create_index(_INDEX, _TABLE, ["step", "source"], schema=_schema())
