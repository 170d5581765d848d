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

from alembic import context, op

revision: str = "0004_mariadb_compressed_values"
down_revision: str | None = "0003_long_names"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoints"
#: (column, NULL or NOT NULL): both LONGBLOB, as in :data:`..schema.BINARY`.
_COLUMNS = (("checkpoint", "NOT NULL"), ("inline_values", "NULL"))
#: MariaDB-only text: run by MariaDB >= 10.3.2, a comment for MySQL.
_COMPRESSED = "/*M!100302 COMPRESSED*/"


def _applies() -> bool:
    dialect = op.get_context().dialect
    if dialect.name not in ("mysql", "mariadb"):
        return False
    if context.is_offline_mode():
        return True  # the executable comment leaves MySQL's columns as they are
    version = dialect.server_version_info or ()
    return bool(getattr(dialect, "is_mariadb", False)) and tuple(version) >= (10, 3, 2)


def _modify(attribute: str) -> None:
    context_ = op.get_context()
    quote = context_.dialect.identifier_preparer.quote
    schema = context_.version_table_schema
    table = f"{quote(schema)}.{quote(_TABLE)}" if schema else quote(_TABLE)
    changes = ", ".join(
        f"MODIFY {quote(name)} LONGBLOB {attribute} {null}".replace("  ", " ")
        for name, null in _COLUMNS
    )
    # Names quoted by the dialect; no text here comes from a caller but the schema name.
    op.execute(f"ALTER TABLE {table} {changes}")


def upgrade() -> None:
    # Idempotent: a second run (DDL is not transactional on MariaDB) modifies again.
    if _applies():
        _modify(_COMPRESSED)


def downgrade() -> None:
    if _applies():
        _modify("")
