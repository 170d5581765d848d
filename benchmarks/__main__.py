"""``python -m benchmarks [--quick] [--out PATH] [--markdown]``: run every workload on our
saver and the official savers, interleaved in this process, print the ratios, write JSON.

``python -m benchmarks --scale [--quick] [--scale-max N]``: stores of growing sizes, each
operation timed at each size, side by side (:mod:`.scale`).

``python -m benchmarks --store [--quick]``: only the long-term memory store workloads,
``SQLAlchemyStore`` beside ``SqliteStore`` and ``PostgresStore`` (:mod:`.store`); the plain
run ends with them (``--no-store`` skips them).

``python -m benchmarks --store --scale [--quick] [--scale-max N]``: the memory store at
growing sizes (10k and 100k memories; ``--scale-max 1000000`` adds 1M), every store
operation timed at each size beside ``SqliteStore`` and ``PostgresStore``, recall@10 of
the HNSW searches (:mod:`.storescale`; JSON ``benchmarks/results/store_scale.json``).

``python -m benchmarks --instructions [...]``: CPU instructions per hot-path call, ours and
the official saver's, under ``valgrind --tool=callgrind`` (:mod:`.instructions`; its own
options follow the flag).

``python -m benchmarks --allocations [--dialects ...] [--calls N]``: memory blocks allocated,
cyclic-GC counter added and ``tracemalloc`` peak per hot-path call, ours and the official
saver's (:mod:`.allocations`; its own options follow the flag).

``python -m benchmarks --long-thread [--turns N] [--quick] [...]``: a chat and a
tool-calling agent on one thread for 200 turns, per turn the instructions of the saver
calls (callgrind) and the bytes written, ours beside the official savers, each also with
the graph rewritten with ``DeltaChannel`` (:mod:`.long_thread`; its own options follow
the flag).

``python -m benchmarks --charts [--out DIR]``: run nothing, draw the committed results
(``benchmarks/results/*.json``) as the SVG charts of ``docs/img/benchmarks/``
(:mod:`.charts`; its own options follow the flag).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import re
import sys
import textwrap
import time
from datetime import datetime, timezone
from typing import Any

from . import charts
from .backends import DIALECTS, Servers
from .report import build_rows, environment, markdown_section, old_section, print_table, update_doc
from .runner import FULL, QUICK, Bench, Sizes, log

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The help's description: the module docstring without its reST markup.
DESCRIPTION = "\n\n".join(
    textwrap.fill(" ".join(part.split()), 78)
    for part in re.sub(r":mod:`\.?(\w+)`", r"benchmarks/\1.py", __doc__ or "")
    .replace("``", "")
    .split("\n\n")
)
DOC = os.path.join(ROOT, "docs", "benchmarks.md")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--instructions"]:
        from . import instructions

        return instructions.main(argv[1:])
    if argv[:1] == ["--allocations"]:
        from . import allocations

        return allocations.main(argv[1:])
    if argv[:1] == ["--long-thread"]:
        from . import long_thread

        return long_thread.main(argv[1:])
    if argv[:1] == ["--charts"]:
        from . import charts

        return charts.main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 repeat, small sizes")
    parser.add_argument(
        "--out",
        help="JSON results (default: benchmarks/results/latest.json, "
        "with --scale benchmarks/results/scale.json)",
    )
    parser.add_argument(
        "--markdown", action="store_true", help=f"rewrite the results section of {DOC}"
    )
    parser.add_argument("--repeats", type=int, help="override the number of repeats")
    parser.add_argument(
        "--render",
        metavar="JSON",
        help="run nothing: rebuild the table from a saved run's JSON with the current "
        "targets, print it (and rewrite the doc's section with --markdown)",
    )
    parser.add_argument(
        "--dialects",
        default=",".join(DIALECTS),
        help="comma list of sqlite, postgres, mariadb (default: all)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="the scale run: stores of 10k, 100k and 1M checkpoints (MariaDB to 300k; "
        "--quick: 2k, 20k), each operation timed at each size; with --store: the memory "
        "store at 10k and 100k memories (--scale-max 1000000 adds 1M; --quick: 1k, 5k), "
        "JSON benchmarks/results/store_scale.json",
    )
    parser.add_argument(
        "--scale-max",
        type=int,
        metavar="N",
        help="with --scale: stop at N checkpoints (with --store: memories, default 100000)",
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="only the store workloads (SQLAlchemyStore beside SqliteStore and PostgresStore); "
        "JSON benchmarks/results/store.json",
    )
    parser.add_argument(
        "--no-store", action="store_true", help="the plain run without its store workloads"
    )
    parser.add_argument(
        "--store-ops",
        metavar="OPS",
        help="with --store --scale: comma list of the operations to time (put, put_batch, "
        "get, search_range_ns, search_range, list_namespaces, vector_exact, vector_ann; "
        "default: all); without a vector_* operation the stores hold no embeddings",
    )
    args = parser.parse_args(argv)
    args.dialects_given = any(a.split("=", 1)[0] == "--dialects" for a in argv)
    if args.store and args.scale:
        from . import storescalereport

        if args.render:
            return storescalereport.render(args.render, DOC, markdown=args.markdown)
        return storescalereport.run_store_scale(args, DOC, ROOT)
    if args.store:
        return run_store(args)
    if args.scale:
        from .scale import run_scale

        return run_scale(args, DOC, ROOT)
    if args.out is None:
        args.out = os.path.join(ROOT, "benchmarks", "results", "latest.json")
    if args.render:
        return render(args.render, markdown=args.markdown)
    dialects = tuple(d for d in DIALECTS if d in args.dialects.split(","))
    sizes = QUICK if args.quick else FULL
    if args.repeats:
        sizes = dataclasses.replace(sizes, repeats=args.repeats)
    # asyncmy logs MariaDB's notes while our tables are created ("Name ... ignored").
    logging.getLogger("asyncmy").setLevel(logging.ERROR)

    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    log(f"benchmark: {'quick' if args.quick else 'full'}, dialects {', '.join(dialects)}")
    servers = Servers(dialects)
    try:
        server_versions = servers.server_versions()
        raw = Bench(servers, sizes, dialects).run()
    finally:
        servers.close()
    wall = time.perf_counter() - t0
    log(f"done in {wall:.0f} s")

    rows = build_rows(raw, sizes, dialects)
    print_table(rows)
    command = "python -m benchmarks" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else "")
    result = {
        "command": command,
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "wall_seconds": round(wall, 1),
        "quick": args.quick,
        "dialects": list(dialects),
        "sizes": dataclasses.asdict(sizes),
        "environment": environment(server_versions),
        "rows": [r.as_dict() for r in rows],
        "raw": [
            {"metric": m, "dialect": d, "mode": mode, "impl": i, "values": v}
            for (m, d, mode, i), v in raw.items()
        ],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"JSON: {args.out}")
    if args.markdown:
        update_doc(DOC, markdown_section(result, rows, old_section(DOC)))
        print(f"Markdown: {DOC}")
        charts.refresh("ratios", result)
    if not args.no_store:
        # Written first: the store run cannot lose the checkpoint figures.
        result["store"] = run_store_part(args, dialects)
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        print(f"JSON (with the store workloads): {args.out}")
    return 0


def run_store_part(args: argparse.Namespace, dialects: tuple[str, ...]) -> dict[str, Any]:
    """The store workloads (:mod:`.store`): print their table, rewrite their doc section
    with ``--markdown``; return their JSON."""
    from . import store

    sizes = store.QUICK if args.quick else store.FULL
    if args.repeats:
        sizes = dataclasses.replace(sizes, repeats=args.repeats)
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    load = [os.getloadavg()[0]]
    log(f"store benchmark: {'quick' if args.quick else 'full'}, dialects {', '.join(dialects)}")
    servers = Servers(dialects)
    try:
        env = environment(servers.server_versions())
        part, rows = store.run(servers, dialects, sizes, log)
    finally:
        servers.close()
    command = "python -m benchmarks" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else "")
    result = {
        "command": command,
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "quick": args.quick,
        "environment": env,
        "python_executable": sys.executable,
        "load_average": [round(x, 2) for x in [*load, os.getloadavg()[0]]],
        **part,
    }
    store.print_result(result, rows)
    if args.markdown:
        store.update_doc(DOC, store.markdown_section(result, rows))
        print(f"Markdown (store section): {DOC}")
        charts.refresh("store", result)
    return result


def run_store(args: argparse.Namespace) -> int:
    """The ``--store`` command: the store workloads alone, JSON of their own (with
    ``--render JSON``: run nothing, rebuild the table of a saved store run)."""
    if args.render:
        from . import store

        with open(args.render, encoding="utf-8") as f:
            saved = json.load(f)
        rows = store.rebuild_rows(saved)
        store.print_result(saved, rows)
        if args.markdown:
            store.update_doc(DOC, store.markdown_section(saved, rows))
            print(f"Markdown (store section): {DOC}")
            charts.refresh("store", saved)
        return 0
    dialects = tuple(d for d in DIALECTS if d in args.dialects.split(","))
    logging.getLogger("asyncmy").setLevel(logging.ERROR)
    result = run_store_part(args, dialects)
    out = args.out or os.path.join(ROOT, "benchmarks", "results", "store.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"JSON: {out}")
    return 0


def render(path: str, *, markdown: bool) -> int:
    """Rebuild the rows of a saved run (its raw figures) with the current targets."""
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    raw = {(r["metric"], r["dialect"], r["mode"], r["impl"]): r["values"] for r in result["raw"]}
    sizes = Sizes(**result["sizes"])
    rows = build_rows(raw, sizes, tuple(result["dialects"]))
    print_table(rows)
    if markdown:
        update_doc(DOC, markdown_section(result, rows, old_section(DOC)))
        print(f"Markdown: {DOC}")
        charts.refresh("ratios", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
