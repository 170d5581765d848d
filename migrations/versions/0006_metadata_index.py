"""Indexed metadata filters, and an index on ``step``.

``list(None, filter={"user_id": X})`` read every checkpoint's metadata document. Now:

- PostgreSQL: a GIN index (``jsonb_path_ops``) on ``lgsa_checkpoints.metadata``, used
  through containment for every key.
- SQLite and MySQL/MariaDB: ``lgsa_metadata_index``, one row a checkpoint and indexed
  key, written by ``put`` (see :mod:`langgraph.checkpoint.sqlalchemy._codec.metakeys`), and
  ``lgsa_metadata_keys``, the keys whose rows are complete. This revision indexes the
  stored checkpoints for the default keys (``thread_id``, ``user_id``,
  ``assistant_id``, ``graph_id``) and lists them: O(N), batches of 2,000 checkpoints.
- Every dialect: ``ix_lgsa_checkpoints_step``; ``ix_lgsa_checkpoints_source_step`` leads
  with ``source``, so a filter on a rare ``step`` alone scanned far.

The two tables exist on PostgreSQL too (one schema everywhere), empty.

Revision ID: 0006_metadata_index
Revises: 0005_lock_rows
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

from langgraph.checkpoint.sqlalchemy._codec.metakeys import DEFAULT_KEYS
from langgraph.checkpoint.sqlalchemy._ops import metaindex as _metaindex
from langgraph.checkpoint.sqlalchemy.dialects import query_builder
from langgraph.checkpoint.sqlalchemy.schema import (
    ID_MAX_LENGTH,
    INDEX_KEY_MAX_LENGTH,
    INDEX_VALUE_MAX_LENGTH,
    MYSQL_TABLE_OPTIONS,
    NAME_KEY_LENGTH,
    KeyText,
    NameKey,
    metadata_index,
)

revision: str = "0006_metadata_index"
down_revision: str | None = "0005_lock_rows"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_INDEX = "lgsa_metadata_index"
_KEYS = "lgsa_metadata_keys"


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _has(table: str) -> bool:
    if context.is_offline_mode():
        return False
    return sa.inspect(op.get_bind()).has_table(table, schema=_schema())


def _indexes(table: str) -> set[str]:
    if context.is_offline_mode():
        return set()
    found = sa.inspect(op.get_bind()).get_indexes(table, schema=_schema())
    return {str(i["name"]) for i in found}


def upgrade() -> None:
    # Re-runnable piece by piece: DDL commits on its own on MySQL/MariaDB.
    qb = query_builder(op.get_context().dialect.name)
    schema = _schema()
    if "ix_lgsa_checkpoints_step" not in _indexes("lgsa_checkpoints"):
        op.create_index("ix_lgsa_checkpoints_step", "lgsa_checkpoints", ["step"], schema=schema)
    # Where the dialect keeps no index rows (PostgreSQL), its GIN index serves filters.
    if not qb.metadata_index_rows and "ix_lgsa_checkpoints_metadata" not in _indexes(
        "lgsa_checkpoints"
    ):
        op.create_index(
            "ix_lgsa_checkpoints_metadata",
            "lgsa_checkpoints",
            ["metadata"],
            schema=schema,
            postgresql_using="gin",
            postgresql_ops={"metadata": "jsonb_path_ops"},
        )
    if not _has(_KEYS):
        op.create_table(
            _KEYS,
            sa.Column("key", KeyText(INDEX_KEY_MAX_LENGTH), nullable=False),
            sa.PrimaryKeyConstraint("key", name=qb.primary_key_name("pk_lgsa_metadata_keys")),
            schema=schema,
            **MYSQL_TABLE_OPTIONS,
        )
    if not _has(_INDEX):
        op.create_table(
            _INDEX,
            sa.Column("key", KeyText(INDEX_KEY_MAX_LENGTH), nullable=False),
            sa.Column("value", KeyText(INDEX_VALUE_MAX_LENGTH), nullable=False),
            sa.Column("checkpoint_id", KeyText(ID_MAX_LENGTH), nullable=False),
            sa.Column("thread_id", NameKey(NAME_KEY_LENGTH), nullable=False),
            sa.Column("checkpoint_ns", NameKey(NAME_KEY_LENGTH), nullable=False),
            sa.PrimaryKeyConstraint(
                "key",
                "value",
                "checkpoint_id",
                "thread_id",
                "checkpoint_ns",
                name=qb.primary_key_name("pk_lgsa_metadata_index"),
            ),
            schema=schema,
            sqlite_with_rowid=False,
            **MYSQL_TABLE_OPTIONS,
        )
        op.create_index(
            "ix_lgsa_metadata_index_thread",
            _INDEX,
            ["thread_id", "checkpoint_ns", "checkpoint_id"],
            schema=schema,
        )
    if qb.metadata_index_rows and not context.is_offline_mode():
        conn = op.get_bind()
        if schema is not None:
            conn = conn.execution_options(schema_translate_map={None: schema})
        known = _metaindex.registered(conn)
        todo = [k for k in DEFAULT_KEYS if k not in known]
        if todo:
            _metaindex.backfill(conn, qb.insert_ignore(metadata_index), todo)


def downgrade() -> None:
    if context.is_offline_mode() or _has(_INDEX):
        op.drop_table(_INDEX, schema=_schema())
    if context.is_offline_mode() or _has(_KEYS):
        op.drop_table(_KEYS, schema=_schema())
    indexes = _indexes("lgsa_checkpoints")
    gin = not query_builder(op.get_context().dialect.name).metadata_index_rows
    if gin and (context.is_offline_mode() or "ix_lgsa_checkpoints_metadata" in indexes):
        op.drop_index("ix_lgsa_checkpoints_metadata", "lgsa_checkpoints", schema=_schema())
    if context.is_offline_mode() or "ix_lgsa_checkpoints_step" in indexes:
        op.drop_index("ix_lgsa_checkpoints_step", "lgsa_checkpoints", schema=_schema())
