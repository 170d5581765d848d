"""Thread ids and namespaces longer than an index holds (``thread_id_full``,
``checkpoint_ns_full``).

The key columns keep their width (255 characters); a longer name is keyed by
``"lgsa:sha256:" + sha256(name)`` and its full text is kept in the new nullable columns of
``lgsa_checkpoints`` (see :func:`name_key`). Rows of
revision 0002 keep their keys, except the rare name that starts with that marker: it is
re-keyed by its digest in the three tables, its text moved to the new column, so that no
name can be taken for another's digest.

The downgrade moves such names back; it refuses, changing nothing, when a name longer
than 255 characters is stored (revision 0002 cannot hold it: delete those threads first).

Revision ID: 0003_long_names
Revises: 0002_inline_values
Create Date: 2026-12-01
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from alembic import context, op
from alembic.util import CommandError
from sqlalchemy.engine import Dialect
from sqlalchemy.types import BLOB, TypeEngine

revision: str = "0003_long_names"
down_revision: str | None = "0002_inline_values"
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

#: Width of the key columns ``thread_id`` and ``checkpoint_ns``, in characters.
NAME_KEY_LENGTH = 255
#: Prefix of a digest key; a name that starts with it is always keyed by its digest.
NAME_KEY_MARKER = "lgsa:sha256:"


class FullName(_f.Utf8Text):
    """The full text of a long name (``<name>_full``): TEXT, a BLOB of UTF-8 on
    MySQL/MariaDB."""

    impl = sa.Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in _f.MYSQL_DIALECTS:
            return dialect.type_descriptor(BLOB())
        return sa.Text()  # not adapted: psycopg's String adaptation would render VARCHAR


def name_key(name: str) -> str:
    """The key of a thread id or namespace: the name itself when it is at most
    :data:`NAME_KEY_LENGTH` characters and does not start with :data:`NAME_KEY_MARKER`,
    else the marker and the hex SHA-256 of its UTF-8 text."""
    if len(name) <= NAME_KEY_LENGTH and not name.startswith(NAME_KEY_MARKER):
        return name
    return NAME_KEY_MARKER + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


_CHECKPOINTS = "lgsa_checkpoints"
_TABLES = (_CHECKPOINTS, "lgsa_checkpoint_blobs", "lgsa_checkpoint_writes")
_NAMES = ("thread_id", "checkpoint_ns")


def _schema() -> str | None:
    return op.get_context().version_table_schema


def _columns() -> set[str]:
    # DDL is not transactional on MySQL/MariaDB: a failed run may have added a column
    # already, so each step checks first.
    if context.is_offline_mode():
        return set()
    columns = sa.inspect(op.get_bind()).get_columns(_CHECKPOINTS, schema=_schema())
    return {column["name"] for column in columns}


def _table(name: str, *, full: bool = False) -> sa.TableClause:
    # Raw key columns (plain KeyText: no name-to-key mapping on bind).
    columns = [sa.column(n, KeyText(NAME_KEY_LENGTH)) for n in _NAMES]
    if full:
        columns += [sa.column(f"{n}_full", FullName()) for n in _NAMES]
    return sa.table(name, *columns, schema=_schema())


def _rekey(name: str, old: str, new: str) -> None:
    bind = op.get_bind()
    for table_name in _TABLES:
        t = _table(table_name)
        bind.execute(sa.update(t).where(t.c[name] == old).values({name: new}))


def upgrade() -> None:
    have = _columns()
    for name in _NAMES:
        if f"{name}_full" not in have:
            op.add_column(
                _CHECKPOINTS,
                sa.Column(f"{name}_full", FullName(), nullable=True),
                schema=_schema(),
            )
    if context.is_offline_mode():
        op.execute(
            "-- lgsa: run this upgrade online (alembic upgrade) when a thread_id or "
            f"checkpoint_ns starts with {NAME_KEY_MARKER!r}: such rows are re-keyed in Python"
        )
        return
    bind = op.get_bind()
    checkpoints = _table(_CHECKPOINTS, full=True)
    for name in _NAMES:
        found: set[str] = set()
        for table_name in _TABLES:
            t = _table(table_name)
            column = t.c[name]
            rows = bind.execute(
                sa.select(column).where(column.like(NAME_KEY_MARKER + "%")).distinct()
            )
            found.update(str(r[0]) for r in rows)
        for old in sorted(found):
            new = name_key(old)
            if new == old:
                continue
            # The text first, while the rows are still found by their old key.
            bind.execute(
                sa.update(checkpoints)
                .where(checkpoints.c[name] == old)
                .values({f"{name}_full": old})
            )
            _rekey(name, old, new)


def downgrade_refusal(bind: sa.Connection, schema: str | None) -> str | None:
    """Why this revision cannot be downgraded on ``bind`` (a stored name longer than
    revision 0002 holds), or None. Called by ``downgrade`` and, before any step runs, by
    :func:`langgraph.checkpoint.sqlalchemy.migrate.downgrade` (MySQL/MariaDB commit each
    DDL statement: a refusal midway would leave the database between revisions)."""
    columns = {c["name"] for c in sa.inspect(bind).get_columns(_CHECKPOINTS, schema=schema)}
    for name in _NAMES:
        if f"{name}_full" not in columns:
            continue
        # Only long names and marked ones have a full text: few rows. Lengths are
        # counted here, in characters (MySQL's LENGTH counts bytes).
        full = sa.column(f"{name}_full", FullName())
        stmt = sa.select(full).select_from(sa.table(_CHECKPOINTS, full, schema=schema))
        for (text,) in bind.execute(stmt.where(full.is_not(None)).distinct()):
            if len(text) <= NAME_KEY_LENGTH:
                continue
            return (
                f"cannot downgrade below 0003_long_names: a {name} of {len(text)} "
                f"characters is stored (it starts {text[:40]!r}); revision "
                f"0002_inline_values holds at most {NAME_KEY_LENGTH}. Delete those "
                "threads first (saver.delete_thread) or stay at this revision."
            )
    return None


def downgrade() -> None:
    if context.is_offline_mode():
        op.execute(
            "-- lgsa: run this downgrade online (alembic downgrade): names kept in "
            "thread_id_full/checkpoint_ns_full are moved back into the key columns in Python"
        )
    elif _columns() >= {f"{n}_full" for n in _NAMES}:
        bind = op.get_bind()
        why = downgrade_refusal(bind, _schema())
        if why is not None:
            # migrate.downgrade() asks downgrade_refusal() before any step and raises the
            # package's DowngradeRefusedError; here (the alembic tool, or data written
            # since) Alembic's own error: the tool prints it as one "FAILED:" line.
            raise CommandError(why)
        checkpoints = _table(_CHECKPOINTS, full=True)
        moves: list[tuple[str, str, str]] = []
        for name in _NAMES:
            key, full = checkpoints.c[name], checkpoints.c[f"{name}_full"]
            rows = bind.execute(sa.select(key, full).where(full.is_not(None)).distinct())
            moves += [(name, str(stored), str(text)) for stored, text in rows]
        for name, stored, text in moves:
            _rekey(name, stored, text)
    for name in _NAMES:
        if context.is_offline_mode() or f"{name}_full" in _columns():
            op.drop_column(_CHECKPOINTS, f"{name}_full", schema=_schema())
