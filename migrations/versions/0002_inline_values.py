"""Store small channel values in the checkpoint row (``inline_values``).

A put whose values are all small becomes one row instead of one row plus one blob row a
channel, and a read needs no blob lookup. Rows written before this revision keep NULL:
their values stay in the blobs table, where readers still find them.

Revision ID: 0002_inline_values
Revises: 0001_initial
Create Date: 2026-11-30
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from langgraph.checkpoint.sqlalchemy._codec import inline as _inline
from langgraph.checkpoint.sqlalchemy.schema import BINARY

revision: str = "0002_inline_values"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoints"
_COLUMN = "inline_values"


def _has_column() -> bool:
    # DDL is not transactional on MySQL/MariaDB: a failed run may have added the column
    # already, so each step checks first.
    if context.is_offline_mode():
        return False
    schema = op.get_context().version_table_schema
    columns = sa.inspect(op.get_bind()).get_columns(_TABLE, schema=schema)
    return any(column["name"] == _COLUMN for column in columns)


def upgrade() -> None:
    if not _has_column():
        op.add_column(
            _TABLE,
            sa.Column(_COLUMN, BINARY, nullable=True),
            schema=op.get_context().version_table_schema,
        )


def downgrade() -> None:
    # Move the inline values into the blobs table first, so that 0001 readers find every
    # value (nothing is lost), then drop the column.
    if context.is_offline_mode():
        # SQL for a DBA: the data move needs Python; say so in the script.
        op.execute(
            "-- lgsa: run this downgrade online (alembic downgrade), which first moves "
            "inline_values into lgsa_checkpoint_blobs; this SQL alone loses them"
        )
        op.drop_column(_TABLE, _COLUMN, schema=op.get_context().version_table_schema)
        return
    if not _has_column():
        return
    schema = op.get_context().version_table_schema
    bind = op.get_bind()
    meta = sa.MetaData()
    checkpoints = sa.Table(_TABLE, meta, autoload_with=bind, schema=schema)
    blobs = sa.Table("lgsa_checkpoint_blobs", meta, autoload_with=bind, schema=schema)
    key = (checkpoints.c.thread_id, checkpoints.c.checkpoint_ns, checkpoints.c.checkpoint_id)
    rows = bind.execute(
        sa.select(*key, checkpoints.c.value_versions, checkpoints.c[_COLUMN])
        .where(checkpoints.c[_COLUMN].is_not(None))
        .order_by(*key)
    )
    for thread_id, checkpoint_ns, _id, value_versions, data in rows.all():
        if isinstance(value_versions, (str, bytes)):  # reflected as text on MariaDB
            value_versions = json.loads(value_versions)
        for channel, (type_, blob) in _inline.unpack(data).items():
            version = (value_versions or {}).get(channel)
            if version is None:
                continue
            where = (
                blobs.c.thread_id == thread_id,
                blobs.c.checkpoint_ns == checkpoint_ns,
                blobs.c.channel == channel,
                blobs.c.version == version,
            )
            if bind.execute(sa.select(sa.func.count()).where(*where)).scalar_one() == 0:
                bind.execute(
                    blobs.insert().values(
                        thread_id=thread_id,
                        checkpoint_ns=checkpoint_ns,
                        channel=channel,
                        version=version,
                        type=type_,
                        blob=blob,
                    )
                )
    op.drop_column(_TABLE, _COLUMN, schema=schema)
