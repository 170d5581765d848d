"""SQLAlchemy Core tables of the checkpoint store (one cohesive piece: the tables, their
column types and the rules of their key columns, which the migrations mirror).

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
  the checkpoint itself (at most ``inline_limit`` bytes each), so that a typical put is
  one row and a typical read needs no blob lookup; NULL when every value is in the blobs
  table.
* ``lgsa_checkpoint_blobs``: the larger channel values, keyed by ``(thread_id,
  checkpoint_ns, channel, version)``. A channel whose version did not change between two
  checkpoints is stored once and referenced by both. A version whose bytes extend those
  of an earlier version of the channel (a list that grew at its end) is stored as a
  *piece*: the appended bytes and a reference to that version (``base_version``,
  ``chain``, ``size``; see ``_codec/pieces.py``).
* ``lgsa_checkpoint_writes``: pending writes of tasks, keyed by ``(thread_id,
  checkpoint_ns, checkpoint_id, task_id, idx)``. There is no foreign key to the checkpoints
  table: LangGraph may store writes before the checkpoint they belong to.
* ``lgsa_metadata_index`` and ``lgsa_metadata_keys`` (SQLite, MySQL/MariaDB): the index of
  metadata filters on chosen keys (``metadata_index_keys``); ``lgsa_locks``: lease rows.

``thread_id`` and ``checkpoint_ns`` may be longer than an index can hold (1,000 and 2,000
characters): their key columns hold a *key* (:func:`name_key`), the name itself when it is
short, else a fixed-size digest of it; the checkpoints table keeps the full text of a
digested name in ``thread_id_full``/``checkpoint_ns_full`` (NULL otherwise), which is what
is reported back and compared with the name asked for.

Every value (channel values, writes, the checkpoint) goes through ``serde``, so an
``EncryptedSerializer`` leaves none of them in clear. Metadata is stored as JSON in clear:
it is what filters query.

The Alembic migrations under ``migrations/`` create exactly these tables; a test compares
the two on every dialect.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Double,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    cast,
    type_coerce,
)
from sqlalchemy.dialects.mysql.types import LONGBLOB
from sqlalchemy.dialects.postgresql.json import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.elements import ColumnElement, Label
from sqlalchemy.types import BLOB, VARBINARY, TypeDecorator, TypeEngine

__all__ = [
    "CHANNEL_MAX_LENGTH",
    "CHECKPOINT_ID_INDEX",
    "CHECKPOINT_NS_MAX_LENGTH",
    "ID_MAX_LENGTH",
    "INDEX_KEY_MAX_LENGTH",
    "INDEX_VALUE_MAX_LENGTH",
    "NAME_KEY_LENGTH",
    "NAME_KEY_MARKER",
    "RUN_KEY_MAX_LENGTH",
    "THREAD_ID_MAX_LENGTH",
    "THREAD_INDEX",
    "VERSION_TABLE",
    "FullName",
    "KeyText",
    "NameKey",
    "StoredKey",
    "Undecodable",
    "blobs",
    "checkpoints",
    "full_name",
    "load_json",
    "locks",
    "metadata",
    "metadata_index",
    "metadata_keys",
    "name_key",
    "promoted_source",
    "promoted_step",
    "read_json",
    "run_key",
    "stored_full",
    "utf8_encodable",
    "writes",
]

#: Longest ``thread_id`` accepted, in characters, on every dialect.
THREAD_ID_MAX_LENGTH = 1000
#: Longest ``checkpoint_ns`` accepted, in characters, on every dialect (about 30 levels
#: of nested subgraphs: each adds a node name and a 36-character task id).
CHECKPOINT_NS_MAX_LENGTH = 2000
#: Width of the key columns ``thread_id`` and ``checkpoint_ns``, in characters. They are
#: bounded so that the primary keys fit the smallest index limit of the supported
#: databases (InnoDB: 3072 bytes, with 4 bytes a character in utf8mb4; PostgreSQL: about
#: 2.7 kB a B-tree entry). A longer name is keyed by its digest (:func:`name_key`).
NAME_KEY_LENGTH = 255
#: Prefix of a digest key (:func:`name_key`); a name that starts with it is always
#: keyed by its digest, so that no name is taken for another's digest.
NAME_KEY_MARKER = "lgsa:sha256:"
#: Longest checkpoint id, task id and channel version accepted, in characters.
ID_MAX_LENGTH = 64
#: Longest channel name accepted, in characters.
CHANNEL_MAX_LENGTH = 150
#: Width of the promoted ``run_id`` column; longer run ids are stored as a digest.
RUN_KEY_MAX_LENGTH = 80
#: Width of the promoted ``source`` column (LangGraph writes input/loop/update/fork).
SOURCE_MAX_LENGTH = 64
#: Longest metadata key the saver indexes (:data:`metadata_index`), in characters.
INDEX_KEY_MAX_LENGTH = 40
#: Width of an indexed metadata value (a tagged text: a string as it is, a number as its
#: float); longer values are indexed by their digest.
INDEX_VALUE_MAX_LENGTH = 100
#: Name of the Alembic version table of this library, distinct from an application's
#: own ``alembic_version``.
VERSION_TABLE = "lgsa_alembic_version"
#: The index listings across threads walk newest first (:data:`checkpoints`).
CHECKPOINT_ID_INDEX = "ix_lgsa_checkpoints_checkpoint_id"
#: The index a listing of one thread across its namespaces reads newest first
#: (:data:`checkpoints`, migration 0010).
THREAD_INDEX = "ix_lgsa_checkpoints_thread"

#: Binary values: BLOB on SQLite, BYTEA on PostgreSQL, LONGBLOB (4 GB) on MySQL/MariaDB,
#: whose plain BLOB stops at 64 kB. On MariaDB, migration 0004 makes
#: ``lgsa_checkpoints.checkpoint`` and ``inline_values`` ``LONGBLOB COMPRESSED`` (zlib in the
#: server, as PostgreSQL's TOAST compresses them): uncompressed, a realistic row overflows
#: its InnoDB page and each checkpoint takes a 16 kB overflow page. The Core type stays
#: LONGBLOB (reflection reports the same type; the server compresses transparently).
BINARY: TypeEngine[bytes] = LargeBinary().with_variant(LONGBLOB(), "mysql", "mariadb")
#: Metadata documents: JSON, JSONB on PostgreSQL (indexable, key order free).
JSON_DOCUMENT: TypeEngine[Any] = JSON().with_variant(JSONB(), "postgresql")


def utf8_encodable(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: no lone surrogate (what databases refuse, and
    what a forged row's non-UTF-8 bytes read back as)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _Utf8Text(TypeDecorator[str]):
    """Text stored as UTF-8 bytes on MySQL/MariaDB (binary column types there, compared
    byte for byte), as text elsewhere."""

    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> Any:
        # surrogateescape: a value read back from a forged row (bytes that are not
        # UTF-8, see process_result_value) is bound again as the very same bytes (a BLOB
        # on SQLite, which stores any type in any column). Input text is checked for
        # lone surrogates before it gets here.
        if value is None:
            return value
        if dialect.name in ("mysql", "mariadb"):
            return value.encode("utf-8", "surrogateescape")
        if not utf8_encodable(value):
            return value.encode("utf-8", "surrogateescape")
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        if isinstance(value, (bytes, bytearray)):
            # A forged row may hold bytes that are not UTF-8: read them (as lone
            # surrogates, which the saver reports as a damaged row) rather than fail the
            # whole fetch, so that one row cannot break list() for every other one.
            return bytes(value).decode("utf-8", "surrogateescape")
        return value  # type: ignore[no-any-return]


class KeyText(_Utf8Text):
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
            return dialect.type_descriptor(VARBINARY(4 * self.length))
        return dialect.type_descriptor(String(self.length))


class StoredKey(str):
    """A key (:func:`name_key`) read from a key column: bound again as it is, never
    digested a second time. Not for reporting: the name is ``COALESCE(<name>_full,
    <name>)`` (:func:`full_name`)."""

    __slots__ = ()


def name_key(name: str) -> str:
    """The key of a thread id or namespace: what its key column holds.

    The name itself when it is at most :data:`NAME_KEY_LENGTH` characters and does not
    start with :data:`NAME_KEY_MARKER`; else the marker and the hex SHA-256 of its UTF-8
    text (76 characters). The mapping is one to one (up to SHA-256): a name that looks
    like a digest key is digested too. A :class:`StoredKey` is a key already.

    Args:
        name: The thread id or namespace (at most :data:`CHECKPOINT_NS_MAX_LENGTH`
            characters; the saver checks the limits).

    Returns:
        The key, at most :data:`NAME_KEY_LENGTH` characters.
    """
    if isinstance(name, StoredKey):
        return name
    if len(name) <= NAME_KEY_LENGTH and not name.startswith(NAME_KEY_MARKER):
        return name
    return NAME_KEY_MARKER + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def stored_full(name: str) -> str | None:
    """The ``<name>_full`` column of a name: the name when its key is a digest, else
    None (the key column holds the name itself)."""
    return None if name_key(name) == name else name


def full_name(key: str, full: str | None) -> str:
    """The name a row stands for, from its key column and its ``<name>_full`` column
    (plain ``str``, ready to report)."""
    return str(full) if full is not None else str(key)


class NameKey(KeyText):
    """:class:`KeyText` of a ``thread_id``/``checkpoint_ns`` key column: a bound name is
    turned into its key (:func:`name_key`), so that every ``WHERE thread_id = ?`` finds
    the rows of a long name; a value read back is a :class:`StoredKey`."""

    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        key = name_key(value if isinstance(value, str) else str(value))
        return super().process_bind_param(str(key), dialect)

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        text = super().process_result_value(value, dialect)
        return None if text is None else StoredKey(text)


class FullName(_Utf8Text):
    """The full text of a long ``thread_id``/``checkpoint_ns`` (``<name>_full``).

    TEXT, but a BLOB of UTF-8 on MySQL/MariaDB, which then compares byte for byte as
    :class:`KeyText` does there.
    """

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(BLOB())
        return Text()  # not adapted: psycopg's String adaptation would render VARCHAR


class Undecodable:
    """What a JSON column read through :func:`read_json` holds when its stored text is
    not JSON Python can read (a damaged or forged row): invalid JSON, nesting deeper
    than Python's recursion limit, an integer of too many digits.

    Attributes:
        error: Why, for the :class:`~.errors.CheckpointDecodeError` of the row.
    """

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"Undecodable({self.error!r})"


#: The C scanner behind ``json.loads`` (``json.decoder.JSONDecoder().scan_once``):
#: ``(document, end)`` of the JSON document that starts at an index.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def load_json(value: Any) -> Any:
    """The result processor of :class:`JsonRead`: one ``json.loads``, never raising. Text
    that is one document and nothing else (what the store and saver write) is
    parsed by ``json.loads``'s own C scanner directly, without its two Python frames;
    anything else (space around it, bytes, invalid JSON) goes through ``json.loads``,
    which gives the same document or the error."""
    if type(value) is str:
        try:
            document, end = _SCAN(value, 0)
            if end == len(value):
                return document
        except (StopIteration, ValueError, RecursionError):
            pass  # json.loads says why
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        try:
            return json.loads(bytes(value) if isinstance(value, memoryview) else value)
        except RecursionError:
            return Undecodable("JSON nested deeper than Python's recursion limit")
        except (ValueError, TypeError) as e:  # JSONDecodeError, UnicodeDecodeError, ...
            return Undecodable(f"not JSON ({type(e).__name__}: {str(e)[:200]})")
    # None; or a number (SQLite's NUMERIC affinity of a JSON column turns the text "5"
    # into 5); or a document a driver decoded already: as it is, shapes checked later.
    return value


class JsonRead(TypeDecorator[Any]):
    """How the saver reads a JSON column (``metadata``, ``value_versions``): parsed by
    :func:`load_json` in the result processor, which never raises (a forged row's
    text becomes an :class:`Undecodable`), instead of by the JSON type's own processor
    or the driver, whose errors would abort the whole fetch.

    On PostgreSQL the JSONB column is selected ``CAST(... AS TEXT)``: psycopg and
    asyncpg would otherwise parse it in the driver, where a ``RecursionError`` cannot be
    caught per row. Still one parse a value, as before. Read-only: the tables keep their
    column types (:data:`JSON_DOCUMENT`) for writing and filtering.
    """

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())

    def column_expression(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        # Called on the dialect's copy of this type, whose impl is JSONB on PostgreSQL.
        # The text keeps this type, whose result processor parses it.
        if isinstance(self.impl_instance, JSONB):
            return type_coerce(cast(column, Text), JsonRead())
        return column

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        return load_json


def read_json(column: ColumnElement[Any]) -> Label[Any]:
    """``column`` (a JSON column) as the saver reads it: through :class:`JsonRead`,
    labelled with its own name."""
    return type_coerce(column, JsonRead()).label(getattr(column, "name", "json"))


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


def _name(name: str) -> Column[str]:
    return Column(name, NameKey(NAME_KEY_LENGTH), nullable=False)


checkpoints = Table(
    "lgsa_checkpoints",
    metadata,
    _name("thread_id"),
    _name("checkpoint_ns"),
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
    Column("thread_id_full", FullName(), nullable=True),
    Column("checkpoint_ns_full", FullName(), nullable=True),
    PrimaryKeyConstraint("thread_id", "checkpoint_ns", "checkpoint_id", name="pk_lgsa_checkpoints"),
    Index("ix_lgsa_checkpoints_run_id", "run_id"),
    # Newest first across threads (``list(None)``, ``list_threads``' index-only walk);
    # ``step`` and ``source`` in the entry let a filter on them skip non-matching
    # checkpoints without reading their rows (migration 0008).
    Index(
        CHECKPOINT_ID_INDEX,
        "checkpoint_id",
        "thread_id",
        "checkpoint_ns",
        "step",
        "source",
    ),
    # One thread across its namespaces newest first (``list(thread)`` without a
    # namespace): ``checkpoint_id`` follows the thread, which the primary key's order
    # (namespace first) cannot give (migration 0010).
    Index(THREAD_INDEX, "thread_id", "checkpoint_id", "checkpoint_ns"),
    **MYSQL_TABLE_OPTIONS,
)

# PostgreSQL: filters on ``step`` (a rare step is found by index) and on ``step`` and
# ``source``. PostgreSQL only (migration 0008): its DELETE leaves index entries to VACUUM,
# while on SQLite and InnoDB every removed checkpoint is an entry on a page of its own
# step, a scattered page read and written back: at 1,000,000 checkpoints that page comes
# from the disk and ``delete_thread`` and ``prune`` grew 2x with the store. There, a
# filter on ``step`` or ``source`` walks ``ix_lgsa_checkpoints_checkpoint_id`` newest
# first, checking both in its entries.
Index("ix_lgsa_checkpoints_step_source", checkpoints.c.step, checkpoints.c.source).ddl_if(
    dialect="postgresql"
)

# PostgreSQL: metadata filters use this GIN index through containment (``metadata @>
# '{"user_id": "u1"}'``, rechecked by exact JSON equality), for every key. Created on
# PostgreSQL only (``ddl_if``); the other dialects keep :data:`metadata_index`.
Index(
    "ix_lgsa_checkpoints_metadata",
    checkpoints.c.metadata,
    postgresql_using="gin",
    postgresql_ops={"metadata": "jsonb_path_ops"},
).ddl_if(dialect="postgresql")

blobs = Table(
    "lgsa_checkpoint_blobs",
    metadata,
    _name("thread_id"),
    _name("checkpoint_ns"),
    _key("channel", CHANNEL_MAX_LENGTH),
    _key("version", ID_MAX_LENGTH),
    Column("type", String(64), nullable=False),
    Column("blob", BINARY, nullable=True),
    # Pieces (0014, _codec/pieces.py): the version a piece extends (NULL: whole), the whole
    # value's version its chain rests on (NULL before 0014), the length of the value.
    Column("base_version", KeyText(ID_MAX_LENGTH), nullable=True),
    Column("chain", KeyText(ID_MAX_LENGTH), nullable=True),
    Column("size", BigInteger, nullable=True),
    PrimaryKeyConstraint(
        "thread_id", "checkpoint_ns", "channel", "version", name="pk_lgsa_checkpoint_blobs"
    ),
    # The rows of one chain: a read fetches a value's pieces with one condition.
    Index("ix_lgsa_checkpoint_blobs_chain", "thread_id", "checkpoint_ns", "channel", "chain"),
    **MYSQL_TABLE_OPTIONS,
)

writes = Table(
    "lgsa_checkpoint_writes",
    metadata,
    _name("thread_id"),
    _name("checkpoint_ns"),
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

#: The locks of the saver that must hold across a cluster: one row a held lock
#: (``lock_thread`` leases, the MySQL/MariaDB migration lease and ``detect_conflicts``
#: write lock). A row is replicated like any other (Galera certifies two nodes' writes of
#: the same row as a conflict; a synchronous standby keeps a lease across a promotion) and
#: needs no session state (transaction pooling). See
#: :mod:`langgraph.checkpoint.sqlalchemy.dialects.base` (``take_lease``).
locks = Table(
    "lgsa_locks",
    metadata,
    Column("name", String(64), nullable=False),
    Column("owner", String(64), nullable=False),
    # Seconds since the epoch on the database server's clock (the holders' clocks never
    # decide); a lease past it may be taken by another holder.
    Column("expires_at", Double(), nullable=False),
    PrimaryKeyConstraint("name", name="pk_lgsa_locks"),
    **MYSQL_TABLE_OPTIONS,
)

#: SQLite and MySQL/MariaDB: the index of metadata filters, one row a checkpoint and
#: indexed key (:data:`metadata_keys`), kept by ``put``, ``copy_thread``, ``prune`` and
#: the deletes. ``value`` is a coarse key of the metadata value (numbers by their float,
#: each list or dict one value, long values by their SHA-256): equal
#: JSON values (``1`` and ``1.0``, dicts in any key order) have the same one, so the rows
#: found for a filter are a superset of the matches, which the exact JSON condition then
#: checks. The primary key leads with ``(key, value)``: a filter reads its matches only.
#: Unused on PostgreSQL, whose GIN index serves every key.
metadata_index = Table(
    "lgsa_metadata_index",
    metadata,
    _key("key", INDEX_KEY_MAX_LENGTH),
    _key("value", INDEX_VALUE_MAX_LENGTH),
    _key("checkpoint_id", ID_MAX_LENGTH),
    _name("thread_id"),
    _name("checkpoint_ns"),
    PrimaryKeyConstraint(
        "key", "value", "checkpoint_id", "thread_id", "checkpoint_ns", name="pk_lgsa_metadata_index"
    ),
    Index("ix_lgsa_metadata_index_thread", "thread_id", "checkpoint_ns", "checkpoint_id"),
    # SQLite: the rows live in the primary key's B-tree (as InnoDB's do), one B-tree
    # fewer for put to write.
    sqlite_with_rowid=False,
    **MYSQL_TABLE_OPTIONS,
)

#: The metadata keys whose :data:`metadata_index` rows are complete (every checkpoint
#: holding the key has its row): a filter on a key uses the index only when it is listed
#: here and the saver indexes it. Migration 0006 lists the default keys (``thread_id``,
#: ``user_id``, ``assistant_id``, ``graph_id``) after indexing the stored checkpoints;
#: :meth:`.SQLAlchemySaver.reindex_metadata` adds others.
metadata_keys = Table(
    "lgsa_metadata_keys",
    metadata,
    _key("key", INDEX_KEY_MAX_LENGTH),
    PrimaryKeyConstraint("key", name="pk_lgsa_metadata_keys"),
    **MYSQL_TABLE_OPTIONS,
)
