"""Approximate nearest-neighbour (ANN) vector indexes, where a database has one.

A dialect whose server can index vectors gives its :class:`.QueryBuilder` a
:class:`VectorIndex` (:attr:`.QueryBuilder.vector_index`); elsewhere it is None and the
store scores vectors exactly (:mod:`langgraph.store.sqlalchemy.vectors`). The store's
vectors table keeps its portable ``embedding`` column (little-endian float32 bytes) and,
where the server has the capability, a native vector column beside it, which the index
serves; :class:`VectorIndex` says how to add, fill, index and search that column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, Table
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["HNSW_BOUNDS", "AnnParams", "VectorIndex"]


#: pgvector's bounds of the HNSW parameters, inclusive (its ``hnsw.c``; ``ef_construction``
#: must also be at least twice ``m``).
HNSW_BOUNDS = {"m": (2, 100), "ef_construction": (4, 1000), "ef_search": (1, 1000)}


@dataclass(frozen=True)
class AnnParams:
    """An index config's ANN settings, checked (``ann_index_config``, as ``PostgresStore``
    names them).

    Attributes:
        kind: ``"hnsw"`` (an HNSW index) or ``"flat"`` (no index: every vector scored).
        vector_type: The indexed vectors' type: ``"vector"`` (float32) or ``"halfvec"``
            (float16: half the index size, up to 4,000 dimensions, slightly less precise
            distances; the stored embeddings stay float32).
        m: HNSW's connections a node per layer (pgvector's default 16).
        ef_construction: HNSW's candidate list while building: 128, where pgvector's
            and ``PostgresStore``'s is 64 (on 100,000 clustered vectors, some builds at
            64 left a query's nearest ten unreachable at any ``ef_search``; five at 128
            found every true nearest ten at ``ef_search`` 40; inserts about 1.2-1.35x
            slower).
        ef_search: HNSW's candidate list while searching (pgvector's default 40).
    """

    kind: str = "hnsw"
    vector_type: str = "vector"
    m: int = 16
    ef_construction: int = 128
    ef_search: int = 40


class VectorIndex:
    """How one dialect keeps, indexes and searches a native vector column.

    Every method takes the vectors table as the store defines it (portable columns
    only); the native column is the dialect's to name and type.
    """

    #: Name of the native vector column beside ``embedding``.
    column_name = "vec"

    def available(self, connection: Connection) -> bool:
        """Whether the server can hold the native column (its extension installed or
        installable). Raises nothing: a failed check is False."""
        raise NotImplementedError

    def enable(self, connection: Connection, table: Table) -> bool:
        """Add the native column to ``table`` (installing what the server needs) and fill
        it from ``embedding`` where it is NULL; idempotent. False, changing nothing, when the server
        lacks the capability or the user the privilege."""
        raise NotImplementedError

    def disable(self, connection: Connection, table: Table) -> None:
        """Drop the native column and its indexes (a downgrade)."""
        raise NotImplementedError

    def enabled(self, connection: Connection, table: Table) -> bool:
        """Whether ``table`` has the native column."""
        raise NotImplementedError

    def with_column(self, table: Table) -> Table:
        """``table`` with the native column, for writes that fill it (the column's bind
        takes the same packed bytes as ``embedding``)."""
        raise NotImplementedError

    def index_name(self, dims: int, distance: str, params: AnnParams) -> str:
        """The name of the index for ``dims``-sized vectors by ``distance``."""
        raise NotImplementedError

    def serving_index(
        self, connection: Connection, table: Table, dims: int, distance: str, params: AnnParams
    ) -> str | None:
        """The name of a valid index that serves :meth:`distance` for ``dims``-sized
        vectors by ``distance`` in ``params``' vector type: ``params``' own, else one
        built with other build parameters (until :meth:`create_index` replaces it);
        None when there is none."""
        raise NotImplementedError

    def create_index(
        self, connection: Connection, table: Table, dims: int, distance: str, params: AnnParams
    ) -> str:
        """Create (if absent) the index of ``dims``-sized vectors by ``distance`` with
        ``params``' build parameters, and drop the ones built for the same vectors with
        other build parameters once it is valid; its name."""
        raise NotImplementedError

    #: The bound parameter of the query vector in :meth:`distance` (packed float32 bytes).
    QUERY = "b_query"

    def distance(
        self,
        table: Table,
        dims: int,
        distance: str,
        indexed: bool = True,
        vector_type: str = "vector",
    ) -> tuple[ColumnElement[Any], ColumnElement[bool]]:
        """``(distance expression, condition)``: the distance of each row's native
        vector to the query (the bound parameter :attr:`QUERY`, packed float32 bytes;
        lower is closer), in the order the index serves when ``indexed`` (else an
        expression the index cannot serve: every row the other conditions select is
        scored, exactly), and the condition that selects the rows of ``dims`` values.
        ``vector_type`` is the index's (:attr:`AnnParams.vector_type`)."""
        raise NotImplementedError

    def score(self, distance: str, value: float | None) -> float:
        """The store's score (higher is closer) of a :meth:`distance` value."""
        raise NotImplementedError

    def searched(
        self, inner: Select[Any], params: AnnParams, rows: ColumnElement[Any]
    ) -> Select[Any]:
        """``inner`` (a select ordered by :meth:`distance`, ``LIMIT rows``: a bound
        parameter) as one
        statement that applies the index's search options first (``params``'
        ``ef_search``; with conditions that drop rows, the scan goes on until ``rows``
        are found where the index can), for that statement only: no other round trip,
        no transaction needed, nothing left on the connection. Its columns are
        ``inner``'s."""
        raise NotImplementedError
