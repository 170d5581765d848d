"""The official ``PostgresStore`` (langgraph-checkpoint-postgres), the peer the benchmarks
compare the store with, runs on the project's pgvector server with an HNSW index: its
``setup()`` creates the extension and the index, and a semantic search finds what was
put. If this fails, a vector search benchmark against it cannot run either."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.postgres import PostgresStore
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from ..conftest import HashEmbeddings

QUERY = "river moon sun"
WORDS = ["cat", "dog", "bird", "fish", "tree", "rock", "river", "cloud", "sun", "moon"]


def test_official_postgres_store_searches_through_an_hnsw_index(pgvector_url: str) -> None:
    # PostgresStore takes a libpq URL, not SQLAlchemy's postgresql+psycopg://
    conninfo = make_url(pgvector_url).set(drivername="postgresql").render_as_string(False)
    index: Any = {
        "dims": 8,
        "embed": HashEmbeddings(8),
        "fields": ["text"],  # not the whole value: the exact item embeds to the query
        "ann_index_config": {"kind": "hnsw"},
    }
    with PostgresStore.from_conn_string(conninfo, index=index) as store:
        store.setup()
        for i in range(49):
            words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
            store.put(("docs", f"u{i % 5}"), f"k{i}", {"text": words, "n": i})
        store.put(("docs", "u0"), "exact", {"text": QUERY, "n": 49})
        found = store.search(("docs",), query=QUERY, limit=5)
    engine = create_engine(pgvector_url, poolclass=NullPool)
    try:  # what setup() built
        with engine.connect() as conn:
            indexes = (
                conn.execute(
                    text("SELECT indexdef FROM pg_indexes WHERE tablename = 'store_vectors'")
                )
                .scalars()
                .all()
            )
            vectors = conn.execute(text("SELECT count(*) FROM store_vectors")).scalar_one()
    finally:
        engine.dispose()
    assert vectors == 50
    assert any("USING hnsw" in d and "vector_cosine_ops" in d for d in indexes), indexes
    assert len(found) == 5
    scores = [item.score for item in found if item.score is not None]
    assert len(scores) == 5 and scores == sorted(scores, reverse=True)
    # the item whose text is the query is its own direction: cosine similarity 1, first
    # (a hash collision in 8 dimensions may tie another item with it)
    assert scores[0] == pytest.approx(1.0, abs=1e-6)
    assert "exact" in [item.key for item in found if item.score == scores[0]]
