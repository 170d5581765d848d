"""Reading an official LangGraph store: a ``SqliteStore`` file or a ``PostgresStore``
database, for :func:`.transfer.copy_store`.

Their tables ``store`` (``prefix``, ``key``, ``value``, ``created_at``, ``updated_at``,
``expires_at``, ``ttl_minutes``) and, when present, ``store_vectors`` (``prefix``,
``key``, ``field_name``, ``embedding``) are read with SQLAlchemy Core through
:class:`~sqlalchemy.Table` objects declared here for the columns found: untyped, so the
driver's values come as they are and are checked here (no SQL text, no official store
object, no pickle: the rows are data). Rows come in ``(prefix, key)`` order, a page at a
time (keyset paging: a page costs the same at any depth).

Each row becomes a :class:`~langgraph.store.sqlalchemy.StoredItem` (:class:`SourceRow`):
the namespace text ``"a.b.c"`` split on ``"."``; the value JSON text (``json.loads``, NaN
and infinities refused) that must be an object our store accepts; times read as UTC (a
naive SQLite ``CURRENT_TIMESTAMP`` text is UTC; PostgreSQL's read as seconds since the
epoch, so that ``'infinity'`` is a row's value and not the driver's error);
``ttl_minutes`` kept up to the store's cap (4,000,000,000 minutes). A row that is not
such an item carries the reason instead.

Sizes: a value larger than the copy's cap (:data:`MAX_VALUE_BYTES` of JSON text by
default) is not read at all (its size is taken in SQL, the value replaced by NULL), and
a page holds at most :data:`PAGE_BYTES` of values: each page first reads its rows' keys
and sizes, then the values of the rows that fit. Embeddings: ``SqliteStore``'s little-endian float32
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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Literal

from langgraph.checkpoint.sqlalchemy._codec.canonical import MAX_DEPTH, canonical_json
from langgraph.checkpoint.sqlalchemy._codec.display import shown_url
from langgraph.checkpoint.sqlalchemy._engine.engines import source_url
from langgraph.checkpoint.sqlalchemy.errors import UnknownSourceError
from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy._loading import MAX_TTL_MINUTES, StoredItem
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    LargeBinary,
    MetaData,
    Table,
    Text,
    and_,
    case,
    cast,
    create_engine,
    extract,
    func,
    inspect,
    or_,
    select,
)
from sqlalchemy.pool import NullPool

__all__ = [
    "BATCH",
    "MAX_VALUE_BYTES",
    "PAGE_BYTES",
    "SourceRow",
    "StoreSource",
    "StoreSourceKind",
    "open_store_source",
]

_BIG_ENDIAN = sys.byteorder == "big"

#: Rows read (and items written) a page: one transaction of the target each.
BATCH = 500
#: Largest value copied, in bytes of its JSON text: a larger one is rejected unread.
MAX_VALUE_BYTES = 16 * 1024 * 1024
#: Most bytes of values a page reads (a page holds one row at least).
PAGE_BYTES = 32 * 1024 * 1024
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

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

    def pages(
        self,
        size: int = BATCH,
        *,
        max_value_bytes: int = MAX_VALUE_BYTES,
        page_bytes: int = PAGE_BYTES,
    ) -> Iterator[list[SourceRow]]:
        """The rows in ``(prefix, key)`` order, read as items: ``size`` rows a page at
        most, and ``page_bytes`` of values (one row at least); a value over
        ``max_value_bytes`` is not read (its row is rejected)."""
        s = self.store.c
        postgres = self.kind == "postgres"
        # SQLite: the value's bytes, so that text that is not UTF-8 is the row's fault.
        value = cast(s.value, Text) if postgres else cast(s.value, LargeBinary)
        length = func.octet_length(value) if postgres else func.length(value)
        fits = case((length <= max_value_bytes, value), else_=None)
        columns = [s.prefix, s.key, length.label("size"), fits.label("value")]
        for name in (n for n in _OPTIONAL if n in s):
            timed = postgres and name != "ttl_minutes"  # seconds: 'infinity' is a number
            columns.append(extract("epoch", s[name]).label(name) if timed else s[name])
        after: tuple[Any, Any] | None = None
        while True:
            with self.engine.connect() as conn:
                count = _fitting(conn, self.store, after, size, length, max_value_bytes, page_bytes)
                if not count:
                    return
                stmt = select(*columns).order_by(s.prefix, s.key).limit(count)
                if after is not None:
                    stmt = stmt.where(_after(s.prefix, s.key, after))
                rows = [r._mapping for r in conn.execute(stmt)]
                if not rows:
                    return
                vectors = self._vectors(conn, rows[0], rows[-1])
            after = (rows[-1]["prefix"], rows[-1]["key"])
            parse = _parse_epoch if postgres else _parse
            yield [parse(r, vectors.get((r["prefix"], r["key"])), max_value_bytes) for r in rows]

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


def _fitting(
    conn: Connection,
    store: Table,
    after: tuple[Any, Any] | None,
    size: int,
    length: Any,
    cap: int,
    budget: int,
) -> int:
    """How many of the next ``size`` rows after ``after`` the next page reads: as many
    as fit in ``budget`` bytes of values (those over ``cap`` are not read), one at
    least; 0 when no row is left."""
    s = store.c
    stmt = select(length).order_by(s.prefix, s.key).limit(size)
    if after is not None:
        stmt = stmt.where(_after(s.prefix, s.key, after))
    sizes: Sequence[Any] = conn.execute(stmt).scalars().all()
    total = 0
    for n, found in enumerate(sizes):
        total += found if found is not None and found <= cap else 0
        if total > budget and n:
            return n
    return len(sizes)


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
    try:
        return when.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is in year 0 in UTC
        raise ValueError(f"{raw!r} is out of range in UTC") from None


def _epoch_time(raw: Any) -> datetime | None:
    """A time read as seconds since the epoch (PostgreSQL's ``EXTRACT(epoch ...)``),
    to the microsecond.

    Raises:
        ValueError: Not a number, ``infinity``, or out of a datetime's range.
    """
    if raw is None:
        return None
    if not isinstance(raw, (Decimal, float, int)) or isinstance(raw, bool):
        raise ValueError(f"a time is a timestamp, not {type(raw).__name__}")
    if not math.isfinite(raw):
        raise ValueError(f"{str(raw).lower()} is not a time this store keeps")
    try:
        return _EPOCH + timedelta(microseconds=round(Decimal(str(raw)) * 1_000_000))
    except OverflowError:
        raise ValueError(f"{raw} seconds since 1970 is out of range") from None


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
    if raw > MAX_TTL_MINUTES:
        raise ValueError(f"ttl_minutes {raw!r} is above the store's {MAX_TTL_MINUTES:,}")
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


def _column(time: Any, row: Any, name: str) -> datetime | None:
    """Time column ``name`` of ``row`` read by ``time``; its error names the column."""
    try:
        return time(row.get(name))  # type: ignore[no-any-return]
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


def _parse_epoch(row: Any, vectors: dict[str, list[float]] | None, cap: int) -> SourceRow:
    """:func:`_parse` for a row whose times were read as seconds since the epoch."""
    return _parse(row, vectors, cap, _epoch_time)


def _parse(
    row: Any, vectors: dict[str, list[float]] | None, cap: int, time: Any = _time
) -> SourceRow:
    prefix, key = row["prefix"], row["key"]
    shown_prefix, shown_key = str(prefix), str(key)
    try:
        if not isinstance(prefix, str) or not isinstance(key, str):
            raise ValueError("the namespace and key are text")
        namespace = tuple(prefix.split("."))
        namespaces.encode(namespace)
        namespaces.check_key(key)
        if row["size"] is not None and row["size"] > cap:
            raise ValueError(
                f"the value is {row['size']:,} bytes, above the copy's cap of {cap:,} "
                "(--max-value-mb)"
            )
        value = _value(row["value"])
        created, updated, expires = (_column(time, row, c) for c in _OPTIONAL[:3])
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
        raise UnknownSourceError(f"{shown_url(url)!r} is a {found} database, not {kind}")
    engine = create_engine(sync_url, poolclass=NullPool)
    try:
        store, vectors = _declare(engine, schema)
        yield StoreSource(found, engine, store, vectors)
    finally:
        engine.dispose()
