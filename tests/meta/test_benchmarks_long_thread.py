"""Smoke test of the long-thread benchmark (``python -m benchmarks.long_thread``): its
quick mode without valgrind on SQLite, the shape of its JSON and of its Markdown section,
and the probe that turns callgrind's collection on inside the saver's methods only.
Speed is not asserted here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import long_report
from benchmarks.long_probe import Probe
from benchmarks.long_thread import QUICK_TURNS, main

TURN_KEYS = {
    "turn",
    "instructions",
    "split",
    "calls",
    "nested_calls",
    "stored",
    "written",
    "wall_seconds",
}


def test_quick_run_without_valgrind_writes_every_saver_and_turn(tmp_path: Path) -> None:
    out = tmp_path / "long.json"
    argv = ["--quick", "--no-callgrind", "--dialects", "sqlite", "--workloads", "chat,agent_delta"]
    assert main([*argv, "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["instructions"] is False
    assert result["workloads"] == {"chat": QUICK_TURNS, "agent_delta": QUICK_TURNS}
    records = {(r["workload"], r["impl"]): r for r in result["records"]}
    assert set(records) == {(w, i) for w in ("chat", "agent_delta") for i in ("ours", "official")}
    for (workload, impl), r in records.items():
        assert r["saver"] == ("ours" if impl == "ours" else "SqliteSaver")
        assert r["delta"] is (workload == "agent_delta")
        assert r["calibration"] is None and r["final_get_tuple"] is None
        assert [t["turn"] for t in r["turns"]] == list(range(1, QUICK_TURNS + 1))
        stored = 0
        for t in r["turns"]:
            assert set(t) == TURN_KEYS and t["instructions"] is None
            # each turn stores more, and written is exactly the growth
            assert t["stored"] > stored and t["written"] == t["stored"] - stored
            stored = t["stored"]
            assert {"get_tuple", "put", "put_writes"} <= set(t["calls"])
        # one human, one answer a chat turn; the agent adds a tool call and its result
        assert r["messages"] == QUICK_TURNS * (2 if workload == "chat" else 4)
        assert sum(r["stored_by_column"].values()) == r["turns"][-1]["stored"]
        assert set(r["stored_by_column"]) == set(r["value_columns"])
        assert r["disk_bytes"] > 0
    assert records[("chat", "ours")]["turns"][1]["calls"]["put"] == 3  # input, start, answer
    judged = {t["target"] for t in result["targets"]}
    assert any(t.startswith("stored after 200 turns") for t in judged)
    assert all(t["ratio"] == t["ours"] / t["reference"] for t in result["targets"])
    json.dumps(result)


def test_the_section_and_the_doc_markers(tmp_path: Path) -> None:
    result = {
        "command": "python -m benchmarks.long_thread --quick",
        "started": "2026-01-01 00:00 UTC",
        "wall_seconds": 1,
        "instructions": True,
        "workloads": {"chat": 2},
        "environment": {"commit": "abc"},
        "records": [
            _record("ours", [(1_000_000, 100), (2_000_000, 250)]),
            _record("official", [(900_000, 120), (1_900_000, 300)]),
        ],
    }
    text = long_report.section(result)
    assert "| chat | SQLite | ours | 2.0 M |" in text
    [target] = [t for t in long_report.targets(result) if "1/20" in t["target"]]
    assert target["ratio"] == 250 / 300 and target["met"] is False
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\n{long_report.START}\nold\n{long_report.END}\n")
    long_report.update_doc(str(doc), "first")
    long_report.update_doc(str(doc), text)
    assert doc.read_text().count(long_report.START) == 1 and "first" not in doc.read_text()


def _record(impl: str, turns: list[tuple[int, int]]) -> dict[str, Any]:
    split = {"total": 0, "serde": 0, "driver": 0, "rest": 0}
    rows, before = [], 0
    for n, (instructions, stored) in enumerate(turns, 1):
        rows.append(
            {
                "turn": n,
                "instructions": instructions,
                "split": {**split, "total": instructions, "rest": instructions},
                "calls": {"put": 3},
                "nested_calls": 0,
                "stored": stored,
                "written": stored - before,
                "wall_seconds": 0.0,
            }
        )
        before = stored
    return {
        "workload": "chat",
        "graph": "chat",
        "delta": False,
        "dialect": "sqlite",
        "impl": impl,
        "saver": "ours" if impl == "ours" else "SqliteSaver",
        "messages": 4,
        "value_columns": ["t.blob"],
        "final_get_tuple": {**split, "total": 10},
        "disk_bytes": 4096,
        "turns": rows,
    }


class _Saver:
    """Methods calling one another, and a generator method, as a saver's."""

    def put(self, n: int) -> int:
        return self.cursor() + n

    def cursor(self) -> int:
        return 1

    def list(self, n: int) -> Iterator[int]:
        yield from range(n)


def test_the_probe_counts_inside_the_saver_only_and_once_when_nested() -> None:
    toggles: list[int] = []
    probe = Probe(lambda: toggles.append(1))
    saver = _Saver()
    assert set(probe.install(saver)) == {"put", "cursor", "list"}
    assert saver.put(2) == 3
    assert len(toggles) == 2  # on at put, off after it: cursor() nested inside
    assert probe.take() == ({"put": 1}, 1)
    assert list(saver.list(3)) == [0, 1, 2]
    # created, then each of three items and the end produced with collection on
    assert len(toggles) == 2 + 2 + 4 * 2
    outer, nested = probe.take()
    assert outer == {"list": 1, "list:next": 4} and nested == 0
