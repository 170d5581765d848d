"""The saver on real replicated and pooled topologies, started by the project's
own scripts (``.ci/clusters/up``, which ``.ci/run`` calls; see docs/deployments.md):

- PgBouncer in transaction mode: 8 workers on one thread under ``lock_thread`` lose no
  update and leave no lock behind; psycopg and asyncpg with the documented settings
  (docs/configuration.md, "PgBouncer and other poolers") run a chat graph from threads
  and tasks with the store beside it, and a statement run again on another server
  connection, where the drivers' defaults fail;
- a PostgreSQL primary with a synchronous standby: reads on the standby work, writes
  there raise :class:`CheckpointReadOnlyError` naming it, and a failover drill under 4 sync
  and 4 async workers loses no acknowledged checkpoint and shows no error at all (the
  promotion is ridden through by the retry);
- a 3-node MariaDB Galera cluster: ``lock_thread`` and ``detect_conflicts`` hold across
  nodes, ``setup()`` from 3 processes on 3 nodes (and from 3 threads) succeeds, reads see
  the writes made through another node, a node SIGKILLed under 6 workers costs the others
  nothing and its own workers only typed errors, and it rejoins with the same tables.

Each test makes a database of its own. Without the clusters (the env variables that
``.ci/clusters/up`` writes) the tests are skipped, or fail when ``LGSA_REQUIRE_CLUSTERS``
is set (as in CI). They run one at a time (they stop servers): an exclusive file lock
serialises them across the xdist workers.
"""

from __future__ import annotations

import asyncio
import fcntl
import operator
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConflictError,
    CheckpointConnectionError,
    CheckpointReadOnlyError,
    SQLAlchemySaver,
)
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..graphs import echo_graph
from ..waiting import until
from .test_reliability import counter_graph, thread


@pytest.fixture(autouse=True)
def one_cluster_test_at_a_time() -> Iterator[None]:
    """Cluster tests kill, promote and rebuild servers: one at a time across the xdist
    workers (an exclusive lock on a file beside the clusters), whichever worker runs
    them."""
    path = os.path.join(os.environ.get("LGSA_CLUSTER_ROOT", "/tmp/lgsa-clusters"), "tests.lock")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: psycopg 3 behind PgBouncer in transaction mode: no server-side prepared statements.
PGBOUNCER_ARGS: dict[str, Any] = {"connect_args": {"prepare_threshold": None}}


def cluster(name: str) -> str:
    """The value of a variable written by ``.ci/clusters/up`` (skip or fail without)."""
    value = os.environ.get(name)
    if not value:
        message = f"{name} is not set: start the clusters with .ci/clusters/up and source its env"
        if os.environ.get("LGSA_REQUIRE_CLUSTERS"):
            pytest.fail(message)
        pytest.skip(message)
    return value


def script(name: str, *args: str) -> None:
    """Run ``.ci/clusters/<name>.sh`` with ``args``."""
    folder = cluster("LGSA_CLUSTER_SCRIPTS")
    subprocess.run(["bash", f"{folder}/{name}.sh", *args], check=True, timeout=240)


@contextmanager
def new_database(server_url: str) -> Iterator[str]:
    """A database of its own on the server of ``server_url`` (PostgreSQL or MariaDB);
    yields its name, drops it on exit."""
    name = f"lgsa_cl_{uuid.uuid4().hex[:10]}"
    url = make_url(server_url)
    admin_db = "postgres" if url.get_backend_name() == "postgresql" else None
    admin = create_engine(
        url.set(database=admin_db), poolclass=NullPool, isolation_level="AUTOCOMMIT"
    )
    quote = admin.dialect.identifier_preparer.quote
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {quote(name)}"))
    try:
        yield name
    finally:
        try:
            with admin.connect() as conn:
                force = " WITH (FORCE)" if admin_db else ""  # PostgreSQL: poolers' sessions
                conn.execute(text(f"DROP DATABASE IF EXISTS {quote(name)}{force}"))
        finally:
            admin.dispose()


def on(server_url: str, database: str) -> URL:
    """``server_url`` with its database replaced (query and hosts kept)."""
    return make_url(server_url).set(database=database)


def galera_urls() -> list[str]:
    urls = cluster("LGSA_GALERA_URLS").split(",")
    assert len(urls) == 3, urls
    return urls


def put_child(saver: SQLAlchemySaver, thread_id: str, parent: str | None) -> str:
    """Put one checkpoint of a run (source ``loop``) after ``parent``; its id."""
    checkpoint = empty_checkpoint()
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent is not None:
        configurable["checkpoint_id"] = parent
    saver.put({"configurable": configurable}, checkpoint, {"source": "loop", "step": 1}, {})
    return checkpoint["id"]


def chain_is_linear(saver: SQLAlchemySaver, thread_id: str) -> bool:
    """Whether the thread's checkpoints form one chain (no fork): each one's parent is
    the one before it."""
    found = list(saver.list(thread(thread_id)))
    ids = [t.config["configurable"]["checkpoint_id"] for t in found]
    parents = [(t.parent_config or {}).get("configurable", {}).get("checkpoint_id") for t in found]
    return parents[:-1] == ids[1:] and parents[-1] is None


# -- PgBouncer, transaction pooling -----------------------------------------------------


def test_pgbouncer_lock_thread_serialises_8_workers_and_leaves_no_lock() -> None:
    bouncer = cluster("LGSA_PGBOUNCER_URL")
    with new_database(bouncer) as name:
        url = on(bouncer, name)
        first = SQLAlchemySaver.from_conn_string(url, **PGBOUNCER_ARGS)
        first.setup()
        config = thread("shared")
        counter_graph(first).invoke({"count": 0, "nudge": 0}, config)
        successes, errors = [], []

        def worker(i: int) -> None:
            with SQLAlchemySaver.from_conn_string(url, **PGBOUNCER_ARGS) as saver:
                graph = counter_graph(saver)
                for _ in range(5):
                    try:
                        with saver.lock_thread("shared", timeout=60):
                            graph.invoke({"nudge": i}, config)
                        successes.append(i)
                    except Exception as e:
                        errors.append(e)

        async def async_workers() -> None:
            async with SQLAlchemySaver.from_conn_string(url, **PGBOUNCER_ARGS) as saver:
                graph = counter_graph(saver)

                async def one(i: int) -> None:
                    for _ in range(5):
                        async with saver.alock_thread("shared", timeout=60):
                            await graph.ainvoke({"nudge": i}, config)
                        successes.append(i)

                await asyncio.gather(*(one(i) for i in range(4)))

        with ThreadPoolExecutor(9) as pool:
            done = [pool.submit(worker, i) for i in range(8)]
            done.append(pool.submit(asyncio.run, async_workers()))
            for future in done:
                future.result()
        assert errors == []
        count = counter_graph(first).get_state(config).values["count"]
        assert count - 1 == len(successes) == 60
        assert chain_is_linear(first, "shared")
        with create_engine(on(bouncer, name), **PGBOUNCER_ARGS).connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM lgsa_locks")).scalar() == 0
        # the lock is free at once for a new saver
        with first.lock_thread("shared", timeout=0.5):
            pass
        first.close()


def _statement_name() -> str:
    """A prepared statement name no other client of PgBouncer's server connections
    uses (SQLAlchemy's asyncpg + PgBouncer advice)."""
    return f"__asyncpg_{uuid.uuid4()}__"


def pgbouncer_args(url: URL, driver: str) -> tuple[URL, dict[str, Any]]:
    """``url`` with ``driver`` for the async engine, and the settings of
    docs/configuration.md ("PgBouncer and other poolers") for it: psycopg (the sync
    engine of both URLs, the async one of ``psycopg``) prepares nothing; asyncpg's
    statement caches are off and its statements named uniquely."""
    url = url.set(drivername=f"postgresql+{driver}")
    connect_args: dict[str, Any] = {"prepare_threshold": None}
    if driver == "asyncpg":
        url = url.update_query_dict({"prepared_statement_cache_size": "0"})
        connect_args.update(statement_cache_size=0, prepared_statement_name_func=_statement_name)
    return url, {"connect_args": connect_args}


@contextmanager
def server_connection_held(url: URL) -> Iterator[None]:
    """A transaction held open through PgBouncer on its own client connection: it takes
    the server connection PgBouncer used last (PgBouncer reuses them last in, first
    out), so that the next statement of another client runs on another one."""
    engine = create_engine(
        url.set(drivername="postgresql+psycopg"), poolclass=NullPool, **PGBOUNCER_ARGS
    )
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
            yield
    finally:
        engine.dispose()


async def _call_across_server_connections(saver: SQLAlchemySaver, mode: str) -> None:
    """``get_tuple`` (sync) or ``aget_tuple`` (async) 6 times on one client connection
    (psycopg prepares a statement at its 5th run, asyncpg's cache at its 1st), then once
    more while the server connection those ran on is held by another client."""
    config = thread("moved")
    for _ in range(6):
        if mode == "sync":
            saver.get_tuple(config)
        else:
            await saver.aget_tuple(config)
    with server_connection_held(saver.engine.url):
        if mode == "sync":
            saver.get_tuple(config)
        else:
            await saver.aget_tuple(config)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("driver", ["asyncpg", "psycopg"])
async def test_pgbouncer_statements_move_across_server_connections(driver: str, mode: str) -> None:
    """A statement a client connection ran before, run again on another server
    connection: with the drivers' defaults the statement psycopg or asyncpg prepared
    and kept is missing there (or another client's of the same name is found); with the
    documented settings it works (psycopg prepares nothing; asyncpg keeps no prepared
    statement and names each one uniquely). What asyncpg's transaction around a
    one-statement call prevents, a prepare and its run given two server connections
    by a concurrent client, the graph test below meets (its async workers without it:
    80 iterations of 80 failed)."""
    bouncer = make_url(cluster("LGSA_PGBOUNCER_URL"))
    with new_database(bouncer.render_as_string(hide_password=False)) as name:
        url, args = pgbouncer_args(bouncer.set(database=name), driver)
        with SQLAlchemySaver.from_conn_string(url, **args) as first:
            first.setup()
        default = SQLAlchemySaver.from_conn_string(
            bouncer.set(database=name, drivername=f"postgresql+{driver}")
        )
        try:
            with pytest.raises(DBAPIError, match="prepared statement"):
                await _call_across_server_connections(default, mode)
        finally:
            await default.aclose()
        async with SQLAlchemySaver.from_conn_string(url, **args) as saver:
            await _call_across_server_connections(saver, mode)


class ChatState(TypedDict):
    messages: Annotated[list, operator.add]  # type: ignore[type-arg]


@pytest.mark.parametrize("driver", ["asyncpg", "psycopg"])
def test_pgbouncer_graph_and_store_with_the_documented_settings(driver: str) -> None:
    """A chat graph invoked 20 times on each of 4 threads (sync) and 4 tasks (async), and
    the store's puts, gets and searches beside it, through PgBouncer (4 server
    connections) with the documented settings: no error, every turn kept."""
    bouncer = make_url(cluster("LGSA_PGBOUNCER_URL"))
    turns = 20
    with new_database(bouncer.render_as_string(hide_password=False)) as name:
        url, args = pgbouncer_args(bouncer.set(database=name), driver)
        saver = SQLAlchemySaver.from_conn_string(url, **args)
        store = SQLAlchemyStore.from_conn_string(url, **args)
        saver.setup()
        store.setup()
        graph = echo_graph(saver, ChatState, "echo {last} (seen {seen})")
        errors: list[BaseException] = []

        def sync_worker(i: int) -> None:
            for turn in range(turns):
                try:
                    graph.invoke({"messages": [f"s{i}-{turn}"]}, thread(f"sync-{i}"))
                    store.put(("users", f"s{i}"), f"k{turn}", {"turn": turn})
                    assert store.get(("users", f"s{i}"), f"k{turn}") is not None
                except BaseException as e:
                    errors.append(e)

        async def async_workers() -> None:
            async def one(i: int) -> None:
                for turn in range(turns):
                    try:
                        await graph.ainvoke({"messages": [f"a{i}-{turn}"]}, thread(f"async-{i}"))
                        await store.aput(("users", f"a{i}"), f"k{turn}", {"turn": turn})
                        found = await store.asearch(("users", f"a{i}"), limit=100)
                        assert len(found) == turn + 1
                    except BaseException as e:
                        errors.append(e)

            await asyncio.gather(*(one(i) for i in range(4)))

        with ThreadPoolExecutor(5) as pool:
            futures = [pool.submit(sync_worker, i) for i in range(4)]
            futures.append(pool.submit(asyncio.run, async_workers()))
            for future in futures:
                future.result()
        assert errors == [], errors[:3]
        for side in ("sync", "async"):
            for i in range(4):
                state = graph.get_state(thread(f"{side}-{i}"))
                assert len(state.values["messages"]) == 2 * turns
                namespace = ("users", f"{side[0]}{i}")
                assert len(store.search(namespace, limit=100)) == turns
        probe = create_engine(bouncer.set(database=name), **PGBOUNCER_ARGS)
        with probe.connect() as conn:
            servers = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND usename = current_user"
                )
            ).scalar()
        probe.dispose()
        print(f"pgbouncer {driver}: {8 * turns} invokes, {servers} server connections")
        assert servers is not None and servers >= 2
        saver.close()
        store.close()


# -- PostgreSQL primary + synchronous standby -------------------------------------------


def _wait_for_replay(primary: str, standby: str, timeout: float = 120.0) -> None:
    """Until the standby has replayed the primary's WAL up to now (at most ``timeout``
    seconds)."""
    engines = [
        create_engine(
            make_url(u).set(database="postgres"), poolclass=NullPool, isolation_level="AUTOCOMMIT"
        )
        for u in (primary, standby)
    ]
    try:
        with engines[0].connect() as conn:
            lsn = conn.execute(text("SELECT pg_current_wal_lsn()")).scalar()
        deadline = time.monotonic() + timeout
        with engines[1].connect() as conn:
            while True:
                done = conn.execute(
                    text("SELECT pg_last_wal_replay_lsn() >= CAST(:lsn AS pg_lsn)"), {"lsn": lsn}
                ).scalar()
                if done:
                    return
                assert time.monotonic() < deadline, f"the standby has not replayed {lsn}"
                time.sleep(0.05)
    finally:
        for engine in engines:
            engine.dispose()


def test_standby_reads_work_and_writes_raise_a_typed_error_naming_it() -> None:
    primary, standby = cluster("LGSA_PG_PRIMARY_URL"), cluster("LGSA_PG_STANDBY_URL")
    with new_database(primary) as name:
        with SQLAlchemySaver.from_conn_string(on(primary, name)) as writer:
            writer.setup()
            first = put_child(writer, "t", None)
        # synchronous_commit = on waits until the standby has flushed the commit, not
        # replayed it: wait for the replay (the CREATE DATABASE included) before reading.
        _wait_for_replay(primary, standby)
        with SQLAlchemySaver.from_conn_string(on(standby, name), retry_timeout=0.5) as reader:
            got = reader.get_tuple(thread("t"))
            assert got is not None and got.config["configurable"]["checkpoint_id"] == first
            assert len(list(reader.list(None))) == 1
            assert reader.storage_stats()["lgsa_checkpoints"]["rows"] == 1
            with pytest.raises(CheckpointReadOnlyError, match=r"5434.*read-only"):
                put_child(reader, "t", first)
            with pytest.raises(CheckpointReadOnlyError), reader.lock_thread("t"):
                pytest.fail("a lock taken on a standby")

            async def async_write() -> None:
                await reader.aput(thread("t"), empty_checkpoint(), {}, {})

            with pytest.raises(CheckpointReadOnlyError):
                asyncio.run(async_write())


def test_failover_drill_loses_no_acknowledged_checkpoint_and_shows_no_error() -> None:
    """4 sync and 4 async workers write through a multi-host URL while the primary is
    killed (``-m immediate``) and the standby promoted 3 s later."""
    primary, multihost = cluster("LGSA_PG_PRIMARY_URL"), cluster("LGSA_PG_MULTIHOST_URL")
    name = f"lgsa_cl_{uuid.uuid4().hex[:10]}"
    admin = create_engine(
        make_url(primary).set(database="postgres"), poolclass=NullPool, isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = on(multihost, name)
    acknowledged: dict[str, list[str]] = {}
    errors: list[BaseException] = []
    slowest: list[float] = []
    stop = threading.Event()
    try:
        with SQLAlchemySaver.from_conn_string(url, retry_timeout=30) as saver:
            saver.setup()

            def sync_worker(i: int) -> None:
                mine = acknowledged.setdefault(f"sync-{i}", [])
                parent = None
                while not stop.is_set():
                    try:
                        started = time.monotonic()
                        parent = put_child(saver, f"sync-{i}", parent)
                        slowest.append(time.monotonic() - started)
                        mine.append(parent)
                    except BaseException as e:
                        errors.append(e)
                    time.sleep(0.01)

            async def async_workers() -> None:
                async def one(i: int) -> None:
                    mine = acknowledged.setdefault(f"async-{i}", [])
                    configurable: dict[str, Any] = {"thread_id": f"async-{i}", "checkpoint_ns": ""}
                    while not stop.is_set():
                        checkpoint = empty_checkpoint()
                        try:
                            started = time.monotonic()
                            await saver.aput(
                                {"configurable": dict(configurable)},
                                checkpoint,
                                {"source": "loop", "step": 1},
                                {},
                            )
                            slowest.append(time.monotonic() - started)
                            mine.append(checkpoint["id"])
                            configurable["checkpoint_id"] = checkpoint["id"]
                        except BaseException as e:
                            errors.append(e)
                        await asyncio.sleep(0.01)

                await asyncio.gather(*(one(i) for i in range(4)))

            workers = [f"{kind}-{i}" for kind in ("sync", "async") for i in range(4)]

            def each_put(more: dict[str, int]) -> bool:
                return all(len(acknowledged.get(w, ())) >= more[w] for w in workers)

            with ThreadPoolExecutor(5) as pool:
                futures = [pool.submit(sync_worker, i) for i in range(4)]
                futures.append(pool.submit(asyncio.run, async_workers()))
                try:
                    until(lambda: each_put(dict.fromkeys(workers, 5)), "5 puts of each worker")
                    script("pg-standby", "failover", "3")  # returns once promoted
                    after = {w: len(acknowledged[w]) + 3 for w in workers}
                    until(lambda: each_put(after), "3 more puts of each worker, after it")
                finally:
                    stop.set()
                for future in futures:
                    future.result()
            assert errors == [], errors[:5]
            total = sum(len(ids) for ids in acknowledged.values())
            assert total > 50
            print(
                f"failover: {total} acknowledged puts, 0 errors, slowest put {max(slowest):.2f} s"
            )
        # every acknowledged checkpoint is on the promoted server
        with SQLAlchemySaver.from_conn_string(url) as after:
            for thread_id, ids in acknowledged.items():
                stored = {
                    t.config["configurable"]["checkpoint_id"] for t in after.list(thread(thread_id))
                }
                assert set(ids) <= stored, thread_id
    finally:
        stop.set()
        script("pg-standby", "start")  # a fresh pair for the next run


# -- MariaDB Galera, 3 nodes ------------------------------------------------------------


@pytest.fixture
def galera_db() -> Iterator[list[URL]]:
    """A fresh database on the cluster, as a URL through each of the 3 nodes."""
    urls = galera_urls()
    with new_database(urls[0]) as name:
        yield [on(u, name) for u in urls]


def test_galera_lock_thread_holds_across_nodes(galera_db: list[URL]) -> None:
    savers = [SQLAlchemySaver.from_conn_string(u) for u in galera_db[:2]]
    savers[0].setup()
    config = thread("shared")
    counter_graph(savers[0]).invoke({"count": 0, "nudge": 0}, config)
    successes: list[int] = []

    def writer(i: int) -> None:
        graph = counter_graph(savers[i % 2])
        for _ in range(8):
            with savers[i % 2].lock_thread("shared", timeout=60):
                graph.invoke({"nudge": i}, config)
            successes.append(i)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(writer, range(4)))
    for saver in savers:
        assert counter_graph(saver).get_state(config).values["count"] - 1 == len(successes) == 32
        assert chain_is_linear(saver, "shared")
        saver.close()


def test_galera_detect_conflicts_refuses_one_of_each_race_across_nodes(
    galera_db: list[URL],
) -> None:
    savers = [SQLAlchemySaver.from_conn_string(u, detect_conflicts=True) for u in galera_db[:2]]
    savers[0].setup()
    refused = 0
    for race in range(100):
        thread_id = f"race-{race}"
        parent = put_child(savers[0], thread_id, None)
        barrier = threading.Barrier(2)

        def child(
            saver: SQLAlchemySaver,
            barrier: threading.Barrier = barrier,
            thread_id: str = thread_id,
            parent: str = parent,
        ) -> BaseException | None:
            barrier.wait()
            try:
                put_child(saver, thread_id, parent)
            except BaseException as error:
                return error
            return None

        with ThreadPoolExecutor(2) as pool:
            outcomes = list(pool.map(child, savers))
        failures = [e for e in outcomes if e is not None]
        assert len(failures) == 1, (race, outcomes)
        assert isinstance(failures[0], CheckpointConflictError), failures
        refused += 1
        assert chain_is_linear(savers[1], thread_id)
    assert refused == 100
    with savers[1].engine.connect() as conn:  # the namespace rows are gone with their puts
        assert conn.execute(text("SELECT count(*) FROM lgsa_locks")).scalar() == 0
    for saver in savers:
        saver.close()


def test_galera_reads_see_writes_made_through_another_node(galera_db: list[URL]) -> None:
    one, two = (SQLAlchemySaver.from_conn_string(u) for u in galera_db[:2])
    one.setup()
    with two.engine.connect() as conn:
        assert conn.execute(text("SELECT @@session.wsrep_sync_wait")).scalar() == 1
    parent = None
    for _ in range(30):
        parent = put_child(one, "ryw", parent)
        got = two.get_tuple(thread("ryw"))
        assert got is not None and got.config["configurable"]["checkpoint_id"] == parent
    one.close()
    two.close()


def test_galera_setup_from_3_processes_on_3_nodes_and_from_3_threads(
    galera_db: list[URL],
) -> None:
    code = (
        "import sys; from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver\n"
        "s = SQLAlchemySaver.from_conn_string(sys.argv[1]); s.setup(); s.close()\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, u.render_as_string(hide_password=False)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for u in galera_db
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    # a second fresh database, migrated by 3 threads of this process through 3 nodes
    with new_database(galera_urls()[0]) as name:
        savers = [SQLAlchemySaver.from_conn_string(on(u, name)) for u in galera_urls()]
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda s: s.setup(), savers))
        for saver in savers:
            assert saver.get_tuple(thread("none")) is None  # the schema check passes
            saver.close()


def test_galera_same_key_writes_from_two_nodes_are_retried_not_raised(
    galera_db: list[URL],
) -> None:
    savers = [SQLAlchemySaver.from_conn_string(u) for u in galera_db[:2]]
    savers[0].setup()
    parent = put_child(savers[0], "same", None)
    config = {"configurable": {"thread_id": "same", "checkpoint_ns": "", "checkpoint_id": parent}}

    child = empty_checkpoint()

    def write(i: int) -> None:
        saver = savers[i % 2]
        for j in range(40):
            # the same rows from both nodes: a certification conflict every time they meet
            saver.put_writes(config, [("ch", j)], "task-1")
            saver.put(config, child, {"step": j}, {})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))
    assert savers[1].get_tuple(config) is not None
    for saver in savers:
        saver.close()


def test_galera_node_killed_under_6_workers(galera_db: list[URL]) -> None:
    """Node 3 is SIGKILLed while 2 workers write through each node, and brought back.
    The workers on nodes 1 and 2 see no error; node 3's see only typed errors; after it
    rejoins (IST), the three nodes hold the same rows."""
    savers = [
        SQLAlchemySaver.from_conn_string(u, retry_timeout=30 if i < 2 else 1)
        for i, u in enumerate(galera_db)
    ]
    savers[0].setup()
    stop = threading.Event()
    errors: dict[int, list[BaseException]] = {0: [], 1: [], 2: []}
    acknowledged: dict[str, list[str]] = {}

    def worker(n: int) -> None:
        node, thread_id = n % 3, f"w{n}"
        mine = acknowledged.setdefault(thread_id, [])
        parent = None
        while not stop.is_set():
            try:
                parent = put_child(savers[node], thread_id, parent)
                mine.append(parent)
            except BaseException as e:
                errors[node].append(e)
                time.sleep(0.1)
            time.sleep(0.01)

    def each_put(more: dict[int, int]) -> bool:
        return all(len(acknowledged.get(f"w{n}", ())) >= k for n, k in more.items())

    try:
        with ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(worker, n) for n in range(6)]
            try:
                until(lambda: each_put(dict.fromkeys(range(6), 1)), "a put of each worker")
                script("galera", "kill", "3")
                until(lambda: errors[2], "node 3's workers to see it down")
                script("galera", "restart", "3")  # returns once it is in the view again
                # the others write on while it catches up (IST)
                after = {n: len(acknowledged[f"w{n}"]) + 3 for n in range(6) if n % 3 != 2}
                until(lambda: each_put(after), "3 more puts of the workers on nodes 1 and 2")
            finally:
                stop.set()
            for future in futures:
                future.result()
    finally:
        stop.set()
    assert errors[0] == [] and errors[1] == [], (errors[0][:3], errors[1][:3])
    assert all(isinstance(e, CheckpointConnectionError) for e in errors[2]), errors[2][:3]
    assert errors[2], "node 3's workers saw no error while it was down"
    done = {n: len(acknowledged[f"w{n}"]) for n in range(6)}
    print(f"galera kill: acknowledged per worker {done}, node 3 typed errors {len(errors[2])}")
    tables: list[Any] = []
    for url in galera_db:
        engine = create_engine(url, poolclass=NullPool)
        with engine.connect() as conn:
            conn.execute(text("SET SESSION wsrep_sync_wait = 1"))
            tables.append(
                [
                    conn.execute(text(f"SELECT * FROM {t} ORDER BY 1, 2, 3")).all()
                    for t in ("lgsa_checkpoints", "lgsa_checkpoint_blobs", "lgsa_checkpoint_writes")
                ]
            )
        engine.dispose()
    assert tables[0] == tables[1] == tables[2]
    stored = {bytes(row[2]).decode() for row in tables[0][0]}  # KeyText: stored as bytes
    for ids in acknowledged.values():
        assert set(ids) <= stored
    for saver in savers:
        saver.close()
