"""Create the checkpoint, blob and write tables.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import context, op

revision: str = "0001_initial"
down_revision: str | None = None
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
KeyText = _f.KeyText


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _exists(name: str) -> bool:
    # DDL is not transactional on MySQL/MariaDB: a failed run may leave some tables or
    # indexes behind, so each step checks before it creates (or drops). Offline (SQL
    # for a DBA) there is nothing to inspect: every step is printed.
    if context.is_offline_mode():
        return False
    return sa.inspect(op.get_bind()).has_table(name, schema=_schema())


def _has_index(table: str, name: str) -> bool:
    if context.is_offline_mode():
        return False
    indexes = sa.inspect(op.get_bind()).get_indexes(table, schema=_schema())
    return any(index["name"] == name for index in indexes)


def _pk_name(name: str) -> str | None:
    # MySQL/MariaDB call every primary key PRIMARY and warn about any other name.
    return _f.primary_key_name(op.get_context().dialect.name, name)


def upgrade() -> None:
    schema = _schema()
    if not _exists("lgsa_checkpoints"):
        op.create_table(
            "lgsa_checkpoints",
            sa.Column("thread_id", KeyText(255), nullable=False),
            sa.Column("checkpoint_ns", KeyText(255), nullable=False),
            sa.Column("checkpoint_id", KeyText(64), nullable=False),
            sa.Column("parent_checkpoint_id", KeyText(64), nullable=True),
            sa.Column("run_id", KeyText(80), nullable=True),
            sa.Column("source", KeyText(64), nullable=True),
            sa.Column("step", sa.BigInteger(), nullable=True),
            sa.Column("type", sa.String(64), nullable=False),
            sa.Column("checkpoint", BINARY, nullable=False),
            sa.Column("metadata", JSON_DOCUMENT, nullable=False),
            sa.Column("value_versions", JSON_DOCUMENT, nullable=False),
            sa.PrimaryKeyConstraint(
                "thread_id", "checkpoint_ns", "checkpoint_id", name=_pk_name("pk_lgsa_checkpoints")
            ),
            schema=schema,
            **MYSQL_TABLE_OPTIONS,
        )
    for index, columns in (
        ("ix_lgsa_checkpoints_run_id", ["run_id"]),
        # newest-first global listing: ORDER BY checkpoint_id, thread_id, checkpoint_ns
        ("ix_lgsa_checkpoints_checkpoint_id", ["checkpoint_id", "thread_id", "checkpoint_ns"]),
        ("ix_lgsa_checkpoints_source_step", ["source", "step"]),
    ):
        if not _has_index("lgsa_checkpoints", index):
            op.create_index(index, "lgsa_checkpoints", columns, schema=schema)
    if not _exists("lgsa_checkpoint_blobs"):
        op.create_table(
            "lgsa_checkpoint_blobs",
            sa.Column("thread_id", KeyText(255), nullable=False),
            sa.Column("checkpoint_ns", KeyText(255), nullable=False),
            sa.Column("channel", KeyText(150), nullable=False),
            sa.Column("version", KeyText(64), nullable=False),
            sa.Column("type", sa.String(64), nullable=False),
            sa.Column("blob", BINARY, nullable=True),
            sa.PrimaryKeyConstraint(
                "thread_id",
                "checkpoint_ns",
                "channel",
                "version",
                name=_pk_name("pk_lgsa_checkpoint_blobs"),
            ),
            schema=schema,
            **MYSQL_TABLE_OPTIONS,
        )
    if not _exists("lgsa_checkpoint_writes"):
        op.create_table(
            "lgsa_checkpoint_writes",
            sa.Column("thread_id", KeyText(255), nullable=False),
            sa.Column("checkpoint_ns", KeyText(255), nullable=False),
            sa.Column("checkpoint_id", KeyText(64), nullable=False),
            sa.Column("task_id", KeyText(64), nullable=False),
            sa.Column("idx", sa.Integer(), nullable=False),
            sa.Column("task_path", sa.Text(), nullable=False),
            sa.Column("channel", sa.Text(), nullable=False),
            sa.Column("type", sa.String(64), nullable=False),
            sa.Column("blob", BINARY, nullable=True),
            sa.PrimaryKeyConstraint(
                "thread_id",
                "checkpoint_ns",
                "checkpoint_id",
                "task_id",
                "idx",
                name=_pk_name("pk_lgsa_checkpoint_writes"),
            ),
            schema=schema,
            **MYSQL_TABLE_OPTIONS,
        )


def downgrade() -> None:
    schema = _schema()
    for name in ("lgsa_checkpoint_writes", "lgsa_checkpoint_blobs", "lgsa_checkpoints"):
        if context.is_offline_mode() or _exists(name):
            op.drop_table(name, schema=schema)
