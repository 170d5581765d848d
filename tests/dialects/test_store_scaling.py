"""What a store search costs grows with what it returns, not with the wrong thing, on
every backend, through the sync and the async methods: distinct filter values share one
cached statement (and one compiled form), a filter checked in Python pages its
candidates by key (every match once, ties on ``updated_at`` included), and a filtered
vector search reads its candidates a page at a time, scoring only the matches.

Structural checks only (cache sizes, what each page hands on), no timings."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import PutOp
from sqlalchemy import literal, select

from langgraph.checkpoint.sqlalchemy._engine import cursor
from langgraph.store.sqlalchemy import _reads, _scan

from ..conftest import Clock, HashEmbeddings, StoreDoor

WORDS = ["apple", "river", "stone", "cloud", "ember", "maple", "delta", "quartz"]


def _value(i: int) -> dict[str, Any]:
    return {
        "tag": f"t{i}",
        "n": i,
        "x": i + 0.5,
        "on": i % 2 == 0,
        "ключ": f"v{i}",  # a key no SQLite JSON path names (json_each)
        "g": i % 3,
        "text": f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} {i}",
    }


async def _fill(door: StoreDoor, count: int, namespaces: int = 4) -> None:
    ops = [PutOp(("docs", f"g{i % namespaces}"), f"k{i:03d}", _value(i)) for i in range(count)]
    await door.batch(ops)


async def test_distinct_filter_values_share_one_statement(store_door: StoreDoor) -> None:
    await _fill(store_door, 60)
    await store_door.search(("docs",), filter={"tag": "t0"})  # the shape's statement
    statements, compiled = len(_reads._STATEMENTS), len(cursor._CACHE)
    for i in [*range(60), *range(60)]:  # twice: the second from the kept parameters
        for spec in ({"tag": f"t{i}"}, {"n": i}, {"x": i + 0.5}, {"ключ": f"v{i}"}):
            found = await store_door.search(("docs",), filter=spec, limit=5)
            assert [item.key for item in found] == [f"k{i:03d}"], spec
        found = await store_door.search(("docs",), filter={"tag": f"t{i}", "n": i})
        assert [item.key for item in found] == [f"k{i:03d}"]
        assert await store_door.search(("docs",), filter={"tag": f"t{i}", "n": i + 1}) == []
    for flag in (True, False):  # one shape, two values: each binds its own
        found = await store_door.search(("docs",), filter={"on": flag}, limit=100)
        wanted = {f"k{i:03d}" for i in range(60) if (i % 2 == 0) is flag}
        assert {item.key for item in found} == wanted
    # One statement a shape (tag, n, x, ключ, tag+n, on), not one a value (300 here).
    assert len(_reads._STATEMENTS) - statements <= 5
    assert len(cursor._CACHE) - compiled <= 5


async def test_statement_cache_stays_bounded(
    store_door: StoreDoor, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _fill(store_door, 6)
    monkeypatch.setattr(_reads, "MAX_STATEMENTS", len(_reads._STATEMENTS) + 1)
    monkeypatch.setattr(_reads, "MAX_PARAMS", 3)
    # New shapes past the bound: built for their call, right anyway (twice: the second
    # time with the kept parameters of the values not pushed out).
    for i in [*range(6), *range(6)]:
        found = await store_door.search(("docs",), filter={f"absent{i}": i, "tag": f"t{i}"})
        assert found == []
        found = await store_door.search(("docs",), filter={"tag": f"t{i}", "g": i % 3})
        assert [item.key for item in found] == [f"k{i:03d}"]
    assert len(_reads._STATEMENTS) <= _reads.MAX_STATEMENTS
    assert len(_reads._PARAMS) <= 3
    long = "x" * (_reads.MAX_PARAMS_TEXT + 1)  # long values are not kept
    assert await store_door.search(("docs",), filter={"tag": long}) == []
    assert all(long not in params.values() for params in _reads._PARAMS.values())


def test_driver_lets_go_of_evicted_constructs(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cursor, "MAX_COMPILED", 8)
    # From empty caches, on the cached path whatever listeners earlier tests left on
    # engines (a cursor listener sends statements through Connection.execute).
    monkeypatch.setattr(cursor, "_CACHE", {})
    monkeypatch.setattr(cursor, "_KEEP", {})
    monkeypatch.setattr(cursor, "_listened", lambda conn: False)
    key = ("test", "driver")
    with store.engine.connect() as conn:
        for i in range(40):
            assert cursor.rows(conn, select(literal(i).label("v")), {}, key)[0][0] == i
    assert 1 <= len(cursor._CACHE) <= 8
    assert len(cursor._KEEP) <= len(cursor._CACHE)
    assert all(kept[1] >= 1 for kept in cursor._KEEP.values())


async def test_pages_by_key_return_every_match_once(
    store_factory: Any, mode: str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    door = StoreDoor(store_factory(clock=clock), mode)
    monkeypatch.setattr(_scan, "PAGE", 7)  # many pages
    # Two batches: 40 items share one updated_at, 25 another; keys and namespaces
    # interleave, so pages break inside runs of equal updated_at.
    await _fill(door, 40, namespaces=3)
    clock.advance(seconds=5)
    await door.batch([PutOp(("docs", "g9"), f"m{i:03d}", _value(i)) for i in range(25)])
    everything = await door.search((), limit=1000)
    assert len(everything) == 65
    order = [(item.updated_at, item.namespace, item.key) for item in everything]
    assert order == sorted(order, reverse=True)  # newest first, ties by key, descending
    for prefix in ((), ("docs",)):
        for spec, keep in (
            ({"n": {"$gte": 0}}, lambda v: True),
            ({"g": {"$ne": 1}}, lambda v: v["g"] != 1),
            ({"n": {"$gt": 10, "$lt": 30}, "g": 0}, lambda v: 10 < v["n"] < 30 and v["g"] == 0),
        ):
            expected = [(i.namespace, i.key) for i in everything if keep(i.value)]
            found = await door.search(prefix, filter=spec, limit=1000)
            assert [(i.namespace, i.key) for i in found] == expected
            joined: list[Any] = []
            for offset in range(0, len(expected) + 5, 5):
                page = await door.search(prefix, filter=spec, limit=5, offset=offset)
                joined.extend((i.namespace, i.key) for i in page)
            assert joined == expected


async def test_filtered_vector_search_reads_candidates_in_pages(
    store_factory: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    door = StoreDoor(store_factory(index=config), mode)
    await _fill(door, 45)
    await door.put(("docs", "g0"), "plain", {"g": 1, "n": 99}, index=False)
    query = "apple river stone"
    # A filter the database decides (g == 1) against the same filter checked in Python.
    exact = await door.search(("docs",), query=query, filter={"g": 1}, limit=100)
    assert [i.key for i in exact][-1] == "plain"  # unscored matches follow
    scored = [(i.key, i.score) for i in exact if i.score is not None]
    assert len(scored) == 15

    pages: list[list[tuple[str, str]]] = []
    best_scores = _scan.best_scores

    def spy(conn: Any, qb: Any, plan: Any, keys: Any) -> dict[tuple[str, str], float]:
        pages.append(list(keys))
        return best_scores(conn, qb, plan, keys)

    monkeypatch.setattr(_scan, "best_scores", spy)
    monkeypatch.setattr(_scan, "PAGE", 7)
    # A bound beyond 2**53: SQL narrows to numbers, Python decides.
    spec = {"g": {"$gte": 1, "$lte": 1, "$lt": 2**60}}
    found = await door.search(("docs",), query=query, filter=spec, limit=100)
    assert [(i.key, i.score) for i in found] == [(i.key, i.score) for i in exact]
    assert len(pages) >= 3  # every page of candidates scored on its own...
    scored_keys = [key for page in pages for _, key in page]
    assert sorted(scored_keys) == sorted(key for key, _ in scored)  # ...only its matches
    assert all(len(page) <= 7 for page in pages)
    # offset/limit pages join up across scored and unscored matches.
    joined: list[Any] = []
    for offset in range(0, 20, 4):
        page = await door.search(("docs",), query=query, filter=spec, limit=4, offset=offset)
        joined.extend((i.key, i.score) for i in page)
    assert joined == [(i.key, i.score) for i in exact]
