"""The long-term memory store beside the official stores: ``python -m benchmarks
--store`` runs only these workloads; the plain run (``--quick`` too) runs them after the
checkpoint workloads (``--no-store`` skips them).

``SQLAlchemyStore`` against ``SqliteStore`` (a file) and ``PostgresStore`` (sync), and
alone on MariaDB; every workload of every repeat runs ours and the official store one
after the other in this process (who goes first alternates), and the table shows the
median figures and the median of the per-repeat ratios ours / official. Workloads in
:mod:`.storework`.
"""

from __future__ import annotations

import gc
import sqlite3
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from sqlalchemy import create_engine, inspect, text

from . import storework as sw
from .backends import DIALECT_NAMES, POSTGRES_URL, Servers, analyze, storage_bytes
from .backends import Store as Place
from .report import Row, markdown_table, print_table

Key = tuple[str, str, str, str]  # (metric, dialect, "sync", impl), as the checkpoint run


@dataclass(frozen=True)
class StoreSizes:
    repeats: int = 3
    puts: int = 1_000  # single puts timed
    gets: int = 500  # gets timed
    items: int = 10_000  # memories in the read store
    users: int = 100  # user namespaces ("memories", "u<n>")
    searches: int = 50  # calls of each filtered search
    list_calls: int = 50  # list_namespaces calls
    vector_items: int = 10_000  # memories in the vector store
    vector_searches: int = 20


FULL = StoreSizes()
QUICK = StoreSizes(
    repeats=1,
    puts=100,
    gets=50,
    items=1_000,
    users=20,
    searches=5,
    list_calls=5,
    vector_items=300,
    vector_searches=3,
)

#: ``(metric, dialect) -> (op, threshold, "ratio")``: the issue's targets (put and get at
#: least the official store's throughput; a filtered search at most half its time).
TARGETS: dict[tuple[str, str], tuple[str, float, str]] = {
    **{("put", d): (">=", 1.0, "ratio") for d in sw.OFFICIAL_STORES},
    **{("get", d): ("<=", 1.0, "ratio") for d in sw.OFFICIAL_STORES},
    **{("search_filter", d): ("<=", 0.5, "ratio") for d in sw.OFFICIAL_STORES},
    **{("search_filter_ns", d): ("<=", 0.5, "ratio") for d in sw.OFFICIAL_STORES},
}


def metrics(s: StoreSizes) -> list[tuple[str, str, str]]:
    """``(metric, label, unit)`` in table order."""
    where = f"{s.items:,} memories in {s.users} users"
    flt = 'filter={"kind": "preference"}, limit=10'
    return [
        ("put", f"put, one memory a call ({s.users} user namespaces)", "items/s"),
        ("get", f"get, {where}", "ms"),
        ("search_filter", f'search(("memories",), {flt}), {where}', "ms"),
        ("search_filter_ns", f'search(("memories", "u7"), {flt}), {where}', "ms"),
        ("search_ns", f'search(("memories", "u7"), limit=10), {where}', "ms"),
        ("list_namespaces", f'list_namespaces(prefix=("memories",)), {s.users} namespaces', "ms"),
        ("fill", f"batch of 500 puts, filling {s.items:,} memories (one run)", "items/s"),
        ("storage", f"storage per memory, {s.items:,} memories", "bytes"),
        (
            "vector_search",
            f'search(("memories",), query=..., limit=10), {s.vector_items:,} memories, '
            f"{sw.DIMS} dims",
            "ms",
        ),
        (
            "vector_fill",
            f"batch of 500 puts with embedding, filling {s.vector_items:,} memories (one run)",
            "items/s",
        ),
    ]


def impls(dialect: str) -> tuple[str, ...]:
    return ("ours", "official") if dialect in sw.OFFICIAL_STORES else ("ours",)


def pgvector_missing() -> str | None:
    """Why ``PostgresStore`` cannot index vectors on this server, or None."""
    engine = create_engine(
        POSTGRES_URL.replace("postgresql://", "postgresql+psycopg://", 1)
        if POSTGRES_URL.startswith("postgresql://")
        else POSTGRES_URL
    )
    try:
        with engine.connect() as conn:
            query = text("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")
            if conn.execute(query).scalar_one() == 0:
                return "pgvector is not installed on the server (CREATE EXTENSION vector fails)"
    finally:
        engine.dispose()
    return None


def existing(place: Place, names: tuple[str, ...]) -> tuple[str, ...]:
    """The tables of ``names`` that the store created (vector tables only with an index)."""
    engine = create_engine(place.url)
    try:
        return tuple(n for n in names if inspect(engine).has_table(n))
    finally:
        engine.dispose()


class StoreBench:
    """The run: ``raw[(metric, dialect, "sync", impl)]`` = one figure a repeat;
    ``skipped[(metric, dialect, impl)]`` = why a store was not measured."""

    def __init__(
        self,
        servers: Servers,
        sizes: StoreSizes,
        dialects: tuple[str, ...],
        log: Callable[[str], None],
    ) -> None:
        self.servers = servers
        self.s = sizes
        self.dialects = dialects
        self.log = log
        self.raw: dict[Key, list[float]] = defaultdict(list)
        self.skipped: dict[tuple[str, str, str], str] = {}
        #: Per dialect, the best score of each query per store (exact search: the same).
        self.top_scores: dict[str, dict[str, list[float]]] = defaultdict(dict)

    def run(self) -> dict[Key, list[float]]:
        self.puts()
        self.reads()
        self.vectors()
        return dict(self.raw)

    def lineup(self, rep: int) -> list[tuple[str, tuple[str, ...]]]:
        return [(d, impls(d) if rep % 2 == 0 else impls(d)[::-1]) for d in self.dialects]

    def add(self, metric: str, dialect: str, impl: str, value: float) -> None:
        self.raw[(metric, dialect, "sync", impl)].append(value)

    def puts(self) -> None:
        """A fresh, empty store per store, dialect and repeat."""
        for rep in range(self.s.repeats):
            self.log(f"store put: repeat {rep + 1}/{self.s.repeats}")
            for dialect, order in self.lineup(rep):
                for impl in order:
                    place = self.servers.new_store(dialect)
                    try:
                        with sw.open_store(impl, place) as store:
                            gc.collect()
                            self.add("put", dialect, impl, sw.put(store, self.s.puts, self.s.users))
                    finally:
                        self.servers.drop(place)

    def _filled(self, vectors: bool) -> dict[tuple[str, str], Place]:
        s, places = self.s, {}
        metric, items = ("vector_fill", s.vector_items) if vectors else ("fill", s.items)
        for dialect in self.dialects:
            for impl in impls(dialect):
                if (metric, dialect, impl) in self.skipped:
                    continue
                self.log(f"store fill{' with vectors' if vectors else ''}: {impl} on {dialect}")
                place = places[(dialect, impl)] = self.servers.new_store(dialect)
                with sw.open_store(impl, place, vectors=vectors) as store:
                    self.add(metric, dialect, impl, sw.fill(store, items, s.users, vectors=vectors))
                names = existing(place, sw.STORE_TABLES[impl])
                if names:
                    analyze(place, names)
                if not vectors and names:
                    size = storage_bytes(place, names)
                    self.raw[("storage", dialect, "-", impl)].append(size / items)
        return places

    def reads(self) -> None:
        s = self.s
        u7 = (sw.USERS_NS, f"u{7 % s.users}")
        plan: list[tuple[str, Callable[[Any], float]]] = [
            ("get", partial(sw.get, n=s.gets, items=s.items, users=s.users)),
            (
                "search_filter",
                partial(
                    sw.search, calls=s.searches, prefix=(sw.USERS_NS,), expect=10, filter=sw.FILTER
                ),
            ),
            (
                "search_filter_ns",
                partial(
                    sw.search,
                    calls=s.searches,
                    prefix=u7,
                    expect=min(10, sw.matching(s.items, s.users, 7, sw.FILTER)),
                    filter=sw.FILTER,
                ),
            ),
            ("search_ns", partial(sw.search, calls=s.searches, prefix=u7, expect=10)),
            (
                "list_namespaces",
                partial(sw.list_namespaces, calls=s.list_calls, expect=min(100, s.users)),
            ),
        ]
        places = self._filled(vectors=False)
        try:
            self._alternate(places, plan, vectors=False)
        finally:
            for place in places.values():
                self.servers.drop(place)

    def vectors(self) -> None:
        if "postgres" in self.dialects and (why := pgvector_missing()):
            for metric in ("vector_fill", "vector_search"):
                self.skipped[(metric, "postgres", "official")] = why
        if "sqlite" in self.dialects and not hasattr(sqlite3.Connection, "enable_load_extension"):
            for metric in ("vector_fill", "vector_search"):
                self.skipped[(metric, "sqlite", "official")] = (
                    f"this Python's sqlite3 ({sys.executable}) cannot load extensions, "
                    "and SqliteStore's index needs sqlite-vec"
                )
        places = self._filled(vectors=True)
        try:
            plan = [("vector_search", partial(sw.vector_search, calls=self.s.vector_searches))]
            self._alternate(places, plan, vectors=True)
            for (dialect, impl), place in places.items():
                with sw.open_store(impl, place, vectors=True) as store:
                    self.top_scores[dialect][impl] = sw.top_scores(store)
        finally:
            for place in places.values():
                self.servers.drop(place)

    def _alternate(
        self,
        places: dict[tuple[str, str], Place],
        plan: Sequence[tuple[str, Callable[[Any], float]]],
        *,
        vectors: bool,
    ) -> None:
        """Per repeat and dialect, both stores open; each workload runs on one, then the
        other."""
        for rep in range(self.s.repeats):
            self.log(
                f"store {'vector ' if vectors else ''}reads: repeat {rep + 1}/{self.s.repeats}"
            )
            for dialect, order in self.lineup(rep):
                present = [i for i in order if (dialect, i) in places]
                with ExitStack() as stack:
                    stores = {
                        i: stack.enter_context(
                            sw.open_store(i, places[(dialect, i)], vectors=vectors)
                        )
                        for i in present
                    }
                    for metric, body in plan:
                        for impl in present:
                            gc.collect()
                            self.add(metric, dialect, impl, body(stores[impl]))


# -- report ---------------------------------------------------------------------------------------


def build_rows(
    raw: dict[Key, list[float]], sizes: StoreSizes, dialects: tuple[str, ...]
) -> list[Row]:
    rows = []
    for metric, label, unit in metrics(sizes):
        for dialect in dialects:
            mode = "-" if metric == "storage" else "sync"
            ours = raw.get((metric, dialect, mode, "ours"), [])
            ref = raw.get((metric, dialect, mode, "official"), [])
            name = sw.OFFICIAL_STORES.get(dialect, "") if ref else ""
            backend = DIALECT_NAMES[dialect] + ("" if mode == "-" else " sync")
            if ours or ref:
                rows.append(
                    Row(
                        metric,
                        label,
                        backend,
                        unit,
                        ours,
                        ref,
                        name,
                        TARGETS.get((metric, dialect)),
                    )
                )
    return rows


def rebuild_rows(result: dict[str, Any]) -> list[Row]:
    """The rows of a saved run (its raw figures) with the current targets."""
    raw = {(r["metric"], r["dialect"], r["mode"], r["impl"]): r["values"] for r in result["raw"]}
    return build_rows(raw, StoreSizes(**result["sizes"]), tuple(result["dialects"]))


def result_dict(bench: StoreBench, rows: list[Row]) -> dict[str, Any]:
    return {
        "sizes": asdict(bench.s),
        "dialects": list(bench.dialects),
        "rows": [r.as_dict() for r in rows],
        "raw": [
            {"metric": m, "dialect": d, "mode": mode, "impl": i, "values": v}
            for (m, d, mode, i), v in bench.raw.items()
        ],
        "skipped": [
            {"metric": m, "dialect": d, "impl": i, "reason": why}
            for (m, d, i), why in bench.skipped.items()
        ],
        "vector_top_scores": bench.top_scores,
    }


def notes(result: dict[str, Any]) -> list[str]:
    """Skipped rows and whether the stores found the same best matches."""
    lines = []
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for s in result["skipped"]:
        groups[(s["dialect"], s["impl"], s["reason"])].append(f"`{s['metric']}`")
    for (dialect, impl, reason), names in groups.items():
        who = sw.OFFICIAL_STORES.get(dialect, "ours") if impl == "official" else "ours"
        lines.append(
            f"- Skipped: {', '.join(names)} with {who} on {DIALECT_NAMES[dialect]}: {reason}."
        )
    for dialect, by_impl in result["vector_top_scores"].items():
        if len(by_impl) == 2:
            pairs = zip(by_impl["ours"], by_impl["official"], strict=True)
            same = all(abs(a - b) < 1e-4 for a, b in pairs)
            lines.append(
                f"- Vector search on {DIALECT_NAMES[dialect]}: the best score of each of the "
                f"{len(sw.QUERIES)} queries is {'the same' if same else '**not** the same'} "
                "in both stores."
            )
    return lines


START = "<!-- store-results:start -->"
END = "<!-- store-results:end -->"


def markdown_section(result: dict[str, Any], rows: list[Row]) -> str:
    env = result["environment"]
    load = result.get("load_average")
    head = (
        f"Run {result['started']} with `{result['command']}` in {result['wall_seconds']:.0f} s "
        f"(repeats: {result['sizes']['repeats']}; commit {env['commit']}; {env['nproc']} CPUs"
        + (f", load average {load[0]:.1f} at start, {load[1]:.1f} at end" if load else "")
        + f"; Python {env['python']}; "
        + ", ".join(f"{k} {v}" for k, v in env["servers"].items())
        + ")."
    )
    unmet = [r for r in rows if r.met is False]
    verdict = (
        "Targets not met: " + ", ".join(f"`{r.metric}` on {r.backend}" for r in unmet) + "."
        if unmet
        else "Every target is met."
    )
    return "\n".join([head, "", markdown_table(rows), "", *notes(result), "", verdict, ""])


def update_doc(path: str, section: str) -> None:
    """Rewrite the text between the store markers; add a ``## Store`` section at the end
    of the document if it has none."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if START not in doc or END not in doc:
        doc = doc.rstrip("\n") + f"\n\n## Store\n\n{START}\n{END}\n"
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}{START}\n{section}\n{END}{tail}")


def run(
    servers: Servers, dialects: tuple[str, ...], sizes: StoreSizes, log: Callable[[str], None]
) -> tuple[dict[str, Any], list[Row]]:
    """The store workloads on ``servers``: the JSON part and the rows."""
    bench = StoreBench(servers, sizes, dialects, log)
    raw = bench.run()
    rows = build_rows(raw, sizes, dialects)
    return result_dict(bench, rows), rows


def print_result(result: dict[str, Any], rows: list[Row]) -> None:
    print_table(rows)
    for line in notes(result):
        print(line.replace("**", "").replace("`", ""))
    met = [r.met for r in rows if r.met is not None]
    if met:
        print(f"store targets met: {sum(met)}/{len(met)}")
