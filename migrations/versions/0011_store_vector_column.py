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

import logging
import sys
from array import array
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.exc import DBAPIError
from sqlalchemy.types import UserDefinedType

revision: str = "0011_store_vector_column"
down_revision: str | None = "0010_thread_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("langgraph.store.sqlalchemy")

_TABLE = "lgsa_store_vectors"
#: pgvector's column beside ``embedding``.
_COLUMN = "vec"
#: The partial index of the rows whose ``vec`` is not filled yet.
_UNFILLED = "ix_lgsa_store_vectors_unfilled"
#: Rows filled a statement.
_FILL_BATCH = 1000


def _text_of(blob: bytes) -> str:
    """pgvector's text form (``[1.5,2,...]``) of little-endian float32 bytes."""
    values = array("f")
    values.frombytes(bytes(blob)[: len(blob) - len(blob) % 4])
    if sys.byteorder == "big":
        values.byteswap()
    return "[" + ",".join(map(repr, values)) + "]"


class _VectorCast(UserDefinedType[Any]):
    """``vector``, the target of the bound text's cast."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"


class _Vector(UserDefinedType[bytes]):
    """pgvector's ``vector``, bound from packed float32 bytes as its text form, cast in
    the statement."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: bytes | None) -> str | None:
            return None if value is None else _text_of(value)

        return process

    def bind_expression(self, bindvalue: Any) -> Any:
        return sa.cast(bindvalue, _VectorCast())


def _qualified(connection: sa.Connection, schema: str | None) -> str:
    prep = connection.dialect.identifier_preparer
    name = prep.quote(_TABLE)
    return name if schema is None else f"{prep.quote_schema(schema)}.{name}"


def _available(connection: sa.Connection) -> bool:
    try:
        found = connection.execute(
            sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        ).first()
    except DBAPIError:
        return False
    return found is not None


def _installed(connection: sa.Connection) -> bool:
    version = connection.execute(
        sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    ).scalar()
    return version is not None


def _enabled(connection: sa.Connection, schema: str | None) -> bool:
    found = connection.execute(
        sa.text(
            "SELECT 1 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = to_regclass(:t) AND a.attname = :c "
            "AND NOT a.attisdropped AND t.typname = 'vector'"
        ),
        {"t": _qualified(connection, schema), "c": _COLUMN},
    ).first()
    return found is not None


def _enable(connection: sa.Connection, schema: str | None) -> None:
    """Create the extension if needed (a savepoint: a user without the privilege keeps
    exact search), add the column and the index of unfilled rows, fill the column."""
    if _enabled(connection, schema):
        _fill(connection, schema)  # rows a process older than the column wrote
        return
    if not _available(connection):
        return
    if not _installed(connection):
        try:
            with connection.begin_nested():
                connection.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
        except DBAPIError as e:
            log.warning(
                "the vector extension is available but could not be created (%s): "
                "vector search stays exact. A superuser can run CREATE EXTENSION "
                "vector in this database; the next setup() then adds the column.",
                str(e.orig).strip().splitlines()[0] if e.orig else e,
            )
            return
    prep = connection.dialect.identifier_preparer
    column, qualified = prep.quote(_COLUMN), _qualified(connection, schema)
    connection.execute(sa.text(f"ALTER TABLE {qualified} ADD COLUMN IF NOT EXISTS {column} vector"))
    # Empty once filled: finds the rows to fill without a scan of the table.
    connection.execute(
        sa.text(
            f"CREATE INDEX IF NOT EXISTS {prep.quote(_UNFILLED)} ON {qualified} "
            f"(namespace, key, field) WHERE {column} IS NULL"
        )
    )
    _fill(connection, schema)


def _fill(connection: sa.Connection, schema: str | None) -> None:
    """Fill ``vec`` from ``embedding`` where it is NULL, in primary key order, a batch a
    statement."""
    t = sa.Table(
        _TABLE,
        sa.MetaData(),
        sa.Column("namespace", sa.String(300), primary_key=True),
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column("field", sa.String(150), primary_key=True),
        sa.Column("embedding", sa.LargeBinary(), nullable=False),
        sa.Column(_COLUMN, _Vector(), nullable=True),
        schema=schema,
    )
    keys = (t.c.namespace, t.c.key, t.c.field)
    last: tuple[Any, ...] | None = None
    stmt = sa.update(t).where(
        t.c.namespace == sa.bindparam("b_ns"),
        t.c.key == sa.bindparam("b_key"),
        t.c.field == sa.bindparam("b_field"),
    )
    stmt = stmt.values({_COLUMN: sa.bindparam("b_vec", type_=_Vector())})
    while True:
        page = sa.select(*keys, t.c.embedding).where(t.c[_COLUMN].is_(None)).order_by(*keys)
        if last is not None:
            page = page.where(sa.tuple_(*keys) > sa.tuple_(*last))
        rows = connection.execute(page.limit(_FILL_BATCH)).all()
        if not rows:
            return
        params = [
            {"b_ns": r[0], "b_key": r[1], "b_field": r[2], "b_vec": bytes(r[3])}
            for r in rows
            if r[3] is not None and len(r[3]) >= 4
        ]
        if params:
            connection.execute(stmt, params)
        last = tuple(rows[-1][:3])


def upgrade() -> None:
    if context.is_offline_mode() or op.get_context().dialect.name != "postgresql":
        return
    _enable(op.get_bind(), op.get_context().version_table_schema)


def downgrade() -> None:
    """Drop the native column, and with it its indexes (the extension stays: other
    tables may use it)."""
    if context.is_offline_mode() or op.get_context().dialect.name != "postgresql":
        return
    connection = op.get_bind()
    column = connection.dialect.identifier_preparer.quote(_COLUMN)
    qualified = _qualified(connection, op.get_context().version_table_schema)
    connection.execute(sa.text(f"ALTER TABLE {qualified} DROP COLUMN IF EXISTS {column}"))
