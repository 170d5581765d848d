"""A process killed with SIGKILL leaves every operation whole or absent, on disk and servers.

SQLite runs in WAL mode with synchronous=NORMAL (the saver's default): that cannot corrupt
the database, and every transaction committed before the kill survives it (only an
operating-system crash or power loss may lose the last commits). PostgreSQL and MariaDB
roll back the transaction of a client that vanished.

Two kinds of tests:

* Graph: a child process runs a counter graph and reports each invoke once it returned,
  i.e. once its checkpoints were committed; it is killed at a random point of the next
  one, and the graph resumes from the last whole checkpoint.
* Operations: a child process runs ``put``, ``put_writes``, or ``copy_thread`` and
  ``prune`` in turn, in a loop on a store the test set up (large-ish values, a source
  thread of a few hundred checkpoints with pending writes, and batches cut small so that
  one operation is several statements), and is killed at a seeded random moment after
  its first report. Raw SQL on the three tables then checks that each operation is all
  there or not at all, the saver reads everything back, and a new saver carries on.

``LGSA_CRASH_SEED`` fixes the kill delays (the seed is in every failure message).
"""

from __future__ import annotations

import functools
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import Engine, create_engine, func, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._codec import inline as _inline
from langgraph.checkpoint.sqlalchemy._ops import checkpoints as _checkpoints
from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, writes

from ..provision import BACKENDS, new_saver_args

ROOT = Path(__file__).resolve().parents[2]
#: Backends whose data outlives a process (not ``:memory:``).
DURABLE = [b for b in BACKENDS if b != "sqlite-memory"]
SEED = int(os.environ.get("LGSA_CRASH_SEED", random.randrange(2**32)))

# -- graph-level: a counter graph killed mid-run ---------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys
    from typing import TypedDict
    from langgraph.graph import START, StateGraph
    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

    class State(TypedDict):
        count: int
        payload: str

    def bump(state: State) -> dict:
        return {"count": state["count"] + 1, "payload": "x" * 5000}

    builder = StateGraph(State)
    builder.add_node("bump", bump)
    builder.add_edge(START, "bump")
    saver = SQLAlchemySaver.from_conn_string(sys.argv[1], schema=sys.argv[2] or None)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "crash"}}
    count = graph.get_state(config).values.get("count", 0)
    while True:
        count = graph.invoke({"count": count, "payload": ""}, config)["count"]
        print(count, flush=True)
    """
)


class Store:
    """One store of a test: the URL and schema the saver and the child open, and how to
    tell that the server has finished with a killed child's sessions."""

    def __init__(self, backend: str, args: dict[str, Any]) -> None:
        self.backend = backend
        self.url = str(args["conn_string"])
        self.schema: str | None = args.get("schema")
        self.child_url = self.url
        if backend == "postgres":
            # The child's sessions carry a name of their own (pg_stat_activity).
            self.tag = f"lgsa_crash_{self.schema}"
            self.child_url = (
                make_url(self.url)
                .update_query_dict({"application_name": self.tag})
                .render_as_string(hide_password=False)
            )
        elif backend == "mariadb":
            # The child connects to the store's database (processlist ``db``); the
            # test's own connections use the URL's database.
            assert self.schema is not None
            self.tag = self.schema
            self.child_url = make_url(self.url).set(database=self.schema).render_as_string(False)

    def saver(self) -> SQLAlchemySaver:
        return SQLAlchemySaver.from_conn_string(self.url, schema=self.schema)

    @functools.cached_property
    def engine(self) -> Engine:
        """A plain engine on the store's tables (Core, no saver)."""
        engine = create_engine(self.url, poolclass=NullPool)
        if self.schema:
            return engine.execution_options(schema_translate_map={None: self.schema})
        return engine

    def child(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", *args],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    def settle(self, timeout: float = 120.0) -> None:
        """Wait until the server has dropped the killed child's sessions: a COMMIT it sent
        just before dying must land (or its transaction be rolled back) before the test
        reads, or one read could see a transaction that another one does not."""
        if self.backend == "postgres":
            query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = :tag"
        elif self.backend == "mariadb":
            query = "SELECT count(*) FROM information_schema.processlist WHERE db = :tag"
        else:
            return  # a file: nothing in flight once the process is gone
        engine = create_engine(self.url)
        deadline = time.monotonic() + timeout
        try:
            while True:
                with engine.connect() as conn:
                    if conn.execute(text(query), {"tag": self.tag}).scalar_one() == 0:
                        return
                assert time.monotonic() < deadline, "the server kept the killed child's session"
                time.sleep(0.05)
        finally:
            engine.dispose()

    def check_file(self) -> None:
        if self.backend == "sqlite-file":
            with sqlite3.connect(make_url(self.url).database or "") as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def graph_state(store: Store) -> int:
    from langgraph.graph import START, StateGraph

    class State(TypedDict):
        count: int
        payload: str

    builder = StateGraph(State)
    builder.add_node("bump", lambda s: {"count": s["count"] + 1})
    builder.add_edge(START, "bump")
    with store.saver() as saver:
        graph = builder.compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": "crash"}}
        before = graph.get_state(config).values["count"]
        after = graph.invoke({"count": before, "payload": ""}, config)["count"]
        assert after == before + 1
        return int(before)


#: The graph test on a file and on one server (MariaDB rolls back a vanished client the
#: same way: the operation tests below cover it); child start-up dominates its time.
GRAPH_BACKENDS = [b for b in DURABLE if b != "mariadb"]


@pytest.mark.parametrize("backend", GRAPH_BACKENDS)
def test_sigkill_mid_run_keeps_every_committed_checkpoint(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = Store(backend, new_saver_args(backend, request, tmp_path))
    with store.saver() as saver:
        saver.setup()  # once, before the children (on MariaDB: creates their database)
    reported = 0
    for _ in range(2):
        child = store.child(CHILD, store.child_url, store.schema or "")
        assert child.stdout is not None
        deadline = time.monotonic() + 60
        target = reported + 20
        while reported < target and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            reported = int(line)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert reported >= target, "the child did not run"
        store.settle()
        store.check_file()
        # Every invoke the child saw return is there, and the thread resumes from it
        # (one more invoke may have committed before the kill landed).
        stored = graph_state(store)
        assert reported <= stored <= reported + 1
        reported = stored + 1


# -- operation-level: put / put_writes / copy_thread / prune killed mid-transaction -----------

#: Checkpoints of the source thread that copy_thread and prune work on.
SOURCE_CHECKPOINTS = 200
#: Writes of one put_writes call (a task).
WRITES_PER_TASK = 6
#: Batch size the child cuts statements at: every put and put_writes of these tests is
#: then several INSERT statements, so a kill can land between two of them.
CHILD_BATCH_BYTES = 48 * 1024

OP_CHILD = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from tests.reliability.test_crash import crash_child; crash_child(*sys.argv[2:])"
)


def cfg(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def put_step(
    saver: SQLAlchemySaver, parent: RunnableConfig, versions: dict[str, Any], i: int
) -> tuple[RunnableConfig, dict[str, Any]]:
    """Put checkpoint ``i`` of a chain: small values (inline), two new large ones (blobs)
    and a large one that never changes (stored once, referenced by every checkpoint)."""
    values = {
        "step": i,
        "note": f"note {i}",
        "doc": f"doc {i} " + "d" * 30_000,
        "log": [f"entry {i}-{j} " + "l" * 100 for j in range(200)],
        "fixed": "F" * 40_000,
    }
    new = {
        ch: saver.get_next_version(versions.get(ch), None)
        for ch in values
        if ch != "fixed" or ch not in versions
    }
    cp = empty_checkpoint()
    cp["channel_values"] = values
    cp["channel_versions"] = {**versions, **new}
    config = saver.put(parent, cp, {"source": "loop", "step": i}, new)
    return config, cp["channel_versions"]


def task_writes(i: int) -> list[tuple[str, Any]]:
    """A task's writes: some small, some large enough to need a statement of their own."""
    return [(f"ch{j}", f"task {i} write {j} " + "w" * (j * 9_000)) for j in range(WRITES_PER_TASK)]


def seed_source(saver: SQLAlchemySaver, thread: str, n: int) -> None:
    parent, versions = cfg(thread), {}
    for i in range(n):
        parent, versions = put_step(saver, parent, versions, i)
        saver.put_writes(parent, [("out", f"out {i} " + "o" * 2_000)] * 2, f"task-{i}")


def crash_child(op: str, url: str, schema: str) -> None:
    """The killed process: run ``op`` on the store in a loop, one line a finished call."""
    _checkpoints.BATCH_BYTES = CHILD_BATCH_BYTES
    saver = SQLAlchemySaver.from_conn_string(url, schema=schema or None)
    print("open", flush=True)
    if op == "put":
        parent, versions = cfg("put"), {}
        for i in range(100_000):
            parent, versions = put_step(saver, parent, versions, i)
            print(i, flush=True)
    elif op == "put_writes":
        config = saver.get_tuple(cfg("writes"))
        assert config is not None
        for i in range(100_000):
            saver.put_writes(config.config, task_writes(i), f"task-{i}")
            print(i, flush=True)
    elif op == "copy_thread+prune":
        for i in range(100_000):
            saver.copy_thread("src", f"prune-{i}")
            print(f"copied {i}", flush=True)
            saver.prune([f"prune-{i}"])
            print(f"pruned {i}", flush=True)
    else:
        raise ValueError(op)


def row_counts(engine: Engine) -> dict[str, tuple[int, int, int]]:
    """``{thread_id: (checkpoints, blobs, writes)}`` in one read transaction."""
    counts: dict[str, list[int]] = {}
    with engine.connect() as conn:
        for k, table in enumerate((checkpoints, blobs, writes)):
            for thread, n in conn.execute(
                select(table.c.thread_id, func.count()).group_by(table.c.thread_id)
            ):
                counts.setdefault(thread, [0, 0, 0])[k] = n
    return {t: (c[0], c[1], c[2]) for t, c in counts.items()}


def check_put(store: Store, saver: SQLAlchemySaver, done: int) -> None:
    """Every stored checkpoint has the blob of each value not in its row, and no blob
    is left without the checkpoint that introduced it."""
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(checkpoints.c.value_versions, checkpoints.c.inline_values).where(
                checkpoints.c.thread_id == "put"
            )
        ).all()
        stored = {
            (r.channel, r.version)
            for r in conn.execute(
                select(blobs.c.channel, blobs.c.version).where(blobs.c.thread_id == "put")
            )
        }
    referenced = set()
    for versions, inline in rows:
        held = _inline.unpack(inline)
        needed = {(ch, v) for ch, v in versions.items() if ch not in held}
        assert needed <= stored, f"checkpoint without its blobs {needed - stored}"
        referenced |= needed
    assert stored == referenced, f"blobs of a checkpoint that is not there {stored - referenced}"
    # The child reported ``done`` puts; one more may have committed before the kill.
    assert done <= len(rows) <= done + 1
    listed = list(saver.list(cfg("put")))
    assert len(listed) == len(rows)
    for tup in listed:
        values = tup.checkpoint["channel_values"]
        i = tup.metadata["step"]
        assert values["step"] == i and values["doc"].startswith(f"doc {i} ")
        assert len(values["log"]) == 200 and values["fixed"] == "F" * 40_000
    # Resume: a new checkpoint on top of the newest one.
    latest = saver.get_tuple(cfg("put"))
    assert latest is not None
    versions = dict(latest.checkpoint["channel_versions"])
    config, _ = put_step(saver, latest.config, versions, len(rows))
    resumed = saver.get_tuple(config)
    assert resumed is not None and resumed.checkpoint["channel_values"]["step"] == len(rows)


def check_put_writes(store: Store, saver: SQLAlchemySaver, done: int) -> None:
    """Each task's writes are all there or not at all."""
    with store.engine.connect() as conn:
        per_task = Counter(
            t
            for (t,) in conn.execute(select(writes.c.task_id).where(writes.c.thread_id == "writes"))
        )
    assert set(per_task.values()) <= {WRITES_PER_TASK}, f"a task's writes cut short: {per_task}"
    tasks = sorted(int(t.removeprefix("task-")) for t in per_task)
    assert tasks == list(range(len(tasks)))
    assert done <= len(tasks) <= done + 1
    tup = saver.get_tuple(cfg("writes"))
    assert tup is not None
    assert len(tup.pending_writes) == WRITES_PER_TASK * len(tasks)
    for task_id, channel, value in tup.pending_writes:
        assert value.startswith(f"{task_id.replace('-', ' ')} write {channel[2:]} ")
    # Resume: the next task's writes.
    saver.put_writes(tup.config, task_writes(len(tasks)), f"task-{len(tasks)}")
    again = saver.get_tuple(cfg("writes"))
    assert again is not None
    assert len(again.pending_writes) == WRITES_PER_TASK * (len(tasks) + 1)


def check_threads(
    saver: SQLAlchemySaver,
    counts: dict[str, tuple[int, int, int]],
    prefix: str,
    allowed: dict[str, tuple[int, int, int]],
    done: int,
) -> None:
    """Every thread ``prefix-i`` is in one of the ``allowed`` states (its three tables
    together), and the last two (the ones the kill may have hit) read back."""
    states = {t: c for t, c in counts.items() if t.startswith(prefix)}
    by_name = {v: k for k, v in allowed.items()}
    for thread, c in states.items():
        assert c in by_name, f"{thread} is half there: {c}, not one of {allowed}"
    assert done <= len(states) <= done + 1
    for i in (done - 1, done):
        listed = list(saver.list(cfg(f"{prefix}{i}")))
        assert len(listed) == states.get(f"{prefix}{i}", (0, 0, 0))[0]
        for tup in listed:
            assert tup.checkpoint["channel_values"]["fixed"] == "F" * 40_000


@pytest.mark.parametrize("op", ["put", "put_writes", "copy_thread+prune"])
@pytest.mark.parametrize("backend", DURABLE)
def test_sigkill_mid_operation_leaves_all_or_nothing(
    backend: str, op: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = Store(backend, new_saver_args(backend, request, tmp_path))
    rng = random.Random(f"{SEED}-{backend}-{op}")
    with store.saver() as saver:
        saver.setup()
        if op == "put_writes":
            put_step(saver, cfg("writes"), {}, 0)
        if op == "copy_thread+prune":
            seed_source(saver, "src", SOURCE_CHECKPOINTS)
            # What a whole copy and a whole prune leave, done once without a kill.
            saver.copy_thread("src", "reference")
            saver.prune(["reference"])
        before = row_counts(store.engine)

    child = store.child(OP_CHILD, str(ROOT), op, store.child_url, store.schema or "")
    assert child.stdout is not None
    assert child.stdout.readline() == "open\n", "the child did not start"
    first = child.stdout.readline()
    assert first, "the child failed before its first operation"
    delay = rng.uniform(0.0, 0.8)
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    lines = [first.strip(), *(line.strip() for line in child.stdout)]
    child.wait()
    store.settle()
    store.check_file()
    why = f"(seed {SEED}, killed {delay:.2f} s after the first report: {lines[-3:]})"

    with store.saver() as saver:
        counts = row_counts(store.engine)
        try:
            if op == "put":
                check_put(store, saver, len(lines))
            elif op == "put_writes":
                check_put_writes(store, saver, len(lines))
            else:
                full, pruned = before["src"], before["reference"]
                assert pruned[0] < full[0]
                allowed = {"none": (0, 0, 0), "copied": full, "pruned": pruned}
                copied = sum(1 for line in lines if line.startswith("copied"))
                check_threads(saver, counts, "prune-", allowed, copied)
                # Each thread was pruned before the next was copied: only the last one
                # may be unpruned.
                states = [counts.get(f"prune-{i}", (0, 0, 0)) for i in range(copied + 1)]
                assert set(states[:-2]) <= {pruned}
                # Whatever state the kill left, pruning it again completes it.
                threads = [t for t in counts if t.startswith("prune-")]
                saver.prune(threads)
                after = row_counts(store.engine)
                assert {after[t] for t in threads} <= {pruned}
                # And a whole copy still works.
                saver.copy_thread("src", "copy-after")
                assert row_counts(store.engine)["copy-after"] == full
        except AssertionError as e:
            raise AssertionError(f"{e} {why}") from e
        # The rest of the store is as it was.
        for thread, c in before.items():
            if thread not in ("put", "writes"):
                assert counts[thread] == c, why
