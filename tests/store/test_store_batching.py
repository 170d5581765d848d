"""Concurrent async calls of ``SQLAlchemyStore`` run in rounds (one batch each), on every
backend: thousands of concurrent ``aput``/``aget``/``asearch`` calls on a pool of two
connections end without an error and give the answers LangGraph's ``AsyncPostgresStore``
gives; a bad call, or one whose embedding fails, fails alone; a caller sees its own
writes; no task is left behind by a loop, a cancelled caller or ``aclose()``.

``LGSA_STORE_CALLS`` sets the number of concurrent calls of the large test (default
12,000; the review's 60,000 runs with ``LGSA_STORE_CALLS=60000``).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.store.base import BaseStore, InvalidNamespaceError

from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..conftest import HashEmbeddings

CALLS = int(os.environ.get("LGSA_STORE_CALLS", 12_000))
#: A pool that thousands of calls, one connection each, would exhaust at once.
SMALL_POOL = {"pool_size": 2, "max_overflow": 0, "pool_timeout": 5}
USERS = 40


def small_pool(backend: str) -> dict[str, Any]:
    # An in-memory SQLite database lives in one connection (StaticPool): no pool size.
    return {} if backend == "sqlite-memory" else SMALL_POOL


def _rounds_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "lgsa-store-rounds"]


async def _mixed_calls(store: BaseStore, calls: int) -> tuple[list[Any], float]:
    """``calls`` concurrent calls, a third each of ``aput`` (new keys under ``("new",)``),
    ``aget`` and ``asearch`` (filtered) of the items :func:`_fill` put; returns the
    results (exceptions included) and the seconds they took."""
    made: list[Awaitable[Any]] = []
    for i in range(calls):
        user = str(i % USERS)
        if i % 3 == 0:
            made.append(store.aput(("new", user), f"n{i}", {"i": i}))
        elif i % 3 == 1:
            made.append(store.aget(("old", user), f"k{i % 600}"))
        else:
            made.append(store.asearch(("old", user), filter={"kind": i % 5}, limit=5))
    start = time.perf_counter()
    results = await asyncio.gather(*made, return_exceptions=True)
    return results, time.perf_counter() - start


async def _fill(store: BaseStore) -> None:
    """600 items, 15 under each ``("old", user)`` (3 of each ``kind``), put by
    concurrent calls themselves."""
    await asyncio.gather(
        *(
            store.aput(("old", str(i % USERS)), f"k{i}", {"i": i, "kind": i // USERS % 5})
            for i in range(600)
        )
    )


def _answers(results: list[Any]) -> list[Any]:
    """What the calls gave, comparable between stores (no timestamps)."""
    out: list[Any] = []
    for r in results:
        if isinstance(r, list):
            out.append(sorted((tuple(i.namespace), i.key, i.value) for i in r))
        elif r is not None and not isinstance(r, BaseException):
            out.append((tuple(r.namespace), r.key, r.value))
        else:
            out.append(r)
    return out


async def _official_answers(url: str, calls: int) -> tuple[list[Any], float]:
    """The same calls on LangGraph's ``AsyncPostgresStore``, its own connection to a
    database of this test."""
    from langgraph.store.postgres import AsyncPostgresStore
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row

    libpq = url.replace("postgresql+psycopg://", "postgresql://")
    conn = await AsyncConnection.connect(
        libpq, autocommit=True, prepare_threshold=0, row_factory=dict_row
    )
    try:
        official = AsyncPostgresStore(conn)  # type: ignore[arg-type]
        await official.setup()
        await _fill(official)
        results, seconds = await _mixed_calls(official, calls)
    finally:
        await conn.close()
    return _answers(results), seconds


async def test_thousands_of_concurrent_calls_share_a_small_pool(
    store_factory: Callable[..., SQLAlchemyStore],
    backend: str,
    fresh_databases: Callable[..., str],
) -> None:
    """Concurrent aput/aget/asearch calls (12,000 by default) on a pool of two
    connections: no call fails (each used to take a connection of its own: thousands of
    pool timeouts), every put lands, and every call answers as ``AsyncPostgresStore``
    does for the same calls (PostgreSQL: both run here; timings printed, ``-s``)."""
    store = store_factory(**small_pool(backend))
    await _fill(store)
    results, seconds = await _mixed_calls(store, CALLS)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    assert all(results[i] is None for i in range(0, CALLS, 3))
    for i in range(1, CALLS, 3):
        item = results[i]
        assert item is not None and item.value["i"] == i % 600, i
    for i in range(2, CALLS, 3):
        found = results[i]
        assert len(found) == 3 and all(f.value["kind"] == i % 5 for f in found), i
    puts = math.ceil(CALLS / 3)
    assert (await store.astats()).items == 600 + puts
    assert _rounds_tasks() == []  # nothing left running once every call has its answer
    print(f"\n{backend}: {CALLS} concurrent calls in {seconds:.2f} s")
    if backend == "postgres":
        expected, official = await _official_answers(fresh_databases("postgres"), CALLS)
        failed = sum(isinstance(r, BaseException) for r in expected)
        print(f"AsyncPostgresStore: the same calls in {official:.2f} s, {failed} failed")
        # Where the official store answers (it runs all 60,000 calls as one batch, which
        # overflows PostgreSQL's 65,535 bound parameters), it answers as ours.
        answered = list(zip(_answers(results), expected, strict=True))
        assert [a for a, b in answered if not isinstance(b, BaseException)] == [
            b for b in expected if not isinstance(b, BaseException)
        ]
        assert failed == 0 or CALLS > 20_000


async def test_a_bad_call_fails_alone(
    store_factory: Callable[..., SQLAlchemyStore], backend: str
) -> None:
    """Bad calls among concurrent good ones (a dotted namespace, NaN, an unknown filter
    operator, a negative limit, a value that is not a dict) get their own typed error,
    before joining a round; the good calls of the same moment are answered and
    written."""
    store = store_factory(**small_pool(backend))
    await store.aput(("a",), "seen", {"v": 0})
    good = [store.aput(("a",), f"k{i}", {"v": i}) for i in range(50)]
    good += [store.aget(("a",), "seen"), store.asearch(("a",), filter={"v": 0})]
    bad: list[tuple[Awaitable[Any], type[Exception]]] = [
        (store.aput(("a.b",), "k", {"v": 1}), InvalidNamespaceError),
        (store.aput(("a",), "nan", {"v": float("nan")}), ValueError),
        (store.asearch(("a",), filter={"v": {"$near": 1}}), ValueError),
        (store.alist_namespaces(limit=-1), ValueError),
        (store.aput(("a",), "list", [1, 2]), TypeError),  # type: ignore[arg-type]
        (store.aget(("a\x01b",), "k"), InvalidNamespaceError),
    ]
    results = await asyncio.gather(*good, *(c for c, _ in bad), return_exceptions=True)
    assert results[:50] == [None] * 50
    assert results[50].value == {"v": 0} and [i.key for i in results[51]] == ["seen"]
    for result, (_, error) in zip(results[52:], bad, strict=True):
        assert isinstance(result, error), result
    assert (await store.astats()).items == 51
    assert await store.aget(("a",), "nan") is None


async def test_a_call_whose_embedding_fails_fails_alone(
    store_factory: Callable[..., SQLAlchemyStore], backend: str
) -> None:
    """A round embeds all its puts at once; when that fails for one text, the round is
    run again in halves: only the calls whose text the model refuses fail (with the
    model's error), the others are answered and written with their vectors."""

    def embed(texts: list[str]) -> list[list[float]]:
        if any("boom" in t for t in texts):
            raise RuntimeError("the model refused a text")
        return HashEmbeddings(16).embed_documents(texts)

    store = store_factory(index={"dims": 16, "embed": embed, "fields": ["text"]})
    texts = ["boom" if i in (7, 60, 61) else f"pizza {i}" for i in range(100)]
    calls = [store.aput(("e",), f"k{i}", {"text": t}) for i, t in enumerate(texts)]
    calls += [store.asearch(("e",), limit=1), store.aget(("e",), "k1")]
    results = await asyncio.gather(*calls, return_exceptions=True)
    failed = [i for i, r in enumerate(results[:100]) if isinstance(r, RuntimeError)]
    assert failed == [7, 60, 61]
    assert all(r is None for i, r in enumerate(results[:100]) if i not in failed)
    assert len(results[100]) <= 1 and not isinstance(results[101], Exception)
    stats = await store.astats()
    assert (stats.items, stats.vectors) == (97, 97)
    assert await store.aget(("e",), "k7") is None


async def test_a_caller_sees_its_own_writes(
    store_factory: Callable[..., SQLAlchemyStore], backend: str
) -> None:
    """Each of many concurrent tasks puts, reads back, overwrites, deletes and reads
    again, each call awaited before the next: every read sees that task's previous
    write, though the tasks' calls share rounds."""
    store = store_factory(**small_pool(backend))

    async def task(t: int) -> None:
        ns = ("own", str(t % 7))
        await store.aput(ns, f"k{t}", {"t": t})
        assert (await store.aget(ns, f"k{t}")).value == {"t": t}
        await store.aput(ns, f"k{t}", {"t": -t})
        assert [i.value for i in await store.asearch(ns, filter={"t": -t})] == [{"t": -t}]
        await store.adelete(ns, f"k{t}")
        assert await store.aget(ns, f"k{t}") is None

    await asyncio.gather(*(task(t) for t in range(300)))
    assert (await store.astats()).items == 0


async def test_concurrent_calls_of_one_moment_act_as_one_batch(
    store_factory: Callable[..., SQLAlchemyStore], backend: str
) -> None:
    """Calls made at the same moment run as one batch, as in LangGraph's official
    stores: their reads see the store as it was before the batch's writes, and of
    several puts of one key the last made wins."""
    store = store_factory()
    await store.aput(("m",), "k", {"v": 0})
    results = await asyncio.gather(
        store.aget(("m",), "k"),
        store.aput(("m",), "k", {"v": 1}),
        store.aput(("m",), "k", {"v": 2}),
        store.aget(("m",), "k"),
        store.alist_namespaces(),
        store.adelete(("m",), "other"),
    )
    assert [r.value for r in (results[0], results[3])] == [{"v": 0}, {"v": 0}]
    assert results[4] == [("m",)]
    assert (await store.aget(("m",), "k")).value == {"v": 2}


async def test_cancelled_callers_and_aclose_leave_nothing_running(
    store_factory: Callable[..., SQLAlchemyStore],
) -> None:
    """A caller cancelled while its call waits for a round is dropped from it (its put
    is not written); ``aclose()`` waits for the calls queued and leaves no task
    behind."""
    store = store_factory()
    first = [asyncio.ensure_future(store.aput(("c",), f"k{i}", {"i": i})) for i in range(2000)]
    await asyncio.sleep(0)  # the 2,000 calls queued; their first round starts next
    dropped = asyncio.ensure_future(store.aput(("c",), "dropped", {"i": -1}))
    await asyncio.sleep(0)  # queued behind the first round
    dropped.cancel()
    await asyncio.gather(*first)
    assert dropped.cancelled()
    assert await store.aget(("c",), "dropped") is None
    assert (await store.astats()).items == 2000
    last = [asyncio.ensure_future(store.aput(("d",), f"k{i}", {"i": i})) for i in range(1500)]
    await asyncio.sleep(0)
    await store.aclose()
    assert _rounds_tasks() == []
    assert all(t.done() and t.exception() is None for t in last)


def test_concurrent_calls_from_successive_loops_and_threads(
    store_factory: Callable[..., SQLAlchemyStore], backend: str
) -> None:
    """Concurrent calls in successive ``asyncio.run`` loops, and in threads each running
    loops of their own at the same time: every loop gets its rounds, and none is left
    when its loop ends."""
    store = store_factory(**small_pool(backend))

    async def burst(tag: str) -> list[Any]:
        await asyncio.gather(*(store.aput(("l", tag), f"k{i}", {"i": i}) for i in range(300)))
        found = await asyncio.gather(*(store.aget(("l", tag), f"k{i}") for i in range(300)))
        assert _rounds_tasks() == []
        return found

    for run in range(3):
        assert all(f is not None for f in asyncio.run(burst(f"run{run}")))

    def work(t: int) -> None:
        for run in range(2):
            assert all(f is not None for f in asyncio.run(burst(f"t{t}-{run}")))

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(work, range(3)))
    assert store.stats().items == 300 * 9


@pytest.mark.parametrize("calls", [1, 2, 999, 1000, 1001, 2500])
async def test_rounds_keep_every_result_in_place(
    store_factory: Callable[..., SQLAlchemyStore], calls: int
) -> None:
    """Around the round size (1,000 calls), each caller gets the answer to its own call."""
    store = store_factory()
    await asyncio.gather(*(store.aput(("r",), f"k{i}", {"i": i}) for i in range(calls)))
    found = await asyncio.gather(*(store.aget(("r",), f"k{i}") for i in range(calls)))
    assert [f.value["i"] for f in found] == list(range(calls))
