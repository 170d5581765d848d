"""Time to live of the store's items, on every backend through the sync and async doors,
with a clock the tests move (``clock=``): default and per-put TTLs, expired items never
returned (even before a sweep), refresh on read, sweeps and the sweepers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp

from ..conftest import Clock, HashEmbeddings, StoreDoor
from ..waiting import PATIENCE, until

NS = ("t", "u1")


def door_for(store_factory: Any, mode: str, clock: Clock, **kwargs: Any) -> StoreDoor:
    return StoreDoor(store_factory(clock=clock, **kwargs), mode)


async def present(door: StoreDoor, key: str, ns: tuple[str, ...] = NS) -> bool:
    """Whether ``key`` is visible to get, search and list_namespaces, which must agree
    (none of them refreshing)."""
    got = await door.get(ns, key, refresh_ttl=False)
    found = [i.key for i in await door.search(ns, limit=100, refresh_ttl=False)]
    listed = ns in await door.list_namespaces()
    assert (got is not None) == (key in found), (key, got, found)
    if got is not None:
        assert listed
    return got is not None


async def test_default_ttl_applies(store_factory: Any, mode: str, clock: Clock) -> None:
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 10, "refresh_on_read": False})
    await door.put(NS, "k", {"v": 1})
    clock.advance(minutes=9, seconds=59)
    assert await present(door, "k")
    assert (await door.get(NS, "k")).value == {"v": 1}  # refresh_on_read False: no refresh
    clock.advance(seconds=2)
    assert not await present(door, "k")
    assert await door.get(NS, "k") is None
    assert await door.search(NS) == []
    assert await door.search((), filter={"v": 1}) == []
    assert await door.list_namespaces() == []
    assert await door.list_namespaces(prefix=("t",), max_depth=1) == []
    assert await door.batch([GetOp(NS, "k"), SearchOp(("t",))]) == [None, []]


async def test_put_ttl_overrides_the_default(store_factory: Any, mode: str, clock: Clock) -> None:
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 10, "refresh_on_read": False})
    await door.put(NS, "short", {"v": 1}, ttl=1)
    await door.put(NS, "default", {"v": 2})
    await door.put(NS, "forever", {"v": 3}, ttl=None)
    await door.put(NS, "half", {"v": 4}, ttl=0.5)
    clock.advance(seconds=31)
    assert [await present(door, k) for k in ("short", "default", "forever", "half")] == [
        True,
        True,
        True,
        False,
    ]
    clock.advance(seconds=30)
    assert not await present(door, "short") and await present(door, "default")
    clock.advance(days=365)
    assert not await present(door, "default")
    assert await present(door, "forever")
    assert [i.key for i in await door.search(NS)] == ["forever"]
    stats = await door.stats()
    assert (stats.items, stats.expired) == (1, 3)  # live items, and expired ones


async def test_ttl_without_config(store_factory: Any, mode: str, clock: Clock) -> None:
    door = door_for(store_factory, mode, clock)
    await door.put(NS, "plain", {"v": 1})
    await door.put(NS, "ttl", {"v": 2}, ttl=5)
    clock.advance(minutes=6)
    assert await present(door, "plain") and not await present(door, "ttl")
    clock.advance(days=10000)
    assert await present(door, "plain")


async def test_overwrite_resets_and_can_drop_the_ttl(
    store_factory: Any, mode: str, clock: Clock
) -> None:
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 10, "refresh_on_read": False})
    await door.put(NS, "k", {"v": 1})
    clock.advance(minutes=8)
    await door.put(NS, "k", {"v": 2})  # new expiry: now + 10
    clock.advance(minutes=8)
    assert (await door.get(NS, "k")).value == {"v": 2}
    await door.put(NS, "k", {"v": 3}, ttl=None)  # no expiry any more
    clock.advance(days=30)
    assert (await door.get(NS, "k")).value == {"v": 3}
    # an expired item is replaced by a put of the same key
    await door.put(NS, "e", {"v": 1}, ttl=1)
    clock.advance(minutes=2)
    await door.put(NS, "e", {"v": 2}, ttl=1)
    assert (await door.get(NS, "e")).value == {"v": 2}


async def test_expired_namespace_disappears_but_live_siblings_stay(
    store_factory: Any, mode: str, clock: Clock
) -> None:
    door = door_for(store_factory, mode, clock)
    await door.put(("a", "gone"), "k", {}, ttl=1)
    await door.put(("a", "live"), "k", {}, ttl=100)
    await door.put(("a", "mixed"), "old", {}, ttl=1)
    await door.put(("a", "mixed"), "new", {})
    clock.advance(minutes=2)
    assert await door.list_namespaces() == [("a", "live"), ("a", "mixed")]
    assert await door.list_namespaces(max_depth=1) == [("a",)]
    assert [i.key for i in await door.search(("a", "mixed"))] == ["new"]


async def test_refresh_on_read(store_factory: Any, mode: str, clock: Clock) -> None:
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 10})  # refresh on read
    for key in ("got", "searched", "unread", "norefresh", "listed"):
        await door.put(NS, key, {"key": key})
    await door.put(("other",), "k", {})
    clock.advance(minutes=8)
    assert await door.get(NS, "got") is not None  # pushes expiry to now + 10
    assert await door.get(NS, "norefresh", refresh_ttl=False) is not None
    found = await door.search(NS, filter={"key": "searched"})
    assert [i.key for i in found] == ["searched"]  # refreshes what it returns only
    assert await door.list_namespaces() == [("other",), NS]  # does not refresh
    clock.advance(minutes=8)  # 16 minutes after the puts, 8 after the reads
    assert await present(door, "got")
    assert await present(door, "searched")
    for key in ("unread", "norefresh", "listed"):
        assert not await present(door, key), key
    assert await door.list_namespaces() == [NS]
    # refresh_ttl=False on a search leaves the expiry as it was
    await door.search(NS, refresh_ttl=False)
    clock.advance(minutes=3)
    assert not await present(door, "got") and not await present(door, "searched")


async def test_refresh_on_read_false(store_factory: Any, mode: str, clock: Clock) -> None:
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 10, "refresh_on_read": False})
    await door.put(NS, "a", {})
    await door.put(NS, "b", {})
    clock.advance(minutes=8)
    assert await door.get(NS, "a") is not None  # no refresh by default
    assert await door.get(NS, "b", refresh_ttl=True) is not None  # asked for
    clock.advance(minutes=8)
    assert not await present(door, "a")
    assert await present(door, "b")


async def test_refresh_keeps_the_items_ttl(store_factory: Any, mode: str, clock: Clock) -> None:
    """A refresh pushes to now + the item's own TTL, not the default."""
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 10})
    await door.put(NS, "long", {}, ttl=60)
    await door.put(NS, "short", {}, ttl=2)
    clock.advance(minutes=1)
    assert len(await door.search(NS)) == 2
    clock.advance(minutes=59)
    assert await present(door, "long") and not await present(door, "short")


async def test_batch_with_expired_items(store_factory: Any, mode: str, clock: Clock) -> None:
    door = door_for(store_factory, mode, clock)
    await door.put(NS, "k", {"v": 1}, ttl=1)
    clock.advance(minutes=2)
    results = await door.batch(
        [GetOp(NS, "k"), PutOp(NS, "k", {"v": 2}, ttl=None), GetOp(NS, "k"), SearchOp(NS)]
    )
    assert results == [None, None, None, []]  # reads see the state before the batch
    assert (await door.get(NS, "k")).value == {"v": 2}


async def test_sweep_deletes_expired_items_and_vectors(
    store_factory: Any, mode: str, clock: Clock
) -> None:
    index = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    door = door_for(store_factory, mode, clock, index=index)
    await door.put(NS, "old1", {"text": "pizza"}, ttl=1)
    await door.put(("x",), "old2", {"text": "rain"}, ttl=1)
    await door.put(NS, "young", {"text": "dog"}, ttl=100)
    await door.put(NS, "forever", {"text": "cold"})
    assert await door.sweep_ttl() == 0
    before = await door.stats()
    assert (before.items, before.vectors, before.expired) == (4, 4, 0)
    clock.advance(minutes=2)
    expired = await door.stats()
    assert (expired.items, expired.vectors, expired.expired) == (2, 4, 2)
    # expired items never show up in a vector search either
    assert {i.key for i in await door.search((), query="pizza", limit=10)} == {"young", "forever"}
    assert await door.sweep_ttl() == 2
    after = await door.stats()
    assert (after.items, after.vectors, after.expired, after.namespaces) == (2, 2, 0, 1)
    assert await door.sweep_ttl() == 0
    clock.advance(days=1)
    assert await door.sweep_ttl() == 1
    assert [i.key for i in await door.search(())] == ["forever"]


async def test_sweep_from_a_store_without_ttl_config(
    store_factory: Any, mode: str, clock: Clock
) -> None:
    door = door_for(store_factory, mode, clock)
    await door.put(NS, "k", {}, ttl=1)
    clock.advance(minutes=1, seconds=1)
    assert await door.sweep_ttl() == 1
    assert (await door.stats()).items == 0


async def test_thread_sweeper(store_factory: Any, clock: Clock) -> None:
    store = store_factory(clock=clock, ttl={"default_ttl": 1, "sweep_interval_minutes": 0.001})
    store.put(NS, "a", {})
    store.put(NS, "b", {}, ttl=None)
    future = store.start_ttl_sweeper()
    assert not future.done()
    assert store.start_ttl_sweeper().done()  # already running: no second thread
    clock.advance(minutes=2)
    until(lambda: store.stats().expired == 0, "the sweeper to sweep")
    assert store.stats().items == 1 and store.get(NS, "b") is not None
    assert store.stop_ttl_sweeper(timeout=60)
    assert future.result(timeout=60) is None
    # stopped: nothing is swept any more
    store.put(NS, "c", {})
    clock.advance(minutes=2)
    time.sleep(0.3)
    assert store.stats().expired == 1
    assert store.stop_ttl_sweeper(timeout=1)  # stopping again is fine
    # it can start again, with an explicit interval
    future = store.start_ttl_sweeper(sweep_interval_minutes=0.001)
    until(lambda: store.stats().expired == 0, "the sweeper to sweep")
    assert future.cancel()  # cancelling the future stops the thread
    until(lambda: store._sweeper is None or not store._sweeper.is_alive(), "the thread's end")
    store.put(NS, "d", {})
    clock.advance(minutes=2)
    time.sleep(0.3)
    assert store.stats().expired == 1
    assert store.stop_ttl_sweeper(timeout=60)


async def test_asyncio_sweeper(store_factory: Any, clock: Clock) -> None:
    store = store_factory(clock=clock, ttl={"default_ttl": 1})
    await store.aput(NS, "a", {})
    await store.aput(NS, "b", {}, ttl=None)
    task = await store.astart_ttl_sweeper(sweep_interval_minutes=0.001)
    assert await store.astart_ttl_sweeper(sweep_interval_minutes=0.001) is task
    clock.advance(minutes=2)
    deadline = time.monotonic() + PATIENCE
    while (await store.astats()).expired != 0:
        assert time.monotonic() < deadline, "the sweeper did not sweep"
        await asyncio.sleep(0.02)
    assert (await store.astats()).items == 1
    assert await store.astop_ttl_sweeper()
    assert task.done()
    await store.aput(NS, "c", {})
    clock.advance(minutes=2)
    await asyncio.sleep(0.3)
    assert (await store.astats()).expired == 1
    assert await store.astop_ttl_sweeper()


async def test_aclose_stops_the_sweepers(store_factory: Any, clock: Clock) -> None:
    store = store_factory(clock=clock)
    future = store.start_ttl_sweeper(sweep_interval_minutes=0.001)
    task = await store.astart_ttl_sweeper(sweep_interval_minutes=0.001)
    await store.aclose()
    assert future.result(timeout=60) is None
    assert task.done()


@pytest.mark.parametrize("minutes", [-1, -0.001])
async def test_sweeper_interval_must_be_positive(
    store_factory: Any, clock: Clock, minutes: float
) -> None:
    store = store_factory(clock=clock)
    with pytest.raises(ValueError):
        store.start_ttl_sweeper(sweep_interval_minutes=minutes)
    with pytest.raises(ValueError):
        await store.astart_ttl_sweeper(sweep_interval_minutes=minutes)


async def test_search_refreshes_only_the_page(store_factory: Any, mode: str, clock: Clock) -> None:
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 10})
    for i in range(4):
        clock.advance(seconds=1)
        await door.put(NS, f"k{i}", {"i": i})
    clock.advance(minutes=8)
    page = await door.search(NS, limit=2, offset=1)  # k2, k1
    assert [i.key for i in page] == ["k2", "k1"]
    clock.advance(minutes=8)
    assert [i.key for i in await door.search(NS, refresh_ttl=False)] == ["k2", "k1"]


async def test_reads_do_not_resurrect_expired_items(
    store_factory: Any, mode: str, clock: Clock
) -> None:
    door = door_for(store_factory, mode, clock, ttl={"default_ttl": 1})
    await door.put(NS, "k", {"v": 1})
    clock.advance(minutes=1, seconds=1)
    assert await door.get(NS, "k", refresh_ttl=True) is None
    assert await door.search(NS, refresh_ttl=True) == []
    assert await door.batch([GetOp(NS, "k", refresh_ttl=True)]) == [None]
    clock.advance(seconds=1)
    assert not await present(door, "k")
    assert (await door.stats()).expired == 1
    assert await door.sweep_ttl() == 1


async def test_reputs_racing_the_sweeper_keep_their_vectors(
    store_factory: Any, clock: Clock
) -> None:
    """Items re-put while the sweeper deletes their expired versions: every live item
    keeps its value and its vectors (a sweep that deleted vectors by key after a re-put
    had written new ones lost them)."""
    index = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    store = store_factory(clock=clock, index=index, ttl={"default_ttl": 1})
    store.start_ttl_sweeper(sweep_interval_minutes=0.0002)
    try:
        for round_ in range(12):
            store.batch([PutOp(NS, f"k{i}", {"text": f"pizza {round_}"}, ttl=1) for i in range(15)])
            time.sleep(0.01)
            clock.advance(minutes=2)
            time.sleep(0.01)
        store.batch([PutOp(NS, f"k{i}", {"text": "dog"}, ttl=1) for i in range(15)])
        time.sleep(0.1)
    finally:
        assert store.stop_ttl_sweeper(timeout=60)
    stats = store.stats()
    assert (stats.items, stats.vectors) == (15, 15)
    results = store.search(NS, query="dog", limit=20)
    assert len(results) == 15 and all(r.score is not None and r.score > 0.99 for r in results)
