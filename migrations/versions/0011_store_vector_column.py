"""``lgsa_store_vectors.vec``: pgvector's ``vector`` beside ``embedding``, on PostgreSQL
servers that have the ``vector`` extension, for the store's ANN (HNSW) vector search.

On PostgreSQL where ``pg_available_extensions`` lists ``vector``: ``CREATE EXTENSION IF
NOT EXISTS vector`` (in a savepoint: a user without the privilege keeps exact search, and
the warning says what a superuser runs), then ``ADD COLUMN vec vector`` (no fixed size:
the store's index config may change its ``dims``), filled from ``embedding`` (packed
float32) a thousand rows a statement, in primary key order. A partial index on the rows
whose ``vec`` is NULL (none, once filled) lets ``setup()`` find and fill rows a process
that predates the column wrote, without a scan. On other servers and dialects: nothing
(vector search stays exact). The HNSW index itself depends on the index config (dims,
distance): the store's ``setup()`` builds it, concurrently.

Offline (``alembic upgrade --sql``) this revision emits nothing: whether the server has
the extension is only known online.

Revision ID: 0011_store_vector_column
Revises: 0010_thread_index
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import context, op
from sqlalchemy import MetaData

from langgraph.checkpoint.sqlalchemy.dialects import query_builder
from langgraph.store.sqlalchemy.tables import vectors

revision: str = "0011_store_vector_column"
down_revision: str | None = "0010_thread_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _table():  # type: ignore[no-untyped-def]
    schema = op.get_context().version_table_schema
    return vectors.to_metadata(MetaData(), schema=schema)


def upgrade() -> None:
    if context.is_offline_mode():
        return
    vi = query_builder(op.get_context().dialect.name).vector_index()
    if vi is not None:
        vi.enable(op.get_bind(), _table())


def downgrade() -> None:
    if context.is_offline_mode():
        return
    vi = query_builder(op.get_context().dialect.name).vector_index()
    if vi is not None:
        vi.disable(op.get_bind(), _table())
