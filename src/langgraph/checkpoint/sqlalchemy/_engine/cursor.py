"""The hot-path statements run on the driver's cursor, compiled once per dialect.

SQLAlchemy's ``Connection.execute`` costs about 20 microseconds a statement on SQLite
and 70 on PostgreSQL over what the driver itself costs (a cache key for the statement,
an execution context, parameter and result processing, ``Row`` objects): as much as
the database's own work for the small statements of a graph step. The statements that
every step runs (store a checkpoint, its values, pending writes; read a checkpoint) are
therefore compiled once per dialect, from the same SQLAlchemy constructs (the query
builder stays the one source of SQL), and run with ``cursor.execute`` on the
connection's DBAPI cursor (``Connection.connection.cursor()``, the driver adapted to
DBAPI on the async door). Parameters and result values go through the very processors
SQLAlchemy would apply (the column types' ``bind_processor`` / ``result_processor``),
so what is stored and read is the same as through ``Connection.execute``.

Kept from SQLAlchemy: the transaction (begun by SQLAlchemy, with the dialect's begin
hooks, before the first statement), error handling (a driver error is wrapped, and a
dropped connection invalidated, by the connection's own handler), and instrumentation:
when a ``before_cursor_execute``/``after_cursor_execute`` listener is registered (an
OpenTelemetry or statement-counting hook) or SQL logging is on (``echo``, the
``sqlalchemy.engine`` logger at INFO), statements go through ``Connection.execute``
so that every listener and the log see them. A construct that needs SQLAlchemy's
execution-time rendering (an expanding ``IN``, a ``literal_execute`` value) also goes
through ``Connection.execute``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, NoReturn

from langgraph.checkpoint.sqlalchemy._engine.lane import LaneConnection
from langgraph.checkpoint.sqlalchemy._engine.results import processed
from langgraph.checkpoint.sqlalchemy.dialects import DIALECTS
from langgraph.checkpoint.sqlalchemy.dialects._sqlalchemy_private import handle_dbapi_error
from langgraph.checkpoint.sqlalchemy.schema import (
    NAME_KEY_LENGTH,
    NAME_KEY_MARKER,
    FullName,
    KeyText,
    NameKey,
)
from sqlalchemy import Connection, Float, bindparam
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.dml import Insert

__all__ = [
    "MANY_ROWS",
    "execute",
    "execute_many",
    "execute_rows",
    "insert_rows",
    "insert_values",
    "many_form",
    "many_params",
    "rows",
]

Processor = Callable[[Any], Any] | None


def _ascii_unchanged(type_: Any, dialect: Dialect) -> int:
    """Longest ASCII ``str`` (not starting with :data:`.schema.NAME_KEY_MARKER`) that
    ``type_``'s bind processor returns unchanged on ``dialect``, 0 for none: such values
    skip the processor's call. The identifier types of :mod:`.schema` store text as
    it is outside MySQL/MariaDB (where it becomes UTF-8 bytes), and a name key is the
    name itself up to :data:`.schema.NAME_KEY_LENGTH` characters."""
    if dialect.name in ("mysql", "mariadb"):
        return 0
    if isinstance(type_, NameKey):
        return NAME_KEY_LENGTH
    if isinstance(type_, (KeyText, FullName)):
        return sys.maxsize
    return 0


def _float_unchanged(type_: Any) -> bool:
    """Whether ``type_``'s bind processor returns an exact ``float`` and None unchanged
    (SQLAlchemy's ``Float``/``Double`` without ``asdecimal``: ``float(value)``)."""
    return isinstance(type_, Float) and not type_.asdecimal


def _str_read_unchanged(type_: Any) -> bool:
    """Whether ``type_``'s result processor returns a ``str`` read back unchanged (the
    identifier types but :class:`.schema.NameKey`, which makes it a ``StoredKey``): such
    values skip the processor's call."""
    return isinstance(type_, (KeyText, FullName)) and not isinstance(type_, NameKey)


class _Compiled:
    """One construct compiled for one dialect and schema map (kept by :func:`_compiled`)."""

    __slots__ = (
        "_per_column",
        "binds",
        "expanding",
        "fast",
        "fixed",
        "floats",
        "names",
        "positional",
        "reader",
        "result",
        "row_type",
        "selected",
        "sql",
    )

    def __init__(
        self,
        construct: ClauseElement,
        conn: Connection,
        schema_map: Mapping[Any, Any] | None,
        values: bool = False,
    ) -> None:
        dialect = conn.dialect
        translate: dict[str, Any] = (
            {"schema_translate_map": schema_map, "render_schema_translate": True}
            if schema_map
            else {}
        )
        compiled: Any = construct.compile(dialect=dialect, **translate)
        self.sql: str = compiled.string
        by_name = {name: bind for bind, name in compiled.bind_names.items()}
        # An expanding IN, or a value rendered inline (an indexed field's key, the
        # expression of its index), is rendered per execution by SQLAlchemy: not ours.
        self.expanding = any(bind.expanding or bind.literal_execute for bind in by_name.values())
        # The construct's own values (``LIMIT 1``); the caller gives the others.
        self.fixed: dict[str, Any] = {
            name: bind.effective_value for name, bind in by_name.items() if not bind.required
        }
        self.positional = compiled.positiontup is not None
        self.names: tuple[str, ...] = tuple(compiled.positiontup if self.positional else by_name)
        self.binds: tuple[Processor, ...] = tuple(
            by_name[n].type.dialect_impl(dialect).bind_processor(dialect) for n in self.names
        )
        self.fast: tuple[int, ...] = tuple(
            _ascii_unchanged(by_name[n].type, dialect) for n in self.names
        )
        self.floats: tuple[bool, ...] = tuple(_float_unchanged(by_name[n].type) for n in self.names)
        # Result processors, known once a cursor described the columns:
        # (index, processor, whether a str skips it).
        self.result: tuple[tuple[int, Callable[[Any], Any], bool], ...] | None = None
        columns: Any = getattr(construct, "selected_columns", None)
        self.row_type: Any = (
            namedtuple("Row", list(columns.keys()), rename=True)
            if columns is not None and len(columns)
            else None
        )
        #: The construct's selected columns (their types' result processors), or None.
        self.selected: Any = columns
        self._per_column: Any = None
        #: What the dialect does to a cursor before a read of stored values, or None.
        builder = DIALECTS.get(dialect.name) if values else None
        self.reader: Callable[[Any], None] | None = (
            builder.value_reader(dialect) if builder is not None else None
        )

    def row_params(self, columns: tuple[str, ...], rows: Sequence[Sequence[Any]]) -> Any:
        """The driver's parameters of a :func:`many_form` statement of ``rows`` (values in
        ``columns`` order), each value through its type's bind processor as
        :meth:`parameters` does, without a dict a row; None when the compiled names are
        not ``<column>_<row>`` row after row (then the caller goes through
        :meth:`parameters`)."""
        per_column = self._per_column
        if per_column is None:
            expected = tuple(f"{c}_{j}" for j in range(len(rows)) for c in columns)
            if self.fixed or self.names != expected:
                self._per_column = False
                return None
            per_column = self._per_column = tuple(
                (i, self.binds[i], self.fast[i], self.floats[i])
                for i in range(len(columns))
                if self.binds[i] is not None
            )
        elif per_column is False:
            return None
        values: list[Any] = []
        if not per_column:
            for row in rows:
                values += row
        else:
            for row in rows:
                changed = None
                for i, p, fast, floats in per_column:
                    v = row[i]
                    if floats and (v is None or type(v) is float):
                        continue  # Double's processor returns these as they are
                    if (
                        fast
                        and type(v) is str
                        and len(v) <= fast
                        and v.isascii()
                        and not v.startswith(NAME_KEY_MARKER)
                    ):
                        continue
                    if changed is None:
                        changed = list(row)
                    changed[i] = p(v)
                values += row if changed is None else changed
        return tuple(values) if self.positional else dict(zip(self.names, values, strict=True))

    def parameters(self, params: Mapping[str, Any]) -> Any:
        """The driver's parameters: a tuple (positional styles) or a dict, each value
        through its type's bind processor.

        Raises:
            KeyError: ``params`` lacks a bound parameter of the statement.
        """
        given = {**self.fixed, **params} if self.fixed else params
        values = []
        for n, p, fast in zip(self.names, self.binds, self.fast, strict=True):
            v = given[n]
            if p is not None and not (
                fast
                and type(v) is str
                and len(v) <= fast
                and v.isascii()
                and not v.startswith(NAME_KEY_MARKER)
            ):
                v = p(v)
            values.append(v)
        return tuple(values) if self.positional else dict(zip(self.names, values, strict=True))


#: Most compiled statements kept: a process that serves many schemas (a schema per
#: tenant) compiles each statement once per schema; the oldest go first.
MAX_COMPILED = 4096

_CACHE: dict[tuple[int, Any, Any], _Compiled] = {}
#: The constructs of :data:`_CACHE`'s entries by id, each with its count of entries: ids
#: stay valid while an entry names them, and a construct goes with its last entry.
_KEEP: dict[int, tuple[ClauseElement, int]] = {}
_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: another thread of the parent may have held
    :data:`_LOCK` (compiling a statement) at the moment of the fork, and nothing would
    release it here. The compiled statements stay: the same constructs and dialects."""
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _compiled(
    conn: Connection, construct: ClauseElement, key: Any, values: bool = False
) -> _Compiled:
    schema_map = conn.get_execution_options().get("schema_translate_map")
    kind = (key, values) if values else key
    full = (id(construct), kind, tuple(schema_map.items()) if schema_map else None)
    found = _CACHE.get(full)
    if found is None:
        found = _Compiled(construct, conn, schema_map, values)
        with _LOCK:
            if full in _CACHE:  # another thread compiled it meanwhile
                return _CACHE[full]
            kept = _KEEP.get(id(construct))
            _KEEP[id(construct)] = (construct, kept[1] + 1 if kept else 1)
            _CACHE[full] = found
            while len(_CACHE) > MAX_COMPILED:
                oldest = next(iter(_CACHE))
                del _CACHE[oldest]
                gone, count = _KEEP[oldest[0]]
                if count > 1:
                    _KEEP[oldest[0]] = (gone, count - 1)
                else:
                    del _KEEP[oldest[0]]
    return found


_INFO = logging.INFO


def _listened(conn: Connection) -> bool:
    """A cursor listener, or SQL logging (``echo``: the engine's logger enabled for
    INFO, as ``Connection`` checks it), wants to see the statement (never on a lane, which
    opens only without either: :meth:`.Lane.open`). Checked at each statement, where a
    ``Connection`` fixes its own answer when it is made: logging turned off while a
    connection is open stops ours at once, SQLAlchemy's own at that connection's end."""
    if isinstance(conn, LaneConnection):
        return False
    if conn.engine.logger.isEnabledFor(_INFO):
        return True
    dispatch: Any = conn.dispatch
    return bool(dispatch.before_cursor_execute) or bool(dispatch.after_cursor_execute)


def _driven(
    conn: Connection, construct: ClauseElement, key: Any, values: bool = False
) -> _Compiled | None:
    """The compiled form to run on the cursor, or None when the statement must go
    through ``Connection.execute`` (a cursor listener, an expanding ``IN``)."""
    if _listened(conn):
        return None
    c = _compiled(conn, construct, key, values)
    return None if c.expanding else c


def _run(
    conn: Connection,
    c: _Compiled,
    params: Mapping[str, Any],
    first_only: int = 0,
    plain: bool = False,
    repeated: int = 0,
) -> Any:
    """Execute on the DBAPI cursor; return the cursor's rows (or None), the columns
    before ``first_only`` processed in the first row only, those before ``repeated``
    once per distinct value, as named tuples (``plain``: sequences)."""
    return _execute(conn, c, c.parameters(params), first_only, plain, repeated)


def _execute(
    conn: Connection,
    c: _Compiled,
    args: Any,
    first_only: int = 0,
    plain: bool = False,
    repeated: int = 0,
) -> Any:
    """:func:`_run` with the driver's parameters made already."""
    if not conn.in_transaction():
        conn.begin()  # what Connection.execute's autobegin does (the dialect's hooks)
    # a lane's DBAPI connection directly, not through the pool's proxy
    held: Any = conn
    cursor = held.dbapi.cursor() if type(held) is LaneConnection else held.connection.cursor()
    try:
        if c.reader is not None:
            c.reader(cursor)
        cursor.execute(c.sql, args)
        raw = cursor.fetchall() if c.row_type is not None else None
        description = cursor.description
    except Exception as e:
        with contextlib.suppress(Exception):
            cursor.close()  # a cursor of a dropped connection must not hide the error
        if isinstance(e, conn.dialect.loaded_dbapi.Error):
            # SQLAlchemy's own handler: wraps the error in DBAPIError, invalidates the
            # pool on a dropped connection, runs handle_error listeners.
            _driver_error(conn, e, c.sql, args, cursor)
        raise
    cursor.close()
    if raw is None:
        return None
    if c.result is None:
        dialect = conn.dialect
        c.result = tuple(
            (i, p, _str_read_unchanged(col.type))
            for i, (col, desc) in enumerate(zip(c.selected, description, strict=True))
            if (p := col.type.dialect_impl(dialect).result_processor(dialect, desc[1])) is not None
        )
    make = c.row_type._make
    if not c.result:
        return raw if plain else [make(r) for r in raw]
    return processed(raw, c.result, make, first_only, plain, repeated)


def _driver_error(
    conn: Connection, e: BaseException, statement: str, args: Any, cursor: Any
) -> NoReturn:
    """Raise the driver's error ``e`` as ``Connection.execute`` would, on a connection
    or a lane's (:meth:`.LaneConnection.handle_error`)."""
    held: Any = conn
    if type(held) is LaneConnection:
        held.handle_error(e, statement, args, cursor)
    handle_dbapi_error(conn, e, statement, args, cursor)


def rows(
    conn: Connection,
    construct: ClauseElement,
    params: Mapping[str, Any],
    key: Any,
    *,
    first_only: int = 0,
    repeated: int = 0,
    values: bool = False,
    plain: bool = False,
) -> list[Any]:
    """The rows of a SELECT construct, as named tuples of processed values (attributes
    named as the construct's columns).

    Args:
        conn: The connection (sync, or the sync face of an async one in ``run_sync``).
        construct: A SELECT with plain bound parameters (no expanding ``IN``).
        params: Values of its bound parameters by name; the construct's own values
            (``LIMIT 1``) fill the others.
        key: What the compiled SQL depends on besides the construct
            (:meth:`.QueryBuilder.compile_key` of the connection's dialect).
        first_only: The columns before this index are processed (their types' result
            processors) in the first row only, raw in the others: a row joined to
            several rows repeats its columns, and the caller reads them once.
        repeated: The columns before this index hold few distinct values over many
            rows (the key of the rows of one value's pieces): each distinct value is
            processed once, and its rows share the result.
        values: The rows carry stored values (binary columns): read the way the
            dialect reads them fastest (:meth:`.QueryBuilder.value_reader`: binary
            results on psycopg), the values the same.
        plain: The rows as sequences of the values, without the names (no named
            tuple made a row), for a caller that unpacks them.

    Raises:
        sqlalchemy.exc.DBAPIError: The driver's error, wrapped as SQLAlchemy wraps it.
    """
    c = _driven(conn, construct, key, values)
    if c is None:
        return list(conn.execute(construct, dict(params)).all())  # type: ignore[call-overload]
    return _run(conn, c, params, first_only, plain, repeated)  # type: ignore[no-any-return]


def execute(
    conn: Connection, construct: ClauseElement, params: Mapping[str, Any], key: Any
) -> None:
    """Execute a data-changing construct once (see :func:`rows` for the arguments)."""
    c = _driven(conn, construct, key)
    if c is None:
        conn.execute(construct, dict(params))  # type: ignore[call-overload]
        return
    _run(conn, c, params)


def execute_many(
    conn: Connection, construct: ClauseElement, params: Sequence[Mapping[str, Any]], key: Any
) -> None:
    """Execute a data-changing construct once per parameter set, as one driver
    ``executemany`` (SQLite's loops over one prepared statement in C); see :func:`rows`
    for the arguments. Through ``Connection.execute`` where :func:`execute` would be."""
    if not params:
        return
    c = _driven(conn, construct, key)
    if c is None:
        conn.execute(construct, [dict(p) for p in params])  # type: ignore[call-overload]
        return
    if not conn.in_transaction():
        conn.begin()
    args = [c.parameters(p) for p in params]
    # a lane's DBAPI connection directly, not through the pool's proxy
    held: Any = conn
    cursor = held.dbapi.cursor() if type(held) is LaneConnection else held.connection.cursor()
    try:
        cursor.executemany(c.sql, args)
    except Exception as e:
        with contextlib.suppress(Exception):
            cursor.close()
        if isinstance(e, conn.dialect.loaded_dbapi.Error):
            _driver_error(conn, e, c.sql, args, cursor)
        raise
    cursor.close()


#: Most rows in one multi-row INSERT of :func:`insert_rows` (a graph step stores a few;
#: SQLite takes 32,766 parameters a statement, at most 9 a row here).
MANY_ROWS = 64


def many_form(
    insert: Insert,
    columns: tuple[str, ...],
    count: int,
    forms: dict[tuple[int, tuple[str, ...], int], Any],
    types: Mapping[str, Any] | None = None,
) -> Any:
    """``insert`` with ``count`` rows of bound values ``<column>_<row>`` (built once per
    ``(insert, columns, count)``, kept in ``forms``), bound as their columns' types or as
    ``types`` says (the same ``types`` for every call with the same ``forms``)."""
    key = (id(insert), columns, count)
    form = forms.get(key)
    if form is None:
        table: Any = insert.table
        bound = {c: (types or {}).get(c, table.c[c].type) for c in columns}
        form = forms[key] = insert.values(
            [{c: bindparam(f"{c}_{j}", type_=bound[c]) for c in columns} for j in range(count)]
        )
    return form


def many_params(rows: Sequence[Mapping[str, Any]], columns: tuple[str, ...]) -> dict[str, Any]:
    """The values of :func:`many_form`'s bound parameters for ``rows``."""
    names = _NAMES.get((columns, len(rows)))
    if names is None:
        names = [f"{c}_{j}" for j in range(len(rows)) for c in columns]
        if len(_NAMES) < MAX_COMPILED:
            _NAMES[(columns, len(rows))] = names
    return dict(zip(names, [row[c] for row in rows for c in columns], strict=True))


#: The bound parameters' names of each :func:`many_form` shape, ``(columns, count)``.
_NAMES: dict[tuple[tuple[str, ...], int], list[str]] = {}


def insert_rows(
    conn: Connection,
    insert: Insert,
    rows: Sequence[Mapping[str, Any]],
    key: Any,
    forms: dict[tuple[int, tuple[str, ...], int], Any],
    types: Mapping[str, Any] | None = None,
) -> None:
    """Insert ``rows`` with ``insert`` as multi-row ``INSERT ... VALUES (...), (...)``
    statements of at most :data:`MANY_ROWS` rows, what SQLAlchemy's "insertmanyvalues"
    makes of an executemany, each form built and compiled once per row count.

    Args:
        conn: The connection.
        insert: An INSERT construct of one table, with its ON CONFLICT / ON DUPLICATE
            KEY clause, without values.
        rows: Rows with the same keys (column names).
        key: As for :func:`rows`.
        forms: Where the multi-row forms of ``insert`` are kept (the caller's, shared
            with its constructs; see :func:`many_form`).
        types: Bind types other than the columns' (see :func:`many_form`).
    """
    for start in range(0, len(rows), MANY_ROWS):
        chunk = rows[start : start + MANY_ROWS]
        columns = tuple(chunk[0])
        form = many_form(insert, columns, len(chunk), forms, types)
        execute(conn, form, many_params(chunk, columns), key)


def insert_values(
    conn: Connection,
    insert: Insert,
    columns: tuple[str, ...],
    rows: Sequence[Sequence[Any]],
    key: Any,
    forms: dict[tuple[int, tuple[str, ...], int], Any],
    types: Mapping[str, Any] | None = None,
) -> None:
    """:func:`insert_rows` of rows given as values in ``columns`` order: each statement's
    parameters made row after row through the columns' bind processors
    (:meth:`_Compiled.row_params`), without a dict a row; the same statements, bound
    alike."""
    for start in range(0, len(rows), MANY_ROWS):
        chunk = rows[start : start + MANY_ROWS]
        form = many_form(insert, columns, len(chunk), forms, types)
        execute_rows(conn, form, columns, chunk, key, partial(_by_name, columns, chunk))


def _by_name(columns: tuple[str, ...], rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    return many_params([dict(zip(columns, row, strict=True)) for row in rows], columns)


def execute_rows(
    conn: Connection,
    construct: ClauseElement,
    columns: tuple[str, ...],
    rows: Sequence[Sequence[Any]],
    key: Any,
    params: Callable[[], Mapping[str, Any]],
) -> None:
    """Execute a data-changing construct whose bound parameters are named
    ``<column>_<row>``, row after row (:func:`many_form`'s, or a dialect's key list), with
    ``rows`` (values in ``columns`` order): the driver's parameters made row after row
    through the columns' bind processors (:meth:`_Compiled.row_params`), without a dict
    a row. Where the construct's names are others, or the statement goes through
    ``Connection.execute``, :func:`execute` with ``params()`` instead."""
    c = _driven(conn, construct, key)
    args = None if c is None else c.row_params(columns, rows)
    if c is None or args is None:
        execute(conn, construct, params(), key)
        return
    _execute(conn, c, args)
