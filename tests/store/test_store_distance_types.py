"""A vector search scores by the index config's ``distance_type``, with
``PostgresStore``'s formulas (higher is closer), on every backend, through the sync and
the async methods, whichever way the search ranks: a filter decided in the database (all
candidates scored at once) or one checked in Python (candidates read a page at a time).

* ``"cosine"`` (the default): the cosine similarity, 0.0 for a zero vector;
* ``"l2"``: minus the Euclidean distance;
* ``"inner_product"``: the dot product.

The sqlite-vec path computes the same scores: test_store_sqlite_vec.py.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from ..conftest import StoreDoor

#: Hand-picked vectors: the three distances rank them differently.
VECTORS = {
    "a": [1.0, 0.0, 0.0],
    "b": [2.0, 0.1, 0.0],
    "c": [0.0, 0.0, 1.0],
    "d": [-1.0, 0.0, 0.0],
    "zero": [0.0, 0.0, 0.0],
}


def embed(texts: list[str]) -> list[list[float]]:
    return [list(VECTORS[t]) for t in texts]


def expected_score(distance: str, query: list[float], vector: list[float]) -> float:
    """The score ``PostgresStore`` gives (its SQL: ``1 - (a <=> b)``, ``-(a <-> b)``,
    ``-(a <#> b)``), computed here in plain Python."""
    dot = sum(x * y for x, y in zip(query, vector, strict=True))
    if distance == "inner_product":
        return dot
    if distance == "l2":
        return -math.sqrt(sum((x - y) ** 2 for x, y in zip(query, vector, strict=True)))
    norms = math.sqrt(sum(x * x for x in query)) * math.sqrt(sum(y * y for y in vector))
    return dot / norms if norms else 0.0


def ranking(distance: str, query: str) -> list[tuple[str, float]]:
    """Best first, ties by key (the store's order)."""
    scores = [(k, expected_score(distance, VECTORS[query], v)) for k, v in VECTORS.items()]
    return sorted(scores, key=lambda e: (-e[1], e[0]))


async def _filled(store_factory: Any, mode: str, **index: Any) -> StoreDoor:
    config = {"dims": 3, "embed": embed, "fields": ["v"], **index}
    door = StoreDoor(store_factory(index=config), mode)
    for n, key in enumerate(VECTORS):
        await door.put(("docs",), key, {"v": key, "n": n})
    await door.put(("docs",), "plain", {"v": "none", "n": 99}, index=False)
    return door


def _scored(found: list[Any]) -> list[tuple[str, float | None]]:
    return [(i.key, i.score) for i in found]


@pytest.mark.parametrize("distance", ["cosine", "l2", "inner_product"])
@pytest.mark.parametrize("query", ["a", "b"])
async def test_scores_follow_the_distance_type_on_every_ranking_path(
    store_factory: Any, mode: str, distance: str, query: str
) -> None:
    door = await _filled(store_factory, mode, distance_type=distance)
    expected = ranking(distance, query)
    # A filter decided in the database (none, or scalar equalities): every candidate
    # scored at once.
    found = await door.search(("docs",), query=query, limit=10)
    assert [k for k, _ in _scored(found)] == [k for k, _ in expected] + ["plain"]
    for (key, score), (_, want) in zip(_scored(found), expected, strict=False):
        assert score == pytest.approx(want, abs=1e-5), key
    assert found[-1].score is None  # the item without a vector follows
    one = await door.search(("docs",), query=query, filter={"v": "d"})
    assert _scored(one) == [
        ("d", pytest.approx(expected_score(distance, VECTORS[query], VECTORS["d"]), abs=1e-5))
    ]
    # A filter checked in Python: candidates read and scored a page at a time.
    paged = await door.search(("docs",), query=query, filter={"n": {"$lt": 50}}, limit=10)
    assert _scored(paged) == _scored(found)[:-1]
    # Offsets page through the same ranking.
    page = await door.search(("docs",), query=query, limit=2, offset=1)
    assert [i.key for i in page] == [k for k, _ in expected[1:3]]


async def test_cosine_is_the_default_distance(store_factory: Any, mode: str) -> None:
    default = await _filled(store_factory, mode)
    found = await default.search(("docs",), query="b", limit=10)
    assert _scored(found)[:5] == [
        (k, pytest.approx(s, abs=1e-5)) for k, s in ranking("cosine", "b")
    ]


def test_an_unknown_distance_type_is_refused() -> None:
    from langgraph.store.sqlalchemy import SQLAlchemyStore

    for bad in ("hamming", "dot", "", 1):
        with pytest.raises(ValueError, match="distance_type"):
            SQLAlchemyStore.from_conn_string(
                ":memory:", index={"dims": 3, "embed": embed, "distance_type": bad}
            )
