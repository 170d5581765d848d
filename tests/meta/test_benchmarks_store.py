"""Smoke test of the store benchmarks (``python -m benchmarks --store``) on SQLite, at tiny
sizes: every workload runs on ``SQLAlchemyStore`` and ``SqliteStore``, checks what it read,
and the report (rows, targets, JSON, the ``## Store`` section of a document) is built.
Speed is not asserted here."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import storework as sw
from benchmarks.backends import Servers
from benchmarks.store import END, START, StoreSizes, metrics, run, update_doc

TINY = StoreSizes(
    repeats=1,
    puts=20,
    gets=20,
    items=400,
    users=10,
    searches=2,
    list_calls=2,
    vector_items=60,
    vector_searches=2,
)


def test_memories_spread_the_filter_over_users() -> None:
    assert sw.matching(10_000, 100, 7, sw.FILTER) == 10
    assert sum(sw.memory(i)["kind"] == "preference" for i in range(10_000)) in range(900, 1100)
    assert sw.memory(3) == sw.memory(3)  # deterministic
    [v] = sw.embed(["coffee in the morning"])
    assert len(v) == sw.DIMS and abs(sum(x * x for x in v) - 1.0) < 1e-9


def test_store_run_reports_every_workload(tmp_path: Path) -> None:
    servers = Servers(("sqlite",))
    try:
        result, rows = run(servers, ("sqlite",), TINY, lambda _m: None)
    finally:
        servers.close()
    ours = {r.metric for r in rows if r.ours}
    assert ours == {m for m, _, _ in metrics(TINY)}
    judged = {r.metric for r in rows if r.target is not None}
    assert judged == {"put", "get", "search_filter", "search_filter_ns"}
    for r in rows:
        # Official figures beside ours, unless this Python cannot load sqlite-vec.
        skipped = {s["metric"] for s in result["skipped"]}
        assert bool(r.reference) == (r.metric not in skipped), r.metric
    json.dumps(result)  # the JSON part is serialisable
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n")
    update_doc(str(doc), "first")
    update_doc(str(doc), "second")
    text = doc.read_text()
    assert text.count("## Store") == 1 and f"{START}\nsecond\n{END}" in text
