"""Every statement of the hot path filters on ``thread_id``.

``thread_id`` leads every primary key, and every statement a graph step runs names it:
on a distributed SQL database where ``thread_id`` is the distribution column (Citus,
YugabyteDB, CockroachDB, TiDB; see docs/deployments.md) a step then touches the rows of
one thread only. This file keeps that rule.

* Structurally, on the constructs, for each dialect (sqlite, postgresql, mysql,
  mariadb): the saver's plans (put, put_writes, get_tuple by id and latest, list of one
  thread, delete_thread, the delta-history walk, put with ``detect_conflicts``) are
  driven against a recording connection that runs nothing and keeps every construct;
  the fixed statements of :class:`._ops.Statements` are checked too, run or not. Each
  occurrence of one of our three tables must be narrowed to given threads:

  - in a SELECT, by ``thread_id = <parameter>``, ``thread_id IN (...)`` (plain or as
    the first-or-later member of a row-value ``IN``), ``thread_id >= p AND thread_id <=
    q``, an OR whose every branch does, or a join equality with the ``thread_id`` of a
    table (or derived table) that is narrowed itself;
  - in a DELETE/UPDATE, the same on its WHERE clause;
  - in an INSERT, ``thread_id`` among the inserted columns;
  - in a statement carrying data-changing CTEs (PostgreSQL), each member on its own.

* End to end: a small put / put_writes / get_tuple / list / history / delete_thread on
  a SQLite file saver, a ``before_cursor_execute`` listener capturing every statement;
  each one naming a table of ours names ``thread_id`` too, but for the documented
  exceptions of :data:`EXCEPTIONS`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from sqlalchemy import Table, event
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.sql import operators, visitors
from sqlalchemy.sql.dml import Delete, Insert, Update
from sqlalchemy.sql.elements import (
    BinaryExpression,
    BindParameter,
    BooleanClauseList,
    ClauseElement,
    ColumnClause,
    Grouping,
    Tuple,
)
from sqlalchemy.sql.selectable import Alias, FromClause, Join, Select

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._codec import rows as _codec
from langgraph.checkpoint.sqlalchemy._codec.configs import saver_options
from langgraph.checkpoint.sqlalchemy._codec.records import PendingWrite
from langgraph.checkpoint.sqlalchemy._ops import checkpoints as _checkpoints
from langgraph.checkpoint.sqlalchemy._ops import history as _history
from langgraph.checkpoint.sqlalchemy._ops import listing as _listing
from langgraph.checkpoint.sqlalchemy._plans import methods as _methods
from langgraph.checkpoint.sqlalchemy.dialects import query_builder
from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, metadata_index, writes

from ..checkpoints import next_checkpoint

# lgsa_locks is left out on purpose: its key is a digest of the thread (a lease name), see
# docs/deployments.md (Citus: a reference table, or distributed by name); so is
# lgsa_metadata_keys, a list of key names.
OURS: tuple[Table, ...] = (checkpoints, blobs, writes, metadata_index)
OUR_NAMES = tuple(t.name for t in OURS)

#: Dialect name -> an (unconnected) dialect of a driver the saver uses.
DIALECT_URLS = {
    "sqlite": "sqlite+pysqlite://",
    "postgresql": "postgresql+psycopg://",
    "mysql": "mysql+pymysql://",
    "mariadb": "mariadb+pymysql://",
}

#: Statements of the end-to-end run that name a table of ours without ``thread_id``,
#: each with why it is not on the hot path of a graph step. A pattern matches the SQL
#: text (upper-cased, quotes removed).
EXCEPTIONS: dict[str, str] = {
    r"^SELECT .* FROM LGSA_CHECKPOINTS ORDER BY .* LIMIT": (
        "list(None): the global listing of every thread (not a graph step)"
    ),
}
#: Everything ``setup()`` runs is excepted as a whole: DDL, the schema version check and
#: the migrations' data steps, which by design read across threads (revision 0003
#: re-keys long thread ids and namespaces: ``SELECT DISTINCT checkpoint_ns ... WHERE
#: checkpoint_ns LIKE 'lgsa:sha256:%'`` on each table), once per database, not per step.
SETUP_EXCEPTED = "setup(): DDL, version check, migration data steps (once, not per step)"
#: Maintenance and global operations: not run by a graph step, and not checked here
#: (delete_for_runs, prune keep_latest, copy_thread, list_threads, storage_stats over
#: the whole database, list(None)). They scan or group across threads by design.
NOT_HOT_PATH = (
    "delete_for_runs",
    "prune(keep_latest)",
    "copy_thread (source and target threads: both named)",
    "list_threads",
    "storage_stats(None)",
    "list(None)",
)


# -- the structural check ---------------------------------------------------------------


def _our_table(from_: Any) -> Table | None:
    """The table of ours ``from_`` is (itself or an alias of it), else None."""
    if isinstance(from_, Table) and from_ in OURS:
        return from_
    if isinstance(from_, Alias) and isinstance(from_.element, Table) and from_.element in OURS:
        return from_.element
    return None


def _leaves(from_: Any, onclauses: list[Any]) -> Iterator[Any]:
    """The FROM elements of a join (or ``from_`` itself), collecting its ON clauses."""
    if isinstance(from_, Join):
        onclauses.append(from_.onclause)
        yield from _leaves(from_.left, onclauses)
        yield from _leaves(from_.right, onclauses)
    else:
        yield from_


def _strip(element: Any) -> Any:
    while isinstance(element, Grouping):
        element = element.element
    return element


def _thread_column(element: Any) -> Any:
    """The ``thread_id`` column ``element`` is (None otherwise)."""
    element = _strip(element)
    if isinstance(element, ColumnClause) and element.name == "thread_id":
        return element
    return None


def _is_value(element: Any) -> bool:
    """A value given to the statement: a bound parameter (or a tuple/list of them)."""
    element = _strip(element)
    if isinstance(element, BindParameter):
        return True
    if isinstance(element, (Tuple, BooleanClauseList)) or hasattr(element, "clauses"):
        clauses = getattr(element, "clauses", ())
        return bool(clauses) and all(_is_value(c) for c in clauses)
    return False


def _narrowing(cond: Any, column: Any, bound_columns: list[Any]) -> bool:
    """Whether condition ``cond`` (a WHERE or ON clause) confines ``column`` (a table's
    ``thread_id``) to given threads. ``bound_columns``: ``thread_id`` columns of FROM
    elements already known to be narrowed (join equality with one of them narrows)."""
    cond = _strip(cond)
    if cond is None:
        return False
    if isinstance(cond, BooleanClauseList):
        parts = list(cond.clauses)
        if cond.operator is operators.or_:
            return bool(parts) and all(_narrowing(p, column, bound_columns) for p in parts)
        if cond.operator is operators.and_:
            if any(_narrowing(p, column, bound_columns) for p in parts):
                return True
            # A range of given values: thread_id >= p AND thread_id <= q.
            low = any(_bound_side(p, column, (operators.ge, operators.gt)) for p in parts)
            high = any(_bound_side(p, column, (operators.le, operators.lt)) for p in parts)
            return low and high
        return False
    if not isinstance(cond, BinaryExpression):
        return False
    op = cond.operator
    if op is operators.eq:
        for mine, other in ((cond.left, cond.right), (cond.right, cond.left)):
            if _thread_column(mine) is column:
                other_column = _thread_column(other)
                if _is_value(other) or any(other_column is c for c in bound_columns):
                    return True
        return False
    if op in (operators.in_op,):
        left = _strip(cond.left)
        if _thread_column(left) is column:
            return True
        # Row-value IN: (thread_id, ...) IN (...), the thread among the members.
        return isinstance(left, Tuple) and any(_thread_column(c) is column for c in left.clauses)
    return False


def _bound_side(cond: Any, column: Any, ops: tuple[Any, ...]) -> bool:
    cond = _strip(cond)
    if not isinstance(cond, BinaryExpression):
        return False
    if cond.operator in ops:
        return _thread_column(cond.left) is column and _is_value(cond.right)
    swapped = {operators.ge: operators.le, operators.gt: operators.lt}
    swapped.update({v: k for k, v in swapped.items()})
    if cond.operator in {swapped[o] for o in ops}:
        return _thread_column(cond.right) is column and _is_value(cond.left)
    return False


def _select_problems(sel: Select[Any]) -> list[str]:
    onclauses: list[Any] = []
    leaves = [leaf for f in sel.get_final_froms() for leaf in _leaves(f, onclauses)]
    conditions = [c for c in (sel.whereclause, *onclauses) if c is not None]
    ours = [leaf for leaf in leaves if _our_table(leaf) is not None]
    # Derived tables (subqueries, CTEs) with a thread_id column: their own SELECT is
    # checked on its own (every table in it narrowed), so their thread_id is narrowed.
    bound: list[Any] = [
        leaf.c.thread_id
        for leaf in leaves
        if _our_table(leaf) is None and "thread_id" in getattr(leaf, "c", {})
    ]
    pending = list(ours)
    changed = True
    while pending and changed:  # join equalities propagate narrowing
        changed = False
        for leaf in list(pending):
            column = leaf.c.thread_id
            if any(_narrowing(c, column, bound) for c in conditions):
                bound.append(column)
                pending.remove(leaf)
                changed = True
    return [f"SELECT reads {_name(leaf)} without narrowing thread_id" for leaf in pending]


def _name(from_: FromClause) -> str:
    table = _our_table(from_)
    alias = getattr(from_, "name", None)
    return f"{table.name if table is not None else from_} (as {alias})"


def _insert_columns(ins: Insert, params: dict[str, Any] | None) -> set[str] | None:
    """Columns an INSERT writes: its VALUES (single or multi-row), else the execution
    parameters; None when neither is known (a bare construct, checked where run)."""
    multi = getattr(ins, "_multi_values", None)
    if multi:
        return {getattr(k, "key", k) for rows in multi for row in rows for k in row}
    values = getattr(ins, "_values", None)
    if values:
        return {getattr(k, "key", k) for k in values}
    if getattr(ins, "select", None) is not None:
        return set(getattr(ins, "_select_names", None) or ()) or None
    if params is not None:
        return set(params)
    return None


def problems(stmt: ClauseElement, params: dict[str, Any] | None = None) -> list[str]:
    """What in ``stmt`` (and every nested SELECT / CTE member) reads or writes a table of
    ours without confining it to given threads; empty when all is well."""
    found: list[str] = []
    for node in visitors.iterate(stmt):
        if isinstance(node, Select):
            found += _select_problems(node)
        elif isinstance(node, (Delete, Update)):
            table = _our_table(node.table)
            if table is not None and not _narrowing(node.whereclause, node.table.c.thread_id, []):
                found.append(f"{type(node).__name__} of {table.name} without thread_id")
        elif isinstance(node, Insert):
            table = _our_table(node.table)
            if table is None:
                continue
            columns = _insert_columns(node, params if node is stmt else None)
            if columns is not None and "thread_id" not in columns:
                found.append(f"INSERT into {table.name} without thread_id: {sorted(columns)}")
            sub = getattr(node, "select", None)
            if sub is not None:
                found += _select_problems(sub)
    return found


def touches_ours(stmt: ClauseElement) -> bool:
    return any(isinstance(n, Table) and n in OURS for n in visitors.iterate(stmt)) or any(
        isinstance(n, (Insert, Delete, Update)) and _our_table(n.table) is not None
        for n in visitors.iterate(stmt)
    )


# -- a connection that records instead of running ------------------------------------------


class _Result:
    def __init__(self, rows: list[Any], scalar: Any = None) -> None:
        self._rows = rows
        self._scalar = scalar

    def all(self) -> list[Any]:
        return list(self._rows)

    def scalar(self) -> Any:
        return self._scalar

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


class _Dispatch:
    # A "listener": _driver then sends every statement through Connection.execute.
    before_cursor_execute = (object(),)
    after_cursor_execute = ()


class _Engine:
    # What the cursor layer reads of ``Connection.engine``: its SQL log (off here; either
    # answer sends every statement through execute, as the listener above does).
    logger = logging.getLogger("tests.dialects.recorder")


class Recorder:
    """Stands for a Connection: keeps every construct executed, answers SELECTs of the
    checkpoints table with one checkpoint row of thread ``t1`` (so that reads go on to
    their blob and write lookups), anything else with no rows."""

    dispatch = _Dispatch()
    engine = _Engine()

    def __init__(self, dialect: Dialect, checkpoint_row: Any) -> None:
        self.dialect = dialect
        self.seen: list[tuple[ClauseElement, dict[str, Any] | None]] = []
        self.text: list[str] = []
        self._row = checkpoint_row

    def execute(self, stmt: Any, params: Any = None) -> _Result:
        self.seen.append((stmt, dict(params) if isinstance(params, dict) else None))
        names = (
            set(getattr(stmt, "selected_columns", {}).keys()) if isinstance(stmt, Select) else set()
        )
        if {"value_versions", "inline_values", "checkpoint"} <= names:
            return _Result([self._row])
        # Locks (GET_LOCK) are granted; reads of our tables find nothing (no conflict).
        return _Result([], None if touches_ours(stmt) else 1)

    def exec_driver_sql(self, sql: str, *args: Any) -> _Result:
        self.text.append(sql)
        return _Result([])

    def in_transaction(self) -> bool:
        return True

    def get_execution_options(self) -> dict[str, Any]:
        return {}


class _Row:
    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


SERDE = JsonPlusSerializer()


def _canned_row() -> _Row:
    type_, data = SERDE.dumps_typed({**empty_checkpoint(), "id": "c2"})
    return _Row(
        thread_id="t1",
        checkpoint_ns="",
        checkpoint_id="c2",
        parent_checkpoint_id="c1",
        type=type_,
        checkpoint=data,
        metadata={"source": "loop", "step": 1},
        value_versions={"ch": "v1"},
        inline_values=None,
        thread_id_full=None,
        checkpoint_ns_full=None,
        task_id=None,
    )


def _drive(plan: Any, conn: Recorder) -> Any:
    """Run a plan's operations on ``conn`` (what Runner.drive does on a real one)."""
    try:
        _access, op, args = next(plan)
        while True:
            _access, op, args = plan.send(op(conn, *args))
    except StopIteration as stop:
        return stop.value


def _config(thread: str, checkpoint_id: str | None = None, ns: str = "") -> Any:
    c: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def hot_path(
    dialect_name: str, *, inline_limit: int = 0
) -> tuple[Recorder, _checkpoints.Statements]:
    """Every statement of the hot path of ``dialect_name``, recorded."""
    dialect = make_url(DIALECT_URLS[dialect_name]).get_dialect()()
    qb = query_builder(dialect_name)
    st = _checkpoints.Statements(qb)
    options = saver_options(inline_limit, True, None, 0)
    codec = _codec.Codec(SERDE, options, qb.metadata_index_rows, strict=False)
    plans = _methods.Plans(codec, st)
    checked = _methods.Plans(codec, st, detect_conflicts=True)
    conn = Recorder(dialect, _canned_row())
    cp: Any = {**empty_checkpoint(), "id": "1ef00000-0000-6000-8000-000000000002"}
    cp["channel_values"] = {"ch": "x" * 100, "small": 1}
    cp["channel_versions"] = {"ch": "v1", "small": "v1"}
    meta: Any = {"source": "loop", "step": 1}
    parent = _config("t1", "1ef00000-0000-6000-8000-000000000001")
    # put: checkpoint upsert alone; with blob rows (PostgreSQL: one statement, the
    # blobs insert in its WITH clause); and under detect_conflicts (newest-id read).
    _drive(plans.put(parent, cp, meta, {"ch": "v1", "small": "v1"}), conn)
    _drive(plans.put(parent, cp, meta, {}), conn)
    # Values over _checkpoints.BATCH_BYTES: the blobs insert runs on its own, then the upsert.
    big: Any = {**cp, "channel_values": {"ch": "y" * 5_000_000}}
    _drive(plans.put(parent, big, meta, {"ch": "v1"}), conn)
    _drive(checked.put(parent, cp, meta, {"ch": "v1"}), conn)
    # put_writes: first-write-wins and replace (special channels).
    _drive(plans.put_writes(parent, [("ch", 1), ("other", 2)], "task-1", ""), conn)
    _drive(plans.put_writes(parent, [("__error__", "boom")], "task-1", ""), conn)
    # put with its writes (transfer's copy; the same inserts).
    pending = [PendingWrite("task-2", "", "ch", 3, "v")]
    _drive(plans.put(parent, cp, meta, {"ch": "v1"}, pending), conn)
    # get_tuple by id and latest (the canned row lacks its blob: read again).
    _drive(plans.get_tuple(parent), conn)
    _drive(plans.get_tuple(_config("t1")), conn)
    # list of one thread, with a namespace, a filter, before, and a second page.
    listings: Any = (
        ({"configurable": {"thread_id": "t1"}}, None, None),
        (_config("t1"), {"source": "loop", "step": 1, "custom": {"a": [1]}}, parent),
    )
    for config, filt, before in listings:
        query = _listing.list_query(qb, config, filt, before, codec.index_keys)
        pages = _methods.Pages(codec, st, query, 2, 1)
        for _access, op, args in pages:
            list(pages.decoded(op(conn, *args)))
    # delete_thread, and the delta-history walk of one thread.
    _drive(plans.delete_thread("t1"), conn)
    _drive(plans.delta_history(parent, ["ch", "other"]), conn)
    walked = [_history.ChainRow("c1", 0, {}), _history.ChainRow("c0", 1, {"ch": "v0"})]
    _history.fetch(cast(Any, conn), st, "t1", "", walked, ["ch", "other"])
    return conn, st


def _static(st: _checkpoints.Statements) -> list[tuple[str, ClauseElement]]:
    """The fixed constructs of :class:`._ops.Statements`, whatever their attribute names
    (a statement added there is checked here without this file changing)."""
    found = []
    for name, value in vars(st).items():
        items = value if isinstance(value, list) else [value]
        found += [(f"{name}[{i}]", v) for i, v in enumerate(items) if isinstance(v, ClauseElement)]
    for cache in ("_blobs_in", "_writes_in", "_many", "_combined"):
        found += [(f"{cache}[{k}]", v) for k, v in getattr(st, cache).items()]
    return found


DIALECT_NAMES = tuple(DIALECT_URLS)


@pytest.mark.parametrize("dialect_name", DIALECT_NAMES)
def test_every_hot_path_statement_narrows_to_threads(dialect_name: str) -> None:
    conn, st = hot_path(dialect_name)
    dialect = conn.dialect
    touched = [(s, p) for s, p in conn.seen if touches_ours(s)]
    # The run reached every part of the hot path (a path silently skipped proves nothing).
    kinds = {_kind(s) for s, _ in touched}
    assert kinds >= {
        "INSERT lgsa_checkpoints",
        "INSERT lgsa_checkpoint_writes",
        "SELECT lgsa_checkpoints",
        "SELECT lgsa_checkpoint_blobs",
        "SELECT lgsa_checkpoint_writes",
        "DELETE",
    }, kinds
    if dialect_name != "postgresql":
        assert "INSERT lgsa_checkpoint_blobs" in kinds, kinds
    bad = []
    for stmt, params in touched:
        sql = str(stmt.compile(dialect=dialect))  # compiles on the dialect
        assert "thread_id" in sql, sql
        bad += [f"{p}\n  {sql}" for p in problems(stmt, params)]
    for name, stmt in _static(st):
        str(stmt.compile(dialect=dialect))
        bad += [f"Statements.{name}: {p}" for p in problems(stmt)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dialect_name", ("postgresql",))
def test_data_modifying_ctes_are_checked_member_by_member(dialect_name: str) -> None:
    """PostgreSQL's one-statement put and delete_thread: each CTE member on its own."""
    conn, st = hot_path(dialect_name)
    assert st.delete_thread_one is not None
    members = [n for n in visitors.iterate(st.delete_thread_one) if isinstance(n, Delete)]
    assert {getattr(m.table, "name", None) for m in members} == set(OUR_NAMES)
    combined = [
        s for s, _ in conn.seen if isinstance(s, Insert) and getattr(s, "_independent_ctes", None)
    ]
    assert combined, "no one-statement put recorded"
    for stmt in combined:
        inserts = [n for n in visitors.iterate(stmt) if isinstance(n, Insert)]
        assert {i.table.name for i in inserts} == {"lgsa_checkpoints", "lgsa_checkpoint_blobs"}
        assert problems(stmt, {"thread_id": "t1"}) == []


def _kind(stmt: ClauseElement) -> str:
    if isinstance(stmt, (Insert, Delete, Update)):
        verb = type(stmt).__name__.upper()
        return verb if verb == "DELETE" else f"{verb} {stmt.table.name}"  # type: ignore[union-attr]
    tables = {n.name for n in visitors.iterate(stmt) if isinstance(n, Table) and n in OURS}
    return "SELECT " + ",".join(sorted(tables))


# -- the checker itself rejects what it must ------------------------------------------------


def test_the_checker_rejects_statements_that_miss_the_thread() -> None:
    from sqlalchemy import bindparam, delete, select, tuple_

    c, b, w = checkpoints, blobs, writes
    assert problems(select(c.c.checkpoint_id).where(c.c.checkpoint_ns == "")) != []
    assert problems(select(c.c.checkpoint_id).where(c.c.thread_id >= bindparam("t"))) != []
    assert problems(select(c.c.checkpoint_id).where(c.c.thread_id == c.c.checkpoint_ns)) != []
    either = (c.c.thread_id == "a") | (c.c.checkpoint_ns == "")
    assert problems(select(c.c.checkpoint_id).where(either)) != []
    assert problems(delete(b).where(b.c.channel == "x")) != []
    unbound_join = select(c.c.checkpoint_id).select_from(c.join(w, w.c.thread_id == c.c.thread_id))
    assert problems(unbound_join) != []
    assert problems(unbound_join.where(c.c.thread_id == "t")) == []
    assert problems(select(w.c.idx).where(tuple_(w.c.checkpoint_ns, w.c.thread_id).in_([]))) == []
    assert problems(select(c.c.checkpoint_id).where(c.c.thread_id.in_(["a", "b"]))) == []
    from sqlalchemy.dialects import sqlite

    assert problems(sqlite.insert(w).values(checkpoint_ns="", checkpoint_id="c")) != []


# -- end to end on SQLite ------------------------------------------------------------------


def _exception(sql: str) -> str | None:
    text = sql.upper().replace('"', "").replace("`", "")
    text = re.sub(r"\s+", " ", text).strip()
    for pattern, why in EXCEPTIONS.items():
        if re.search(pattern, text):
            return why
    return None


def test_end_to_end_sqlite_statements_name_the_thread(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dist.sqlite'}"
    with SQLAlchemySaver.from_conn_string(url, inline_limit=64) as saver:
        seen: list[str] = []

        def listener(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
            seen.append(statement)

        saver.setup()  # excepted as a whole: SETUP_EXCEPTED
        event.listen(saver.engine, "before_cursor_execute", listener)
        try:
            configs, prev, config = [], None, _config("t-1")
            for step in range(3):
                updates = {"messages": ["m" * 200] * (step + 1), "step": step}
                prev, versions = next_checkpoint(saver, prev, updates, step)
                config = saver.put(config, prev, {"source": "loop", "step": step}, versions)
                configs.append(config)
            saver.put_writes(configs[-1], [("messages", "hi"), ("step", 9)], "task-1")
            saver.put_writes(configs[-1], [("__error__", "boom")], "task-1")
            assert saver.get_tuple(_config("t-1")) is not None
            assert saver.get_tuple(configs[0]) is not None
            assert len(list(saver.list(_config("t-1")))) == 3
            assert len(list(saver.list(_config("t-1"), filter={"step": 1}))) == 1
            assert len(list(saver.list(_config("t-1"), before=configs[-1], limit=1))) == 1
            saver.get_delta_channel_history(config=configs[-1], channels=["messages"])
            listed_all = len(seen)
            assert len(list(saver.list(None))) == 3  # the documented exception
            global_listing = seen[listed_all:]
            saver.delete_thread("t-1")
        finally:
            event.remove(saver.engine, "before_cursor_execute", listener)
    assert any(_exception(s) for s in global_listing), global_listing
    ours = [s for s in seen if re.search("|".join(OUR_NAMES), s, re.IGNORECASE)]
    assert len(ours) >= 10, seen
    missing = [s for s in ours if "thread_id" not in s.lower() and _exception(s) is None]
    assert not missing, "\n\n".join(missing)
