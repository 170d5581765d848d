"""Indexed metadata filters, and an index on ``step``.

``list(None, filter={"user_id": X})`` read every checkpoint's metadata document. Now:

- PostgreSQL: a GIN index (``jsonb_path_ops``) on ``lgsa_checkpoints.metadata``, used
  through containment for every key.
- SQLite and MySQL/MariaDB: ``lgsa_metadata_index``, one row a checkpoint and indexed
  key, written by ``put`` (the package's ``_codec/metakeys.py``), and
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

import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import mysql, sqlite

revision: str = "0006_metadata_index"
down_revision: str | None = "0005_lock_rows"
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
KeyText = _f.KeyText
MYSQL_TABLE_OPTIONS = _f.MYSQL_TABLE_OPTIONS

_INDEX = "lgsa_metadata_index"
_KEYS = "lgsa_metadata_keys"
#: Longest checkpoint id; width of the ``thread_id``/``checkpoint_ns`` key columns.
ID_MAX_LENGTH = 64
NAME_KEY_LENGTH = 255
#: Longest indexed metadata key; width of an indexed value (longer: its digest).
INDEX_KEY_MAX_LENGTH = 40
INDEX_VALUE_MAX_LENGTH = 100
#: The keys this revision indexes for the stored checkpoints and lists as complete.
DEFAULT_KEYS = ("thread_id", "user_id", "assistant_id", "graph_id")
#: Checkpoints read a statement by the backfill.
_BATCH = 2000


def _rows_kept(dialect_name: str) -> bool:
    """Whether the dialect keeps index rows: every one but PostgreSQL, whose GIN index on
    the JSONB column serves every key."""
    return dialect_name != "postgresql"


def _tables(schema: str | None) -> tuple[sa.Table, sa.Table, sa.Table]:
    """The columns the backfill reads and writes: the checkpoints' keys and metadata,
    the index rows, the listed keys."""
    md = sa.MetaData()
    checkpoints = sa.Table(
        "lgsa_checkpoints",
        md,
        sa.Column("thread_id", KeyText(NAME_KEY_LENGTH)),
        sa.Column("checkpoint_ns", KeyText(NAME_KEY_LENGTH)),
        sa.Column("checkpoint_id", KeyText(ID_MAX_LENGTH)),
        sa.Column("metadata", sa.Text()),  # its text, parsed by _load_json
        schema=schema,
    )
    index = sa.Table(
        _INDEX,
        md,
        sa.Column("key", KeyText(INDEX_KEY_MAX_LENGTH), primary_key=True),
        sa.Column("value", KeyText(INDEX_VALUE_MAX_LENGTH), primary_key=True),
        sa.Column("checkpoint_id", KeyText(ID_MAX_LENGTH), primary_key=True),
        sa.Column("thread_id", KeyText(NAME_KEY_LENGTH), primary_key=True),
        sa.Column("checkpoint_ns", KeyText(NAME_KEY_LENGTH), primary_key=True),
        schema=schema,
    )
    keys = sa.Table(
        _KEYS, md, sa.Column("key", KeyText(INDEX_KEY_MAX_LENGTH), primary_key=True), schema=schema
    )
    return checkpoints, index, keys


def _load_json(value: Any) -> Any:
    """A metadata column's document; a value that is not JSON text as it is (never a
    dict, so it gets no index row: a filter never matches such a row either)."""
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        try:
            return json.loads(bytes(value) if isinstance(value, memoryview) else value)
        except (RecursionError, ValueError, TypeError):
            return None
    return value


def index_value(value: Any) -> str:
    """The ``value`` column of a metadata value: ``s:`` and a string, ``n:`` and a
    number's float (``n:big`` beyond a double), ``b:true``/``b:false``, ``z:null``,
    ``c:`` for any list or dict; ``h:`` and the SHA-256 of that text when it is longer
    than :data:`INDEX_VALUE_MAX_LENGTH` or not UTF-8 encodable."""
    if isinstance(value, str):
        text = "s:" + value
    elif isinstance(value, bool):
        text = "b:true" if value else "b:false"
    elif value is None:
        text = "z:null"
    elif isinstance(value, (int, float)):
        try:
            text = "n:" + repr(float(value) + 0.0)  # + 0.0: -0.0 is 0, as in JSON
        except OverflowError:
            text = "n:big"
    else:
        text = "c:"
    if len(text) > INDEX_VALUE_MAX_LENGTH or not _f.utf8_encodable(text):
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        text = "h:" + digest
    return text


def _index_rows(row: Mapping[str, Any], keys: Iterable[str]) -> list[dict[str, Any]]:
    """The index rows of one checkpoint (its keys and metadata dict in ``row``)."""
    meta = row["metadata"]
    if not isinstance(meta, Mapping):
        return []
    return [
        {
            "key": key,
            "value": index_value(meta[key]),
            "checkpoint_id": row["checkpoint_id"],
            "thread_id": row["thread_id"],
            "checkpoint_ns": row["checkpoint_ns"],
        }
        for key in keys
        if key in meta
    ]


def _insert_new(conn: sa.Connection, index: sa.Table, rows: list[dict[str, Any]]) -> None:
    """Insert the index rows whose key is not taken (a re-run after a partial one)."""
    name = conn.dialect.name
    if name == "sqlite":
        conn.execute(sqlite.insert(index).on_conflict_do_nothing(), rows)
    elif name in _f.MYSQL_DIALECTS:
        stmt = mysql.insert(index)
        conn.execute(stmt.on_duplicate_key_update({"key": stmt.inserted["key"]}), rows)
    else:  # a dialect family added later: one row at a time, skipping taken keys
        for row in rows:
            taken = sa.select(sa.literal(1)).where(*(index.c[k] == v for k, v in row.items()))
            if conn.execute(taken).first() is None:
                conn.execute(index.insert(), row)


def _backfill(conn: sa.Connection, schema: str | None, keys: list[str]) -> None:
    """Write the index rows of ``keys`` for every stored checkpoint (by primary key, in
    batches of :data:`_BATCH`), then list the keys in ``lgsa_metadata_keys``."""
    checkpoints, index, listed = _tables(schema)
    c = checkpoints.c
    key_columns = (c.thread_id, c.checkpoint_ns, c.checkpoint_id)
    after: tuple[Any, ...] | None = None
    while True:
        query = sa.select(*key_columns, c.metadata).order_by(*key_columns).limit(_BATCH)
        if after is not None:
            query = query.where(sa.tuple_(*key_columns) > sa.tuple_(*after))
        batch = conn.execute(query).all()
        if not batch:
            break
        rows: list[dict[str, Any]] = []
        for thread_id, ns, checkpoint_id, text in batch:
            meta = _load_json(text)
            if isinstance(meta, dict):
                row = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
                rows += _index_rows({**row, "metadata": meta}, keys)
        if rows:
            _insert_new(conn, index, rows)
        after = tuple(batch[-1][:3])
    known = _registered(conn, listed)
    new = [{"key": k} for k in keys if k not in known]
    if new:
        conn.execute(listed.insert(), new)


def _registered(conn: sa.Connection, listed: sa.Table) -> frozenset[str]:
    """The keys ``lgsa_metadata_keys`` lists."""
    return frozenset(str(k) for (k,) in conn.execute(sa.select(listed.c.key)))


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _has(table: str) -> bool:
    if context.is_offline_mode():
        return False
    return sa.inspect(op.get_bind()).has_table(table, schema=_schema())


def _pk(name: str) -> str | None:
    return _f.primary_key_name(op.get_context().dialect.name, name)


def _indexes(table: str) -> set[str]:
    if context.is_offline_mode():
        return set()
    found = sa.inspect(op.get_bind()).get_indexes(table, schema=_schema())
    return {str(i["name"]) for i in found}


def upgrade() -> None:
    # Re-runnable piece by piece: DDL commits on its own on MySQL/MariaDB.
    rows_kept = _rows_kept(op.get_context().dialect.name)
    schema = _schema()
    if "ix_lgsa_checkpoints_step" not in _indexes("lgsa_checkpoints"):
        op.create_index("ix_lgsa_checkpoints_step", "lgsa_checkpoints", ["step"], schema=schema)
    # Where the dialect keeps no index rows (PostgreSQL), its GIN index serves filters.
    if not rows_kept and "ix_lgsa_checkpoints_metadata" not in _indexes("lgsa_checkpoints"):
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
            sa.PrimaryKeyConstraint("key", name=_pk("pk_lgsa_metadata_keys")),
            schema=schema,
            **MYSQL_TABLE_OPTIONS,
        )
    if not _has(_INDEX):
        op.create_table(
            _INDEX,
            sa.Column("key", KeyText(INDEX_KEY_MAX_LENGTH), nullable=False),
            sa.Column("value", KeyText(INDEX_VALUE_MAX_LENGTH), nullable=False),
            sa.Column("checkpoint_id", KeyText(ID_MAX_LENGTH), nullable=False),
            sa.Column("thread_id", KeyText(NAME_KEY_LENGTH), nullable=False),
            sa.Column("checkpoint_ns", KeyText(NAME_KEY_LENGTH), nullable=False),
            sa.PrimaryKeyConstraint(
                "key",
                "value",
                "checkpoint_id",
                "thread_id",
                "checkpoint_ns",
                name=_pk("pk_lgsa_metadata_index"),
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
    if rows_kept and not context.is_offline_mode():
        conn = op.get_bind()
        known = _registered(conn, _tables(schema)[2])
        todo = [k for k in DEFAULT_KEYS if k not in known]
        if todo:
            _backfill(conn, schema, todo)


def downgrade() -> None:
    if context.is_offline_mode() or _has(_INDEX):
        op.drop_table(_INDEX, schema=_schema())
    if context.is_offline_mode() or _has(_KEYS):
        op.drop_table(_KEYS, schema=_schema())
    indexes = _indexes("lgsa_checkpoints")
    gin = not _rows_kept(op.get_context().dialect.name)
    if gin and (context.is_offline_mode() or "ix_lgsa_checkpoints_metadata" in indexes):
        op.drop_index("ix_lgsa_checkpoints_metadata", "lgsa_checkpoints", schema=_schema())
    if context.is_offline_mode() or "ix_lgsa_checkpoints_step" in indexes:
        op.drop_index("ix_lgsa_checkpoints_step", "lgsa_checkpoints", schema=_schema())
