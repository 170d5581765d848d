"""pgvector on PostgreSQL: the store's native vector column and its HNSW index.

The column ``vec`` is pgvector's ``vector`` without a fixed size (an index config's
``dims`` may change; rows of another size stay, unsearched), filled at every write from
the same packed float32 bytes as the portable ``embedding`` column. The index is an
expression index on ``vec::vector(dims)`` (pgvector indexes only vectors of one size),
partial on ``vector_dims(vec) = dims``, with the operator class of the index config's
distance, as ``PostgresStore`` builds its own (``vector_cosine_ops``, ``vector_l2_ops``,
``vector_ip_ops``); ``CREATE INDEX CONCURRENTLY``, so writes go on while it builds, and an
index left invalid by an interrupted build is dropped and built again.

The DDL is text: SQLAlchemy has no construct for ``CREATE EXTENSION`` or ``ADD COLUMN``.
It names only this module's identifiers (quoted by the dialect) and integers of the
checked index config, never user input.
"""

from __future__ import annotations

import logging
import math
import re
import sys
from array import array
from typing import Any

from langgraph.checkpoint.sqlalchemy.dialects._ann import AnnParams, VectorIndex
from langgraph.checkpoint.sqlalchemy.dialects._sqlalchemy_private import copy_column
from sqlalchemy import (
    Column,
    Connection,
    Float,
    Index,
    MetaData,
    Select,
    Table,
    Text,
    and_,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    text,
    true,
    tuple_,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import UserDefinedType

__all__ = [
    "FILL_BATCH",
    "HNSW_MAX_DIMS",
    "HNSW_MAX_HALF_DIMS",
    "UNFILLED",
    "PgVector",
    "VectorType",
]

log = logging.getLogger("langgraph.store.sqlalchemy")

#: pgvector's largest ``vector`` an HNSW index takes; larger ones are scored without it.
HNSW_MAX_DIMS = 2000
#: The same for ``halfvec`` (float16).
HNSW_MAX_HALF_DIMS = 4000
#: Rows filled a statement when the column is added to a table that has vectors.
FILL_BATCH = 1000
#: The partial index of the rows whose native column is not filled yet.
UNFILLED = "ix_lgsa_store_vectors_unfilled"

_OPERATORS = {"cosine": "<=>", "l2": "<->", "inner_product": "<#>"}
_OPCLASSES = {"cosine": "cosine_ops", "l2": "l2_ops", "inner_product": "ip_ops"}
_SHORT = {"cosine": "cos", "l2": "l2", "inner_product": "ip"}
#: The end of an index name after ``..._m``: its ``m`` and ``ef_construction``.
_BUILT = re.compile(r"[0-9]+_ef[0-9]+")


def _text_of(blob: bytes) -> str:
    """pgvector's text form (``[1.5,2,...]``) of little-endian float32 bytes."""
    values = array("f")
    values.frombytes(bytes(blob)[: len(blob) - len(blob) % 4])
    if sys.byteorder == "big":
        values.byteswap()
    return "[" + ",".join(map(repr, values)) + "]"


class _SizedVector(UserDefinedType[Any]):
    """``vector``, ``vector(dims)`` or ``halfvec(dims)`` as a cast's target."""

    cache_ok = True

    def __init__(self, dims: int | None = None, kind: str = "vector") -> None:
        self.dims = dims
        self.kind = "halfvec" if kind == "halfvec" else "vector"

    def get_col_spec(self, **kw: Any) -> str:
        return self.kind if self.dims is None else f"{self.kind}({int(self.dims)})"


class VectorType(UserDefinedType[bytes]):
    """pgvector's ``vector``, bound from little-endian float32 bytes (the store's packed
    embeddings) as its text form, cast in the statement (every driver sends text)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "vector"

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: bytes | None) -> str | None:
            return None if value is None else _text_of(value)

        return process

    def bind_expression(self, bindvalue: Any) -> Any:
        return cast(bindvalue, _SizedVector())


def _schema(connection: Connection, table: Table) -> str | None:
    """The schema ``table`` is in on this connection (its ``schema_translate_map``)."""
    translate = connection.get_execution_options().get("schema_translate_map") or {}
    return translate.get(table.schema, table.schema)


def _qualified(connection: Connection, table: Table) -> str:
    prep = connection.dialect.identifier_preparer
    schema = _schema(connection, table)
    name = prep.quote(table.name)
    return name if schema is None else f"{prep.quote_schema(schema)}.{name}"


class PgVector(VectorIndex):
    """:class:`.VectorIndex` of pgvector (module docstring)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[int, str], Table] = {}
        self._version: tuple[int, ...] | None = None

    def available(self, connection: Connection) -> bool:
        try:
            found = connection.execute(
                text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            ).first()
        except DBAPIError:
            return False
        return found is not None

    def _installed(self, connection: Connection) -> tuple[int, ...] | None:
        version = connection.execute(
            text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).scalar()
        if version is None:
            return None
        return tuple(int(p) for p in str(version).split(".") if p.isdigit())

    def enabled(self, connection: Connection, table: Table) -> bool:
        self._version = self._installed(connection) or ()  # for searched()
        found = connection.execute(
            text(
                "SELECT 1 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                "WHERE a.attrelid = to_regclass(:t) AND a.attname = :c "
                "AND NOT a.attisdropped AND t.typname = 'vector'"
            ),
            {"t": _qualified(connection, table), "c": self.column_name},
        ).first()
        return found is not None

    def enable(self, connection: Connection, table: Table) -> bool:
        if self.enabled(connection, table):
            self._fill(connection, table)  # rows a process older than the column wrote
            return True
        if not self.available(connection):
            return False
        if self._installed(connection) is None:
            try:
                with connection.begin_nested():
                    connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            except DBAPIError as e:
                log.warning(
                    "the vector extension is available but could not be created (%s): "
                    "vector search stays exact. A superuser can run CREATE EXTENSION "
                    "vector in this database; the next setup() then adds the column.",
                    str(e.orig).strip().splitlines()[0] if e.orig else e,
                )
                return False
        prep = connection.dialect.identifier_preparer
        column, qualified = prep.quote(self.column_name), _qualified(connection, table)
        connection.execute(
            text(f"ALTER TABLE {qualified} ADD COLUMN IF NOT EXISTS {column} vector")
        )
        # Empty once filled: finds the rows to fill without a scan of the table.
        connection.execute(
            text(
                f"CREATE INDEX IF NOT EXISTS {prep.quote(UNFILLED)} ON {qualified} "
                f"(namespace, key, field) WHERE {column} IS NULL"
            )
        )
        self._fill(connection, table)
        return True

    def disable(self, connection: Connection, table: Table) -> None:
        """Drop the native column, and with it its indexes (the extension stays: other
        tables may use it)."""
        column = connection.dialect.identifier_preparer.quote(self.column_name)
        connection.execute(
            text(f"ALTER TABLE {_qualified(connection, table)} DROP COLUMN IF EXISTS {column}")
        )

    def _fill(self, connection: Connection, table: Table) -> None:
        """Fill ``vec`` from ``embedding`` where it is NULL, in primary key order, a
        batch a statement (the column was just added: every row)."""
        t = self.with_column(table)
        keys = (t.c.namespace, t.c.key, t.c.field)
        last: tuple[Any, ...] | None = None
        stmt = update(t).where(
            t.c.namespace == bindparam("b_ns"),
            t.c.key == bindparam("b_key"),
            t.c.field == bindparam("b_field"),
        )
        stmt = stmt.values({self.column_name: bindparam("b_vec", type_=VectorType())})
        while True:
            page = select(*keys, t.c.embedding).where(t.c.vec.is_(None)).order_by(*keys)
            if last is not None:
                page = page.where(tuple_(*keys) > tuple_(*last))
            rows = connection.execute(page.limit(FILL_BATCH)).all()
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

    def with_column(self, table: Table) -> Table:
        key = (id(table), table.name)
        found = self._tables.get(key)
        if found is None:
            columns = [copy_column(c) for c in table.columns]
            columns.append(Column(self.column_name, VectorType(), nullable=True))
            found = Table(table.name, MetaData(), *columns, schema=table.schema)
            self._tables[key] = found
        return found

    def index_name(self, dims: int, distance: str, params: AnnParams) -> str:
        half = "h" if params.vector_type == "halfvec" else ""
        return (
            f"ix_lgsa_store_vec_{_SHORT[distance]}{half}_{int(dims)}"
            f"_m{int(params.m)}_ef{int(params.ef_construction)}"
        )

    def serving_index(
        self, connection: Connection, table: Table, dims: int, distance: str, params: AnnParams
    ) -> str | None:
        states = self._family(connection, table, dims, distance, params)
        name = self.index_name(dims, distance, params)
        if states.get(name) is True:
            return name
        return next((n for n, valid in sorted(states.items()) if valid), None)

    def _family(
        self, connection: Connection, table: Table, dims: int, distance: str, params: AnnParams
    ) -> dict[str, bool]:
        """The HNSW indexes of this module on ``table`` for ``dims``-sized vectors by
        ``distance`` in ``params``' vector type, whatever their ``m`` and
        ``ef_construction``, by name: whether each is valid (False: left invalid by an
        interrupted concurrent build)."""
        head = self.index_name(dims, distance, params).rsplit("_m", 1)[0] + "_m"
        stmt = text(
            "SELECT c.relname, i.indisvalid FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(:t)"
        )
        found = connection.execute(stmt, {"t": _qualified(connection, table)}).all()
        return {
            str(n): bool(v)
            for n, v in found
            if str(n).startswith(head) and _BUILT.fullmatch(str(n)[len(head) :])
        }

    def _drop(self, connection: Connection, table: Table, name: str) -> None:
        """``DROP INDEX CONCURRENTLY IF EXISTS`` (``name``: one of this module's)."""
        prep = connection.dialect.identifier_preparer
        schema = _schema(connection, table)
        qname = prep.quote(name)
        if schema is not None:
            qname = f"{prep.quote_schema(schema)}.{qname}"
        connection.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {qname}"))

    def create_index(
        self, connection: Connection, table: Table, dims: int, distance: str, params: AnnParams
    ) -> str:
        """Build the HNSW index (``CREATE INDEX CONCURRENTLY``: ``connection`` must be in
        autocommit mode), then drop the ones this module built for the same vectors with
        other ``m`` or ``ef_construction`` (``DROP INDEX CONCURRENTLY``): searches use
        the old index until the new one is valid. Dimensions over
        :data:`HNSW_MAX_DIMS` (``halfvec``: :data:`HNSW_MAX_HALF_DIMS`) raise
        ValueError."""
        kind = params.vector_type
        most = HNSW_MAX_HALF_DIMS if kind == "halfvec" else HNSW_MAX_DIMS
        if dims > most:
            raise ValueError(
                f"pgvector's HNSW index takes {kind}s of at most {most} dimensions, "
                f"not {dims}: vector search scores every vector (in the database)"
            )
        name = self.index_name(dims, distance, params)
        family = self._family(connection, table, dims, distance, params)
        state = family.pop(name, None)
        if state is not True:
            if any(family.values()):
                log.warning(
                    "building the HNSW index %s (m %d, ef_construction %d) to replace %s; "
                    "searches use the old index until the new one is built",
                    name,
                    params.m,
                    params.ef_construction,
                    ", ".join(sorted(family)),
                )
            self._build(connection, table, dims, distance, params, name, state)
        for other in sorted(family):  # built with other m / ef_construction: replaced
            log.warning(
                "dropping the HNSW index %s: the index config's is %s (m %d, ef_construction %d)",
                other,
                name,
                params.m,
                params.ef_construction,
            )
            self._drop(connection, table, other)
        return name

    def _build(
        self,
        connection: Connection,
        table: Table,
        dims: int,
        distance: str,
        params: AnnParams,
        name: str,
        state: bool | None,
    ) -> None:
        """Build the index ``name`` (``state``: whether it is valid, None: absent)."""
        kind = params.vector_type
        t = self.with_column(table)
        index = Index(
            name,
            cast(t.c.vec, _SizedVector(dims, kind)).label("vec"),
            postgresql_using="hnsw",
            postgresql_ops={"vec": f"{kind}_{_OPCLASSES[distance]}"},
            postgresql_with={"m": int(params.m), "ef_construction": int(params.ef_construction)},
            postgresql_where=func.vector_dims(t.c.vec) == literal_column(str(int(dims))),
            postgresql_concurrently=True,
        )
        if state is False:  # left invalid by an interrupted build: not an index to trust
            self._drop(connection, table, name)
        try:
            index.create(connection, checkfirst=False)
        except DBAPIError:
            if self._family(connection, table, dims, distance, params).get(name) is not True:
                raise  # not a concurrent setup() that built it first

    def distance(
        self,
        table: Table,
        dims: int,
        distance: str,
        indexed: bool = True,
        vector_type: str = "vector",
    ) -> tuple[ColumnElement[Any], ColumnElement[bool]]:
        t = self.with_column(table)
        sized = _SizedVector(dims, vector_type)
        # Not indexed: the column as it is, which the index's expression does not match,
        # so the planner scores the rows its other conditions select.
        vec = cast(t.c.vec, sized) if indexed else t.c.vec
        q = cast(bindparam(self.QUERY, type_=VectorType()), sized)
        expr = vec.op(_OPERATORS[distance], return_type=Float())(q)
        where = func.vector_dims(t.c.vec) == literal_column(str(int(dims)))
        return expr, and_(where)

    def score(self, distance: str, value: float | None) -> float:
        if value is None or math.isnan(value):
            return 0.0  # a zero vector has no cosine: 0.0, as the exact scorer says
        if distance == "cosine":
            return 1.0 - value
        return -value  # l2: minus the distance; inner product: <#> is its negative

    def searched(
        self, inner: Select[Any], params: AnnParams, rows: ColumnElement[Any]
    ) -> Select[Any]:
        """``SELECT x.* FROM (SELECT set_config(...) AS ef, ...) AS s CROSS JOIN LATERAL
        (inner AND s.ef IS NOT NULL ...) AS x``: the settings are a condition of the
        inner query on the outer row, which PostgreSQL evaluates once (a one-time
        filter) before the index scan starts, and ``set_config(..., true)`` lasts the
        statement's transaction only (its own, in autocommit). pgvector 0.8's
        ``hnsw.iterative_scan = relaxed_order`` goes on past ``ef_search`` until the
        ``LIMIT`` is met (the rows come back in about the distance order; the store
        sorts them); before 0.8, ``ef_search`` is raised to ``rows`` (at most 1,000,
        pgvector's bound) so that an unfiltered scan returns them."""
        ef: ColumnElement[Any] = literal_column(str(int(params.ef_search)))
        settings = []
        if self._version is not None and self._version >= (0, 8):
            settings.append(
                func.set_config("hnsw.iterative_scan", "relaxed_order", True).label("scan")
            )
        else:
            ef = func.greatest(ef, func.least(rows, literal_column("1000")))
        settings.append(func.set_config("hnsw.ef_search", cast(ef, Text), True).label("ef"))
        s = select(*settings).subquery("lgsa_settings")
        gated = inner.where(*(c.is_not(None) for c in s.c)).lateral("lgsa_found")
        return select(*gated.c).select_from(s.join(gated, true()))
