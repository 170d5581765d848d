"""``python -m benchmarks.modes``: what the safety modes of our saver cost.

Puts of realistic checkpoints and 2-node graph invokes, each measured on a fresh store
with the default saver, with ``detect_conflicts=True`` and (graph only) with every invoke
inside ``lock_thread``; interleaved in one process (who goes first rotates per repeat),
reported as ratios to the default (throughput: higher is better). SQLite file,
PostgreSQL and MariaDB, sync door.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from .backends import DIALECTS, Servers
from .data import History
from .workloads import WARMUP, _graph, thread_config

VARIANTS = ("default", "detect_conflicts", "lock_thread")


def _puts(saver: Any, n: int) -> float:
    warm = History(saver, "warmup")
    for _ in range(WARMUP):
        warm.put()
    h = History(saver, "bench")
    t = time.perf_counter()
    for _ in range(n):
        h.put()
    return n / (time.perf_counter() - t)


def _invokes(saver: Any, n: int, locked: bool) -> float:
    g = _graph(saver)
    g.invoke({"text": "go"}, thread_config("warmup"))
    t = time.perf_counter()
    for _ in range(n):
        if locked:
            with saver.lock_thread("graph"):
                g.invoke({"text": "go"}, thread_config("graph"))
        else:
            g.invoke({"text": "go"}, thread_config("graph"))
    return n / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.modes", description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--puts", type=int, default=300)
    parser.add_argument("--invokes", type=int, default=100)
    parser.add_argument("--dialects", default=",".join(DIALECTS))
    args = parser.parse_args(argv)
    dialects = tuple(d for d in DIALECTS if d in args.dialects.split(","))
    raw: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    servers = Servers(dialects)
    workloads: dict[str, Callable[[Any, str], float]] = {
        "put, realistic (ckpt/s)": lambda s, v: _puts(s, args.puts),
        "2-node graph invoke (invokes/s)": lambda s, v: _invokes(
            s, args.invokes, v == "lock_thread"
        ),
    }
    try:
        for rep in range(args.repeats):
            for dialect in dialects:
                for metric, body in workloads.items():
                    variants = VARIANTS if "graph" in metric else VARIANTS[:2]
                    order = variants[rep % len(variants) :] + variants[: rep % len(variants)]
                    for variant in order:
                        store = servers.new_store(dialect)
                        try:
                            saver = SQLAlchemySaver.from_conn_string(
                                store.url, detect_conflicts=variant == "detect_conflicts"
                            )
                            try:
                                saver.setup()
                                raw[(metric, dialect, variant)].append(body(saver, variant))
                            finally:
                                saver.close()
                        finally:
                            servers.drop(store)
            print(f"repeat {rep + 1}/{args.repeats} done", flush=True)
    finally:
        servers.close()
    print()
    print("| metric | backend | default | detect_conflicts | lock_thread around each invoke |")
    print("|---|---|---:|---:|---:|")
    for metric in workloads:
        for dialect in dialects:
            base = raw[(metric, dialect, "default")]
            cells = [f"{statistics.median(base):,.0f}"]
            for variant in VARIANTS[1:]:
                values = raw.get((metric, dialect, variant))
                if not values:
                    cells.append("")
                    continue
                ratios = [v / b for v, b in zip(values, base, strict=True)]
                cells.append(
                    f"{statistics.median(values):,.0f} ({statistics.median(ratios):.2f}x, "
                    f"{min(ratios):.2f}-{max(ratios):.2f})"
                )
            print(f"| {metric} | {dialect} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
