"""MariaDB: store ``checkpoint`` and ``inline_values`` as ``COMPRESSED`` columns.

A realistic checkpoint row (20 chat messages: ~8 kB of ``inline_values``, ~0.8 kB of
``checkpoint``) is longer than the ~8 kB that an InnoDB DYNAMIC row may keep in its page,
so InnoDB moved ``inline_values`` to an overflow page of its own: 16 kB for 8 kB of data,
every checkpoint (~22 kB a checkpoint on MariaDB against ~5 kB on PostgreSQL, whose TOAST
compresses values over 2 kB). MariaDB's column compression (10.3.2+, zlib, storage-engine
independent, as durable as any column) shrinks both values about 3.5x, and the row then
fits its page: ~5.7 kB a checkpoint. Nothing changes for readers: the server decompresses.

Only MariaDB has the attribute; MySQL, PostgreSQL and SQLite are left as they are (the
offline SQL wraps it in MariaDB's executable comment, which MySQL ignores). On MariaDB
the ALTER rebuilds ``lgsa_checkpoints`` (a copy of the table, compressing every row).

Revision ID: 0004_mariadb_compressed_values
Revises: 0003_long_names
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from alembic import context, op
from sqlalchemy.engine import Dialect

revision: str = "0004_mariadb_compressed_values"
down_revision: str | None = "0003_long_names"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoints"
#: (column, nullable): both LONGBLOB on MySQL/MariaDB (revisions 0001 and 0002).
_COLUMNS = (("checkpoint", False), ("inline_values", True))


def _ddl(dialect: Dialect, schema: str | None, *, compressed: bool, offline: bool) -> list[str]:
    """The statements that turn compression of :data:`_COLUMNS` on or off: MariaDB
    10.3.2+ online; every MySQL/MariaDB offline, in MariaDB's executable comment (which
    MySQL reads as a comment); none elsewhere (PostgreSQL's TOAST compresses already,
    SQLite has no such option)."""
    if dialect.name not in ("mysql", "mariadb"):
        return []
    extra: Any = dialect
    version = tuple(dialect.server_version_info or ())
    if not offline and not (getattr(extra, "is_mariadb", False) and version >= (10, 3, 2)):
        return []
    quote = dialect.identifier_preparer.quote
    name = f"{quote(schema)}.{quote(_TABLE)}" if schema else quote(_TABLE)
    attribute = " /*M!100302 COMPRESSED*/" if compressed else ""
    changes = ", ".join(
        f"MODIFY {quote(column)} LONGBLOB{attribute} {'NULL' if nullable else 'NOT NULL'}"
        for column, nullable in _COLUMNS
    )
    return [f"ALTER TABLE {name} {changes}"]


def _compress(on: bool) -> None:
    ctx = op.get_context()
    for statement in _ddl(
        ctx.dialect, ctx.version_table_schema, compressed=on, offline=context.is_offline_mode()
    ):
        op.execute(statement)


def upgrade() -> None:
    # Idempotent: a second run (DDL is not transactional on MariaDB) modifies again.
    _compress(True)


def downgrade() -> None:
    _compress(False)
