"""Smoke test of ``python -m benchmarks --store --scale`` at tiny sizes (the smoke mode:
``SMOKE_SIZES``, ``SMOKE_CALLS``): every operation runs on ``SQLAlchemyStore`` and the
official stores and checks what it read, recall@10 is scored against the exact top ten,
and the report (rows, growth, ratios, targets, JSON, the ``## Store scale`` section of a
document) is built. Without ``LGSA_PGVECTOR_URL`` the pgvector place is skipped and the
report says why. Speed is not asserted here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from benchmarks import storescalework as w
from benchmarks.storescale import COMMON, SMOKE_CALLS, SMOKE_SIZES
from benchmarks.storescalereport import END, START, markdown_section, result_dict, run, update_doc

HEAD = {
    "command": "test",
    "started": "now",
    "wall_seconds": 1.0,
    "environment": {"commit": "x", "nproc": 2, "python": "3", "servers": {}},
    "load_average": [0.0, 0.0],
}


def test_embedding_is_deterministic_clustered_and_the_truth_exact() -> None:
    texts = [w.memory(i)["text"] for i in range(50)]
    a, b = np.array(w.embed(texts)), np.array(w.embed(list(reversed(texts))))[::-1]
    assert np.allclose(a, b) and np.allclose(np.linalg.norm(a, axis=1), 1.0)
    assert len(a[0]) == w.DIMS
    same = [i for i in range(1, 50) if w.cluster(i) == w.cluster(0)]
    other = [i for i in range(1, 50) if w.cluster(i) != w.cluster(0)]
    assert min(a[same] @ a[0]) > max(a[other] @ a[0]) - 0.5  # clusters are closer
    [q] = np.array(w.embed([w.QUERIES[3]]))
    top = w.exact_top(50)[3]
    assert top == [w.key(int(i)) for i in np.argsort(-(a @ q))[:10]]
    assert 5 <= w.expected_range(10_000, 7, w.RANGE_NS) <= 10  # about 10 of its 100 match


def test_smoke_run_without_pgvector_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LGSA_PGVECTOR_URL", raising=False)
    scale, _ = run(["sqlite", "pgvector"], list(SMOKE_SIZES), SMOKE_CALLS, lambda _m: None)
    result = result_dict(scale, HEAD)
    by = {(r["store"], r["op"]) for r in result["rows"]}
    assert {op for s, op in by if s == "ours"} == {*COMMON, "vector_exact"}
    assert {op for s, op in by if s == "official"} >= set(COMMON)
    for r in result["rows"]:
        assert set(r["ms"]) == {str(s) for s in SMOKE_SIZES} and r["growth"] is not None
        if r["store"] == "ours" and r["op"] in COMMON:
            assert set(r["ratio"]) == set(r["ms"])  # SqliteStore beside ours
    judged = {(r["op"], c["what"]) for r in result["rows"] for c in r["targets"]}
    assert judged == {
        ("put_batch", "ratio"),
        ("get", "ratio"),
        ("search_range", "growth"),
        ("search_range_ns", "growth"),
    }
    assert {r["recall_at_10"] for r in result["recall"]} == {1.0}  # exact is exact
    section = markdown_section(json.loads(json.dumps(result)))
    assert "LGSA_PGVECTOR_URL is not set" in section and "**SQLite file**" in section
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Other\n\ntext\n", encoding="utf-8")
    update_doc(str(doc), "first")
    update_doc(str(doc), "second")
    text = doc.read_text(encoding="utf-8")
    assert text.count("## Store scale") == 1 and f"{START}\nsecond\n{END}" in text


@pytest.mark.skipif(not os.environ.get("LGSA_PGVECTOR_URL"), reason="no pgvector server")
def test_smoke_run_on_pgvector_scores_hnsw_beside_postgres_store() -> None:
    scale, versions = run(["pgvector"], list(SMOKE_SIZES), SMOKE_CALLS, lambda _m: None)
    result = result_dict(scale, HEAD)
    assert "pgvector server" in versions and result["ann"] == {"pgvector": "hnsw"}
    by = {(r["store"], r["op"]): r for r in result["rows"]}
    assert set(by) == {
        *((s, op) for s in ("ours", "official") for op in (*COMMON, "vector_ann")),
        ("ours_flat", "vector_exact"),
    }
    ann = by["ours", "vector_ann"]
    assert {c["what"] for c in ann["targets"]} == {"ratio", "growth", "recall"}
    recall = {(r["store"], r["size"]): r["recall_at_10"] for r in result["recall"]}
    assert set(recall) == {(s, n) for s in ("ours", "ours_flat", "official") for n in SMOKE_SIZES}
    assert all(recall["ours_flat", n] == 1.0 for n in SMOKE_SIZES)
    # the index walk of both HNSW stores, read off the server's plans
    walk = {(r["store"], r["size"]): r for r in result["walk"]}
    assert set(walk) == {(s, n) for s in ("ours", "official") for n in SMOKE_SIZES}
    assert all(r["pages"] > 0 and r["server_ms"] > 0 for r in walk.values())
    assert "the HNSW walk on the server" in markdown_section(json.loads(json.dumps(result)))
