"""The dialect suite, the store: what a family's statements promise to
``SQLAlchemyStore``, on every backend of the suite (``extra`` too), sync and async.

Duties of :class:`~langgraph.checkpoint.sqlalchemy.dialects.QueryBuilder` exercised:
``upsert`` and ``combine_writes`` (a put again, a delete), ``keys_in`` (a batch of gets
longer than ``in_list_chunk``), ``walk_column``/``walking`` (a search under a prefix
holding more items than ``walk_from``), ``rows_before`` (search pages), ``text_limit``/
``sent_size`` (a value of a megabyte). Filters, ``regexp_match`` (``list_namespaces``
match conditions) and ``vector_similarity``: test_store_parity.py; paging by key and
cached statements: test_store_scaling.py.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import GetOp, PutOp

from ..conftest import Clock, StoreDoor


async def test_a_put_again_replaces_the_value_and_keeps_created_at(
    store_factory: Any, clock: Clock, mode: str
) -> None:
    door = StoreDoor(store_factory(clock=clock), mode)
    await door.put(("a", "b"), "k", {"v": 1})
    first = await door.get(("a", "b"), "k")
    clock.advance(seconds=5)
    await door.put(("a", "b"), "k", {"v": 2})
    again = await door.get(("a", "b"), "k")
    assert again.value == {"v": 2}
    assert again.created_at == first.created_at
    assert again.updated_at > first.updated_at
    await door.delete(("a", "b"), "k")
    assert await door.get(("a", "b"), "k") is None


async def test_a_batch_of_gets_longer_than_one_key_list_is_answered_whole(
    store_door: StoreDoor,
) -> None:
    count = store_door.store._qb.in_list_chunk + 13
    await store_door.batch([PutOp(("n",), f"k{i:04}", {"i": i}) for i in range(count)])
    results = await store_door.batch(
        [GetOp(("n",), f"k{i:04}") for i in range(count)] + [GetOp(("n",), "missing")]
    )
    assert [r.value["i"] for r in results[:-1]] == list(range(count))
    assert results[-1] is None


async def test_search_pages_under_a_large_prefix_are_newest_first_and_whole(
    store_factory: Any, clock: Clock, mode: str
) -> None:
    store = store_factory(clock=clock)
    door = StoreDoor(store, mode)
    count = (getattr(store._qb, "walk_from", None) or 100) + 50
    ops = []
    for i in range(count):
        ops.append(PutOp(("big", str(i % 3)), f"k{i:05}", {"i": i, "even": i % 2 == 0}))
    await door.batch(ops)
    clock.advance(seconds=1)
    await door.put(("big", "0"), "newest", {"i": -1, "even": True})
    await door.put(("other",), "k", {"i": -2})
    top = await door.search(("big",), limit=1)
    assert [item.key for item in top] == ["newest"]
    seen: list[str] = []
    for offset in range(0, count + 1, 400):
        page = await door.search(("big",), limit=400, offset=offset)
        seen += [f"{'/'.join(item.namespace)}:{item.key}" for item in page]
    assert len(seen) == len(set(seen)) == count + 1
    evens = await door.search(("big",), filter={"even": True}, limit=count)
    assert len(evens) == (count + 1) // 2 + 1


async def test_a_megabyte_value_round_trips(store_door: StoreDoor) -> None:
    value = {"text": "é" * (512 * 1024), "quotes": "'\"\\" * 1000}
    await store_door.put(("big",), "k", value)
    got = await store_door.get(("big",), "k")
    assert got.value == value
