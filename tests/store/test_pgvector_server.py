"""The project's pgvector server (``.ci/clusters/pgvector.sh``) does what vector search on
PostgreSQL needs: a database of the run can create the extension, hold ``vector`` columns,
build an HNSW index with cosine distance, and answer nearest-neighbour queries through it.
The test reports the server's pgvector version (``-rA`` or ``-s`` shows it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

ROWS = {"x": "[1,0,0]", "y": "[0,1,0]", "z": "[0,0,1]", "xy": "[1,1,0]", "yz": "[0,1,1]"}


def test_pgvector_server_answers_nearest_neighbours_through_an_hnsw_index(
    pgvector_url: str, record_property: Callable[[str, object], None]
) -> None:
    engine = create_engine(pgvector_url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            version = conn.execute(
                text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            ).scalar_one()
            server = conn.execute(text("SHOW server_version")).scalar_one()
            conn.execute(text("CREATE TABLE smoke_items (key text PRIMARY KEY, v vector(3))"))
            conn.execute(
                text(
                    "CREATE INDEX smoke_items_hnsw ON smoke_items USING hnsw (v vector_cosine_ops)"
                )
            )
            conn.execute(
                text("INSERT INTO smoke_items VALUES (:key, CAST(:v AS vector))"),
                [{"key": k, "v": v} for k, v in ROWS.items()],
            )
        with engine.begin() as conn:
            # Five rows: the planner would scan the table; this transaction asks for the index.
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            nearest = text(
                "SELECT key, v <=> CAST(:q AS vector) AS distance FROM smoke_items"
                " ORDER BY v <=> CAST(:q AS vector) LIMIT :n"
            )
            plan = "\n".join(
                conn.execute(text(f"EXPLAIN {nearest.text}"), {"q": "[1,0,0]", "n": 3}).scalars()
            )
            assert "smoke_items_hnsw" in plan, plan
            found = conn.execute(nearest, {"q": "[0.9,0.1,0]", "n": 3}).all()
    finally:
        engine.dispose()
    assert [key for key, _ in found] == ["x", "xy", "y"]
    # cosine distance, computed in float4 by pgvector
    assert found[0].distance == pytest.approx(1 - 0.9 / (0.81 + 0.01) ** 0.5, abs=1e-6)
    record_property("pgvector", version)
    print(f"pgvector {version} on PostgreSQL {server}")
    # HNSW indexes came with pgvector 0.5.0
    assert tuple(int(part) for part in version.split(".")[:2]) >= (0, 5)
