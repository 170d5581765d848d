"""The ``progress`` callbacks of the saver's long operator methods count real units:
``prune`` the threads pruned, one call after each thread's transaction; and
``reindex_metadata`` the stored checkpoints read, one call after each batch (never
called where there is nothing to index: PostgreSQL, or keys indexed already). Sync and
async, on every backend.
"""

from __future__ import annotations

import pytest

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._ops import metaindex

from ..checkpoints import put_numbered_chain
from ..doors import Door


def fill(saver: SQLAlchemySaver, threads: int, per_thread: int) -> None:
    for t in range(threads):
        put_numbered_chain(
            saver,
            {"configurable": {"thread_id": f"t{t}", "checkpoint_ns": ""}},
            per_thread,
            lambda step: {"source": "loop", "step": step, "tenant": f"x{step % 2}"},
        )


async def test_prune_tells_the_threads_pruned_after_each(door: Door) -> None:
    fill(door.saver, 3, 3)
    seen: list[tuple[int, int]] = []

    def progress(done: int) -> None:
        # Called once a thread is pruned: the threads before it are (1 checkpoint left).
        kept = sum(t.checkpoints == 1 for t in door.saver.list_threads(limit=None))
        seen.append((done, kept))

    await door.prune(["t0", "t1", "t2"], strategy="keep_latest", progress=progress)
    assert seen == [(1, 1), (2, 2), (3, 3)]
    seen.clear()
    await door.prune(["t0", "t2"], strategy="delete", progress=lambda n: seen.append((n, 0)))
    assert seen == [(1, 0), (2, 0)]
    assert [t.thread_id for t in door.saver.list_threads(limit=None)] == ["t1"]


async def test_prune_stops_where_its_progress_raises(door: Door) -> None:
    fill(door.saver, 2, 2)

    def stop(done: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await door.prune(["t0", "t1"], strategy="delete", progress=stop)
    assert [t.thread_id for t in door.saver.list_threads(limit=None)] == ["t1"]


async def test_reindex_metadata_tells_the_checkpoints_read_by_batch(
    door: Door, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(door.saver, 1, 5)
    monkeypatch.setattr(metaindex, "_BATCH", 2)  # 5 checkpoints: batches of 2, 2, 1
    saver = door.saver
    wider = Door(
        SQLAlchemySaver(
            saver.engine, saver.async_engine, schema=saver.schema, metadata_index_keys=["tenant"]
        ),
        door.mode,
    )
    seen: list[int] = []
    keys = await wider.reindex_metadata(progress=seen.append)
    if saver._qb.metadata_index_rows:
        assert (keys, seen) == (["tenant"], [2, 4, 5])
    else:  # PostgreSQL: its GIN index covers every key, nothing is read
        assert (keys, seen) == ([], [])
    seen.clear()
    assert await wider.reindex_metadata(progress=seen.append) == []
    assert seen == []  # indexed already: nothing read
