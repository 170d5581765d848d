"""Vector search scored by sqlite-vec in SQLite and by the store in batches: same answers.

The stdlib ``sqlite3`` of some Pythons cannot load extensions (this CI's pyenv build among
them): the store then scores vectors itself (:func:`.store.vectors.vector_scores`). The
``pysqlite3`` module (``pysqlite3-binary``, a test dependency) can: an engine made with it
runs the sqlite-vec path (:meth:`.SQLiteQueryBuilder.vector_similarity`). Both stores get
the same items; their rankings and scores must agree, for every ``distance_type``,
including the cases the two paths handle separately (a zero vector, vectors of another
size, items without vectors).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine

from langgraph.store.sqlalchemy import SQLAlchemyStore

pysqlite3 = pytest.importorskip("pysqlite3.dbapi2")

DIMS = 16
WORDS = ["cat", "dog", "bird", "fish", "tree", "rock", "river", "cloud", "sun", "moon"]


def embed(texts: list[str]) -> list[list[float]]:
    """Deterministic bag of words (CRC32 of each word picks its coordinate)."""
    out = []
    for text in texts:
        v = [0.0] * DIMS
        for word in text.split():
            if word != "zero":
                v[zlib.crc32(word.encode()) % DIMS] += 1.0
        out.append(v)
    return out


INDEX: Any = {"dims": DIMS, "embed": embed, "fields": ["text"]}


def _fill(store: SQLAlchemyStore) -> None:
    store.setup()
    for i in range(60):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
        store.put(("docs", f"u{i % 4}"), f"k{i}", {"text": words, "n": i})
    store.put(("docs", "u0"), "zero", {"text": "zero"})  # a zero vector
    store.put(("docs", "u1"), "plain", {"other": 1}, index=False)  # no vector


def _answers(store: SQLAlchemyStore) -> list[list[tuple[str, float | None]]]:
    out = []
    for query in ("cat dog", "river moon", "zero"):
        for kwargs in ({}, {"filter": {"n": 5}}, {"offset": 55, "limit": 10}):
            found = store.search(("docs",), query=query, **kwargs)
            out.append([(i.key, None if i.score is None else round(i.score, 5)) for i in found])
    return out


@pytest.mark.parametrize("distance", ["cosine", "l2", "inner_product"])
def test_sqlite_vec_and_batch_scoring_agree(tmp_path: Path, distance: str) -> None:
    index = {**INDEX, "distance_type": distance}
    batch_store = SQLAlchemyStore.from_conn_string(str(tmp_path / "a.db"), index=index)
    engine = create_engine(f"sqlite:///{tmp_path / 'b.db'}", module=pysqlite3)
    vec_store = SQLAlchemyStore(engine, index=index)
    try:
        _fill(batch_store)
        _fill(vec_store)
        assert _answers(vec_store) == _answers(batch_store)
        with engine.connect() as conn:  # the pool's connection ran sqlite-vec
            assert conn.connection.info.get("lgsa_sqlite_vec") is True
        # Vectors of another size (the index's dims changed) are skipped, not an error.
        other: Any = {"dims": DIMS + 1, "embed": lambda ts: [[1.0] * (DIMS + 1) for _ in ts]}
        wider = SQLAlchemyStore(
            engine, index={**other, "fields": ["text"], "distance_type": distance}
        )
        wider.put(("docs", "u9"), "wide", {"text": "cat"})
        assert [i.key for i in vec_store.search(("docs",), query="cat", limit=100)][-1] == "plain"
        assert wider.search(("docs",), query="cat", limit=1)[0].key == "wide"
        wider.close()
    finally:
        batch_store.close()
        vec_store.close()
        engine.dispose()
