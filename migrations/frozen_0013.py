"""Column types and table options the revisions share, frozen at revision
``0013_store_expiry_partial_index``.

NEVER EDIT THIS FILE. A revision, once released, is history: what it does to a user's
database must not change when the package changes (Alembic's own guidance; Optuna keeps
its revisions the same way). The revisions under ``versions/`` therefore import nothing
from ``langgraph``; what several of them need is here, as the package defined it when
they were frozen (``schema.py`` at revision 0013). A later revision that needs another
definition writes it in itself, or in a new ``frozen_<its revision>.py`` beside this one.

Not a revision (Alembic reads ``versions/`` only) and not package code: the revisions load
it from its file (``_frozen()`` in each), the package never imports it
(``tests/migrations/test_frozen_revisions.py`` checks both).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import LONGBLOB
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import VARBINARY, TypeDecorator, TypeEngine

__all__ = [
    "BINARY",
    "JSON_DOCUMENT",
    "MYSQL_DIALECTS",
    "MYSQL_TABLE_OPTIONS",
    "KeyText",
    "Utf8Text",
    "primary_key_name",
    "utf8_encodable",
]

#: The dialect names of the MySQL family (SQLAlchemy's ``dialect.name``).
MYSQL_DIALECTS = ("mysql", "mariadb")

#: Binary values: BLOB on SQLite, BYTEA on PostgreSQL, LONGBLOB on MySQL/MariaDB (whose
#: plain BLOB stops at 64 kB).
BINARY: TypeEngine[bytes] = sa.LargeBinary().with_variant(LONGBLOB(), "mysql", "mariadb")
#: JSON documents: JSON, JSONB on PostgreSQL.
JSON_DOCUMENT: TypeEngine[Any] = sa.JSON().with_variant(JSONB(), "postgresql")

#: MySQL/MariaDB table options: InnoDB, 4-byte UTF-8, binary collation.
MYSQL_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}


def primary_key_name(dialect_name: str, name: str) -> str | None:
    """The name of a primary key constraint in DDL: None on MySQL/MariaDB (which call
    every primary key ``PRIMARY`` and warn about any other name), else ``name``."""
    return None if dialect_name in MYSQL_DIALECTS else name


def utf8_encodable(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Utf8Text(TypeDecorator[str]):
    """Text stored as UTF-8 bytes on MySQL/MariaDB (binary column types there), as text
    elsewhere; bytes that are not UTF-8 travel as lone surrogates (surrogateescape)."""

    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> Any:
        if value is None:
            return value
        if dialect.name in MYSQL_DIALECTS:
            return value.encode("utf-8", "surrogateescape")
        if not utf8_encodable(value):
            return value.encode("utf-8", "surrogateescape")
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", "surrogateescape")
        return value  # type: ignore[no-any-return]


class KeyText(Utf8Text):
    """An identifier column: ``VARCHAR(length)``, ``VARBINARY(4 * length)`` of UTF-8 on
    MySQL/MariaDB (compared byte for byte).

    Args:
        length: Longest value, in characters.
    """

    impl = sa.String
    cache_ok = True

    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in MYSQL_DIALECTS:
            return dialect.type_descriptor(VARBINARY(4 * self.length))
        return dialect.type_descriptor(sa.String(self.length))
