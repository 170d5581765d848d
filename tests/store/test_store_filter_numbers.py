"""Numbers no stored value holds, in search filters, on every backend, sync and async.

``float("inf")``, ``float("-inf")`` and integers beyond 64 bits bound the order operators
(``$gt``, ``$gte``, ``$lt``, ``$lte``) as in ``InMemoryStore`` and ``SqliteStore``: every
stored number is below infinity and above minus infinity, and compares with a huge
integer exactly; with or without a query. Anywhere else (a plain value, ``$eq``,
``$ne``), and NaN anywhere, they are a ``ValueError`` before any statement runs: NaN has
no agreed meaning (``InMemoryStore``'s ``{"$ne": NaN}`` matches every item,
``SqliteStore``'s none), and no stored value could equal the others.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from ..conftest import HashEmbeddings, StoreDoor

INF = float("inf")
HUGE = 10**100
PRICES = {"neg": -5, "small": 10, "float": 20.5, "max64": 2**63 - 1, "big": 1.5e308}


async def _filled(door: StoreDoor) -> StoreDoor:
    for key, price in PRICES.items():
        await door.put(("items",), key, {"price": price, "text": f"item {key}"})
    await door.put(("items",), "text", {"price": "cheap", "text": "item text"})
    await door.put(("items",), "none", {"text": "item without price"})
    return door


CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"$lt": INF}, set(PRICES)),
    ({"$lte": INF}, set(PRICES)),
    ({"$gt": -INF}, set(PRICES)),
    ({"$gte": -INF}, set(PRICES)),
    ({"$gt": INF}, set()),
    ({"$lt": -INF}, set()),
    ({"$lt": HUGE}, set(PRICES) - {"big"}),  # 1.5e308 > 10**100
    ({"$gt": HUGE}, {"big"}),
    ({"$gt": -HUGE}, set(PRICES)),
    ({"$gte": 2**63}, {"big"}),
    ({"$lt": 2**63, "$gt": 0}, {"small", "float", "max64"}),
]


@pytest.mark.parametrize(("bound", "expected"), CASES, ids=[str(c[0]) for c in CASES])
async def test_open_bounds_compare_with_every_stored_number(
    store_door: StoreDoor, bound: dict[str, Any], expected: set[str]
) -> None:
    door = await _filled(store_door)
    found = await door.search(("items",), filter={"price": bound}, limit=100)
    assert {i.key for i in found} == expected


async def test_open_bounds_filter_a_vector_search(store_factory: Any, mode: str) -> None:
    door = StoreDoor(store_factory(index={"dims": 16, "embed": HashEmbeddings(16)}), mode)
    await _filled(door)
    found = await door.search(("items",), query="item", filter={"price": {"$lt": INF}})
    assert {i.key for i in found} == set(PRICES)
    assert all(i.score is not None for i in found)
    found = await door.search(("items",), query="item", filter={"price": {"$gt": HUGE}})
    assert [i.key for i in found] == ["big"]


@pytest.mark.parametrize(
    "flt",
    [
        {"price": math.nan},
        {"price": {"$eq": math.nan}},
        {"price": {"$ne": math.nan}},
        {"price": {"$lt": math.nan}},
        {"price": INF},
        {"price": {"$eq": -INF}},
        {"price": {"$ne": INF}},
        {"price": HUGE},
        {"price": {"$ne": -HUGE}},
        {"price": [INF]},
        {"price": {"nested": INF}},
    ],
    ids=repr,
)
async def test_nan_and_open_numbers_outside_order_bounds_are_refused(
    store_door: StoreDoor, flt: dict[str, Any]
) -> None:
    with pytest.raises(ValueError):
        await store_door.search(("items",), filter=flt)
