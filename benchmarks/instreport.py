"""Tables of ``python -m benchmarks --instructions`` (:mod:`.instructions`): the ratios
against the targets, where each call's instructions go, and the Markdown section of
``docs/benchmarks.md`` between the ``instruction-results`` markers."""

from __future__ import annotations

from typing import Any

__all__ = ["END", "START", "rows", "section", "split_table", "table", "update_doc"]

START = "<!-- instruction-results:start -->"
END = "<!-- instruction-results:end -->"
#: ours / official at most (sync door); ``async`` is ours async / ours sync.
TARGETS = {
    "put": 0.9,
    "put_writes": 1.0,
    "get_tuple": 0.9,
    "list": 0.9,
    "startup": 1.5,
    "async": 1.15,
}


def rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (dialect, door, call): ours, official, ratio, target, met."""
    by = {(r["dialect"], r["door"], r["impl"]): r["per_call"] for r in records}
    splits = {(r["dialect"], r["door"], r["impl"]): r.get("split", {}) for r in records}
    out = []
    for (dialect, door, impl), per in by.items():
        if impl != "ours":
            continue
        official = by.get((dialect, door, "official"), {})
        sync = by.get((dialect, "sync", "ours"), {})
        for op, ours in per.items():
            row: dict[str, Any] = {"dialect": dialect, "door": door, "call": op, "ours": ours}
            if op in official:
                row["official"] = official[op]
                row["ratio"] = ours / official[op]
                if door in ("sync", "startup"):
                    row["target"] = TARGETS[op]
                theirs = splits.get((dialect, door, "official"), {}).get(op)
                if theirs and op != "startup":
                    # The official saver's own serde and driver work over its total: a
                    # saver that stores or reads the same values through the same driver
                    # does that work too, so its ratio cannot go under this.
                    row["floor"] = (theirs["serde"] + theirs["driver"]) / theirs["total"]
            if door == "async" and op in sync:
                row["async_over_sync"] = ours / sync[op]
            out.append(row)
    return out


def table(rs: list[dict[str, Any]], old: dict[Any, dict[str, Any]] | None = None) -> str:
    """The rows as a Markdown table (with ``old``: an earlier run's ratio beside each)."""
    from .backends import DIALECT_NAMES

    old = old or {}
    lines = [
        "| backend | door | call | ours | official | ours / official | target "
        "| floor: their serde + driver / their total | before | ours async / sync |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rs:
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else ""
        target = f"<= {r['target']}" if "target" in r else ""
        if "target" in r:
            ratio = f"**{ratio}**" if r["ratio"] <= r["target"] else f"{ratio} (missed)"
        a = r.get("async_over_sync")
        aos = ""
        if a is not None:
            aos = f"{a:.2f}x" if a <= TARGETS["async"] else f"{a:.2f}x (missed)"
        floor = f"{r['floor']:.2f}x" if "floor" in r else ""
        was = old.get((r["dialect"], r["door"], r["call"]))
        then = ""
        if was is not None:
            then = f"{was['ratio']:.2f}x" if "ratio" in was else f"{was['ours']:,}"
        name = DIALECT_NAMES[r["dialect"]]
        lines.append(
            f"| {name} | {r['door']} | {r['call']} | {r['ours']:,} "
            f"| {r['official']:,} | {ratio} | {target} | {floor} | {then} | {aos} |"
            if "official" in r
            else f"| {name} | {r['door']} | {r['call']} | {r['ours']:,} | | | | | {then} | {aos} |"
        )
    return "\n".join(lines)


def split_table(records: list[dict[str, Any]]) -> str:
    """Where each call's instructions go (:mod:`.cgsplit`), ours and official, sync door."""
    from .backends import DIALECT_NAMES

    lines = [
        "| backend | call | saver | total | serde | driver | rest (Python: saver, "
        "SQLAlchemy, LangGraph) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in records:
        if r["door"] != "sync":
            continue
        for op, p in r["split"].items():
            lines.append(
                f"| {DIALECT_NAMES[r['dialect']]} | {op} | {r['impl']} | {p['total']:,} "
                f"| {p['serde']:,} | {p['driver']:,} | {p['rest']:,} |"
            )
    return "\n".join(lines)


def section(result: dict[str, Any], before: dict[str, Any] | None = None) -> str:
    """The Markdown section of a run (and of an earlier run beside it)."""
    rs = rows(result["records"])
    earlier = rows(before["records"]) if before else []
    old = {(r["dialect"], r["door"], r["call"]): r for r in earlier}
    lines = [
        f"`{result['command'].strip()}`, {result['started']}, {result['wall_seconds']} s; "
        f"calls a segment: {', '.join(f'{k} {v}' for k, v in result['calls'].items())}.",
        "",
        table(rs, old),
        "",
        "Where the instructions of a call go (sync door; serde: the serializer's extension "
        "with the Python callbacks it makes; driver: the database driver's C code; the "
        "rest is Python):",
        "",
        split_table(result["records"]),
    ]
    return "\n".join(lines)


def update_doc(path: str, text: str) -> None:
    """Replace the section between :data:`START` and :data:`END` of ``path``."""
    from .report import update_doc as replace_between

    replace_between(path, text, START, END)
