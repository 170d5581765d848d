"""Store small channel values in the checkpoint row (``inline_values``).

A put whose values are all small becomes one row instead of one row plus one blob row a
channel, and a read needs no blob lookup. Rows written before this revision keep NULL:
their values stay in the blobs table, where readers still find them.

Revision ID: 0002_inline_values
Revises: 0001_initial
Create Date: 2026-11-30
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import ormsgpack
import sqlalchemy as sa
from alembic import context, op

revision: str = "0002_inline_values"
down_revision: str | None = "0001_initial"
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

_TABLE = "lgsa_checkpoints"
_COLUMN = "inline_values"
#: The format of ``inline_values``: a msgpack array ``[1, [[channel, type, bytes], ...]]``.
_FORMAT = 1


def _unpack(data: bytes | None) -> dict[str, tuple[str, bytes | None]]:
    """``{channel: (type, bytes)}`` of an ``inline_values`` column (format 1).

    Raises:
        ValueError: The column is not in format 1 (a forged or damaged row).
    """
    if data is None:
        return {}
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"inline_values is {type(data).__name__}, not bytes")
    try:
        decoded = ormsgpack.unpackb(bytes(data))
    except (ormsgpack.MsgpackDecodeError, RecursionError, TypeError, ValueError) as e:
        raise ValueError(f"inline_values is not msgpack: {type(e).__name__}: {e}") from None
    if not (isinstance(decoded, list) and len(decoded) == 2 and decoded[0] == _FORMAT):
        raise ValueError("inline_values is not format 1: [1, [[channel, type, bytes], ...]]")
    out: dict[str, tuple[str, bytes | None]] = {}
    for item in decoded[1] if isinstance(decoded[1], list) else [None]:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and isinstance(item[1], str)
            and (item[2] is None or isinstance(item[2], bytes))
        ):
            raise ValueError("inline_values holds an entry that is not [channel, type, bytes]")
        out[item[0]] = (item[1], item[2])
    return out


def _tables(schema: str | None) -> tuple[sa.Table, sa.Table]:
    """The columns the downgrade reads and writes, typed as revision 0001 made them: the
    key columns are UTF-8 bytes on MySQL/MariaDB (``KeyText``), so that a channel name
    or version (text) is bound as bytes there too."""
    key_text = _f.KeyText
    meta = sa.MetaData()
    checkpoints = sa.Table(
        _TABLE,
        meta,
        sa.Column("thread_id", key_text(255)),
        sa.Column("checkpoint_ns", key_text(255)),
        sa.Column("checkpoint_id", key_text(64)),
        sa.Column("value_versions", _f.JSON_DOCUMENT),
        sa.Column(_COLUMN, BINARY),
        schema=schema,
    )
    blobs = sa.Table(
        "lgsa_checkpoint_blobs",
        meta,
        sa.Column("thread_id", key_text(255)),
        sa.Column("checkpoint_ns", key_text(255)),
        sa.Column("channel", key_text(150)),
        sa.Column("version", key_text(64)),
        sa.Column("type", sa.String(64)),
        sa.Column("blob", BINARY),
        schema=schema,
    )
    return checkpoints, blobs


def _has_column() -> bool:
    # DDL is not transactional on MySQL/MariaDB: a failed run may have added the column
    # already, so each step checks first.
    if context.is_offline_mode():
        return False
    schema = op.get_context().version_table_schema
    columns = sa.inspect(op.get_bind()).get_columns(_TABLE, schema=schema)
    return any(column["name"] == _COLUMN for column in columns)


def upgrade() -> None:
    if not _has_column():
        op.add_column(
            _TABLE,
            sa.Column(_COLUMN, BINARY, nullable=True),
            schema=op.get_context().version_table_schema,
        )


def downgrade() -> None:
    # Move the inline values into the blobs table first, so that 0001 readers find every
    # value (nothing is lost), then drop the column.
    if context.is_offline_mode():
        # SQL for a DBA: the data move needs Python; say so in the script.
        op.execute(
            "-- lgsa: run this downgrade online (alembic downgrade), which first moves "
            "inline_values into lgsa_checkpoint_blobs; this SQL alone loses them"
        )
        op.drop_column(_TABLE, _COLUMN, schema=op.get_context().version_table_schema)
        return
    if not _has_column():
        return
    schema = op.get_context().version_table_schema
    bind = op.get_bind()
    checkpoints, blobs = _tables(schema)
    key = (checkpoints.c.thread_id, checkpoints.c.checkpoint_ns, checkpoints.c.checkpoint_id)
    rows = bind.execute(
        sa.select(*key, checkpoints.c.value_versions, checkpoints.c[_COLUMN])
        .where(checkpoints.c[_COLUMN].is_not(None))
        .order_by(*key)
    )
    for thread_id, checkpoint_ns, _id, value_versions, data in rows.all():
        if isinstance(value_versions, (str, bytes)):  # text where a driver leaves it so
            value_versions = json.loads(value_versions)
        for channel, (type_, blob) in _unpack(data).items():
            version = (value_versions or {}).get(channel)
            if version is None:
                continue
            where = (
                blobs.c.thread_id == thread_id,
                blobs.c.checkpoint_ns == checkpoint_ns,
                blobs.c.channel == channel,
                blobs.c.version == version,
            )
            if bind.execute(sa.select(sa.func.count()).where(*where)).scalar_one() == 0:
                bind.execute(
                    blobs.insert().values(
                        thread_id=thread_id,
                        checkpoint_ns=checkpoint_ns,
                        channel=channel,
                        version=version,
                        type=type_,
                        blob=blob,
                    )
                )
    op.drop_column(_TABLE, _COLUMN, schema=schema)
