"""On SQLite and PostgreSQL, the one-statement calls keep one connection checked out,
and that keeps what the pool would have given them.

A lone ``get``, ``put`` and graph-step statement of a sync engine run on a connection
the short door keeps between calls (no checkout and check-in each; on PostgreSQL no
AUTOCOMMIT toggles), as ``SqliteStore`` keeps its one connection. These tests defend
what the pool gave (each on a SQLite file and on PostgreSQL):

- the connection goes back to the pool at ``close`` (nothing left checked out);
- a call interrupted (Ctrl-C) or one that left a transaction open does not hand its
  connection to the next call;
- threads calling at once each get their own answer (a busy held connection sends the
  others through the pool);
- a pool listener or ``pool_pre_ping`` (per-checkout work the user asked for) turns the
  reuse off; a ``dispose()`` of the engine between calls is followed;
- a process forked after calls uses a connection of its own;
- on PostgreSQL, a connection the server dropped is not used again, the call retried,
  and the connection given back leaves AUTOCOMMIT.
"""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pytest
from sqlalchemy import create_engine, event

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._engine.lane import CAPABLE, Lane
from langgraph.store.sqlalchemy import SQLAlchemyStore, _reads

from ..checkpoints import next_checkpoint
from ..provision import BACKENDS
from ..waiting import until

NS = ("memories", "u1")
PLACES = [b for b in ("sqlite-file", "postgres") if b in BACKENDS]


@pytest.fixture(params=PLACES)
def url(request: pytest.FixtureRequest, fresh_databases: Any) -> str:
    """A new, empty database: a SQLite file or a PostgreSQL database."""
    return str(fresh_databases(request.param))


def _store(url: str, **kwargs: Any) -> SQLAlchemyStore:
    store = SQLAlchemyStore.from_conn_string(url, **kwargs)
    store.setup()
    return store


def test_lone_calls_reuse_one_connection_returned_at_close(url: str) -> None:
    store = _store(url)
    pool = store.engine.pool
    store.put(NS, "a", {"n": 1})
    for _ in range(20):
        assert store.get(NS, "a") is not None
    assert pool.checkedout() == 1  # kept between calls
    store.close()
    assert pool.checkedout() == 0


def test_a_saver_step_reuses_it_and_returns_it_at_close(url: str) -> None:
    saver = SQLAlchemySaver.from_conn_string(url)
    saver.setup()
    pool = saver.engine.pool
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    cp, versions = next_checkpoint(saver, None, {"step": 0}, 0)
    config = saver.put(config, cp, {"source": "loop", "step": 0}, versions)
    saver.put_writes(config, [("ch", 1)], "task")
    assert saver.get_tuple(config) is not None
    assert pool.checkedout() == 1
    saver.close()
    assert pool.checkedout() == 0


def test_an_interrupted_call_does_not_pass_its_connection_on(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(url)
    store.put(NS, "a", {"n": 1})
    store.get(NS, "a")
    pool = store.engine.pool
    held = store._runner.sync.lane._held
    assert held is not None
    real = _reads.get_one

    def interrupted(conn: Any, *args: Any) -> Any:
        real(conn, *args)
        raise KeyboardInterrupt

    CAPABLE.add(interrupted)
    monkeypatch.setattr("langgraph.store.sqlalchemy.store.get_one", interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            store.get(NS, "a")
    finally:
        CAPABLE.discard(interrupted)
    assert store._runner.sync.lane._held is None and pool.checkedout() == 0
    monkeypatch.undo()
    assert store.get(NS, "a").value == {"n": 1}  # type: ignore[union-attr]
    assert store._runner.sync.lane._held is not held
    store.close()


def test_a_transaction_left_open_is_not_passed_on(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(url)
    store.put(NS, "a", {"n": 1})
    real = _reads.get_one

    def opens(conn: Any, *args: Any) -> Any:
        conn.connection.dbapi_connection.cursor().execute("BEGIN")
        return real(conn, *args)

    CAPABLE.add(opens)
    monkeypatch.setattr("langgraph.store.sqlalchemy.store.get_one", opens)
    try:
        assert store.get(NS, "a") is not None
    finally:
        CAPABLE.discard(opens)
    assert store._runner.sync.lane._held is None  # back to the pool, rolled back there
    monkeypatch.undo()
    store.put(NS, "b", {"n": 2})  # not blocked by a read transaction left behind
    assert store.get(NS, "b").value == {"n": 2}  # type: ignore[union-attr]
    store.close()


def test_threads_at_once_each_get_their_own_answer(url: str) -> None:
    store = _store(url)
    for i in range(8):
        store.put(NS, f"k{i}", {"n": i})
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(150):
                store.put(NS, f"w{i}-{j}", {"i": i, "j": j})
                got = store.get(NS, f"k{(i + j) % 8}")
                assert got is not None and got.value == {"n": (i + j) % 8}
                assert store.get(NS, f"w{i}-{j}").value == {"i": i, "j": j}  # type: ignore[union-attr]
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert store.engine.pool.checkedout() == 1
    store.close()
    assert store.engine.pool.checkedout() == 0


def test_a_pool_listener_added_later_gets_per_call_checkouts(url: str) -> None:
    store = _store(url)
    store.put(NS, "a", {"n": 1})
    assert store.get(NS, "a") is not None
    assert store.engine.pool.checkedout() == 1
    checkouts: list[Any] = []
    event.listen(store.engine, "checkout", lambda *a: checkouts.append(a))
    for _ in range(3):
        assert store.get(NS, "a") is not None
    assert len(checkouts) == 3 and store.engine.pool.checkedout() == 0
    store.close()


@pytest.mark.parametrize("asked", ["checkout listener", "pool_pre_ping"])
def test_per_checkout_work_the_user_asked_for_turns_reuse_off(url: str, asked: str) -> None:
    engine = create_engine(url, pool_pre_ping=asked == "pool_pre_ping")
    checkouts: list[Any] = []
    if asked == "checkout listener":
        event.listen(engine, "checkout", lambda *a: checkouts.append(a))
    store = SQLAlchemyStore(engine)
    store.setup()
    store.put(NS, "a", {"n": 1})
    before = len(checkouts)
    for _ in range(5):
        assert store.get(NS, "a") is not None
    assert engine.pool.checkedout() == 0
    if asked == "checkout listener":
        assert len(checkouts) - before == 5
    store.close()
    engine.dispose()


def test_a_dispose_between_calls_is_followed(url: str) -> None:
    store = _store(url)
    store.put(NS, "a", {"n": 1})
    store.get(NS, "a")
    old = store.engine.pool
    assert old.checkedout() == 1
    store.engine.dispose()
    assert store.get(NS, "a").value == {"n": 1}  # type: ignore[union-attr]
    assert store.engine.pool is not old and store.engine.pool.checkedout() == 1
    store.close()
    assert store.engine.pool.checkedout() == 0


def _child_get(out: Any) -> None:
    store = _CHILD_STORE
    # SQLAlchemy's advice for a forked child: a new pool, the parent's connections left
    # alone (not closed: a closed psycopg connection would end the parent's session).
    store.engine.dispose(close=False)
    lane: Lane = store._runner.sync.lane
    parent_held = lane._held
    item = store.get(NS, "a")
    out.put((item.value if item else None, lane._held is not parent_held))


_CHILD_STORE: Any = None


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform"
)
def test_a_forked_process_uses_a_connection_of_its_own(url: str) -> None:
    global _CHILD_STORE
    store = _CHILD_STORE = _store(url)
    try:
        store.put(NS, "a", {"n": 1})
        assert store.get(NS, "a") is not None
        ctx = multiprocessing.get_context("fork")
        out = ctx.Queue()
        child = ctx.Process(target=_child_get, args=(out,))
        child.start()
        got = out.get(timeout=120)
        child.join(120)
        assert child.exitcode == 0
        assert got == ({"n": 1}, True)
        assert store.get(NS, "a").value == {"n": 1}  # type: ignore[union-attr]
    finally:
        _CHILD_STORE = None
        store.close()


def test_a_connection_the_server_dropped_is_replaced(url: str) -> None:
    if not url.startswith("postgresql"):
        pytest.skip("a server to drop the connection")
    store = _store(url)
    store.put(NS, "a", {"n": 1})
    assert store.get(NS, "a") is not None
    lane: Lane = store._runner.sync.lane
    held = lane._held
    assert held is not None
    pid = held.dbapi_connection.info.backend_pid
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # it only asks: wait until the session has ended
        conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
        alive = f"SELECT count(*) FROM pg_stat_activity WHERE pid = {int(pid)}"
        until(lambda: conn.exec_driver_sql(alive).scalar_one() == 0, "the session's end")
    assert store.get(NS, "a").value == {"n": 1}  # type: ignore[union-attr]
    assert lane._held is not None and lane._held is not held
    kept = lane._held.dbapi_connection
    store.close()
    assert not kept.autocommit  # given back as the pool's others are
    admin.dispose()


@pytest.mark.parametrize("size", [1, 2])
def test_a_pool_of_one_or_two_keeps_nothing(url: str, size: int) -> None:
    """``setup()`` and every call work with a pool of one: nothing is kept from a pool
    that could not spare it, so a call through the full door after a lone one never
    waits for a connection (``pool_timeout`` 2 s here, 30 s by default)."""
    engine = create_engine(url, pool_size=size, max_overflow=0, pool_timeout=2)
    store = SQLAlchemyStore(engine)
    store.setup()
    store.put(NS, "a", {"n": 1})
    assert store.get(NS, "a") is not None
    assert engine.pool.checkedout() == 0
    assert [it.key for it in store.search(NS)] == ["a"]  # a read transaction
    store.close()
    saver = SQLAlchemySaver.from_conn_string(url, pool_size=size, max_overflow=0, pool_timeout=2)
    saver.setup()
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    cp, versions = next_checkpoint(saver, None, {"step": 0}, 0)
    config = saver.put(config, cp, {"source": "loop", "step": 0}, versions)
    assert saver.get_tuple(config) is not None
    assert saver.engine.pool.checkedout() == 0
    assert len(list(saver.list(None))) == 1
    saver.close()
    engine.dispose()
