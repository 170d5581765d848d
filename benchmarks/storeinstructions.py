"""CPU instructions per store call, ``SQLAlchemyStore`` beside the official store of the
same database, counted by ``valgrind --tool=callgrind`` (load-independent).

``python -m benchmarks.storeinstructions [--dialects sqlite,postgres] [--keep DIR]``

Each (dialect, store) runs in a child process under callgrind, as
:mod:`.instructions` runs the savers: the store is opened on a place of its own (a
SQLite file; a PostgreSQL schema, of which only the client side is counted), filled
and warmed up, then each call runs :data:`CALLS` times between two markers, and a no-op
loop between two more; a call's instructions are its segment's less the no-op's,
divided by the calls. Calls (memories of :mod:`.storework`):

- ``put_batch``: ``batch()`` of 500 ``PutOp`` of new keys, no embedding;
- ``put_batch_vec``: the same with an index config, each put embedding ``text``
  (:func:`.storework.embed`, the same fake model for both stores);
- ``put``: one ``put`` of a new key;
- ``get``: one ``get`` of an existing memory.

``--keep DIR`` keeps the dumps (``callgrind_annotate DIR/cg.<tag>.<n>``) for profiling.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import tempfile
from contextlib import ExitStack
from typing import Any, Literal

from langgraph.store.base import PutOp

from .instructions import _build_marker, _marker, missing_tools, run_under_callgrind

__all__ = ["CALLS", "main"]

OPS = ("put_batch", "put_batch_vec", "put", "get")
CALLS = {"put_batch": 4, "put_batch_vec": 2, "put": 200, "get": 200}
FILLED = 2_000
PGVECTOR_URL = os.environ.get(
    "LGSA_PGVECTOR_URL", "postgresql+psycopg://postgres@127.0.0.1:5440/test"
)
USERS = 20


def _settle() -> None:
    gc.collect()
    gc.freeze()


def _batches(tag: str, count: int, vectors: bool) -> list[list[PutOp]]:
    from . import storework as sw

    index: list[str] | Literal[False] = ["text"] if vectors else False
    return [
        [
            PutOp(sw.namespace(i, USERS), f"{tag}-{b}-{i:04d}", sw.memory(i), index=index)
            for i in range(500)
        ]
        for b in range(count)
    ]


def child(spec: dict[str, Any]) -> None:
    """Run one (dialect, store) under callgrind; write the segment labels."""
    from . import storework as sw
    from .backends import Store as Place

    mark = _marker(spec["marker"])
    impl = spec["impl"]
    place, vplace = Place(**spec["place"]), Place(**spec["vplace"])
    n = spec["calls"]
    labels: list[str] = []
    # SqliteStore indexes vectors through sqlite-vec, which a sqlite3 without
    # enable_load_extension cannot load: no vector batch for it there.
    vectors = impl == "ours" or place.dialect != "sqlite" or sw_loads_extensions()
    ops_run = [op for op in spec["ops"] if vectors or op != "put_batch_vec"]
    with ExitStack() as stack:
        store = stack.enter_context(sw.open_store(impl, place))
        vs = stack.enter_context(sw.open_store(impl, vplace, vectors=True)) if vectors else None
        fill = [PutOp(sw.namespace(i, USERS), f"m-{i:06d}", sw.memory(i)) for i in range(FILLED)]
        for start in range(0, FILLED, 500):
            store.batch(fill[start : start + 500])
        # warm-up: every call a few times (statements compiled, caches filled)
        for ops in _batches("warm", 2, False):
            store.batch(ops)
        if vs is not None:
            # two: the first finds no vector to delete (SQLite skips the delete), the
            # second compiles the delete statements
            for ops in _batches("warm", 2, True):
                vs.batch(ops)
        for i in range(20):
            store.put(sw.namespace(i, USERS), f"w-{i}", sw.memory(i))
            store.get(sw.namespace(i, USERS), f"m-{i:06d}")
        puts = [(sw.namespace(i, USERS), f"p-{i:06d}", sw.memory(i)) for i in range(n["put"])]
        picks = [(k * 7919) % FILLED for k in range(n["get"])]
        gets = [(sw.namespace(i, USERS), f"m-{i:06d}") for i in picks]
        plans: dict[str, tuple[Any, list[tuple[Any, ...]]]] = {
            "put_batch": (store.batch, [(b,) for b in _batches("b", n["put_batch"], False)]),
        }
        if vs is not None:
            vbatches = _batches("v", n["put_batch_vec"], True)
            plans["put_batch_vec"] = (vs.batch, [(b,) for b in vbatches])
        plans |= {
            "put": (store.put, puts),
            "get": (store.get, gets),
        }
        mark()
        for op in ops_run:
            fn, arglist = plans[op]
            _settle()
            mark()
            labels.append(f"{op}:settle")
            for a in arglist:
                fn(*a)
            mark()
            labels.append(op)
            for a in arglist:
                _noop(*a)
            mark()
            labels.append(f"{op}:base")
        found = store.get(*gets[-1])
        assert found is not None and found.value == sw.memory(picks[-1]), found
    with open(spec["labels"], "w", encoding="utf-8") as f:
        json.dump(labels, f)


def sw_loads_extensions() -> bool:
    """Whether this Python's sqlite3 can load extensions (SqliteStore's vectors)."""
    return hasattr(sqlite3.connect(":memory:"), "enable_load_extension")


def _noop(*_args: Any) -> None:
    return None


def _run(spec: dict[str, Any], tmp: str, tag: str) -> dict[str, dict[str, int]]:
    segments = run_under_callgrind(spec, tmp, tag, "benchmarks.storeinstructions")
    per_call: dict[str, dict[str, int]] = {}
    for label, (path, seg) in segments.items():
        if label.endswith((":base", ":settle")):
            continue
        base = segments[f"{label}:base"][1]
        calls = spec["calls"][label]
        per_call[label] = {k: round((seg[k] - base[k]) / calls) for k in seg}
        per_call[label]["dump"] = int(path.rsplit(".", 1)[1])
    return per_call


def main(argv: list[str] | None = None) -> None:
    """Measure and print instructions per call, ours beside the official store."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.storeinstructions")
    parser.add_argument("--dialects", default="sqlite,postgres")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--impls", default="ours,official")
    parser.add_argument("--keep", default=None, help="keep the callgrind dumps in this folder")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(json.loads(args.child))
        return
    why = missing_tools()
    if why:
        print(why)
        return
    from dataclasses import asdict

    from .backends import Servers
    from .storescalework import PgvectorServer

    dialects = tuple(args.dialects.split(","))
    ops = args.ops.split(",")
    tmp = args.keep or tempfile.mkdtemp(prefix="lgsa_storeinst_")
    os.makedirs(tmp, exist_ok=True)
    # PostgreSQL: a database each on the pgvector server (PostgresStore's vectors).
    servers = Servers(tuple(d for d in dialects if d != "postgres"))
    pgvector = PgvectorServer(PGVECTOR_URL) if "postgres" in dialects else None

    def place(dialect: str) -> dict[str, Any]:
        made = pgvector.new_store() if dialect == "postgres" and pgvector else None
        return asdict(made or servers.new_store(dialect))

    results: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    try:
        marker = _build_marker(tmp)
        for dialect in dialects:
            for impl in args.impls.split(","):
                spec = {
                    "marker": marker,
                    "impl": impl,
                    "place": place(dialect),
                    "vplace": place(dialect),
                    "ops": ops,
                    "calls": CALLS,
                }
                results[(dialect, impl)] = _run(spec, tmp, f"{dialect}.{impl}")
    finally:
        servers.close()
        if pgvector is not None:
            pgvector.close()
    print(f"{'call':14} {'dialect':9} {'ours':>12} {'official':>12} {'ratio':>6}  (dumps in {tmp})")
    for dialect in dialects:
        for op in ops:
            ours = results.get((dialect, "ours"), {}).get(op)
            official = results.get((dialect, "official"), {}).get(op)
            o = ours["total"] if ours else 0
            f = official["total"] if official else 0
            ratio = f"{o / f:.2f}" if o and f else "-"
            print(f"{op:14} {dialect:9} {o:>12,} {f:>12,} {ratio:>6}")
            for name, r in (("ours", ours), ("official", official)):
                if r:
                    parts = ", ".join(f"{k} {r[k]:,}" for k in ("serde", "driver", "rest"))
                    print(f"{'':14} {'':9} {name}: {parts} (dump .{r['dump']})")


if __name__ == "__main__":
    main()
