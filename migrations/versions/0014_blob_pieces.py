"""Channel values stored as pieces: ``base_version``, ``chain`` and ``size`` on
``lgsa_checkpoint_blobs``, and ``ix_lgsa_checkpoint_blobs_chain``.

A version whose bytes extend those of an earlier version of its channel (a message list
that grew at its end) is stored as the bytes it appended, with a reference to the
version it extends (``base_version``) and to the whole value its chain of pieces rests
on (``chain``); ``size`` is the length of the value a row stands for. The index finds
the rows of one chain: a read fetches a value's pieces in one statement. Rows written
before this revision keep NULL in the three columns: whole values, read as before.

The upgrade adds nullable columns and builds the index: O(N) for the index (on
PostgreSQL writes wait for it, ``CREATE INDEX``). The downgrade first stores every piece
as its whole value again (read back, rebuilt, written in place), then drops the index
and the columns: the revision before reads every value as whole.

Revision ID: 0014_blob_pieces
Revises: 0013_store_expiry_partial_index
Create Date: 2026-12-07
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from alembic import context, op

revision: str = "0014_blob_pieces"
down_revision: str | None = "0013_store_expiry_partial_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lgsa_checkpoint_blobs"
_INDEX = "ix_lgsa_checkpoint_blobs_chain"
_INDEX_COLUMNS = ["thread_id", "checkpoint_ns", "channel", "chain"]
#: Width of a version column, in characters.
_VERSION_LENGTH = 64
#: Width of the thread and namespace key columns, in characters.
_NAME_KEY_LENGTH = 255
#: Width of the channel column, in characters.
_CHANNEL_LENGTH = 150


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


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _have() -> tuple[set[str], set[str]] | None:
    """The table's column and index names; None offline (every step is emitted)."""
    if context.is_offline_mode():
        return None
    inspector = sa.inspect(op.get_bind())
    columns = {str(c["name"]) for c in inspector.get_columns(_TABLE, schema=_schema())}
    indexes = {str(i["name"]) for i in inspector.get_indexes(_TABLE, schema=_schema())}
    return columns, indexes


def _new_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("base_version", _f.KeyText(_VERSION_LENGTH), nullable=True),
        sa.Column("chain", _f.KeyText(_VERSION_LENGTH), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
    ]


def upgrade() -> None:
    # Re-runnable: DDL commits on its own on MySQL/MariaDB, so a failed run may have
    # added some of it already.
    have = _have()
    for column in _new_columns():
        if have is None or column.name not in have[0]:
            op.add_column(_TABLE, column, schema=_schema())
    if have is None or _INDEX not in have[1]:
        op.create_index(_INDEX, _TABLE, _INDEX_COLUMNS, schema=_schema())


# -- downgrade: pieces stored whole again ---------------------------------------------

#: msgpack headers with a length field: first byte to (kind, header length).
_LONG = {
    0xDC: (1, 3),
    0xDD: (1, 5),
    0xDE: (2, 3),
    0xDF: (2, 5),
    0xD9: (3, 2),
    0xDA: (3, 3),
    0xDB: (3, 5),
    0xC4: (4, 2),
    0xC5: (4, 3),
    0xC6: (4, 5),
}


def _header(data: bytes) -> tuple[int, int]:
    """``(kind, length)`` of the msgpack container header at the start of ``data``."""
    b = data[0] if data else -1
    if 0x90 <= b <= 0x9F:
        return 1, 1
    if 0x80 <= b <= 0x8F:
        return 2, 1
    if 0xA0 <= b <= 0xBF:
        return 3, 1
    if b in _LONG:
        return _LONG[b]
    raise RuntimeError("a piece of lgsa_checkpoint_blobs does not start with a header")


def _whole(rows: dict[str, tuple[bytes, str | None]], version: str) -> bytes:
    """The whole bytes of ``version`` from its pieces: the newest piece's header, the
    whole value's body, each piece's appended bytes oldest first."""
    path = [rows[version]]
    while path[-1][1] is not None:
        base = path[-1][1]
        if base not in rows or len(path) > len(rows):
            raise RuntimeError(
                f"a piece of lgsa_checkpoint_blobs extends version {base}, which is missing: "
                "restore the table from a backup before downgrading"
            )
        path.append(rows[base])
    whole = path[-1][0]
    body = [whole[_header(whole)[1] :]]
    for blob, _base in reversed(path[:-1]):
        body.append(blob[_header(blob)[1] :])
    newest = path[0][0]
    return newest[: _header(newest)[1]] + b"".join(body)


def _store_pieces_whole() -> None:
    """Write every piece as its whole value (``base_version`` NULL)."""
    t = sa.table(
        _TABLE,
        sa.column("thread_id", _f.KeyText(_NAME_KEY_LENGTH)),
        sa.column("checkpoint_ns", _f.KeyText(_NAME_KEY_LENGTH)),
        sa.column("channel", _f.KeyText(_CHANNEL_LENGTH)),
        sa.column("version", _f.KeyText(_VERSION_LENGTH)),
        sa.column("blob", _f.BINARY),
        sa.column("base_version", _f.KeyText(_VERSION_LENGTH)),
        sa.column("chain", _f.KeyText(_VERSION_LENGTH)),
        schema=_schema(),
    )
    bind = op.get_bind()
    owners = bind.execute(
        sa.select(t.c.thread_id, t.c.checkpoint_ns, t.c.channel, t.c.chain)
        .where(t.c.base_version.is_not(None))
        .distinct()
    ).all()
    for thread_id, ns, channel, chain in owners:
        where = (t.c.thread_id == thread_id, t.c.checkpoint_ns == ns, t.c.channel == channel)
        found = bind.execute(
            sa.select(t.c.version, t.c.blob, t.c.base_version).where(
                *where, sa.or_(t.c.chain == chain, t.c.version == chain)
            )
        ).all()
        rows = {str(v): (bytes(b or b""), base) for v, b, base in found}
        for version, (_blob, base) in list(rows.items()):
            if base is None:
                continue
            bind.execute(
                sa.update(t)
                .where(*where, t.c.version == version)
                .values(blob=_whole(rows, version), base_version=None)
            )


def downgrade() -> None:
    have = _have()
    if have is not None and "base_version" in have[0]:
        _store_pieces_whole()  # (offline, only the DDL is emitted)
    if have is None or _INDEX in have[1]:
        op.drop_index(_INDEX, _TABLE, schema=_schema())
    for column in reversed(_new_columns()):
        if have is None or column.name in have[0]:
            op.drop_column(_TABLE, column.name, schema=_schema())
