"""Tables, targets and chart of the long-thread benchmark (:mod:`.long_thread`): the
Markdown section of ``docs/benchmarks.md`` between the ``long-thread-results`` markers and
``docs/img/benchmarks/long_thread.svg``.

The targets are the long-thread goals (docs/benchmarks.md), read as ratios ours /
official at the same turn, printed met or not met: a report, never a test assertion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["END", "START", "chart", "publish", "section", "table", "targets", "update_doc"]

START = "<!-- long-thread-results:start -->"
END = "<!-- long-thread-results:end -->"
INSTRUCTION_TURNS = (10, 50, 100, 200)
WRITTEN_TURNS = (20, 200)
STORED_TURNS = (50, 100, 200)
GRAPHS = {"chat": "chat", "agent": "tool agent"}


def find(result: dict[str, Any], workload: str, dialect: str, impl: str) -> dict[str, Any] | None:
    """The record of (workload, backend, saver), or None."""
    records: list[dict[str, Any]] = result["records"]
    for r in records:
        if (r["workload"], r["dialect"], r["impl"]) == (workload, dialect, impl):
            return r
    return None


def at(record: dict[str, Any], turn: int, key: str) -> Any:
    """``key`` of turn ``turn`` (from 1), None past the record's last turn."""
    turns = record["turns"]
    return turns[turn - 1][key] if 0 < turn <= len(turns) else None


def _mega(n: float | None) -> str:
    return "" if n is None else f"{n / 1e6:.1f} M"


def size(n: float | None) -> str:
    """Bytes as B, kB or MB (decimal)."""
    if n is None:
        return ""
    if n >= 1e6:
        return f"{n / 1e6:.2f} MB"
    return f"{n / 1e3:.1f} kB" if n >= 1e3 else f"{n:.0f} B"


def label(record: dict[str, Any]) -> str:
    """``ours`` or the official saver's name, with the graph it ran."""
    return str(record["saver"]) + (", DeltaChannel graph" if record["delta"] else "")


# -- targets ----------------------------------------------------------------------------------


def _ratio(
    result: dict[str, Any],
    what: str,
    mine: tuple[str, str, str],
    theirs: tuple[str, str, str],
    key: str,
    turn: int,
    limit: float,
) -> dict[str, Any] | None:
    a, b = find(result, *mine), find(result, *theirs)
    if a is None or b is None:
        return None
    turn = min(turn, len(a["turns"]), len(b["turns"]))
    x, y = at(a, turn, key), at(b, turn, key)
    if x is None or y is None or y == 0:
        return None
    return {
        "target": what,
        "dialect": mine[1],
        "at_turn": turn,
        "ours": x,
        "reference": y,
        "reference_name": label(b),
        "ratio": x / y,
        "limit": limit,
        "met": x / y <= limit,
    }


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The long-thread targets the run can judge, each as a ratio with met / not met
    (a turn past the run's last turn is judged at its last turn, and says so)."""
    out: list[dict[str, Any] | None] = []
    names = {"sqlite": "SqliteSaver", "postgres": "PostgresSaver"}
    for d in ("sqlite", "postgres"):
        out.append(
            _ratio(
                result,
                f"stored after 200 turns <= 1/20 of {names[d]}'s",
                ("chat", d, "ours"),
                ("chat", d, "official"),
                "stored",
                200,
                0.05,
            )
        )
    out.append(
        _ratio(
            result,
            "stored after 200 turns <= 1.5x SqliteSaver's with a DeltaChannel graph",
            ("chat", "sqlite", "ours"),
            ("chat_delta", "sqlite", "official"),
            "stored",
            200,
            1.5,
        )
    )
    for d in ("sqlite", "postgres", "mariadb"):
        r = find(result, "chat", d, "ours")
        if r is None:
            continue
        n = len(r["turns"])
        late, early = min(200, n), min(20, max(1, n // 2))
        x, y = at(r, late, "written"), at(r, early, "written")
        out.append(
            {
                "target": f"bytes written at turn {late} <= 1.5x turn {early}'s",
                "dialect": d,
                "at_turn": late,
                "ours": x,
                "reference": y,
                "reference_name": f"ours at turn {early}",
                "ratio": x / y,
                "limit": 1.5,
                "met": x / y <= 1.5,
            }
        )
    for d, late_limit in (("sqlite", 0.85), ("postgres", 0.95)):
        for turn, limit in ((200, late_limit), (10, 1.1)):
            out.append(
                _ratio(
                    result,
                    f"instructions a turn at turn {turn} <= {limit}x {names[d]}'s",
                    ("chat", d, "ours"),
                    ("chat", d, "official"),
                    "instructions",
                    turn,
                    limit,
                )
            )
    out.append(
        _ratio(
            result,
            "DeltaChannel graph: instructions a turn at turn 10 <= 1.2x SqliteSaver's",
            ("chat_delta", "sqlite", "ours"),
            ("chat_delta", "sqlite", "official"),
            "instructions",
            10,
            1.2,
        )
    )
    mine, theirs = (
        find(result, "chat", "postgres", "ours"),
        find(result, "chat", "postgres", "official"),
    )
    if mine and theirs and mine["final_get_tuple"] and theirs["final_get_tuple"]:
        x, y = mine["final_get_tuple"]["total"], theirs["final_get_tuple"]["total"]
        out.append(
            {
                "target": f"get_tuple of the {mine['messages']}-message thread <= 1.05x "
                "PostgresSaver's",
                "dialect": "postgres",
                "at_turn": len(mine["turns"]),
                "ours": x,
                "reference": y,
                "reference_name": "PostgresSaver",
                "ratio": x / y,
                "limit": 1.05,
                "met": x / y <= 1.05,
            }
        )
    return [t for t in out if t is not None]


# -- tables -----------------------------------------------------------------------------------


def _upto(turns: tuple[int, ...], last: int) -> list[int]:
    """The turns of ``turns`` a run of ``last`` turns has, and ``last`` if not among them."""
    out = [t for t in turns if t <= last]
    return out if last in out else [*out, last]


def table(result: dict[str, Any]) -> str:
    """One row a (workload, backend, saver): instructions a turn, bytes written a turn,
    bytes stored, at the issue's turns."""
    from .backends import DIALECT_NAMES

    last = max(len(r["turns"]) for r in result["records"])
    instr, written, stored = (
        _upto(ts, last) for ts in (INSTRUCTION_TURNS, WRITTEN_TURNS, STORED_TURNS)
    )
    head = (
        ["graph", "backend", "saver"]
        + [f"instructions, turn {t}" for t in instr]
        + [f"written, turn {t}" for t in written]
        + [f"stored after {t}" for t in stored]
        + ["on disk at the end"]
    )
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|" + "---:|" * (len(head) - 3)]
    order = {w: i for i, w in enumerate(("chat", "chat_delta", "agent", "agent_delta"))}
    records = sorted(
        result["records"],
        key=lambda r: (order.get(r["workload"], 9), r["dialect"] != "sqlite", r["impl"] != "ours"),
    )
    for r in records:
        cells = [GRAPHS[r["graph"]], DIALECT_NAMES[r["dialect"]], label(r)]
        cells += [_mega(at(r, t, "instructions")) for t in instr]
        cells += [size(at(r, t, "written")) for t in written]
        cells += [size(at(r, t, "stored")) for t in stored]
        cells.append(size(r.get("disk_bytes")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets_table(rows: list[dict[str, Any]]) -> str:
    from .backends import DIALECT_NAMES

    lines = [
        "| target | backend | at turn | ours | reference | ours / reference | verdict |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for t in rows:
        instr = "instructions" in t["target"] or "get_tuple" in t["target"]
        show = (lambda n: f"{n:,}") if instr else size
        verdict = "met" if t["met"] else "**not met**"
        lines.append(
            f"| {t['target']} | {DIALECT_NAMES[t['dialect']]} | {t['at_turn']} "
            f"| {show(t['ours'])} | {show(t['reference'])} ({t['reference_name']}) "
            f"| {t['ratio']:.3f}x (<= {t['limit']}) | {verdict} |"
        )
    return "\n".join(lines)


def split_table(result: dict[str, Any]) -> str:
    """Where the last turn's instructions go (:mod:`.cgsplit`), plain graphs."""
    from .backends import DIALECT_NAMES

    lines = [
        "| graph | backend | saver | turn | total | serde | driver | rest (Python) "
        "| get_tuple of the thread |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["records"]:
        last = r["turns"][-1]
        if last["split"] is None:
            continue
        s, g = last["split"], r.get("final_get_tuple") or {}
        lines.append(
            f"| {GRAPHS[r['graph']]} | {DIALECT_NAMES[r['dialect']]} | {label(r)} "
            f"| {last['turn']} | {s['total']:,} | {s['serde']:,} | {s['driver']:,} "
            f"| {s['rest']:,} | {g.get('total', 0):,} |"
        )
    return "\n".join(lines)


def _counted(result: dict[str, Any]) -> str:
    from .backends import DIALECT_NAMES

    seen: dict[str, list[str]] = {}
    for r in result["records"]:
        name = f"{r['saver']} ({DIALECT_NAMES[r['dialect']]})"
        seen.setdefault(", ".join(f"`{c}`" for c in r["value_columns"]), []).append(name)
    return "\n".join(f"- {', '.join(dict.fromkeys(v))}: {k}" for k, v in seen.items())


def section(result: dict[str, Any]) -> str:
    """The Markdown section of a run."""
    calls: dict[str, dict[str, int]] = {}
    for r in result["records"]:
        if r["workload"] in ("chat", "agent") and r["impl"] == "ours" and len(r["turns"]) > 1:
            calls[GRAPHS[r["graph"]]] = r["turns"][1]["calls"]
    env = result.get("environment", {})
    lines = [
        f"`{result['command'].strip()}`, {result['started']}, {result['wall_seconds']} s, "
        f"commit {env.get('commit', '?')}; turns: "
        + ", ".join(f"{w} {n}" for w, n in result["workloads"].items())
        + ("" if result["instructions"] else "; instructions not counted (no callgrind)")
        + ".",
        "",
        table(result),
        "",
        "Targets (linear-cost long threads), ours / reference at the same turn:",
        "",
        targets_table(result.get("targets") or targets(result)),
        "",
        "Saver calls a turn (LangGraph's sync loop, counted by the probe): "
        + "; ".join(f"{g}: {', '.join(f'{m} {n}' for m, n in c.items())}" for g, c in calls.items())
        + ".",
        "",
        "Bytes stored: the sum of the lengths of these columns of the saver's tables:",
        "",
        _counted(result),
    ]
    if result["instructions"]:
        lines += [
            "",
            "Where the last turn's instructions go, and one `get_tuple` of the finished "
            "thread's latest checkpoint:",
            "",
            split_table(result),
        ]
    return "\n".join(lines)


def update_doc(path: str, text: str) -> None:
    """Replace the section between :data:`START` and :data:`END` of ``path``."""
    from .report import update_doc as replace_between

    replace_between(path, text, START, END)


def publish(result: dict[str, Any], doc: str, *, markdown: bool) -> int:
    """Print a run's section; with ``markdown`` rewrite the doc's and redraw the chart."""
    text = section(result)
    print(text)
    if markdown:
        from .charts import refresh

        update_doc(doc, text)
        print(f"Markdown: {doc}")
        refresh("long_thread", result)
    return 0


# -- the chart --------------------------------------------------------------------------------


def chart(result: dict[str, Any]) -> Figure:
    """Bytes stored (top) and instructions a turn (bottom) against turns, one column a
    graph, one line a (backend, saver), dashed for the DeltaChannel graph."""
    from matplotlib.lines import Line2D

    from .charts import BLUE, GREEN, ORANGE, SKY, VERMILLION, _figure, _frame, _run

    colours = {
        ("sqlite", "ours"): BLUE,
        ("sqlite", "official"): SKY,
        ("postgres", "ours"): VERMILLION,
        ("postgres", "official"): ORANGE,
        ("mariadb", "ours"): GREEN,
    }
    graphs = [g for g in GRAPHS if any(r["graph"] == g for r in result["records"])]
    rows = 2 if result["instructions"] else 1
    fig = _figure(3.3 * rows + 1.4)
    axes = fig.subplots(rows, len(graphs), squeeze=False)
    from .backends import DIALECT_NAMES

    legend: dict[str, Any] = {}
    for col, graph in enumerate(graphs):
        for r in result["records"]:
            if r["graph"] != graph:
                continue
            colour = colours[(r["dialect"], r["impl"])]
            style = {"color": colour, "linewidth": 1.2, "linestyle": "--" if r["delta"] else "-"}
            xs = [t["turn"] for t in r["turns"]]
            axes[0][col].plot(xs, [t["stored"] / 1e6 for t in r["turns"]], **style)
            if rows == 2:
                ys = [(t["instructions"] or 0) / 1e6 for t in r["turns"]]
                axes[1][col].plot(xs, ys, **style)
            name = f"{DIALECT_NAMES[r['dialect']]} ours" if r["impl"] == "ours" else r["saver"]
            legend.setdefault(name, Line2D([], [], color=colour, linewidth=1.6, label=name))
        axes[0][col].set_title(f"{GRAPHS[graph]}: values stored")
        axes[0][col].set_ylabel("MB of values stored")
        if rows == 2:
            axes[1][col].set_title(f"{GRAPHS[graph]}: instructions a turn")
            axes[1][col].set_ylabel("million instructions of the saver calls")
        for row in axes:
            row[col].set_xlabel("turn")
            row[col].grid(True)
            row[col].set_xlim(left=0)
            row[col].set_ylim(bottom=0)
    legend["DeltaChannel graph"] = Line2D(
        [], [], color="#222222", linestyle="--", linewidth=1.2, label="DeltaChannel graph"
    )
    _frame(
        fig,
        "Long threads: what each turn stores and costs",
        "One thread, one invoke a turn, sync door; instructions by callgrind inside the saver's "
        "methods only (the client process);",
        f"bytes: the saver's value columns (see the table). {_run(result)}.",
        legend=list(legend.values()),
    )
    return fig
