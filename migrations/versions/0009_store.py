"""The long-term memory store's tables: ``lgsa_store_items`` and ``lgsa_store_vectors``.

``SQLAlchemyStore`` (``langgraph.store.sqlalchemy``) keeps its items and their embeddings
here, in the database and Alembic history of the checkpoint tables: one ``setup()`` (or
``alembic upgrade head``) creates both (the package's ``store/sqlalchemy/tables.py``
describes them).

Revision ID: 0009_store
Revises: 0008_step_source_in_id_index
Create Date: 2026-12-02
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

revision: str = "0009_store"
down_revision: str | None = "0008_step_source_in_id_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _frozen(name: str) -> ModuleType:
    """``migrations/<name>.py``, a module of helpers frozen with the revisions (never
    edited; see its docstring), loaded from its file once a process."""
    key = f"lgsa_migrations_{name}"
    module = sys.modules.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(
            key, Path(__file__).resolve().parents[1] / f"{name}.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module = sys.modules.setdefault(key, module)
    return module


_f = _frozen("frozen_0013")
BINARY = _f.BINARY
JSON_DOCUMENT = _f.JSON_DOCUMENT
MYSQL_TABLE_OPTIONS = _f.MYSQL_TABLE_OPTIONS

_ITEMS = "lgsa_store_items"
_VECTORS = "lgsa_store_vectors"
#: Longest namespace (labels joined by one separator each) and key, in characters; both
#: fit the primary key in InnoDB's 3,072 bytes and PostgreSQL's B-tree entry.
NAMESPACE_MAX_LENGTH = 300
KEY_MAX_LENGTH = 300
#: Longest indexed field path of a vector.
FIELD_MAX_LENGTH = 150


class OrderedText(_f.KeyText):
    """A key column that orders byte for byte: the ``C`` collation on PostgreSQL,
    VARBINARY on MySQL/MariaDB, plain text on SQLite (whose default collation is
    binary)."""

    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(sa.String(self.length, collation="C"))
        return super().load_dialect_impl(dialect)


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _pk(name: str) -> str | None:
    return _f.primary_key_name(op.get_context().dialect.name, name)


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
