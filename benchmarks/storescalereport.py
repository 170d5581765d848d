"""The store scale run's results (:mod:`.storescale`): rows with ratios, growth factors and
the tracked targets, recall@10, the Markdown tables of the ``## Store scale`` section of
docs/benchmarks.md (rebuilt from the JSON), and the ``--store --scale`` command.

Ratios are ours / the official store's median call at the same size (below 1.0: ours is
faster); growth is a store's median call at the largest size over the smallest.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import time
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from .storescale import (
    FULL_CALLS,
    FULL_SIZES,
    OPS,
    PLACES,
    QUICK_CALLS,
    QUICK_SIZES,
    Calls,
    StoreScale,
    pgvector_url,
    sizes_for,
)

__all__ = [
    "END",
    "START",
    "markdown_section",
    "result_dict",
    "rows",
    "run_store_scale",
    "tables",
    "update_doc",
]

PLACE_NAMES = {
    "sqlite": "SQLite file",
    "postgres": "PostgreSQL",
    "mariadb": "MariaDB",
    "pgvector": "PostgreSQL + pgvector",
}
PEERS = {"sqlite": "SqliteStore", "pgvector": "PostgresStore"}
STORE_NAMES = {"ours": "ours", "ours_flat": "ours (flat: exact)"}

#: The tracked targets: ``(op, place or None for every place) -> [(what, op, bound)]``;
#: ``what`` is "growth" (largest / smallest size, ours), "ratio" (ours / official at the
#: largest size) or "recall" (ours' recall@10 at every size, on the row's store).
TARGETS: dict[tuple[str, str | None], list[tuple[str, str, float]]] = {
    ("vector_ann", "pgvector"): [
        ("ratio", "<=", 1.0),
        ("growth", "<=", 1.5),
        ("recall", ">=", 0.95),
    ],
    ("search_range", None): [("growth", "<=", 1.5)],
    ("search_range_ns", None): [("growth", "<=", 1.5)],
    ("put_batch", None): [("ratio", "<=", 1.0)],  # time ratio <= 1: throughput >= 1.0x
    ("get", "sqlite"): [("ratio", "<=", 1.2)],
    ("put", "pgvector"): [("ratio", "<=", 1.0)],
}


def _targets(op: str, place: str, store: str) -> list[tuple[str, str, float]]:
    if store != "ours":
        return []
    found = TARGETS.get((op, place)) or TARGETS.get((op, None)) or []
    return [t for t in found if t[0] != "ratio" or place in PEERS]


def _met(value: float | None, op: str, bound: float) -> bool | None:
    if value is None:
        return None
    return value <= bound if op == "<=" else value >= bound


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (place, op, store): median ms per size, growth; ours: the ratio to the
    official store per size, the targets and whether each is met."""
    raw = {(r["place"], r["store"], r["op"]): r["seconds"] for r in result["raw"]}
    recall = {(r["place"], r["store"], str(r["size"])): r["recall_at_10"] for r in result["recall"]}
    out = []
    for (place, store, op), by_size in raw.items():
        ms = {s: statistics.median(v) * 1000 for s, v in sorted(by_size.items(), key=_size_key)}
        sizes = list(ms)
        growth = ms[sizes[-1]] / ms[sizes[0]] if len(sizes) > 1 and ms[sizes[0]] else None
        peer = raw.get((place, "official", op)) if store == "ours" else None
        ratio = {}
        if peer:
            ratio = {s: ms[s] / (statistics.median(peer[s]) * 1000) for s in ms if s in peer}
        checks = []
        for what, cmp, bound in _targets(op, place, store):
            if what == "growth":
                value = growth
            elif what == "ratio":
                value = ratio.get(sizes[-1])
            else:
                got = [recall.get((place, store, s)) for s in sizes]
                value = min(g for g in got if g is not None) if any(got) else None
            checks.append(
                {
                    "what": what,
                    "op": cmp,
                    "bound": bound,
                    "value": value,
                    "met": _met(value, cmp, bound),
                }
            )
        out.append(
            {
                "place": place,
                "store": store,
                "op": op,
                "ms": {s: round(v, 3) for s, v in ms.items()},
                "calls": {s: len(by_size[s]) for s in sizes},
                "growth": round(growth, 2) if growth is not None else None,
                "ratio": {s: round(v, 3) for s, v in ratio.items()},
                "targets": checks,
            }
        )
    order = {op: n for n, (op, _) in enumerate(OPS)}
    stores = ("ours", "ours_flat", "official")
    return sorted(
        out, key=lambda r: (PLACES.index(r["place"]), order[r["op"]], stores.index(r["store"]))
    )


def _size_key(item: tuple[str, Any]) -> int:
    return int(item[0])


def _size(n: int | str) -> str:
    n = int(n)
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"


def _store_name(place: str, store: str) -> str:
    return PEERS[place] if store == "official" else STORE_NAMES[store]


def _verdict(checks: list[dict[str, Any]]) -> str:
    parts = []
    for c in checks:
        v = c["value"]
        shown = "-" if v is None else f"{v:.2f}" + ("" if c["what"] == "recall" else "x")
        mark = {True: "met", False: "**NOT met**", None: "not judged"}[c["met"]]
        parts.append(f"{c['what']} {shown} {c['op']} {c['bound']:g}: {mark}")
    return "; ".join(parts)


def tables(result: dict[str, Any]) -> str:
    """Markdown: a table per place (op x store: ms per size, growth, ratios, targets),
    then recall@10."""
    labels = dict(OPS)
    parts = []
    all_rows = result["rows"]
    for place in dict.fromkeys(r["place"] for r in all_rows):
        mine = [r for r in all_rows if r["place"] == place]
        sizes = sorted({int(s) for r in mine for s in r["ms"]})
        head = ["operation", "store", *(f"{_size(s)} (ms)" for s in sizes)]
        head.append(f"growth {_size(sizes[-1])}/{_size(sizes[0])}" if len(sizes) > 1 else "growth")
        if place in PEERS:
            head += [f"ours/{PEERS[place]} {_size(s)}" for s in sizes]
        head.append("targets")
        lines = [f"**{PLACE_NAMES[place]}**", "", "| " + " | ".join(head) + " |"]
        lines.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 3) + ["---"]) + "|")
        for r in mine:
            cells = [labels[r["op"]], _store_name(place, r["store"])]
            cells += [f"{r['ms'][str(s)]:.2f}" if str(s) in r["ms"] else "-" for s in sizes]
            cells.append(f"{r['growth']:.2f}x" if r["growth"] is not None else "-")
            if place in PEERS:
                cells += [
                    f"{r['ratio'][str(s)]:.2f}x" if str(s) in r["ratio"] else "" for s in sizes
                ]
            cells.append(_verdict(r["targets"]))
            lines.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    if result["recall"]:
        sizes = sorted({r["size"] for r in result["recall"]})
        lines = [
            "**recall@10 against the exact nearest ten (NumPy over every memory)**",
            "",
            "| place | store | queries | " + " | ".join(_size(s) for s in sizes) + " |",
            "|---|---|---:|" + "---:|" * len(sizes),
        ]
        seen: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
        for r in result["recall"]:
            seen.setdefault((r["place"], r["store"]), {})[r["size"]] = r
        for (place, store), by in seen.items():
            name = _store_name(place, store) + (
                " (HNSW)" if place == "pgvector" and store != "ours_flat" else ""
            )
            queries = next(iter(by.values()))["queries"]
            cells = [f"{by[s]['recall_at_10']:.3f}" if s in by else "-" for s in sizes]
            lines.append(
                f"| {PLACE_NAMES[place]} | {name} | {queries} | " + " | ".join(cells) + " |"
            )
        parts.append("\n".join(lines))
    if result.get("walk"):
        parts.append(walk_table(result["walk"]))
    return "\n\n".join(parts)


def walk_table(walk: list[dict[str, Any]]) -> str:
    """The HNSW index walks on the pgvector server: pages and server time per size, with
    their growth from the smallest size to the largest."""
    sizes = sorted({r["size"] for r in walk})
    head = " | ".join(_size(s) for s in sizes)
    lines = [
        "**the HNSW walk on the server** (`EXPLAIN (ANALYZE, BUFFERS)` of each store's index "
        "as plain SQL, `ORDER BY` distance `LIMIT 10`, medians over the 20 queries)",
        "",
        f"| store | ef_search | pages: {head} | growth | server ms: {head} | growth |",
        "|---|---:|" + "---:|" * (2 * len(sizes) + 2),
    ]
    seen: dict[str, dict[int, dict[str, Any]]] = {}
    for r in walk:
        seen.setdefault(r["store"], {})[r["size"]] = r
    for store, by in seen.items():
        cells = [_store_name("pgvector", store), str(next(iter(by.values()))["ef_search"])]
        for what, fmt in (("pages", "{:,.0f}"), ("server_ms", "{:.3f}")):
            got = [by[s][what] if s in by else None for s in sizes]
            cells += [fmt.format(g) if g is not None else "-" for g in got]
            ends = (got[0], got[-1])
            ok = len(sizes) > 1 and None not in ends and ends[0]
            cells.append(f"{ends[1] / ends[0]:.2f}x" if ok else "-")  # type: ignore[operator]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_table(load: list[dict[str, Any]]) -> str:
    lines = [
        "| place | store | memories | embeddings | items/s | seconds | ANALYZE (s) |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for r in load:
        lines.append(
            f"| {PLACE_NAMES[r['place']]} | {_store_name(r['place'], r['store'])} | {r['size']:,} "
            f"| {'yes' if r['vectors'] else 'no'} | {r['items_per_s']:,} | {r['seconds']:.1f} "
            f"| {r['analyze_seconds']:.1f} |"
        )
    return "\n".join(lines)


START = "<!-- store-scale-results:start -->"
END = "<!-- store-scale-results:end -->"


def markdown_section(result: dict[str, Any]) -> str:
    env = result["environment"]
    load = result["load_average"]
    unmet = [
        f"`{r['op']}` {c['what']} on {PLACE_NAMES[r['place']]}"
        for r in result["rows"]
        for c in r["targets"]
        if c["met"] is False
    ]
    lines = [
        f"Run {result['started']} with `{result['command']}` in {result['wall_seconds']:.0f} s "
        f"(sizes: {', '.join(f'{s:,}' for s in result['sizes'])} memories; commit "
        f"{env['commit']}; {env['nproc']} CPUs shared with other work, load average "
        f"{load[0]:.1f} at start, {load[1]:.1f} at end; Python {env['python']}; "
        + ", ".join(f"{k} {v}" for k, v in env["servers"].items())
        + f"; our store's `ann` on the pgvector server: {result['ann'].get('pgvector')!r}).",
        "",
        tables(result),
        "",
        *(
            f"- Skipped: {s['ops']} with {_store_name(s['place'], s['store'])} on "
            f"{PLACE_NAMES[s['place']]}: {s['reason']}."
            for s in result["skipped"]
        ),
        "",
        "Loading (each store's own `batch()` of 500 puts; then ANALYZE off SQLite):",
        "",
        load_table(result["load"]),
        "",
        ("Targets not met: " + ", ".join(unmet) + "." if unmet else "Every tracked target is met."),
        "",
    ]
    return "\n".join(lines)


def update_doc(path: str, section: str) -> None:
    """Rewrite the text between the store scale markers; add a ``## Store scale``
    section at the end of the document if it has none."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if START not in doc or END not in doc:
        doc = doc.rstrip("\n") + f"\n\n## Store scale\n\n{START}\n{END}\n"
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}{START}\n{section}\n{END}{tail}")


def result_dict(run: StoreScale, head: dict[str, Any]) -> dict[str, Any]:
    """The JSON of a run: ``head`` (command, times, environment), the raw calls, the
    loading, recall and skipped stores, and the rows built from them."""
    result = {
        **head,
        "sizes": run.sizes,
        "places": run.places,
        "calls": asdict(run.calls),
        "ann": run.ann,
        "load": run.load,
        "recall": run.recall,
        "walk": run.walk,
        "skipped": run.skipped,
        "raw": [
            {"place": p, "store": s, "op": op, "seconds": {str(k): v for k, v in by.items()}}
            for (p, s, op), by in run.raw.items()
        ],
    }
    result["rows"] = rows(result)
    return result


def run(
    places: list[str],
    sizes: list[int],
    calls: Calls,
    log: Any,
    ops: tuple[str, ...] | None = None,
) -> tuple[StoreScale, dict[str, str]]:
    """Run the store scale workloads; the run and the server versions."""
    from . import storescalework as w
    from .backends import Servers

    url = pgvector_url()
    skipped = []
    if "pgvector" in places and url is None:
        places = [p for p in places if p != "pgvector"]
        skipped.append(
            {
                "place": "pgvector",
                "store": "ours",
                "ops": "every operation",
                "reason": "LGSA_PGVECTOR_URL is not set (no pgvector server)",
            }
        )
    servers = Servers(tuple(p for p in places if p != "pgvector"))
    pgv = w.PgvectorServer(url) if url and "pgvector" in places else None
    try:
        versions = servers.server_versions()
        if pgv is not None:
            versions["pgvector server"] = pgv.version()
        scale = StoreScale(servers, pgv, sizes, places, calls, log, ops)
        scale.skipped.extend(skipped)
        scale.run()
    finally:
        servers.close()
        if pgv is not None:
            pgv.close()
    return scale, versions


def run_store_scale(args: Any, doc: str, root: str) -> int:
    """The ``--store --scale`` command (``args`` from ``python -m benchmarks``'s parser)."""
    from .report import environment
    from .runner import log

    logging.getLogger("asyncmy").setLevel(logging.ERROR)
    chosen = args.dialects.split(",")
    places = [p for p in PLACES if p in chosen or (p == "pgvector" and not args.dialects_given)]
    sizes = sizes_for(QUICK_SIZES if args.quick else FULL_SIZES, args.scale_max)
    calls = QUICK_CALLS if args.quick else FULL_CALLS
    started = datetime.now(timezone.utc)
    load = [os.getloadavg()[0]]
    t0 = time.perf_counter()
    log(f"store scale: sizes {sizes}, places {places}")
    ops = tuple(args.store_ops.split(",")) if args.store_ops else None
    unknown = sorted(set(ops or ()) - {op for op, _ in OPS})
    if unknown:
        raise SystemExit(
            f"--store-ops: unknown {', '.join(unknown)}; known: " + ", ".join(op for op, _ in OPS)
        )
    scale, versions = run(places, sizes, calls, log, ops)
    command = "python -m benchmarks" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else "")
    head = {
        "command": command,
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "quick": args.quick,
        "environment": environment(versions),
        "python_executable": sys.executable,
        "load_average": [round(x, 2) for x in [*load, os.getloadavg()[0]]],
    }
    result = result_dict(scale, head)
    print(markdown_section(result))
    out = args.out or os.path.join(root, "benchmarks", "results", "store_scale.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"JSON: {out}")
    if args.markdown:
        update_doc(doc, markdown_section(result))
        print(f"Markdown (store scale section): {doc}")
    return 0


def render(path: str, doc: str, *, markdown: bool) -> int:
    """Rebuild the rows and the section of a saved run with the current targets."""
    with open(path, encoding="utf-8") as f:
        result = json.load(f)
    result["rows"] = rows(result)
    print(markdown_section(result))
    if markdown:
        update_doc(doc, markdown_section(result))
        print(f"Markdown (store scale section): {doc}")
    return 0
