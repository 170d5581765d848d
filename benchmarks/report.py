"""From raw figures to rows of ratios with targets; the table (rich, else plain text), the
JSON and the results section of docs/benchmarks.md; the machine and versions."""

from __future__ import annotations

import os
import platform
import re
import statistics
import subprocess
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

from . import workloads as w
from .backends import DIALECT_NAMES, OFFICIAL_NAMES
from .runner import MODES, NORMAL, Key, Sizes

PACKAGES = (
    "langgraph-checkpoint-sqlalchemy",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "langchain-core",
    "sqlalchemy",
    "alembic",
    "aiosqlite",
    "psycopg",
    "psycopg-pool",
    "pymysql",
    "asyncmy",
)

THROUGHPUT = ("ckpt/s", "calls/s", "invokes/s", "cycles/s", "items/s")
#: The write metrics that SQLite measures twice over: the official saver at our
#: ``synchronous = NORMAL`` (WAL: a commit does not wait for fsync), the same durability
#: promise as ours, in the row shown first; and as it ships (``synchronous = FULL``, a
#: commit waits for fsync), in the row after it.
SQLITE_WRITES = ("put", "put_1mb", "put_writes", "delete", "graph", "short_lived", "workers")
#: Backend suffixes of those two rows.
SAME_PROMISE = ", same promise"
THEIRS_FULL = ", theirs FULL"

#: ``(metric, dialect) -> (op, threshold, on)``: ``on`` is "ratio" (ours / reference) or
#: "value" (ours alone). Per-mode metrics apply to both sync and async.
TARGETS: dict[tuple[str, str], tuple[str, float, str]] = {
    # The hot path: no row slower than the official twin, and these margins (SQLite
    # write rows: against SqliteSaver at its default synchronous = FULL).
    ("put", "sqlite"): (">=", 1.5, "ratio"),
    ("put", "postgres"): (">=", 1.3, "ratio"),
    ("put_writes", "sqlite"): (">=", 1.2, "ratio"),
    ("put_writes", "postgres"): (">=", 1.2, "ratio"),
    ("get_latest_short", "sqlite"): ("<=", 0.8, "ratio"),
    ("get_id_short", "sqlite"): ("<=", 0.8, "ratio"),
    ("get_latest_short", "postgres"): ("<=", 0.8, "ratio"),
    ("get_id_short", "postgres"): ("<=", 0.8, "ratio"),
    ("get_latest_long", "sqlite"): ("<=", 1.0, "ratio"),
    ("get_id_long", "sqlite"): ("<=", 1.0, "ratio"),
    ("get_latest_long", "postgres"): ("<=", 0.3, "ratio"),
    ("get_id_long", "postgres"): ("<=", 0.3, "ratio"),
    ("list_thread_short", "sqlite"): ("<=", 1.0, "ratio"),
    ("list_thread_short", "postgres"): ("<=", 1.0, "ratio"),
    ("list_thread_long", "sqlite"): ("<=", 1.0, "ratio"),
    ("list_thread_long", "postgres"): ("<=", 1.0, "ratio"),
    ("list_global", "sqlite"): ("<=", 0.1, "ratio"),
    ("list_global", "postgres"): ("<=", 1.0, "ratio"),
    ("list_filter", "sqlite"): ("<=", 0.5, "ratio"),
    ("delete", "sqlite"): ("<=", 1.0, "ratio"),
    ("delete", "postgres"): ("<=", 1.0, "ratio"),
    ("latest_long_vs_short", "postgres"): ("<=", 1.2, "ratio"),
    ("id_long_vs_short", "postgres"): ("<=", 1.2, "ratio"),
    ("graph", "sqlite"): (">=", 1.3, "ratio"),
    ("graph", "postgres"): (">=", 1.3, "ratio"),
    ("graph_vs_none", "sqlite"): (">=", 1 / 3, "ratio"),
    ("short_lived", "sqlite"): (">=", 1.0, "ratio"),
    ("short_lived", "postgres"): (">=", 1.0, "ratio"),
    ("workers", "postgres"): (">=", 2.0, "ratio"),
    ("put_1mb", "sqlite"): (">=", 1.0, "ratio"),
    ("put_1mb", "postgres"): (">=", 1.0, "ratio"),
    ("list_filter", "postgres"): ("<=", 1.0, "ratio"),
    ("storage", "postgres"): ("<=", 1.0, "ratio"),
    ("storage", "mariadb"): ("<=", 1.5, "ratio"),
    ("big_unchanged", "sqlite"): ("<", 2.0, "value"),
    ("big_unchanged", "postgres"): ("<", 2.0, "value"),
    ("big_unchanged", "mariadb"): ("<", 2.0, "value"),
    ("memory", "sqlite"): ("<", 50.0, "value"),
    ("memory", "postgres"): ("<", 50.0, "value"),
    ("memory", "mariadb"): ("<", 50.0, "value"),
}
#: SQLite write rows at the same promise (SqliteSaver at synchronous = NORMAL as ours):
#: no slower than the official saver.
SAME_PROMISE_TARGETS: dict[str, tuple[str, float, str]] = {
    "put": (">=", 1.0, "ratio"),
    "put_1mb": (">=", 1.0, "ratio"),
    "put_writes": (">=", 1.0, "ratio"),
    "delete": ("<=", 1.0, "ratio"),
    "graph": (">=", 1.0, "ratio"),
    "short_lived": (">=", 1.0, "ratio"),
}


def metrics(s: Sizes) -> list[tuple[str, str, str, str]]:
    """``(metric, label, unit, kind)``; kind "mode" (sync and async rows), "dialect" (one
    row per dialect), or "derived" (computed from other metrics, per mode)."""
    total = f"{s.threads * s.per_thread:,} in {s.threads} threads"
    return [
        ("put", "put, realistic checkpoint", "ckpt/s", "mode"),
        ("put_1mb", "put, realistic + 1 MB value", "ckpt/s", "mode"),
        ("put_writes", "put_writes, 2 writes a call", "calls/s", "mode"),
        ("get_latest_short", f"get_tuple latest, {s.short:,} history", "ms", "mode"),
        ("get_id_short", f"get_tuple by id, {s.short:,} history", "ms", "mode"),
        ("get_latest_long", f"get_tuple latest, {s.long:,} history", "ms", "mode"),
        ("get_id_long", f"get_tuple by id, {s.long:,} history", "ms", "mode"),
        (
            "latest_long_vs_short",
            f"get_tuple latest, ours {s.long:,} / ours {s.short:,} history",
            "ms",
            "derived",
        ),
        (
            "id_long_vs_short",
            f"get_tuple by id, ours {s.long:,} / ours {s.short:,} history",
            "ms",
            "derived",
        ),
        ("list_thread_short", f"list(thread, limit=10), {s.short:,} history", "ms", "mode"),
        ("list_thread_long", f"list(thread, limit=10), {s.long:,} history", "ms", "mode"),
        ("list_global", f"list(None, limit=10), {total}", "ms", "mode"),
        (
            "list_filter",
            f'list(None, filter={{"source": "loop", "step": 5}}), {total}',
            "ms",
            "mode",
        ),
        ("delete", f"delete_thread, {s.delete_size:,} checkpoints", "ms", "mode"),
        ("graph", f"2-node graph, {s.invokes} invokes on one thread", "invokes/s", "mode"),
        ("graph_vs_none", "2-node graph: ours / no checkpointer", "invokes/s", "derived"),
        (
            "short_lived",
            f"short-lived savers: open, {w.SHORT_LIVED_INVOKES} invokes on a new thread, close",
            "cycles/s",
            "mode",
        ),
        (
            "workers",
            f"{s.workers} workers on own threads, {s.worker_puts} puts each",
            "ckpt/s",
            "mode",
        ),
        ("storage", "storage per realistic checkpoint", "bytes", "dialect"),
        (
            "big_unchanged",
            f"unchanged 1 MB channel over {s.unchanged} checkpoints",
            "MB",
            "dialect",
        ),
        ("memory", f"peak heap growth iterating list(None), {total}, sync", "MB", "dialect"),
    ]


@dataclass
class Row:
    metric: str
    label: str
    backend: str
    unit: str
    ours: list[float]
    reference: list[float] = field(default_factory=list)
    reference_name: str = ""
    target: tuple[str, float, str] | None = None
    #: SQLite write rows: the official saver's ``synchronous`` setting, "NORMAL" (the
    #: same promise as ours) or "FULL" (its default); "" elsewhere.
    reference_sync: str = ""

    @property
    def ratios(self) -> list[float]:
        return [o / r for o, r in zip(self.ours, self.reference, strict=False) if r]

    @property
    def judged(self) -> float | None:
        """The figure the target judges: median ratio or median value."""
        if self.target is None:
            return None
        values = self.ratios if self.target[2] == "ratio" else self.ours
        return statistics.median(values) if values else None

    @property
    def met(self) -> bool | None:
        value = self.judged
        if value is None or self.target is None:
            return None
        op, threshold, _ = self.target
        return {">=": value >= threshold, "<=": value <= threshold, "<": value < threshold}[op]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        ratios = self.ratios
        data["ours_median"] = statistics.median(self.ours) if self.ours else None
        data["reference_median"] = statistics.median(self.reference) if self.reference else None
        data["ratio_median"] = statistics.median(ratios) if ratios else None
        data["ratio_min"] = min(ratios) if ratios else None
        data["ratio_max"] = max(ratios) if ratios else None
        data["met"] = self.met
        return data


def build_rows(raw: dict[Key, list[float]], sizes: Sizes, dialects: tuple[str, ...]) -> list[Row]:
    rows: list[Row] = []
    for metric, label, unit, kind in metrics(sizes):
        for dialect in dialects:
            target = TARGETS.get((metric, dialect))
            if kind == "dialect":
                ours = raw.get((metric, dialect, "-", "ours"), [])
                ref = raw.get((metric, dialect, "-", "official"), [])
                name = OFFICIAL_NAMES.get((dialect, "sync"), "")
                if (metric, dialect) == ("storage", "mariadb"):
                    # No twin: judged against our own storage on PostgreSQL.
                    ref = raw.get((metric, "postgres", "-", "ours"), [])
                    name = "ours on PostgreSQL"
                rows.append(
                    Row(
                        metric,
                        label,
                        DIALECT_NAMES[dialect],
                        unit,
                        ours,
                        ref,
                        name if ref else "",
                        target,
                    )
                )
                continue
            for mode in MODES:
                backend = f"{DIALECT_NAMES[dialect]} {mode}"
                if dialect == "sqlite" and metric in SQLITE_WRITES:
                    rows += _sqlite_write_rows(raw, metric, label, unit, mode, target)
                    continue
                if kind == "derived":
                    ours, ref, name = _derived(raw, metric, dialect, mode)
                else:
                    ours = raw.get((metric, dialect, mode, "ours"), [])
                    ref = raw.get((metric, dialect, mode, "official"), [])
                    name = OFFICIAL_NAMES.get((dialect, mode), "") if ref else ""
                if ours:
                    rows.append(Row(metric, label, backend, unit, ours, ref, name, target))
    return rows


def _sqlite_write_rows(
    raw: dict[Key, list[float]],
    metric: str,
    label: str,
    unit: str,
    mode: str,
    full_target: tuple[str, float, str] | None,
) -> list[Row]:
    """A SQLite write metric's two rows: first against the official saver at our
    ``synchronous = NORMAL`` (the same promise), then against it at its default FULL."""
    ours = raw.get((metric, "sqlite", mode, "ours"), [])
    if not ours:
        return []
    name = OFFICIAL_NAMES[("sqlite", mode)]
    normal = raw.get((metric, "sqlite", mode, NORMAL), [])
    ours_normal = ours
    legacy = f"{metric}_same_sync"
    if not normal and (legacy, "sqlite", mode, "official") in raw:
        # A run saved before every write row had both: "<metric>_same_sync" measured
        # ours and SqliteSaver at NORMAL, side by side, apart from the plain metric.
        normal = raw[(legacy, "sqlite", mode, "official")]
        ours_normal = raw.get((legacy, "sqlite", mode, "ours"), ours)
    full = raw.get((metric, "sqlite", mode, "official"), [])
    backend = f"SQLite {mode}"
    rows = []
    if normal:
        rows.append(
            Row(
                metric,
                label,
                backend + SAME_PROMISE,
                unit,
                ours_normal,
                normal,
                f"{name} NORMAL",
                SAME_PROMISE_TARGETS.get(metric),
                "NORMAL",
            )
        )
    full_name = f"{name} FULL" if full else ""
    rows.append(
        Row(metric, label, backend + THEIRS_FULL, unit, ours, full, full_name, full_target, "FULL")
    )
    return rows


def _derived(
    raw: dict[Key, list[float]], metric: str, dialect: str, mode: str
) -> tuple[list[float], list[float], str]:
    if metric == "graph_vs_none":
        return (
            raw.get(("graph", dialect, mode, "ours"), []),
            raw.get(("graph_nocp", "-", mode, "none"), []),
            "no checkpointer",
        )
    kind = "latest" if metric.startswith("latest") else "id"
    return (
        raw.get((f"get_{kind}_long", dialect, mode, "ours"), []),
        raw.get((f"get_{kind}_short", dialect, mode, "ours"), []),
        "ours, short history",
    )


# -- formatting ---------------------------------------------------------------------------------


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit in THROUGHPUT:
        return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"
    if unit == "bytes":
        return f"{value:,.0f}"
    if unit == "MB":
        return f"{value:.1f}" if value >= 10 else f"{value:.2f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def cells(row: Row) -> list[str]:
    """metric, backend, ours, reference, ratio (min-max), target, met?"""
    ratios = row.ratios
    ratio = ""
    if ratios:
        ratio = f"{statistics.median(ratios):.2f}x"
        if len(ratios) > 1:
            ratio += f" ({min(ratios):.2f}-{max(ratios):.2f})"
    ours = fmt(statistics.median(row.ours), row.unit) if row.ours else ""
    ref = fmt(statistics.median(row.reference), row.unit) if row.reference else ""
    if ref and row.reference_name:
        ref += f" {row.reference_name}"
    target, met = "", ""
    if row.target is not None:
        op, threshold, on = row.target
        op_text = {">=": "≥", "<=": "≤", "<": "<"}[op]
        target = (
            f"{op_text} {threshold:.2f}x"
            if on == "ratio"
            else f"{op_text} {threshold:g} {row.unit}"
        )
        met = {True: "yes", False: "**NO**", None: "n/a"}[row.met]
    return [f"{row.label} ({row.unit})", row.backend, ours, ref, ratio, target, met]


HEADERS = [
    "metric (unit)",
    "backend",
    "ours",
    "reference",
    "ratio ours/ref (min-max)",
    "target",
    "met?",
]


def markdown_table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|---|---|---:|---:|---:|---|---|"]
    previous = None
    for row in rows:
        c = cells(row)
        if row.metric == previous:
            c[0] = ""
        previous = row.metric
        lines.append("| " + " | ".join(c) + " |")
    return "\n".join(lines)


def print_table(rows: list[Row]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(markdown_table(rows).replace("**", ""))
        return
    table = Table(title="ours / official: medians of the repeats (min-max of per-repeat ratios)")
    for i, header in enumerate(HEADERS):
        table.add_column(header, justify="right" if 2 <= i <= 4 else "left")
    previous = None
    for row in rows:
        c = cells(row)
        if previous is not None and row.metric != previous:
            table.add_section()
        if row.metric == previous:
            c[0] = ""
        previous = row.metric
        c[6] = {"yes": "[green]yes[/]", "**NO**": "[bold red]NO[/]"}.get(c[6], c[6])
        table.add_row(*c)
    Console(width=200).print(table)


# -- environment --------------------------------------------------------------------------------


def environment(server_versions: dict[str, str]) -> dict[str, Any]:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(ln.split()[1] for ln in f if ln.startswith("MemTotal")))
        memory = f"{kb / 1024**2:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
        "servers": server_versions,
        "packages": versions,
        "commit": _commit(),
    }


def _commit() -> str:
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "migrations"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return sha + (" (src modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# -- docs/benchmarks.md -------------------------------------------------------------------------

START = "<!-- benchmark-results:start -->"
END = "<!-- benchmark-results:end -->"
PLACEHOLDER = "(to be filled by the lead with a profile)"


def markdown_section(result: dict[str, Any], rows: list[Row], old: str) -> str:
    env = result["environment"]
    servers = env["servers"]
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items())
    lines = [
        f"Run {result['started']} with `{result['command']}` in {result['wall_seconds']:.0f} s "
        f"(repeats: {result['sizes']['repeats']}; commit {env['commit']}).",
        "",
        f"Machine: {env['nproc']} CPUs ({env['cpu']}), {env['memory']} RAM, {env['os']}; "
        f"Python {env['python']}, SQLite {servers.get('sqlite', '-')}, "
        f"PostgreSQL {servers.get('postgresql', '-')}, MariaDB {servers.get('mariadb', '-')}.",
        "",
        f"Packages: {packages}.",
        "",
        markdown_table(rows),
        "",
    ]
    unmet = [r for r in rows if r.met is False]
    causes = _old_causes(old)
    if unmet:
        lines += ["### Targets not met", ""]
        for row in unmet:
            key = f"{row.metric} / {row.backend}"
            c = cells(row)
            judged = c[4] if row.target and row.target[2] == "ratio" else f"{c[2]} {row.unit}"
            cause = causes.get(key, PLACEHOLDER)
            lines.append(f"- `{key}`: {row.label}, {judged}, target {c[5]}. Cause: {cause}")
        lines.append("")
    else:
        lines += ["Every target is met.", ""]
    return "\n".join(lines)


def _old_causes(old: str) -> dict[str, str]:
    """Causes already written for unmet targets, kept across runs (keyed by metric/backend).

    Keys of sections written before every SQLite write row had its two rows are renamed:
    ``put_same_sync / SQLite sync`` is ``put / SQLite sync, same promise`` and
    ``put / SQLite sync`` is ``put / SQLite sync, theirs FULL``."""
    causes = {}
    for m in re.finditer(r"^- `([^`]+)`: .*? Cause: (.*)$", old, flags=re.MULTILINE):
        key, cause = m.group(1), m.group(2).strip()
        if cause == PLACEHOLDER:
            continue
        metric, _, backend = key.partition(" / ")
        if backend in ("SQLite sync", "SQLite async"):
            if metric.endswith("_same_sync"):
                key = f"{metric.removesuffix('_same_sync')} / {backend}{SAME_PROMISE}"
            elif metric in SQLITE_WRITES:
                key = f"{key}{THEIRS_FULL}"
        causes[key] = cause
    return causes


def update_doc(path: str, section: str, start: str = START, end: str = END) -> None:
    """Replace the text between the markers ``start`` and ``end`` of ``path`` (the
    benchmark-results ones by default)."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if start not in doc or end not in doc:
        raise SystemExit(f"{path} has no {start} ... {end} markers")
    head, rest = doc.split(start, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}{start}\n{section}\n{end}{tail}")


def old_section(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            doc = f.read()
    except OSError:
        return ""
    if START in doc and END in doc:
        return doc.split(START, 1)[1].split(END, 1)[0]
    return ""
