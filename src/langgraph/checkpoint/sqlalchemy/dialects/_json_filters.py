"""The store's search filters in SQL: per dialect, the JSON-path reads, type tests and
comparisons that :mod:`langgraph.store.sqlalchemy.filters` composes into a filter's
conditions, and the expression indexes of a store's ``indexed_fields``.

A path is a tuple of object keys from the top of an item's value (``("a", "b")`` is
``value["a"]["b"]``); every key of it satisfies :func:`addressable`. A *kind* is one of
:data:`KINDS`: the JSON type of what sits at the path, with ``"missing"`` when nothing
does (the caller checks the parent is an object). Conditions may be NULL where they are
false (a missing member): the caller negates through ``COALESCE``.

Exactness: an order comparison of numbers is exact when the bound is below
:data:`EXACT_NUMBERS` in magnitude. Beyond it the databases compare differently
(PostgreSQL's ``numeric`` reads a stored float as its shortest decimal text, MariaDB
rounds integers to doubles), so the filter only narrows by JSON type there and Python
decides.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from sqlalchemy import (
    ARRAY,
    Connection,
    Double,
    Index,
    LargeBinary,
    MetaData,
    Table,
    Text,
    and_,
    bindparam,
    case,
    cast,
    collate,
    exists,
    false,
    func,
    inspect,
    literal,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateIndex
from sqlalchemy.sql.elements import ColumnElement

__all__ = [
    "EXACT_NUMBERS",
    "KINDS",
    "JsonFilters",
    "MySQLJsonFilters",
    "PostgreSQLJsonFilters",
    "SQLiteJsonFilters",
    "addressable",
    "check_indexed_field",
    "field_index_name",
    "json_kind",
    "tree_within",
]

#: What sits at a path: a JSON type (``true`` and ``false`` apart) or nothing.
KINDS = frozenset({"object", "array", "string", "number", "true", "false", "null", "missing"})
#: Order comparisons of numbers are exact in SQL for bounds of a smaller magnitude
#: (2**53: every integer below it is a double, so no rounding separates the dialects).
EXACT_NUMBERS = 2**53
_ORDER_OPS = {"$gt": "__gt__", "$gte": "__ge__", "$lt": "__lt__", "$lte": "__le__"}
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")


def addressable(key: str) -> bool:
    """Whether every dialect's JSON path names the object key ``key``: printable ASCII
    without ``"`` or ``\\`` (SQLite 3.40's paths compare a quoted label with the key as
    written in the document, escapes included, and cannot quote those two)."""
    return bool(key) and key.isascii() and key.isprintable() and '"' not in key and "\\" not in key


def check_indexed_field(field: object) -> str:
    """``field`` checked as an ``indexed_fields`` entry: a top-level key that is an
    identifier (letters, digits, ``_``; at most 63 characters).

    Raises:
        ValueError: Anything else.
    """
    if not isinstance(field, str) or not _FIELD.match(field):
        raise ValueError(
            f"indexed_fields entries are top-level field names made of letters, digits "
            f"and '_' (at most 63 characters, not starting with a digit), not {field!r}"
        )
    return field


def field_index_name(field: str, kind: str) -> str:
    """Name of the index (or generated column) of ``field`` for ``kind`` (``"n"``: its
    numbers or JSON value, ``"s"``: its strings): a digest of the name, never the name."""
    digest = hashlib.sha256(field.encode()).hexdigest()[:16]
    return f"ix_lgsa_store_items_{kind}{digest}"


def _copy(table: Table) -> Table:
    """``table`` on a private MetaData: an index made on it is not the global table's."""
    return table.to_metadata(MetaData())


class JsonFilters:
    """The portable side of the store's filters in SQL (a mixin of the query builder)."""

    #: Top-level fields with an expression index (the store's ``indexed_fields``): their
    #: conditions are written as the index's expression, their key inline.
    indexed_fields: frozenset[str] = frozenset()

    def _key(self, key: str) -> Any:
        """A path's key: inline for an indexed field (the index's expression, checked by
        :func:`check_indexed_field`), else a bound parameter."""
        if key in self.indexed_fields:
            return bindparam(None, key, type_=Text, literal_execute=True)
        return literal(key, Text)

    def json_guard(self, column: Any, condition: ColumnElement[bool]) -> ColumnElement[bool]:
        """``condition`` made safe on a row whose document is not JSON. Default: as is."""
        return condition

    def json_kind_in(self, column: Any, path: tuple[str, ...], kinds: frozenset[str]) -> Any:
        """Condition: the kind at ``path`` is one of ``kinds`` (see :data:`KINDS`)."""
        raise NotImplementedError

    def json_scalar_equals(
        self, column: Any, path: tuple[str, ...], value: Any, bind: Any, dialect: Any = None
    ) -> Any:
        """Condition: a string, a number or a bool at ``path`` equals ``value`` as JSON
        (``1`` equals ``1.0``, ``True`` only ``true``); ``dialect``: the connection's (a ``mysql://``
        URL may reach MariaDB)."""
        raise NotImplementedError

    def json_order(
        self, column: Any, path: tuple[str, ...], op: str, bound: Any, bind: Any
    ) -> list[Any]:
        """Conditions: the value at ``path`` compares with ``bound`` (a string, or a
        number below :data:`EXACT_NUMBERS`) by ``op``: numbers with numbers, strings with
        strings by code point."""
        raise NotImplementedError

    def create_field_indexes(self, connection: Connection, table: Table, field: str) -> None:
        """Create the expression indexes of ``field`` on ``table`` if missing."""
        raise NotImplementedError


def _op(left: Any, op: str, right: Any) -> Any:
    return getattr(left, _ORDER_OPS[op])(right)


class SQLiteJsonFilters(JsonFilters):
    """``json_extract``/``json_type`` at ``$."a"."b"``."""

    def _path(self, path: tuple[str, ...]) -> Any:
        text = "$" + "".join('."' + k + '"' for k in path)
        if len(path) == 1 and path[0] in self.indexed_fields:
            return bindparam(None, text, type_=Text, literal_execute=True)
        return literal(text, Text)

    def json_guard(self, column: Any, condition: ColumnElement[bool]) -> ColumnElement[bool]:
        """``CASE WHEN json_valid(column) THEN condition ELSE 0 END``: SQLite's JSON
        functions raise on a document that is not JSON (a forged row)."""
        guarded: ColumnElement[bool] = case(
            (func.json_valid(column) == 1, condition), else_=false()
        )
        return guarded

    _TYPES = {
        "object": ("object",),
        "array": ("array",),
        "string": ("text",),
        "number": ("integer", "real"),
        "true": ("true",),
        "false": ("false",),
        "null": ("null",),
    }

    def json_kind_in(self, column: Any, path: tuple[str, ...], kinds: frozenset[str]) -> Any:
        kind = func.json_type(column, self._path(path))
        names = sorted(n for k in kinds if k != "missing" for n in self._TYPES[k])
        parts = [kind.in_(names)] if names else []
        if "missing" in kinds:
            parts.append(kind.is_(None))
        return or_(false(), *parts) if len(parts) != 1 else parts[0]

    def json_scalar_equals(
        self, column: Any, path: tuple[str, ...], value: Any, bind: Any, dialect: Any = None
    ) -> Any:
        p = self._path(path)
        atom, kind = func.json_extract(column, p), func.json_type(column, p)
        if isinstance(value, bool):  # bound: one statement serves True and False
            return kind == bind("true" if value else "false", Text)
        if isinstance(value, str):
            return and_(atom == bind(value, Text), kind == "text")
        return and_(atom == bind(value, None), kind.in_(("integer", "real")))

    def json_order(
        self, column: Any, path: tuple[str, ...], op: str, bound: Any, bind: Any
    ) -> list[Any]:
        p = self._path(path)
        atom, kind = func.json_extract(column, p), func.json_type(column, p)
        up = op in ("$gt", "$gte")
        indexed = len(path) == 1 and path[0] in self.indexed_fields
        if isinstance(bound, str):
            # json_extract's text has no collation: BINARY, UTF-8 bytes, code point order.
            cond = [_op(atom, op, bind(bound, Text)), kind == "text"]
            # SQLite orders numbers < text < blobs: the other end of an indexed range.
            other = atom < literal_column("x''") if up else atom >= literal_column("''")
        else:
            # INTEGER and REAL compare exactly in SQLite.
            cond = [_op(atom, op, bind(bound, None)), kind.in_(("integer", "real"))]
            other = atom < literal_column("''") if up else atom >= literal_column("-9e999")
        # Two-sided, an indexed range is estimated as narrow as a namespace's range.
        return [and_(*cond, other) if indexed else and_(*cond)]

    def create_field_indexes(self, connection: Connection, table: Table, field: str) -> None:
        """``json_extract(value, '$."field"')``: numbers and strings in one index (SQLite
        orders INTEGER and REAL before TEXT, TEXT by BINARY)."""
        t = _copy(table)
        expr = func.json_extract(t.c.value, literal('$."' + field + '"', Text))
        _create(connection, Index(field_index_name(field, "n"), expr))


class PostgreSQLJsonFilters(JsonFilters):
    """``value -> 'a'`` (top level: an index's expression) or ``value #> '{a,b}'`` on the
    JSONB column, ``jsonb_typeof``, strings through ``->>`` with ``COLLATE "C"``."""

    def _member(self, column: Any, path: tuple[str, ...]) -> Any:
        if len(path) == 1:
            return column.op("->")(self._key(path[0]))
        return column.op("#>")(literal(list(path), ARRAY(Text)))

    def _text(self, column: Any, path: tuple[str, ...]) -> Any:
        if len(path) == 1:
            text = column.op("->>", return_type=Text)(self._key(path[0]))
        else:
            text = column.op("#>>", return_type=Text)(literal(list(path), ARRAY(Text)))
        return collate(text, "C")

    def json_kind_in(self, column: Any, path: tuple[str, ...], kinds: frozenset[str]) -> Any:
        member = self._member(column, path)
        kind = func.jsonb_typeof(member)
        names = sorted(k for k in kinds if k in ("object", "array", "string", "number", "null"))
        parts: list[Any] = [kind.in_(names)] if names else []
        if {"true", "false"} <= kinds:
            parts.append(kind == "boolean")
        else:
            for b in ("true", "false") if kinds & {"true", "false"} else ():
                if b in kinds:
                    parts.append(member == cast(literal(b, Text), postgresql.JSONB))
        if "missing" in kinds:
            parts.append(member.is_(None))
        return or_(false(), *parts) if len(parts) != 1 else parts[0]

    def json_scalar_equals(
        self, column: Any, path: tuple[str, ...], value: Any, bind: Any, dialect: Any = None
    ) -> Any:
        return self._member(column, path) == cast(bind(json.dumps(value), Text), postgresql.JSONB)

    def json_order(
        self, column: Any, path: tuple[str, ...], op: str, bound: Any, bind: Any
    ) -> list[Any]:
        member = self._member(column, path)
        if isinstance(bound, str):
            # jsonb orders strings by the database's collation: compare the text in "C"
            # (UTF-8 bytes: code point order).
            text = self._text(column, path)
            return [_op(text, op, bind(bound, Text)), func.jsonb_typeof(member) == "string"]
        # jsonb orders every number below every boolean: an upper bound keeps a range
        # of the (value -> 'f') index two-sided.
        cond = [_op(member, op, cast(bind(json.dumps(bound), Text), postgresql.JSONB))]
        if op in ("$gt", "$gte"):
            cond.append(member < cast(literal("false", Text), postgresql.JSONB))
        cond.append(func.jsonb_typeof(member) == "number")
        return cond

    def create_field_indexes(self, connection: Connection, table: Table, field: str) -> None:
        """``(value -> 'field')`` (JSONB order: equality of any JSON, ranges of numbers)
        and ``((value ->> 'field') COLLATE "C")`` (ranges of strings)."""
        t = _copy(table)
        key = literal(field, Text)
        member = t.c.value.op("->")(key)
        text = collate(t.c.value.op("->>", return_type=Text)(key), "C")
        _create(connection, Index(field_index_name(field, "n"), member))
        _create(connection, Index(field_index_name(field, "s"), text))


class MySQLJsonFilters(JsonFilters):
    """``JSON_EXTRACT`` at ``$."a"."b"`` (keys spelled as JSON strings, as the stored
    document spells them), ``JSON_TYPE``, strings compared as UTF-8 bytes
    (``CAST(JSON_UNQUOTE(...) AS BINARY)``: code point order, no pad), an indexed
    field's numbers in a virtual generated column."""

    _TYPES = {
        "object": ("OBJECT",),
        "array": ("ARRAY",),
        "string": ("STRING",),
        "number": ("INTEGER", "DOUBLE", "UNSIGNED INTEGER", "DECIMAL"),
        "null": ("NULL",),
    }

    def _path(self, path: tuple[str, ...]) -> Any:
        text = "$" + "".join("." + json.dumps(k) for k in path)
        if len(path) == 1 and path[0] in self.indexed_fields:
            return bindparam(None, text, type_=Text, literal_execute=True)
        return literal(text, Text)

    def json_kind_in(self, column: Any, path: tuple[str, ...], kinds: frozenset[str]) -> Any:
        member = func.json_extract(column, self._path(path))
        kind = func.json_type(member)
        names = sorted(n for k in kinds if k in self._TYPES for n in self._TYPES[k])
        parts: list[Any] = [kind.in_(names)] if names else []
        if {"true", "false"} <= kinds:
            parts.append(kind == "BOOLEAN")
        else:
            for b in ("true", "false"):
                if b in kinds:
                    parts.append(and_(kind == "BOOLEAN", cast(member, LargeBinary) == b.encode()))
        if "missing" in kinds:
            parts.append(member.is_(None))
        return or_(false(), *parts) if len(parts) != 1 else parts[0]

    def _equals(
        self, column: Any, path: tuple[str, ...], text: str, bind: Any, dialect: Any
    ) -> Any:
        from sqlalchemy.dialects import mysql

        member = func.json_extract(column, self._path(path))
        if getattr(self, "is_mariadb", False) or getattr(dialect, "is_mariadb", False):
            return func.json_equals(member, bind(text, Text)) == 1
        return member == cast(bind(text, Text), mysql.JSON)

    def json_scalar_equals(
        self, column: Any, path: tuple[str, ...], value: Any, bind: Any, dialect: Any = None
    ) -> Any:
        equal = self._equals(column, path, json.dumps(value), bind, dialect)
        if isinstance(value, (str, bool)) or not (
            len(path) == 1 and path[0] in self.indexed_fields
        ):
            return equal
        # Rounding to a double keeps equal numbers equal: a superset the index serves.
        generated: Any = literal_column(_column_name(path[0]), Double())
        return and_(generated == bind(float(value), Double()), equal)

    def json_order(
        self, column: Any, path: tuple[str, ...], op: str, bound: Any, bind: Any
    ) -> list[Any]:
        member = func.json_extract(column, self._path(path))
        kind = func.json_type(member)
        if isinstance(bound, str):
            text = cast(func.json_unquote(member), LargeBinary)
            return [and_(kind == "STRING", _op(text, op, bind(bound.encode(), LargeBinary)))]
        # A float bound is sent as a double literal (1e0), so MariaDB compares doubles
        # (an integer one compares JSON_EXTRACT's text as a DECIMAL: 1e-300 > 0 false).
        number = bind(float(bound), Double())
        cond = [and_(kind.in_(self._TYPES["number"]), _op(member, op, number))]
        if len(path) == 1 and path[0] in self.indexed_fields:
            # The generated column holds the number as a double: rounding keeps order,
            # so the non-strict comparison is a superset the index serves.
            generated: Any = literal_column(_column_name(path[0]), Double())
            wide = "$gte" if op in ("$gt", "$gte") else "$lte"
            cond.insert(0, _op(generated, wide, bind(float(bound), Double())))
        return cond

    def create_field_indexes(self, connection: Connection, table: Table, field: str) -> None:
        """A virtual ``DOUBLE`` column of the field's numbers (MariaDB 10.11 uses an
        index of an expression only through such a column) and its index. Strings are
        not indexed here (an index of text needs a length)."""
        name = _column_name(field)
        options = connection.get_execution_options()
        schema = options.get("schema_translate_map", {}).get(None)
        found = inspect(connection)
        columns = {c["name"] for c in found.get_columns(table.name, schema=schema)}
        preparer = connection.dialect.identifier_preparer
        quoted_table = preparer.quote(table.name)
        if schema:
            quoted_table = preparer.quote_schema(schema) + "." + quoted_table
        if name not in columns:
            member = func.json_extract(table.c.value, literal('$."' + field + '"', Text))
            numeric = case(
                (func.json_type(member).in_(self._TYPES["number"]), member),
                else_=literal_column("NULL"),
            )
            expr = numeric.compile(
                dialect=connection.dialect, compile_kwargs={"literal_binds": True}
            )
            connection.exec_driver_sql(
                f"ALTER TABLE {quoted_table} ADD COLUMN {preparer.quote(name)} DOUBLE "
                f"AS ({expr}) VIRTUAL"
            )
        indexes = {i["name"] for i in found.get_indexes(table.name, schema=schema)}
        index = field_index_name(field, "n")
        if index not in indexes:
            connection.exec_driver_sql(
                f"CREATE INDEX {preparer.quote(index)} ON {quoted_table} ({preparer.quote(name)})"
            )


def json_kind(json_type: Any) -> ColumnElement[Any]:
    """SQLite's ``json_type`` with ``integer`` and ``real`` read as one kind, ``number``."""
    return case((json_type.in_(("integer", "real")), "number"), else_=json_type)


def tree_within(left: Any, right: Any) -> ColumnElement[bool]:
    """Every node of json_tree ``left`` has a twin (same path, kind and atom) in
    json_tree ``right``."""
    a = left.table_valued("fullkey", "type", "atom").alias()
    b = right.table_valued("fullkey", "type", "atom").alias()
    twin = (
        select(literal(1))
        .select_from(b)
        .where(
            b.c.fullkey == a.c.fullkey,
            json_kind(b.c.type) == json_kind(a.c.type),
            b.c.atom.is_not_distinct_from(a.c.atom),
        )
    )
    return ~exists(select(literal(1)).select_from(a).where(~exists(twin)))


def _create(connection: Connection, index: Index) -> None:
    """``CREATE INDEX IF NOT EXISTS`` (the connection's schema translation applies)."""
    connection.execute(CreateIndex(index, if_not_exists=True))


def _column_name(field: str) -> str:
    """The virtual column of an indexed field's numbers (MySQL/MariaDB)."""
    return "lgsa_n" + field_index_name(field, "")[len("ix_lgsa_store_items_") :]
