"""SQLAlchemy Core tables of the checkpoint store.

Three tables, prefixed ``lgsa_`` so that they live beside the official savers' tables
(``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``, ``writes``) and an
application's own tables in one database:

* ``lgsa_checkpoints``: one row per checkpoint. The checkpoint itself (without its
  channel values) is serialised by the saver's ``serde``; ``metadata`` is JSON (JSONB on
  PostgreSQL) so that ``list(filter=...)`` runs in the database; ``run_id`` is promoted
  out of the metadata into an indexed column, and so are ``source`` and ``step``, which
  the common filters ``{"source": "loop", "step": n}`` use; ``value_versions`` is the JSON object
  ``{channel: version}`` of the channels whose value this checkpoint holds (the keys of
  its ``channel_values``): what a delta-history walk reads to know where a channel is
  seeded, and what blob clean-up reads to know which blobs are still referenced,
  without decoding any checkpoint. ``inline_values`` holds the small channel values of
  the checkpoint itself (see :mod:`._inline`), so that a typical put is one row and a
  typical read needs no blob lookup; NULL when every value is in the blobs table.
* ``lgsa_checkpoint_blobs``: the larger channel values, keyed by ``(thread_id,
  checkpoint_ns, channel, version)``. A channel whose version did not change between two
  checkpoints is stored once and referenced by both.
* ``lgsa_checkpoint_writes``: pending writes of tasks, keyed by ``(thread_id,
  checkpoint_ns, checkpoint_id, task_id, idx)``. There is no foreign key to the checkpoints
  table: LangGraph may store writes before the checkpoint they belong to.

Every value (channel values, writes, the checkpoint) goes through ``serde``, so an
``EncryptedSerializer`` leaves none of them in clear. Metadata is stored as JSON in clear:
it is what filters query.

The Alembic migrations under ``migrations/`` create exactly these tables; a test compares
the two on every dialect.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = [
    "CHANNEL_MAX_LENGTH",
    "CHECKPOINT_NS_MAX_LENGTH",
    "ID_MAX_LENGTH",
    "RUN_KEY_MAX_LENGTH",
    "THREAD_ID_MAX_LENGTH",
    "VERSION_TABLE",
    "KeyText",
    "blobs",
    "checkpoints",
    "metadata",
    "promoted_source",
    "promoted_step",
    "run_key",
    "writes",
]

#: Longest ``thread_id`` accepted, in characters. Key columns are bounded so that the
#: primary keys fit the smallest index limit of the supported databases (InnoDB: 3072
#: bytes, with 4 bytes a character in utf8mb4).
THREAD_ID_MAX_LENGTH = 255
#: Longest ``checkpoint_ns`` accepted, in characters.
CHECKPOINT_NS_MAX_LENGTH = 255
#: Longest checkpoint id, task id and channel version accepted, in characters.
ID_MAX_LENGTH = 64
#: Longest channel name accepted, in characters.
CHANNEL_MAX_LENGTH = 150
#: Width of the promoted ``run_id`` column; longer run ids are stored as a digest.
RUN_KEY_MAX_LENGTH = 80
#: Width of the promoted ``source`` column (LangGraph writes input/loop/update/fork).
SOURCE_MAX_LENGTH = 64
#: Name of the Alembic version table of this library, distinct from an application's
#: own ``alembic_version``.
VERSION_TABLE = "lgsa_alembic_version"

#: Binary values: BLOB on SQLite, BYTEA on PostgreSQL, LONGBLOB (4 GB) on MySQL/MariaDB,
#: whose plain BLOB stops at 64 kB.
BINARY: TypeEngine[bytes] = LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
#: Metadata documents: JSON, JSONB on PostgreSQL (indexable, key order free).
JSON_DOCUMENT: TypeEngine[Any] = JSON().with_variant(postgresql.JSONB(), "postgresql")


class KeyText(TypeDecorator[str]):
    """Text of an identifier column (thread id, namespace, checkpoint id, channel, ...).

    ``VARCHAR(length)`` everywhere but MySQL/MariaDB, where it is
    ``VARBINARY(4 * length)`` holding UTF-8: ids compare byte for byte there as on SQLite
    and PostgreSQL ("T1" and "t1" are two threads, and so are "t1" and "t1 ", which every
    MySQL ``*_bin`` collation with PAD SPACE would confuse), and the byte length of the
    primary keys fits InnoDB's 3072-byte index limit.

    Args:
        length: Longest value, in characters.
    """

    impl = String
    cache_ok = True

    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.VARBINARY(4 * self.length))
        return dialect.type_descriptor(String(self.length))

    def process_bind_param(self, value: str | None, dialect: Dialect) -> Any:
        if value is not None and dialect.name in ("mysql", "mariadb"):
            return value.encode("utf-8")
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8")
        return value  # type: ignore[no-any-return]


metadata = MetaData()

#: MySQL/MariaDB table options: InnoDB and 4-byte UTF-8; text columns compare by binary
#: collation (ids are :class:`KeyText`, compared as bytes).
MYSQL_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def promoted_source(source: object) -> str | None:
    """The ``source`` column for a ``metadata["source"]``: the string, or None when it is
    not a string of at most :data:`SOURCE_MAX_LENGTH` characters (filters on such values
    fall back to the JSON document)."""
    if isinstance(source, str) and len(source) <= SOURCE_MAX_LENGTH:
        return source
    return None


def promoted_step(step: object) -> int | None:
    """The ``step`` column for a ``metadata["step"]``: the number when it is an integer
    (or an integral float: JSON numbers compare as numbers), None otherwise; booleans are
    not numbers."""
    if isinstance(step, bool):
        return None
    if isinstance(step, float) and step.is_integer() and abs(step) < 2**63:
        return int(step)
    if isinstance(step, int) and -(2**63) <= step < 2**63:
        return step
    return None


def run_key(run_id: object) -> str | None:
    """The value of the indexed ``run_id`` column for a ``metadata["run_id"]``.

    Strings and integers (LangGraph copies an int ``configurable.run_id`` into metadata)
    are stored as text; text longer than :data:`RUN_KEY_MAX_LENGTH` as
    ``"sha256:<hex digest>"``, so that ``delete_for_runs`` finds every run id, whatever
    its length. Anything else is not a run id: None.
    """
    if isinstance(run_id, bool) or not isinstance(run_id, (str, int)):
        return None
    text = str(run_id)
    if len(text) <= RUN_KEY_MAX_LENGTH:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _key(name: str, length: int) -> Column[str]:
    return Column(name, KeyText(length), nullable=False)


checkpoints = Table(
    "lgsa_checkpoints",
    metadata,
    _key("thread_id", THREAD_ID_MAX_LENGTH),
    _key("checkpoint_ns", CHECKPOINT_NS_MAX_LENGTH),
    _key("checkpoint_id", ID_MAX_LENGTH),
    Column("parent_checkpoint_id", KeyText(ID_MAX_LENGTH), nullable=True),
    Column("run_id", KeyText(RUN_KEY_MAX_LENGTH), nullable=True),
    Column("source", KeyText(SOURCE_MAX_LENGTH), nullable=True),
    Column("step", BigInteger, nullable=True),
    Column("type", String(64), nullable=False),
    Column("checkpoint", BINARY, nullable=False),
    Column("metadata", JSON_DOCUMENT, nullable=False),
    Column("value_versions", JSON_DOCUMENT, nullable=False),
    Column("inline_values", BINARY, nullable=True),
    PrimaryKeyConstraint("thread_id", "checkpoint_ns", "checkpoint_id", name="pk_lgsa_checkpoints"),
    Index("ix_lgsa_checkpoints_run_id", "run_id"),
    Index("ix_lgsa_checkpoints_checkpoint_id", "checkpoint_id", "thread_id", "checkpoint_ns"),
    Index("ix_lgsa_checkpoints_source_step", "source", "step"),
    **MYSQL_TABLE_OPTIONS,
)

blobs = Table(
    "lgsa_checkpoint_blobs",
    metadata,
    _key("thread_id", THREAD_ID_MAX_LENGTH),
    _key("checkpoint_ns", CHECKPOINT_NS_MAX_LENGTH),
    _key("channel", CHANNEL_MAX_LENGTH),
    _key("version", ID_MAX_LENGTH),
    Column("type", String(64), nullable=False),
    Column("blob", BINARY, nullable=True),
    PrimaryKeyConstraint(
        "thread_id", "checkpoint_ns", "channel", "version", name="pk_lgsa_checkpoint_blobs"
    ),
    **MYSQL_TABLE_OPTIONS,
)

writes = Table(
    "lgsa_checkpoint_writes",
    metadata,
    _key("thread_id", THREAD_ID_MAX_LENGTH),
    _key("checkpoint_ns", CHECKPOINT_NS_MAX_LENGTH),
    _key("checkpoint_id", ID_MAX_LENGTH),
    _key("task_id", ID_MAX_LENGTH),
    Column("idx", Integer, nullable=False),
    Column("task_path", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("type", String(64), nullable=False),
    Column("blob", BINARY, nullable=True),
    PrimaryKeyConstraint(
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "idx",
        name="pk_lgsa_checkpoint_writes",
    ),
    **MYSQL_TABLE_OPTIONS,
)
