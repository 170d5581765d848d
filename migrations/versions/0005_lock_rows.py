"""The ``lgsa_locks`` table: locks as replicated rows.

``lock_thread`` (PostgreSQL, MySQL/MariaDB), the MySQL/MariaDB migration lock and its
``detect_conflicts`` write lock were locks of a database session (advisory locks,
``GET_LOCK``). Such a lock is one server's: two Galera nodes both grant it; a transaction
pooler hands the session, lock included, to another client; a promotion forgets it.
A row per held lock (a lease with an expiry on the server's clock) is replicated and
certified like any other write (the package's ``_ops/locks.py``).

The MySQL/MariaDB migration lock creates the table itself (``CREATE TABLE IF NOT
EXISTS``) before any migration runs, so this revision finds it there and leaves it.

Revision ID: 0005_lock_rows
Revises: 0004_mariadb_compressed_values
Create Date: 2026-12-01
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import context, op

revision: str = "0005_lock_rows"
down_revision: str | None = "0004_mariadb_compressed_values"
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

_TABLE = "lgsa_locks"


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _exists() -> bool:
    if context.is_offline_mode():
        return False
    return sa.inspect(op.get_bind()).has_table(_TABLE, schema=_schema())


def upgrade() -> None:
    if _exists():
        return
    pk_name = _f.primary_key_name(op.get_context().dialect.name, "pk_lgsa_locks")
    op.create_table(
        _TABLE,
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=pk_name),
        schema=_schema(),
        **_f.MYSQL_TABLE_OPTIONS,
    )


def downgrade() -> None:
    if context.is_offline_mode() or _exists():
        op.drop_table(_TABLE, schema=_schema())
