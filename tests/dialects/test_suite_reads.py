"""The dialect suite, reads: the history queries a family builds, through the public
saver, on every backend of the suite (``extra`` too), sync and async.

Duties of :class:`~langgraph.checkpoint.sqlalchemy.dialects.QueryBuilder` exercised:
``newest_first`` and ``one_namespace`` (the latest of one namespace), ``one_thread``
and ``walk_thread`` (one thread in every namespace), ``rows_before``
(``list`` paged by ``before``), ``walk_newest_first`` (a filtered listing across
threads), the checkpoint-id walk of ``list_threads`` (pages by ``after``), ``json_has_key``
(``get_delta_channel_history``), ``small_reads`` and ``table_estimates``
(``storage_stats``). Metadata filters: test_filter_parity.py, test_metadata_index.py.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import Checkpoint

from ..checkpoints import config, next_checkpoint
from ..doors import Door


async def chain(door: Door, thread: str, steps: int, ns: str = "") -> list[Any]:
    """``steps`` checkpoints of ``thread`` in ``ns``, metadata ``{"step": n, "source":
    "loop"}``; returns their configs, oldest first."""
    parent: Checkpoint | None = None
    stored: Any = config(thread, ns=ns)
    made = []
    for step in range(steps):
        checkpoint, versions = next_checkpoint(door.saver, parent, {"n": step}, step)
        stored = await door.put(stored, checkpoint, {"step": step, "source": "loop"}, versions)
        made.append(stored)
        parent = checkpoint
    return made


def ids(tuples: list[Any]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


async def test_the_latest_is_of_its_own_namespace(door: Door) -> None:
    root = await chain(door, "t", 3)
    child = await chain(door, "t", 2, ns="child:1")
    latest = await door.get_tuple(config("t", ns=""))
    assert latest.config == root[-1]
    latest_child = await door.get_tuple(config("t", ns="child:1"))
    assert latest_child.config == child[-1]
    assert await door.get_tuple(config("t", ns="other")) is None


async def test_pages_by_before_give_the_listing_newest_first(door: Door) -> None:
    made = await chain(door, "t", 7)
    expected = [c["configurable"]["checkpoint_id"] for c in reversed(made)]
    assert ids(await door.list(config("t"))) == expected
    pages: list[str] = []
    before = None
    while True:
        page = await door.list(config("t"), before=before, limit=3)
        if not page:
            break
        pages += ids(page)
        before = page[-1].config
    assert pages == expected


async def test_a_thread_in_every_namespace_is_listed_newest_first(door: Door) -> None:
    """``list(thread)`` without a namespace (``one_thread``, ``walk_thread`` and its
    keyset pages): the thread's checkpoints of every namespace by id, newest first,
    the same by pages of ``before`` as at once; no other thread's."""
    made = []
    for ns in ("", "child:1", ""):
        made += await chain(door, "t", 2, ns=ns)
    await chain(door, "other", 2)
    newest_first = sorted((c["configurable"]["checkpoint_id"] for c in made), reverse=True)
    listed = await door.list({"configurable": {"thread_id": "t"}})
    assert ids(listed) == newest_first
    assert {t.config["configurable"]["checkpoint_ns"] for t in listed} == {"", "child:1"}
    pages: list[str] = []
    before = None
    while page := await door.list({"configurable": {"thread_id": "t"}}, before=before, limit=4):
        pages += ids(page)
        before = page[-1].config
    assert pages == newest_first


async def test_a_filtered_listing_across_threads_is_newest_first(door: Door) -> None:
    made = []
    for thread in ("a", "b", "c"):
        made += await chain(door, thread, 3)
    newest_first = sorted((c["configurable"]["checkpoint_id"] for c in made), reverse=True)
    assert ids(await door.list(None, filter={"source": "loop"})) == newest_first
    assert (
        ids(await door.list(None, filter={"step": 1}, limit=2))
        == [
            i for i in newest_first if i in {c["configurable"]["checkpoint_id"] for c in made[1::3]}
        ][:2]
    )
    before = {"configurable": {"checkpoint_id": newest_first[4]}}
    assert ids(await door.list(None, before=before)) == newest_first[5:]


async def test_list_threads_pages_follow_newest_activity(door: Door) -> None:
    for n, thread in enumerate(("a", "b", "c", "d", "e")):
        await chain(door, thread, n + 1)
    everything = await door.list_threads(limit=None)
    assert [t.thread_id for t in everything] == ["e", "d", "c", "b", "a"]
    assert [t.checkpoints for t in everything] == [5, 4, 3, 2, 1]
    pages: list[str] = []
    after = None
    while True:
        page = await door.list_threads(limit=2, after=after)
        if not page:
            break
        pages += [t.thread_id for t in page]
        after = page[-1]
    assert pages == ["e", "d", "c", "b", "a"]
    assert [t.thread_id for t in await door.list_threads(limit=2, offset=3)] == ["b", "a"]


async def test_delta_history_walks_the_parent_chain(door: Door) -> None:
    made = await chain(door, "t", 3)
    for n, stored in enumerate(made):
        await door.put_writes(stored, [("msgs", f"w{n}")], f"task-{n}")
    history = await door.get_delta_channel_history(config=made[-1], channels=["msgs", "n"])
    assert [value for _, _, value in history["msgs"]["writes"]] == ["w0", "w1"]
    assert "seed" not in history["msgs"]  # no ancestor stores a value of it
    assert history["n"]["seed"] == 1  # the parent stores n


async def test_storage_stats_count_and_estimate(door: Door) -> None:
    await chain(door, "t", 4)
    exact = await door.storage_stats()
    assert exact == await door.storage_stats("t")
    assert min(table["rows"] for table in exact.values()) >= 0
    assert max(table["rows"] for table in exact.values()) >= 4
    estimated = await door.storage_stats(estimate=True)
    assert set(estimated) == set(exact)
    assert all(v["rows"] >= 0 and v["bytes"] >= 0 for v in estimated.values())
