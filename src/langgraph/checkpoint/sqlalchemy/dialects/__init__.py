"""The query builders, one a dialect family, found by dialect name.

Everything that is not plain portable SQLAlchemy Core lives in this package: which
drivers serve a dialect, connection set-up, upserts and first-write-wins inserts, JSON
metadata filters, bound-parameter limits and the locks. :class:`QueryBuilder`
(:mod:`.base`) holds the portable behaviour; :mod:`.sqlite`, :mod:`.postgresql` and
:mod:`.mysql` override what differs. Callers get a builder from :func:`query_builder`
and never branch on the dialect themselves.

Adding a dialect family is one new module here plus one :data:`DIALECTS` entry (or a
:func:`register` call); see the development guide.
"""

from __future__ import annotations

from langgraph.checkpoint.sqlalchemy.dialects._ann import HNSW_BOUNDS, AnnParams, VectorIndex
from langgraph.checkpoint.sqlalchemy.dialects.base import (
    IDLE_OPTION,
    NO_TRANSACTION_OPTION,
    WRITE_OPTION,
    Binder,
    QueryBuilder,
)
from langgraph.checkpoint.sqlalchemy.dialects.mysql import MariaDBQueryBuilder, MySQLQueryBuilder
from langgraph.checkpoint.sqlalchemy.dialects.postgresql import PostgreSQLQueryBuilder
from langgraph.checkpoint.sqlalchemy.dialects.sqlite import SQLiteQueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import UnsupportedDialectError

__all__ = [
    "DIALECTS",
    "HNSW_BOUNDS",
    "IDLE_OPTION",
    "NO_TRANSACTION_OPTION",
    "WRITE_OPTION",
    "AnnParams",
    "Binder",
    "QueryBuilder",
    "VectorIndex",
    "query_builder",
    "register",
]

#: The query builder class of each supported dialect name (``engine.dialect.name``, and
#: the part of a URL's scheme before ``+``).
DIALECTS: dict[str, type[QueryBuilder]] = {
    "sqlite": SQLiteQueryBuilder,
    "postgresql": PostgreSQLQueryBuilder,
    "mysql": MySQLQueryBuilder,
    "mariadb": MariaDBQueryBuilder,
}


def register(name: str, builder: type[QueryBuilder]) -> None:
    """Serve the dialect ``name`` with the query builder class ``builder``.

    Args:
        name: The dialect's name, as ``engine.dialect.name`` and URL schemes spell it.
        builder: A :class:`QueryBuilder` subclass.
    """
    DIALECTS[name] = builder


def query_builder(dialect_name: str) -> QueryBuilder:
    """A new query builder for the dialect ``dialect_name`` (one per saver).

    Args:
        dialect_name: ``engine.dialect.name``: ``sqlite``, ``postgresql``, ``mysql`` or
            ``mariadb`` (or any name given to :func:`register`).

    Returns:
        An instance of the dialect's registered :class:`QueryBuilder` subclass.

    Raises:
        UnsupportedDialectError: Any other dialect.
    """
    builder = DIALECTS.get(dialect_name)
    if builder is None:
        names = list(DIALECTS)
        raise UnsupportedDialectError(
            f"Unsupported dialect {dialect_name!r}: {', '.join(names[:-1])} and "
            f"{names[-1]} are supported."
        )
    return builder()
