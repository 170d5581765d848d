"""The hot path's shortcuts keep what a commit and a read guarantee.

- An unchanged channel value is serialised once, not at every put; a value that is a
  new object is serialised again whatever its version says.
- The statements of a graph step run on the driver's cursor, yet a
  ``before_cursor_execute`` listener (instrumentation) still sees every one of them.
- SQL logging (``echo``) shows them too.
- They run on a pooled connection without a ``Connection`` object (the short door) unless
  a listener it would skip is registered; a task's writes that take several statements
  are stored in one transaction.
- On PostgreSQL a put with blob rows and a delete_thread are one statement each.
- Savers built by ``from_conn_string`` for the same database share their engines, which
  are disposed when the last of them closes and serve the next saver after that.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from sqlalchemy import Engine, event

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.checkpoint.sqlalchemy._engine.lane import Lane

from ..checkpoints import next_checkpoint
from ..doors import Door
from ..provision import new_saver_args
from ..waiting import until_async

BIG_LIST = [f"message {i} " + "x" * 40 for i in range(40)]  # ~2 kB serialised


class CountingSerde(JsonPlusSerializer):
    """Counts ``dumps_typed`` calls per object identity."""

    def __init__(self) -> None:
        super().__init__()
        self.dumped: list[int] = []

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        self.dumped.append(id(obj))
        return super().dumps_typed(obj)


def _config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


async def _put_steps(door: Door, thread: str, updates: list[dict[str, Any]]) -> list[Any]:
    """Put one checkpoint a step, each the child of the previous, with the channels in
    ``updates[step]`` written (new versions); other channels keep their value object and
    version, as LangGraph's channels do."""
    config, prev, configs = _config(thread), None, []
    for step, written in enumerate(updates):
        prev, new_versions = next_checkpoint(door.saver, prev, written, step)
        config = await door.put(config, prev, {"source": "loop", "step": step}, new_versions)
        configs.append(config)
    return configs


async def test_an_unchanged_value_is_serialised_once(saver_factory: Any, mode: str) -> None:
    serde = CountingSerde()
    door = Door(saver_factory(serde=serde), mode)
    steps = [{"messages": BIG_LIST, "step": 0}] + [{"step": i} for i in range(1, 5)]
    await _put_steps(door, "t", steps)
    assert serde.dumped.count(id(BIG_LIST)) == 1
    got = await door.get_tuple(_config("t"))
    assert got.checkpoint["channel_values"] == {"messages": BIG_LIST, "step": 4}


async def test_a_new_object_is_serialised_again_at_the_same_version(
    saver_factory: Any, mode: str
) -> None:
    serde = CountingSerde()
    door = Door(saver_factory(serde=serde), mode)
    configs = await _put_steps(door, "t", [{"messages": BIG_LIST, "step": 0}])
    # A run restored from the database holds a new object at the same version: its bytes
    # are made again (the cache never trusts a version alone), and what is stored is
    # that object's value.
    restored = [*BIG_LIST[:-1], "changed"]
    prev = (await door.get_tuple(configs[0])).checkpoint
    prev["channel_values"]["messages"] = restored
    cp, new_versions = next_checkpoint(door.saver, prev, {"step": 1}, 1)
    config = await door.put(configs[0], cp, {"source": "loop", "step": 1}, new_versions)
    assert serde.dumped.count(id(restored)) == 1
    got = await door.get_tuple(config)
    assert got.checkpoint["channel_values"]["messages"] == restored


@contextmanager
def statements(saver: SQLAlchemySaver) -> Iterator[list[str]]:
    """SQL statements sent by both of the saver's engines inside the block."""
    seen: list[str] = []

    def listener(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    engines = (saver.engine, saver.async_engine.sync_engine)
    for engine in engines:
        event.listen(engine, "before_cursor_execute", listener)
    try:
        yield seen
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", listener)


async def test_listeners_see_every_statement_of_a_graph_step(door: Door) -> None:
    with statements(door.saver) as seen:
        configs = await _put_steps(door, "t", [{"messages": BIG_LIST, "step": 0}])
        await door.put_writes(configs[0], [("messages", "hi"), ("step", 1)], "task-1")
        got = await door.get_tuple(_config("t"))
    assert got is not None and len(got.pending_writes) == 2
    text = " ".join(s.upper() for s in seen).replace('"', "").replace("`", "")
    for table in ("LGSA_CHECKPOINTS", "LGSA_CHECKPOINT_WRITES"):
        assert re.search(rf"INSERT INTO (\S+\.)?{table} ", text), table
    assert "SELECT" in text


@pytest.mark.saver_kwargs(inline_limit=0)
async def test_one_statement_writes_where_the_dialect_allows(door: Door) -> None:
    """inline_limit=0: every value goes to the blobs table, so a put writes two tables."""
    combined = door.saver._st.qb.dml_in_cte
    await _put_steps(door, "warm-up", [{"step": 0}])  # MySQL: reads the packet limit once
    with statements(door.saver) as seen:
        await _put_steps(door, "t", [{"messages": BIG_LIST, "step": 0}])
    assert len(seen) == (1 if combined else 2)
    with statements(door.saver) as seen:
        await door.delete_thread("t")
    assert len(seen) == (1 if combined else len(door.saver._st.delete_thread))
    assert await door.get_tuple(_config("t")) is None


def test_savers_of_one_database_share_engines_until_the_last_closes(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    if backend == "sqlite-memory":
        pytest.skip("an in-memory database lives in one saver's own engines")
    args = new_saver_args(backend, request, tmp_path)
    first = SQLAlchemySaver.from_conn_string(**args)
    first.setup()
    second = SQLAlchemySaver.from_conn_string(**args)
    assert second.engine is first.engine and second.async_engine is first.async_engine
    other = SQLAlchemySaver.from_conn_string(**args, pool_size=3)
    assert other.engine is not first.engine  # other engine arguments: other engines
    other.close()

    configs = [_put_sync(first, "a"), _put_sync(second, "b")]
    first.close()
    first.close()  # a second close changes nothing for the saver still open
    assert second.get_tuple(configs[0]) is not None  # still served
    assert second.engine.pool.checkedin() >= 1
    second.close()
    assert second.engine.pool.checkedin() == 0  # the last close closed the connections

    third = SQLAlchemySaver.from_conn_string(**args)
    try:
        assert third.engine is first.engine  # kept for the next saver
        assert third.get_tuple(configs[1]) is not None
    finally:
        third.close()


def _put_sync(saver: SQLAlchemySaver, thread: str) -> Any:
    cp, new_versions = next_checkpoint(saver, None, {"step": 0})
    return saver.put(_config(thread), cp, {"source": "loop", "step": 0}, new_versions)


async def test_compiled_statements_are_bounded(door: Door, monkeypatch: Any) -> None:
    """A process serving many schemas compiles each statement once per schema: the
    cache of compiled statements keeps at most MAX_COMPILED of them."""
    monkeypatch.setattr(cursor, "MAX_COMPILED", 2)
    monkeypatch.setattr(cursor, "_CACHE", {})  # the process's cache holds earlier tests'
    configs = await _put_steps(door, "t", [{"messages": BIG_LIST, "step": i} for i in range(3)])
    await door.put_writes(configs[-1], [("step", 9)], "task-1")
    got = await door.get_tuple(_config("t"))
    assert got.checkpoint["channel_values"]["step"] == 2 and len(got.pending_writes) == 1
    assert len(cursor._CACHE) <= 2


async def test_sql_logging_shows_every_statement_of_a_graph_step(
    door: Door, caplog: pytest.LogCaptureFixture
) -> None:
    """``echo`` (the ``sqlalchemy.engine`` logger at INFO) logs the graph step's
    statements too, though they otherwise run on the driver's cursor."""
    with caplog.at_level(logging.INFO, logger="sqlalchemy.engine"):
        configs = await _put_steps(door, "t", [{"messages": BIG_LIST, "step": 0}])
        await door.put_writes(configs[0], [("messages", "hi"), ("step", 1)], "task-1")
        got = await door.get_tuple(_config("t"))
    assert got is not None and len(got.pending_writes) == 2
    logged = [r for r in caplog.records if r.name.startswith("sqlalchemy")]
    text = " ".join(r.getMessage().upper() for r in logged)
    text = text.replace('"', "").replace("`", "")
    for table in ("LGSA_CHECKPOINTS", "LGSA_CHECKPOINT_WRITES"):
        assert re.search(rf"INSERT INTO (\S+\.)?{table} ", text), table


async def test_a_graph_step_takes_the_short_door(door: Door, monkeypatch: Any) -> None:
    """put, put_writes and get_tuple run on a pooled connection without a
    ``Connection`` object (:mod:`._engine.lane`) when nothing listens."""
    taken: list[str] = []
    real = Lane.run

    def counting(self: Lane, access: Any, write: bool, op: Any, args: Any) -> Any:
        taken.append(op.__name__)
        return real(self, access, write, op, args)

    await _put_steps(door, "warm-up", [{"step": 0}])  # schema checked, MySQL packet read
    monkeypatch.setattr(Lane, "run", counting)
    configs = await _put_steps(door, "t", [{"messages": BIG_LIST, "step": 0}])
    await door.put_writes(configs[0], [("messages", "hi"), ("step", 1)], "task-1")
    got = await door.get_tuple(_config("t"))
    assert got is not None and len(got.pending_writes) == 2
    assert taken == ["put", "put_writes", "get_checkpoint"]


async def test_a_connection_listener_closes_the_short_door(door: Door) -> None:
    """A ``begin``/``commit`` listener (one the short door would not fire) sends the
    graph step through ``Connection`` again: the listener sees each transaction."""
    seen: list[str] = []

    def on_commit(_conn: Any) -> None:
        seen.append("commit")

    engines = (door.saver.engine, door.saver.async_engine.sync_engine)
    for engine in engines:
        event.listen(engine, "commit", on_commit)
    try:
        await _put_steps(door, "t", [{"step": 0}])
    finally:
        for engine in engines:
            event.remove(engine, "commit", on_commit)
    assert seen


@pytest.mark.parametrize(
    "where",
    ["class before_cursor_execute", "engine begin", "class begin", "pool checkout"],
)
async def test_every_listener_kind_sees_the_graph_step(door: Door, where: str) -> None:
    """A listener on the ``Engine`` class, a ``begin`` listener beside the dialect's own
    and a pool ``checkout`` listener, each added after the saver was made, see the graph
    step's work: the short door (which reads SQLAlchemy's listener collections itself)
    closes for them, or checks the connection out for each call."""
    await _put_steps(door, "warm-up", [{"step": 0}])
    seen: list[str] = []

    def listener(*_args: Any, **_kw: Any) -> None:
        seen.append(where)

    engines = [door.saver.engine, door.saver.async_engine.sync_engine]
    scope, name = where.split(" ")
    targets: list[Any] = {
        "class": [Engine],
        "engine": engines,
        "pool": [e.pool for e in engines],
    }[scope]
    for target in targets:
        event.listen(target, name, listener)
    try:
        configs = await _put_steps(door, "t", [{"step": 0}])
        seen.clear()
        await door.put_writes(configs[0], [("step", 1)], "task-1")
        assert seen, where
        seen.clear()
        assert await door.get_tuple(_config("t")) is not None
        assert seen or name == "begin", where  # a read on its own may not BEGIN
    finally:
        for target in targets:
            event.remove(target, name, listener)


async def test_many_writes_of_one_task_are_one_transaction(door: Door) -> None:
    """More writes than one multi-row INSERT holds: several statements, all or none."""
    configs = await _put_steps(door, "t", [{"step": 0}])
    writes = [(f"ch{i}", i) for i in range(cursor.MANY_ROWS + 10)]
    calls = 0

    def fail_second(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        nonlocal calls
        if "lgsa_checkpoint_writes" in statement.lower().replace('"', "").replace("`", ""):
            calls += 1
            if calls == 2:
                raise RuntimeError("interrupted between two statements")

    engines = (door.saver.engine, door.saver.async_engine.sync_engine)
    for engine in engines:
        event.listen(engine, "before_cursor_execute", fail_second)
    try:
        with pytest.raises(RuntimeError, match="interrupted"):
            await door.put_writes(configs[0], writes, "task-1")
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", fail_second)
    got = await door.get_tuple(configs[0])
    assert got is not None and got.pending_writes == []
    await door.put_writes(configs[0], writes, "task-1")
    got = await door.get_tuple(configs[0])
    assert got is not None and len(got.pending_writes) == len(writes)


@pytest.mark.parametrize("dialect_name", ["sqlite", "postgresql", "mysql"])
def test_values_that_skip_a_type_processor_are_those_it_leaves_unchanged(
    dialect_name: str,
) -> None:
    """The cursor path skips the bind processor of an identifier type for short ASCII
    text, and the result processor for text read back: only where the processor would
    return the very value."""
    from sqlalchemy.dialects import mysql, postgresql, sqlite

    from langgraph.checkpoint.sqlalchemy import schema

    dialect = {"sqlite": sqlite, "postgresql": postgresql, "mysql": mysql}[dialect_name].dialect()
    values = [
        "",
        "thread-1",
        "a" * schema.NAME_KEY_LENGTH,
        "a" * (schema.NAME_KEY_LENGTH + 1),
        schema.NAME_KEY_MARKER + "abc",
        "ключ",
        "bad \udc80",
        schema.StoredKey("stored"),
    ]
    for type_ in (schema.NameKey(schema.NAME_KEY_LENGTH), schema.KeyText(100), schema.FullName()):
        bind = type_.dialect_impl(dialect).bind_processor(dialect)
        assert bind is not None
        limit = cursor._ascii_unchanged(type_, dialect)
        for v in values:
            skipped = (
                limit
                and type(v) is str
                and len(v) <= limit
                and v.isascii()
                and not v.startswith(schema.NAME_KEY_MARKER)
            )
            if skipped:
                assert bind(v) == v and type(bind(v)) is str, (type_, v)
        result = type_.dialect_impl(dialect).result_processor(dialect, None)
        if cursor._str_read_unchanged(type_):
            assert result is not None
            for v in values:
                if type(v) is str:
                    assert result(v) == v and type(result(v)) is str, (type_, v)


async def test_the_async_door_thread_hop_keeps_what_to_thread_gives() -> None:
    """The worker-thread hop of SQLite's async door: the caller's context, its
    exceptions (``BaseException`` too), calls in parallel, a cancelled awaiter."""
    import asyncio
    import contextvars
    import threading

    from langgraph.checkpoint.sqlalchemy._engine import hop

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")
    assert await hop.run(var.get) == "caller"
    assert await hop.run(threading.get_ident) != threading.get_ident()

    def boom() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await hop.run(boom)
    # Two calls that wait for each other finish only if they run at the same time.
    barrier = threading.Barrier(2, timeout=120)
    await asyncio.gather(hop.run(barrier.wait), hop.run(barrier.wait))
    # A cancelled awaiter leaves the call to finish; the next calls still run.
    running, release = threading.Event(), threading.Event()

    def held() -> bool:
        running.set()
        return release.wait(120)

    task = asyncio.ensure_future(hop.run(held))
    await until_async(running.is_set, "the call to run in the worker thread")
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await hop.run(lambda: 42) == 42


def test_echo_shows_a_put_and_a_get_tuple(tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    """``echo=True``, as the SQLAlchemy docs tell a user debugging a query, shows the
    INSERT of a put and the SELECT of a get_tuple."""
    saver = SQLAlchemySaver.from_conn_string(f"sqlite:///{tmp_path / 'echo.sqlite'}", echo=True)
    try:
        saver.setup()
        cp, versions = next_checkpoint(saver, None, {"step": 0}, 0)
        with caplog.at_level(logging.INFO, logger="sqlalchemy.engine"):
            caplog.clear()
            config = saver.put(_config("t"), cp, {"source": "loop", "step": 0}, versions)
            assert saver.get_tuple(config) is not None
        text = " ".join(r.getMessage().upper() for r in caplog.records).replace('"', "")
        assert re.search(r"INSERT INTO (\S+\.)?LGSA_CHECKPOINTS ", text)
        assert re.search(r"SELECT\s.*\sFROM\s+(\S+\.)?LGSA_CHECKPOINTS\b", text, re.S)
    finally:
        saver.close()


async def test_rows_processed_once_per_distinct_key_equal_rows_processed_each(
    saver_factory: Any,
) -> None:
    """A read of many rows whose leading key columns repeat (a value's pieces) processes
    each distinct key once: the rows it returns equal, value for value and type for
    type, those processed row by row, on every dialect (MySQL/MariaDB read key columns
    as bytes)."""
    from sqlalchemy import select

    from langgraph.checkpoint.sqlalchemy import schema

    saver = saver_factory(inline_limit=0)  # every value in the blobs table
    door = Door(saver, "sync")
    for thread in ("t-1", "t-2", "x" * (schema.NAME_KEY_LENGTH + 5)):
        await _put_steps(door, thread, [{"big": [*BIG_LIST, str(i)]} for i in range(4)])
    t = schema.blobs
    stmt = select(t.c.thread_id, t.c.checkpoint_ns, t.c.channel, t.c.version, t.c.blob)
    engine = saver.engine.execution_options(schema_translate_map={None: saver.schema})
    with engine.connect() as conn:
        key = conn.dialect
        each = cursor.rows(conn, stmt, {}, key, values=True, plain=True)
        once = cursor.rows(conn, stmt, {}, key, repeated=3, values=True, plain=True)
    assert len(each) >= 12
    assert [[(type(v), v) for v in r] for r in once] == [[(type(v), v) for v in r] for r in each]
    assert {type(r[0]) for r in once} == {schema.StoredKey}
