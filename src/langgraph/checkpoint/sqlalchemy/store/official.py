"""Reading an official LangGraph store: a ``SqliteStore`` file or a ``PostgresStore``
database, for :func:`.transfer.copy_store`.

Their tables ``store`` (``prefix``, ``key``, ``value``, ``created_at``, ``updated_at``,
``expires_at``, ``ttl_minutes``) and, when present, ``store_vectors`` (``prefix``,
``key``, ``field_name``, ``embedding``) are read with SQLAlchemy Core through
:class:`~sqlalchemy.Table` objects declared here for the columns found: untyped, so the
driver's values come as they are and are checked here (no SQL text, no official store
object, no pickle: the rows are data). Rows come in ``(prefix, key)`` order, a page at a
time (keyset paging: a page costs the same at any depth).

Each row becomes a :class:`~._loading.StoredItem` (:class:`SourceRow`): the namespace
text ``"a.b.c"`` split on ``"."``; the value JSON text (``json.loads``, NaN and
infinities refused) that must be an object our store accepts; times read as UTC (a naive
SQLite ``CURRENT_TIMESTAMP`` text is UTC); ``ttl_minutes`` kept. A row that is not such
an item carries the reason instead. Embeddings: ``SqliteStore``'s little-endian float32
blobs (the ``sqlite-vec`` format), or ``PostgresStore``'s pgvector column read as its
text form ``[1,2,3]`` (no pgvector package needed); one that is neither is dropped (the
target recomputes it).
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    Table,
    Text,
    and_,
    cast,
    create_engine,
    func,
    inspect,
    or_,
    select,
)
from sqlalchemy.pool import NullPool

from .._canonical import MAX_DEPTH, canonical_json
from .._display import masked_text
from .._sources import source_url
from ..errors import UnknownSourceError
from . import namespaces
from ._loading import StoredItem

__all__ = ["BATCH", "SourceRow", "StoreSource", "StoreSourceKind", "open_store_source"]

_BIG_ENDIAN = sys.byteorder == "big"

#: Rows read (and items written) a page: one transaction of the target each.
BATCH = 500

StoreSourceKind = Literal["auto", "sqlite", "postgres"]

#: Columns of the official ``store`` table: needed, then optional (older migrations).
_NEEDED = ("prefix", "key", "value")
_OPTIONAL = ("created_at", "updated_at", "expires_at", "ttl_minutes")
_VECTOR_COLUMNS = ("prefix", "key", "field_name", "embedding")


@dataclass(frozen=True)
class SourceRow:
    """One source row read: the item, or why it is not one.

    Attributes:
        prefix: The row's ``prefix`` as read (namespace labels joined by ``"."``).
        key: The row's key as read.
        item: The item, or None when the row is not one.
        reason: Why it is not one.
    """

    prefix: str
    key: str
    item: StoredItem | None
    reason: str = ""


class StoreSource:
    """An official store's tables, open for reading (see :func:`open_store_source`).

    Attributes:
        kind: ``sqlite`` or ``postgres``.
        engine: The engine reading them.
        store: The ``store`` table (the columns found).
        vectors: The ``store_vectors`` table, or None when there is none.
    """

    def __init__(self, kind: str, engine: Engine, store: Table, vectors: Table | None) -> None:
        self.kind = kind
        self.engine = engine
        self.store = store
        self.vectors = vectors

    def count(self) -> int:
        """The number of rows of the ``store`` table."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(self.store)).scalar_one())

    def pages(self, size: int = BATCH) -> Iterator[list[SourceRow]]:
        """The rows in ``(prefix, key)`` order, ``size`` a page, read as items."""
        s = self.store.c
        value = cast(s.value, Text) if self.kind == "postgres" else s.value
        columns = [s.prefix, s.key, value.label("value")]
        columns += [s[name] for name in _OPTIONAL if name in s]
        after: tuple[Any, Any] | None = None
        while True:
            stmt = select(*columns).order_by(s.prefix, s.key).limit(size)
            if after is not None:
                stmt = stmt.where(_after(s.prefix, s.key, after))
            with self.engine.connect() as conn:
                rows = [r._mapping for r in conn.execute(stmt)]
                if not rows:
                    return
                vectors = self._vectors(conn, rows[0], rows[-1])
            after = (rows[-1]["prefix"], rows[-1]["key"])
            yield [_parse(r, vectors.get((r["prefix"], r["key"]))) for r in rows]
            if len(rows) < size:
                return

    def _vectors(
        self, conn: Connection, first: Any, last: Any
    ) -> dict[tuple[Any, Any], dict[str, list[float]]]:
        """The embeddings of the rows from ``first`` to ``last`` (one key range)."""
        if self.vectors is None:
            return {}
        v = self.vectors.c
        embedding = cast(v.embedding, Text) if self.kind == "postgres" else v.embedding
        lo, hi = (first["prefix"], first["key"]), (last["prefix"], last["key"])
        stmt = select(v.prefix, v.key, v.field_name, embedding.label("embedding")).where(
            or_(v.prefix > lo[0], and_(v.prefix == lo[0], v.key >= lo[1])),
            or_(v.prefix < hi[0], and_(v.prefix == hi[0], v.key <= hi[1])),
        )
        out: dict[tuple[Any, Any], dict[str, list[float]]] = {}
        for prefix, key, name, raw in conn.execute(stmt):
            vector = _vector(raw)
            if vector is not None and isinstance(name, str):
                out.setdefault((prefix, key), {})[name] = vector
        return out


def _after(prefix: Any, key: Any, last: tuple[Any, Any]) -> Any:
    return or_(prefix > last[0], and_(prefix == last[0], key > last[1]))


def _time(raw: Any) -> datetime | None:
    """A source time as an aware UTC datetime (naive times are UTC).

    Raises:
        ValueError: Not a time.
    """
    if raw is None:
        return None
    if isinstance(raw, datetime):
        when = raw
    elif isinstance(raw, str):
        when = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    else:
        raise ValueError(f"a time is text, not {type(raw).__name__}")
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _value(raw: Any) -> dict[str, Any]:
    """The JSON object of a ``value`` column (text, or UTF-8 bytes on SQLite).

    Raises:
        ValueError: Not JSON text, or not an object, or a value our store refuses.
    """
    if isinstance(raw, (bytes, bytearray, memoryview)):
        text = bytes(raw).decode("utf-8")
    elif isinstance(raw, str):
        text = raw
    else:
        raise ValueError(f"the value is {type(raw).__name__}, not JSON text")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("the value nests too deep") from None
    except ValueError as e:
        raise ValueError(f"the value is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise ValueError(f"the value is a JSON {type(value).__name__}, not an object")
    try:
        checked = canonical_json(value, depth=MAX_DEPTH)
    except TypeError as e:
        raise ValueError(str(e)) from None
    return checked  # type: ignore[no-any-return]


def _ttl(raw: Any) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise ValueError(f"ttl_minutes {raw!r} is not a number")
    if raw <= 0:
        raise ValueError(f"ttl_minutes {raw!r} is not positive")
    return float(raw)


def _vector(raw: Any) -> list[float] | None:
    """A source embedding: a float32 little-endian blob (SqliteStore) or pgvector's text
    ``[1,2,3]`` (PostgresStore); None when it is neither or holds NaN or an infinity
    (then the target recomputes it)."""
    values: list[float]
    if isinstance(raw, (bytes, bytearray, memoryview)):
        data = bytes(raw)
        if not data or len(data) % 4:
            return None
        floats = array("f")
        floats.frombytes(data)
        if _BIG_ENDIAN:
            floats.byteswap()
        values = floats.tolist()
    elif isinstance(raw, str):
        try:
            parsed = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            return None
        # type() and not isinstance(): a bool is not a number here
        if not isinstance(parsed, list) or not all(type(v) in (int, float) for v in parsed):
            return None
        values = [float(v) for v in parsed]
    else:
        return None
    # One sum finds any NaN or infinity (NaN propagates; inf - inf is NaN). It may also
    # overflow on huge finite values: such a vector is recomputed, which is harmless.
    if not values or not math.isfinite(sum(values)):
        return None
    return values


def _parse(row: Any, vectors: dict[str, list[float]] | None) -> SourceRow:
    prefix, key = row["prefix"], row["key"]
    shown_prefix, shown_key = str(prefix), str(key)
    try:
        if not isinstance(prefix, str) or not isinstance(key, str):
            raise ValueError("the namespace and key are text")
        namespace = tuple(prefix.split("."))
        namespaces.encode(namespace)
        namespaces.check_key(key)
        value = _value(row["value"])
        created = _time(row.get("created_at"))
        updated = _time(row.get("updated_at"))
        expires = _time(row.get("expires_at"))
        ttl = _ttl(row.get("ttl_minutes"))
    except (ValueError, TypeError) as e:  # InvalidNamespaceError is a ValueError
        return SourceRow(shown_prefix, shown_key, None, str(e) or type(e).__name__)
    # A missing time (a row written outside the official store) takes the other one.
    created = created or updated or datetime.now(timezone.utc)
    updated = updated or created
    item = StoredItem(namespace, key, value, created, updated, expires, ttl, vectors)
    return SourceRow(prefix, key, item)


def _source_url(url: str) -> tuple[Any, str]:
    """The sync URL to read ``url`` with (a SQLite file read-only) and its dialect."""
    sync_url = source_url(url)
    backend = sync_url.get_backend_name()
    if backend == "sqlite":
        return sync_url, "sqlite"
    if backend == "postgresql":
        return sync_url, "postgres"
    raise UnknownSourceError(
        f"a {backend} database is not an official LangGraph store: give a SqliteStore "
        "file or a PostgresStore database"
    )


def _declare(engine: Engine, schema: str | None) -> tuple[Table, Table | None]:
    """The ``store`` and ``store_vectors`` tables with the columns found (untyped: the
    driver's values are read as they are and checked here).

    Raises:
        UnknownSourceError: No ``store`` table with the official store's columns.
    """
    insp = inspect(engine)
    names = set(insp.get_table_names(schema=schema))
    if "store" not in names:
        raise UnknownSourceError(
            "no table 'store' of an official SqliteStore or PostgresStore found (tables "
            f"present: {', '.join(sorted(names)) or 'none'})."
        )
    md = MetaData(schema=schema)

    def columns(table: str) -> set[str]:
        with warnings.catch_warnings():  # pgvector's type, unknown to SQLAlchemy
            warnings.simplefilter("ignore")
            return {str(c["name"]) for c in insp.get_columns(table, schema=schema)}

    found = columns("store")
    lacking = [c for c in _NEEDED if c not in found]
    if lacking:
        raise UnknownSourceError(
            f"table 'store' lacks the columns {', '.join(lacking)} of an official "
            "LangGraph store: it is not one"
        )
    store = Table("store", md, *(Column(c) for c in (*_NEEDED, *_OPTIONAL) if c in found))
    vectors = None
    if "store_vectors" in names and set(_VECTOR_COLUMNS) <= columns("store_vectors"):
        vectors = Table("store_vectors", md, *(Column(c) for c in _VECTOR_COLUMNS))
    return store, vectors


@contextmanager
def open_store_source(
    url: str, *, kind: StoreSourceKind = "auto", schema: str | None = None
) -> Iterator[StoreSource]:
    """Open an official LangGraph store for reading.

    Args:
        url: A ``SqliteStore`` file (path or ``sqlite:///`` URL; opened read-only) or a
            ``PostgresStore`` database URL.
        kind: ``sqlite`` or ``postgres`` to insist on one; ``auto`` (default) goes by
            the URL.
        schema: PostgreSQL schema of the official tables (default: the search path).

    Yields:
        The source.

    Raises:
        UnknownSourceError: No such file, not a SQLite or PostgreSQL URL, not the kind
            asked for, or no official ``store`` table there.
    """
    sync_url, found = _source_url(url)
    if kind != "auto" and kind != found:
        raise UnknownSourceError(f"{masked_text(str(url))!r} is a {found} database, not {kind}")
    engine = create_engine(sync_url, poolclass=NullPool)
    try:
        store, vectors = _declare(engine, schema)
        yield StoreSource(found, engine, store, vectors)
    finally:
        engine.dispose()
