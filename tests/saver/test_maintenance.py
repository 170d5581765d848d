"""Operator methods: ``prune``, ``copy_thread`` and ``delete_for_runs``, row by row.

Checkpoints are stored the way LangGraph stores them (``empty_checkpoint`` /
``create_checkpoint``, ``saver.get_next_version``, ``put`` then ``put_writes``), on every
backend and through the sync and async doors. Besides what the saver returns, the tests
read the raw rows of the three tables, so that a row left behind (or one removed too
many) shows even where ``get_tuple`` would not notice it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from langgraph.checkpoint.base import Checkpoint
from sqlalchemy import event, select

from langgraph.checkpoint.sqlalchemy import ThreadNotEmptyError
from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, writes

from ..checkpoints import next_checkpoint
from ..doors import Door

TABLES = {"checkpoints": checkpoints, "blobs": blobs, "writes": writes}

# These tests follow blobs row by row (which ones prune and delete_for_runs keep), so
# every channel value goes to the blobs table here. Graph tests (test_delta_graphs) prune
# and resume with the default, values inline in the checkpoint rows.
pytestmark = pytest.mark.saver_kwargs(inline_limit=0)

# -- helpers -----------------------------------------------------------------------------


def cfg(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def cid(config: dict[str, Any]) -> str:
    return str(config["configurable"]["checkpoint_id"])


def _plain(value: Any) -> Any:
    """A hashable, comparable form of a raw column value."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def raw_rows(saver: Any, table: str, thread_id: str | None = None) -> list[dict[str, Any]]:
    """Every row of one of our tables (of one thread), in the saver's schema."""
    t = TABLES[table]
    engine = saver.engine
    if saver.schema:
        engine = engine.execution_options(schema_translate_map={None: saver.schema})
    stmt = select(t)
    if thread_id is not None:
        stmt = stmt.where(t.c.thread_id == thread_id)
    with engine.connect() as conn:
        return [{k: _plain(v) for k, v in row._mapping.items()} for row in conn.execute(stmt)]


def dump(saver: Any, thread_id: str, *, with_thread: bool = True) -> dict[str, list[Any]]:
    """All rows of a thread in all three tables, sorted; for before/after comparisons."""
    out: dict[str, list[Any]] = {}
    for table in TABLES:
        rows = []
        for row in raw_rows(saver, table, thread_id):
            if not with_thread:
                row.pop("thread_id")
            rows.append(tuple(sorted(row.items())))
        out[table] = sorted(rows, key=repr)
    return out


def row_count(saver: Any, thread_id: str) -> int:
    return sum(len(rows) for rows in dump(saver, thread_id).values())


def blob_keys(saver: Any, thread_id: str) -> set[tuple[str, str, str]]:
    return {
        (r["checkpoint_ns"], r["channel"], r["version"])
        for r in raw_rows(saver, "blobs", thread_id)
    }


def write_keys(saver: Any, thread_id: str) -> set[tuple[str, str]]:
    return {(r["checkpoint_ns"], r["checkpoint_id"]) for r in raw_rows(saver, "writes", thread_id)}


def checkpoint_keys(saver: Any, thread_id: str) -> set[tuple[str, str]]:
    return {
        (r["checkpoint_ns"], r["checkpoint_id"]) for r in raw_rows(saver, "checkpoints", thread_id)
    }


@dataclass
class Chain:
    """A chain of checkpoints in one (thread, namespace), stored through a door."""

    door: Door
    thread_id: str
    ns: str = ""
    configs: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    new_versions: list[dict[str, Any]] = field(default_factory=list)

    async def put(
        self,
        updates: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        *,
        keep_out: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Store the next checkpoint with ``updates`` written; ``keep_out`` channels get a
        new version but no stored value (as a DeltaChannel between snapshots)."""
        prev = self.checkpoints[-1] if self.checkpoints else None
        step = len(self.checkpoints)
        checkpoint, new_versions = next_checkpoint(
            self.door.saver, prev, updates, step, keep_out=keep_out
        )
        parent = self.configs[-1] if self.configs else cfg(self.thread_id, self.ns)
        meta = {"source": "loop", "step": step, "parents": {}, **(metadata or {})}
        config = await self.door.put(parent, checkpoint, meta, new_versions)
        self.configs.append(config)
        self.checkpoints.append(checkpoint)
        self.new_versions.append(new_versions)
        return config

    async def write(
        self, index: int, writes: list[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self.door.put_writes(self.configs[index], writes, task_id, task_path)

    def version(self, index: int, channel: str) -> str:
        return str(self.checkpoints[index]["channel_versions"][channel])

    def id(self, index: int) -> str:
        return cid(self.configs[index])


async def build_thread(
    door: Door, thread_id: str, run_ids: tuple[str, ...] = ()
) -> dict[str, Chain]:
    """A thread as a graph with one subgraph leaves it.

    Root namespace: four checkpoints; ``stable`` written once at the first (so all four
    hold its one version), ``counter`` at every one. Each checkpoint has pending writes of
    a task, the last one also an interrupt. Subgraph namespace ``child:1``: three
    checkpoints of ``sub``, each with writes carrying a task path. ``run_ids[i]`` (when
    given) goes into the metadata of root checkpoint ``i`` and child checkpoint ``i``.
    """

    def meta(i: int) -> dict[str, Any]:
        return {"run_id": run_ids[i]} if i < len(run_ids) else {}

    root = Chain(door, thread_id)
    for i in range(4):
        await root.put({"stable": "S", "counter": i} if i == 0 else {"counter": i}, meta(i))
        await root.write(i, [("counter", f"w{i}"), ("log", {"i": i})], f"task-{i}", f"~{i}")
    await root.write(3, [("__interrupt__", ["ask?"])], "task-ask", "~ask")
    child = Chain(door, thread_id, "child:1")
    for i in range(3):
        await child.put({"sub": "abc"[i]}, meta(i))
        await child.write(i, [("sub", f"s{i}")], f"sub-task-{i}", f"~child~{i}")
    return {"": root, "child:1": child}


# -- prune(strategy="delete") --------------------------------------------------------------


async def test_prune_delete_removes_the_threads_from_every_table(door: Door) -> None:
    for t in ("a", "b", "keep"):
        await build_thread(door, t)
    before_keep = dump(door.saver, "keep")
    assert all(before_keep.values())
    keep_tuple = await door.get_tuple(cfg("keep"))

    await door.prune(["a", "b"], strategy="delete")

    for t in ("a", "b"):
        assert row_count(door.saver, t) == 0
        assert await door.get_tuple(cfg(t)) is None
        assert await door.list(cfg(t)) == []
    assert dump(door.saver, "keep") == before_keep
    assert await door.get_tuple(cfg("keep")) == keep_tuple
    # a second prune of the same threads is a no-op
    await door.prune(["a", "b"], strategy="delete")
    assert dump(door.saver, "keep") == before_keep


# -- prune(strategy="keep_latest") ---------------------------------------------------------


async def test_prune_keep_latest_keeps_newest_per_namespace_and_its_writes(door: Door) -> None:
    chains = await build_thread(door, "t")
    await build_thread(door, "other")
    root, child = chains[""], chains["child:1"]
    before_other = dump(door.saver, "other")
    latest = await door.get_tuple(cfg("t"))
    latest_child = await door.get_tuple(cfg("t", "child:1"))
    assert latest is not None and latest_child is not None
    assert len(latest.pending_writes or []) == 3
    assert len(raw_rows(door.saver, "blobs", "t")) == 1 + 4 + 3  # stable, counter x4, sub x3

    await door.prune(["t"], strategy="keep_latest")

    # checkpoints: the newest of each namespace, nothing else
    assert checkpoint_keys(door.saver, "t") == {("", root.id(3)), ("child:1", child.id(2))}
    assert [t.config for t in await door.list(cfg("t"))] == [root.configs[3]]
    everywhere = await door.list({"configurable": {"thread_id": "t"}})
    assert {cid(t.config) for t in everywhere} == {root.id(3), child.id(2)}
    # writes: only those of the kept checkpoints
    assert write_keys(door.saver, "t") == {("", root.id(3)), ("child:1", child.id(2))}
    assert len(raw_rows(door.saver, "writes", "t")) == 3 + 1
    # blobs: old versions of counter and sub gone; the versions the kept ones hold stay
    assert blob_keys(door.saver, "t") == {
        ("", "stable", root.version(0, "stable")),
        ("", "counter", root.version(3, "counter")),
        ("child:1", "sub", child.version(2, "sub")),
    }
    assert ("", "counter", root.version(2, "counter")) not in blob_keys(door.saver, "t")

    # the kept checkpoints read back whole, channel values and pending writes
    after = await door.get_tuple(cfg("t"))
    assert after is not None
    assert after.checkpoint["channel_values"] == {"stable": "S", "counter": 3}
    assert after.checkpoint == latest.checkpoint
    assert after.metadata == latest.metadata
    assert after.pending_writes == latest.pending_writes
    assert await door.get_tuple(root.configs[3]) == after
    after_child = await door.get_tuple(cfg("t", "child:1"))
    assert after_child is not None
    assert after_child.checkpoint["channel_values"] == {"sub": "c"}
    assert after_child.pending_writes == latest_child.pending_writes
    assert after_child.pending_writes == [("sub-task-2", "sub", "s2")]
    # older checkpoints are gone
    assert await door.get_tuple(root.configs[2]) is None
    assert await door.get_tuple(child.configs[0]) is None

    # the other thread is untouched
    assert dump(door.saver, "other") == before_other

    # pruning again changes nothing
    pruned = dump(door.saver, "t")
    await door.prune(["t"], strategy="keep_latest")
    assert dump(door.saver, "t") == pruned

    # the thread goes on from its kept checkpoint
    await root.put({"counter": 4})
    resumed = await door.get_tuple(cfg("t"))
    assert resumed is not None
    assert resumed.checkpoint["channel_values"] == {"stable": "S", "counter": 4}
    assert resumed.parent_config == root.configs[3]


async def test_prune_keep_latest_several_threads_at_once(door: Door) -> None:
    chains = {t: await build_thread(door, t) for t in ("a", "b")}
    await door.prune(["a", "b"], strategy="keep_latest")
    for t, chain in chains.items():
        assert checkpoint_keys(door.saver, t) == {
            ("", chain[""].id(3)),
            ("child:1", chain["child:1"].id(2)),
        }


async def test_prune_keep_latest_keeps_delta_ancestors_back_to_the_seed(door: Door) -> None:
    """A latest checkpoint whose DeltaChannel value is rebuilt from history keeps its
    ancestors (and their writes) back to the nearest one storing a value."""
    chain = Chain(door, "delta")
    # 0: plain value; 1: a stored value (snapshot); 2, 3: value left out (delta steps)
    await chain.put({"msgs": ["a"], "other": 0})
    await chain.write(0, [("msgs", ["b"])], "t0")
    await chain.put({"msgs": ["a", "b"]})
    await chain.write(1, [("msgs", ["c"])], "t1")
    for i in (2, 3):
        await chain.put(
            {"msgs": None, "other": i},
            {"counters_since_delta_snapshot": {"msgs": [i - 1, i - 1]}},
            keep_out=("msgs",),
        )
        await chain.write(i, [("msgs", ["d" if i == 2 else "e"])], f"t{i}")
    history = await door.get_delta_channel_history(config=cfg("delta"), channels=["msgs"])
    assert history["msgs"]["seed"] == ["a", "b"]
    assert [w[2] for w in history["msgs"]["writes"]] == [["c"], ["d"]]

    await door.prune(["delta"], strategy="keep_latest")

    assert checkpoint_keys(door.saver, "delta") == {("", chain.id(i)) for i in (1, 2, 3)}
    assert write_keys(door.saver, "delta") == {("", chain.id(i)) for i in (1, 2, 3)}
    assert ("", "msgs", chain.version(0, "msgs")) not in blob_keys(door.saver, "delta")
    assert ("", "msgs", chain.version(1, "msgs")) in blob_keys(door.saver, "delta")
    assert await door.get_delta_channel_history(config=cfg("delta"), channels=["msgs"]) == history
    latest = await door.get_tuple(cfg("delta"))
    assert latest is not None
    assert latest.pending_writes == [("t3", "msgs", ["e"])]
    assert latest.checkpoint["channel_values"] == {"other": 3}


async def test_prune_rejects_a_bare_string(door: Door) -> None:
    await build_thread(door, "t")
    before = dump(door.saver, "t")
    for strategy in ("keep_latest", "delete"):
        with pytest.raises(TypeError):
            await door.prune("t", strategy=strategy)
    assert dump(door.saver, "t") == before


async def test_prune_empty_list_unknown_thread_and_bad_strategy(door: Door) -> None:
    await build_thread(door, "t")
    before = dump(door.saver, "t")
    for strategy in ("keep_latest", "delete"):
        await door.prune([], strategy=strategy)
        await door.prune(["no-such-thread"], strategy=strategy)
        assert dump(door.saver, "t") == before
        assert row_count(door.saver, "no-such-thread") == 0
    await door.prune([])  # default strategy
    assert dump(door.saver, "t") == before
    with pytest.raises(ValueError, match="strategy"):
        await door.prune(["t"], strategy="keep_oldest")
    assert dump(door.saver, "t") == before


# -- copy_thread ---------------------------------------------------------------------------


async def test_copy_thread_copies_every_row_of_every_namespace(door: Door) -> None:
    chains = await build_thread(door, "src")
    source_rows = dump(door.saver, "src")
    source_list = await door.list({"configurable": {"thread_id": "src"}})

    await door.copy_thread("src", "dst")

    # raw rows: identical but for thread_id (ids, parents, metadata, task_path, blobs)
    assert dump(door.saver, "dst", with_thread=False) == dump(door.saver, "src", with_thread=False)
    assert {r["task_path"] for r in raw_rows(door.saver, "writes", "dst")} >= {"~0", "~child~2"}
    # through the saver: same checkpoints, parents, metadata, values, pending writes
    copied = await door.list({"configurable": {"thread_id": "dst"}})
    assert len(copied) == len(source_list) == 4 + 3

    def retarget(config: dict[str, Any] | None) -> dict[str, Any] | None:
        if config is None:
            return None
        return {"configurable": {**config["configurable"], "thread_id": "dst"}}

    for s, d in zip(source_list, copied, strict=True):
        assert d.config == retarget(s.config)
        assert d.parent_config == retarget(s.parent_config)
        assert d.checkpoint == s.checkpoint
        assert d.metadata == s.metadata
        assert d.pending_writes == s.pending_writes
    latest = await door.get_tuple(cfg("dst"))
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"stable": "S", "counter": 3}
    assert latest.config == retarget(chains[""].configs[3])
    child = await door.get_tuple(cfg("dst", "child:1"))
    assert child is not None
    assert child.checkpoint["channel_values"] == {"sub": "c"}
    assert child.pending_writes == [("sub-task-2", "sub", "s2")]

    # the source is untouched, and the copy lives on its own
    assert dump(door.saver, "src") == source_rows
    copy_chain = Chain(door, "dst", configs=[latest.config], checkpoints=[latest.checkpoint])
    await copy_chain.put({"counter": 99})
    assert dump(door.saver, "src") == source_rows
    src_latest = await door.get_tuple(cfg("src"))
    assert src_latest is not None and src_latest.checkpoint["channel_values"]["counter"] == 3
    await door.delete_thread("src")
    dst_latest = await door.get_tuple(cfg("dst"))
    assert dst_latest is not None and dst_latest.checkpoint["channel_values"]["counter"] == 99
    assert len(await door.list({"configurable": {"thread_id": "dst"}})) == 8


async def test_copy_thread_onto_a_thread_with_checkpoints_is_refused(door: Door) -> None:
    await build_thread(door, "src")
    target = Chain(door, "dst")
    await target.put({"mine": 1})
    await target.write(0, [("mine", 2)], "own-task")
    source_rows, target_rows = dump(door.saver, "src"), dump(door.saver, "dst")

    with pytest.raises(ThreadNotEmptyError):
        await door.copy_thread("src", "dst")
    assert dump(door.saver, "src") == source_rows
    assert dump(door.saver, "dst") == target_rows

    # onto itself: refused too, nothing doubled
    with pytest.raises(ThreadNotEmptyError):
        await door.copy_thread("src", "src")
    assert dump(door.saver, "src") == source_rows


async def test_copy_thread_of_a_missing_thread_creates_nothing(door: Door) -> None:
    await build_thread(door, "other")
    await door.copy_thread("no-such-thread", "dst")
    assert row_count(door.saver, "dst") == 0
    assert await door.get_tuple(cfg("dst")) is None
    # the target is still free for a real copy
    await door.copy_thread("other", "dst")
    assert dump(door.saver, "dst", with_thread=False) == dump(
        door.saver, "other", with_thread=False
    )


# -- delete_for_runs -----------------------------------------------------------------------


async def test_delete_for_runs_deletes_listed_runs_everywhere(door: Door) -> None:
    # root checkpoints 0, 1 and child checkpoint 0, 1 belong to r1; root 2, 3 and child 2
    # to r2. Thread t2: r1 and r3.
    t1 = await build_thread(door, "t1", run_ids=("r1", "r1", "r2", "r2"))
    t2 = await build_thread(door, "t2", run_ids=("r1", "r3", "r3", "r3"))
    await build_thread(door, "untouched")
    untouched = dump(door.saver, "untouched")

    await door.delete_for_runs(["r1"])

    root, child = t1[""], t1["child:1"]
    assert checkpoint_keys(door.saver, "t1") == {
        ("", root.id(2)),
        ("", root.id(3)),
        ("child:1", child.id(2)),
    }
    assert write_keys(door.saver, "t1") == checkpoint_keys(door.saver, "t1")
    assert checkpoint_keys(door.saver, "t2") == {("", t2[""].id(i)) for i in (1, 2, 3)} | {
        ("child:1", t2["child:1"].id(i)) for i in (1, 2)
    }
    assert write_keys(door.saver, "t2") == checkpoint_keys(door.saver, "t2")
    assert dump(door.saver, "untouched") == untouched
    remaining = await door.list({"configurable": {"thread_id": "t1"}})
    assert {t.metadata["run_id"] for t in remaining} == {"r2"}

    # blobs: versions only the deleted checkpoints held are gone; "stable" was written by
    # checkpoint 0 (r1) but is still held by checkpoints 2 and 3, so it stays
    assert blob_keys(door.saver, "t1") == {
        ("", "stable", root.version(0, "stable")),
        ("", "counter", root.version(2, "counter")),
        ("", "counter", root.version(3, "counter")),
        ("child:1", "sub", child.version(2, "sub")),
    }
    kept = await door.get_tuple(root.configs[2])
    assert kept is not None
    assert kept.checkpoint["channel_values"] == {"stable": "S", "counter": 2}
    assert kept.pending_writes == [("task-2", "counter", "w2"), ("task-2", "log", {"i": 2})]

    # several runs at once, in every namespace
    await door.delete_for_runs(["r2", "r3"])
    for t in ("t1", "t2"):
        assert row_count(door.saver, t) == 0
    assert dump(door.saver, "untouched") == untouched


async def test_delete_for_runs_empty_list_unknown_run_and_bare_string(door: Door) -> None:
    await build_thread(door, "t", run_ids=("r1", "r1", "r2", "r2"))
    before = dump(door.saver, "t")
    await door.delete_for_runs([])
    await door.delete_for_runs(["no-such-run"])
    assert dump(door.saver, "t") == before
    with pytest.raises(TypeError):
        await door.delete_for_runs("r1")
    assert dump(door.saver, "t") == before


async def test_delete_for_runs_with_a_long_run_id(door: Door) -> None:
    """``metadata["run_id"]`` is an open string: a run id longer than the indexed
    column's 64 characters is still a run id the caller may ask to delete."""
    run_id = "run-" + "x" * 96
    chain = Chain(door, "long")
    await chain.put({"a": 1}, {"run_id": run_id})
    await chain.put({"a": 2}, {"run_id": "short"})
    await door.delete_for_runs([run_id])
    assert checkpoint_keys(door.saver, "long") == {("", chain.id(1))}


# -- another process writes while an operator method runs ------------------------------------


@contextmanager
def meanwhile(
    saver: Any, when: Callable[[str], bool], action: Callable[[], None]
) -> Iterator[None]:
    """Start ``action`` in another thread just before the first statement of ``saver``
    (either engine) that ``when`` accepts, and wait for it to commit: another process
    writing between two statements of the operation. (A saver that makes such a writer
    wait for the operation's lock lets it finish afterwards instead, after 60 s.)"""
    started: list[threading.Thread] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as e:  # re-raised in the test's thread
            errors.append(e)

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not started and when(statement):
            worker = threading.Thread(target=run, daemon=True)
            started.append(worker)
            worker.start()
            worker.join(timeout=60)

    engines = [saver.engine, saver.async_engine.sync_engine]
    for engine in engines:
        event.listen(engine, "before_cursor_execute", before)
    try:
        yield
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", before)
    assert started, "the operation never ran the statement the test waits for"
    started[0].join(timeout=120)
    assert not started[0].is_alive(), "the other writer is still blocked"
    if errors:
        raise errors[0]


def _deletes(statement: str) -> bool:
    return statement.lstrip().upper().startswith("DELETE")


def _scans_blobs(statement: str) -> bool:
    s = statement.lstrip().upper()
    return s.startswith("SELECT") and "LGSA_CHECKPOINT_BLOBS" in s


@pytest.mark.parametrize(
    ("operation", "when"),
    [
        ("prune", _deletes),
        ("prune", _scans_blobs),
        ("delete_for_runs", _scans_blobs),
    ],
    ids=["prune-before-deleting", "prune-before-scanning-blobs", "delete_for_runs"],
)
async def test_checkpoint_stored_meanwhile_by_another_process_survives(
    door: Door, backend: str, saver_factory: Any, operation: str, when: Callable[[str], bool]
) -> None:
    """A graph still running on the thread stores its next checkpoint (new blob, pending
    writes) while an operator prunes the thread or deletes an old run of it. That
    checkpoint is newer than anything the operation decided to remove: it must survive
    whole."""
    if backend.startswith("sqlite"):
        pytest.skip("SQLite runs one writer at a time: nothing commits during the operation")
    chain = Chain(door, "t")
    await chain.put({"c": 1}, {"run_id": "old-run"})
    await chain.put({"c": 2}, {"run_id": "new-run"})
    other = saver_factory(shared=True)  # the process running the graph
    stored: list[dict[str, Any]] = []

    def store_next_checkpoint() -> None:
        checkpoint, new_versions = next_checkpoint(other, chain.checkpoints[-1], {"c": 3}, 2)
        config = other.put(
            chain.configs[-1], checkpoint, {"step": 2, "run_id": "new-run"}, new_versions
        )
        other.put_writes(config, [("c", 4)], "next-task")
        stored.append(config)

    with meanwhile(door.saver, when, store_next_checkpoint):
        if operation == "prune":
            await door.prune(["t"], strategy="keep_latest")
        else:
            await door.delete_for_runs(["old-run"])

    [config] = stored
    latest = await door.get_tuple(cfg("t"))
    assert latest is not None
    assert latest.config == config
    assert latest.checkpoint["channel_values"] == {"c": 3}
    assert latest.pending_writes == [("next-task", "c", 4)]
    assert latest.parent_config == chain.configs[-1]
