"""The long-term memory store's tables: ``lgsa_store_items`` and ``lgsa_store_vectors``.

``SQLAlchemyStore`` (``langgraph.store.sqlalchemy``) keeps its items and their embeddings
here, in the database and Alembic history of the checkpoint tables: one ``setup()`` (or
``alembic upgrade head``) creates both. See
:mod:`langgraph.store.sqlalchemy.tables`.

Revision ID: 0009_store
Revises: 0008_step_source_in_id_index
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from langgraph.checkpoint.sqlalchemy.dialects import query_builder
from langgraph.checkpoint.sqlalchemy.schema import BINARY, JSON_DOCUMENT, MYSQL_TABLE_OPTIONS
from langgraph.store.sqlalchemy.tables import (
    FIELD_MAX_LENGTH,
    KEY_MAX_LENGTH,
    NAMESPACE_MAX_LENGTH,
    OrderedText,
)

revision: str = "0009_store"
down_revision: str | None = "0008_step_source_in_id_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ITEMS = "lgsa_store_items"
_VECTORS = "lgsa_store_vectors"


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _pk(name: str) -> str | None:
    return query_builder(op.get_context().dialect.name).primary_key_name(name)


def upgrade() -> None:
    schema = _schema()
    op.create_table(
        _ITEMS,
        sa.Column("namespace", OrderedText(NAMESPACE_MAX_LENGTH), nullable=False),
        sa.Column("key", OrderedText(KEY_MAX_LENGTH), nullable=False),
        sa.Column("value", JSON_DOCUMENT, nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=True),
        sa.Column("ttl_minutes", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("namespace", "key", name=_pk("pk_lgsa_store_items")),
        schema=schema,
        sqlite_with_rowid=False,
        **MYSQL_TABLE_OPTIONS,
    )
    op.create_index(
        "ix_lgsa_store_items_updated_at", _ITEMS, ["updated_at", "namespace", "key"], schema=schema
    )
    op.create_index("ix_lgsa_store_items_expires_at", _ITEMS, ["expires_at"], schema=schema)
    op.create_table(
        _VECTORS,
        sa.Column("namespace", OrderedText(NAMESPACE_MAX_LENGTH), nullable=False),
        sa.Column("key", OrderedText(KEY_MAX_LENGTH), nullable=False),
        sa.Column("field", OrderedText(FIELD_MAX_LENGTH), nullable=False),
        sa.Column("embedding", BINARY, nullable=False),
        sa.PrimaryKeyConstraint("namespace", "key", "field", name=_pk("pk_lgsa_store_vectors")),
        schema=schema,
        sqlite_with_rowid=False,
        **MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    schema = _schema()
    op.drop_table(_VECTORS, schema=schema)
    op.drop_index("ix_lgsa_store_items_expires_at", _ITEMS, schema=schema)
    op.drop_index("ix_lgsa_store_items_updated_at", _ITEMS, schema=schema)
    op.drop_table(_ITEMS, schema=schema)
