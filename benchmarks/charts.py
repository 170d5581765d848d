"""``python -m benchmarks --charts [--results DIR] [--out DIR]``: the committed results
(``benchmarks/results/*.json``) drawn as SVG charts for docs/benchmarks.md and the README
(``docs/img/benchmarks/``).

Runs no benchmark and needs no database: it reads the JSON files only. The SVGs are
deterministic, the same JSON gives the same bytes (a fixed salt for the SVG's ids, no date,
the glyphs drawn as paths from the DejaVu Sans that ships with matplotlib), so that a test
can redraw them and compare, and redrawing unchanged figures leaves no diff. Another
matplotlib series than :data:`MATPLOTLIB_SERIES` draws other bytes (the ``test`` extra
pins it). Each ``--markdown`` rewrite of a results section also redraws its chart from the
run's figures (:func:`refresh`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

__all__ = ["CHARTS", "MATPLOTLIB_SERIES", "OUT", "RESULTS", "main", "refresh", "write_all"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
OUT = os.path.join(ROOT, "docs", "img", "benchmarks")
#: The matplotlib series the committed SVGs are drawn with (the ``test`` extra's pin).
MATPLOTLIB_SERIES = "3.11"

# Okabe-Ito: told apart with every common colour-vision deficiency.
BLUE, ORANGE, GREEN = "#0072B2", "#E69F00", "#009E73"
VERMILLION, SKY, PINK, GREY = "#D55E00", "#56B4E9", "#CC79A7", "#777777"
DIALECTS = {"sqlite": ("SQLite", BLUE, "o"), "postgres": ("PostgreSQL", VERMILLION, "s")}
DIALECTS["mariadb"] = ("MariaDB", GREEN, "^")
OFFICIAL = {"sqlite": "SqliteSaver", "postgres": "PostgresSaver"}
#: Units where more is better; their ratios are drawn inverted, as time (or cost) ratios.
#: (The units of report.py, not imported from it: that module imports the savers.)
THROUGHPUT = ("ckpt/s", "calls/s", "invokes/s", "cycles/s", "items/s")
WIDTH = 8.3  # inches: about 800 px at the SVG's 96 px an inch
INK = "#222222"
WHISKER: dict[str, Any] = {"fmt": "none", "ecolor": INK, "elinewidth": 0.8, "capsize": 2}
STYLE: dict[RcKeyType, Any] = {
    "svg.hashsalt": "langgraph-checkpoint-sqlalchemy benchmarks",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 10.5,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.axisbelow": True,
    "grid.color": "#dddddd",
    "legend.frameon": False,
}
METADATA = {"Date": None, "Creator": "python -m benchmarks --charts"}
SAME = "@same"  # a SQLite write row against SqliteSaver at our synchronous = NORMAL

Series = tuple[str, str, dict[str, tuple[float, float, float]]]


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context(STYLE):
        yield


def _figure(height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH, height), layout="constrained")


def _frame(fig: Figure, title: str, *notes: str, legend: list[Any] | None = None) -> None:
    """The title above (over the figure's legend, if any: the layout places an outside
    legend over a suptitle); what was run and how to read the chart below, left-aligned."""
    font = {"size": 12.5, "weight": "bold"}
    if legend:
        fig.legend(
            handles=legend,
            loc="outside upper center",
            ncols=min(len(legend), 5),
            title=title,
            title_fontproperties=font,
            fontsize=8.5,
        )
    else:
        fig.suptitle(title, fontsize=font["size"], fontweight=font["weight"])
    fig.supxlabel("\n".join(notes), fontsize=8.5, color="#333333", ha="left", x=0.01)


def _handles(ax: Axes) -> list[Any]:
    return list(ax.get_legend_handles_labels()[0])


def _run(result: dict[str, Any]) -> str:
    env = result.get("environment", {})
    bits = [f"run {result.get('started', '?')}"]
    if env.get("commit"):
        bits.append(f"commit {env['commit']}")
    if env.get("nproc"):
        bits.append(f"{env['nproc']} CPUs")
    return ", ".join(bits)


def _cost(row: dict[str, Any]) -> tuple[float, float, float] | None:
    """A row's median, min and max ratio ours / reference as a cost (time, bytes): throughput
    ratios inverted, so that below 1 is ours better."""
    med = row.get("ratio_median")
    if med is None or not row.get("reference_name"):
        return None
    lo, hi = row.get("ratio_min") or med, row.get("ratio_max") or med
    if row["unit"] in THROUGHPUT:
        return 1 / med, 1 / hi, 1 / lo
    return med, lo, hi


def _ratio_ticks(ax: Axes, lo: float, hi: float) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fine = hi / lo < 150  # a narrow range: 1-2-5 ticks; else half decades
    ticks = [0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20] if fine else [0.03, 0.1, 0.3, 1, 3, 10]
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if lo <= t <= hi]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}x"))
    ax.grid(axis="x")


def _limits(series: list[Series]) -> tuple[float, float]:
    values = [x for _n, _c, by in series for v in by.values() for x in v]
    lo = min([0.5, *values]) / 2.6
    hi = max([2.0, *values]) * 2.2
    return lo, hi


def _diverging(
    ax: Axes, labels: list[str], series: list[Series], lims: tuple[float, float]
) -> None:
    """Horizontal bars from the parity line at 1.0 to each ratio (log scale), one colour a
    series, min-max whiskers, the median written at the bar's end."""
    n = len(series)
    height = 0.8 / n
    for i, (name, colour, by) in enumerate(series):
        offset = (i - (n - 1) / 2) * height
        for y, key in enumerate(labels):
            if key not in by:
                continue
            med, lo, hi = by[key]
            pos = y + offset
            ax.barh(pos, med - 1, left=1, height=height * 0.92, color=colour, label=name)
            if hi > lo:
                ax.errorbar(med, pos, xerr=[[med - lo], [hi - med]], **WHISKER)
            right = med >= 1
            at = max(hi, med) * 1.07 if right else min(lo, med) / 1.07
            side = "left" if right else "right"
            ax.text(at, pos, f"{med:.2f}x", va="center", ha=side, fontsize=7.5, color=INK)
            name = "_nolegend_"  # one legend entry a series
    ax.axvline(1.0, color=INK, linewidth=1.1)
    ax.set_yticks(range(len(labels)))
    ax.set_ylim(len(labels) - 0.5, -0.5)
    _ratio_ticks(ax, *lims)


# -- a. checkpoint saver ratios (latest.json) -----------------------------------------------

CHECKPOINT_OPS = (
    ("put", "put"),
    ("put_1mb", "put + 1 MB value"),
    ("put_writes", "put_writes, 2 writes"),
    ("get_latest_short", "get_tuple latest, {short:,} history"),
    ("get_latest_long", "get_tuple latest, {long:,} history"),
    ("get_id_long", "get_tuple by id, {long:,} history"),
    ("list_thread_short", "list(thread, limit=10), {short:,}"),
    ("list_thread_long", "list(thread, limit=10), {long:,}"),
    ("list_global", "list(None, limit=10)"),
    ("list_filter", "list(None, filter={{...}})"),
    ("delete", "delete_thread"),
    ("graph", "2-node graph invoke"),
    ("short_lived", "short-lived saver"),
    ("workers", "{workers} workers, put"),
)


def _checkpoint_rows(result: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """``(op, backend) -> row``. A SQLite write row against ``SqliteSaver`` at our
    ``synchronous = NORMAL`` is op ``<metric>@same``: runs of before that split are metric
    ``<metric>_same_sync``, later ones backend ``..., same promise``."""
    out = {}
    for r in result["rows"]:
        metric, backend = r["metric"], r["backend"]
        same = metric.endswith("_same_sync") or backend.endswith(", same promise")
        metric = metric.removesuffix("_same_sync")
        backend = backend.removesuffix(", same promise").removesuffix(", theirs FULL")
        out[(metric + (SAME if same else ""), backend)] = r
    return out


def ratios(result: dict[str, Any]) -> Figure:
    """Chart a: ours / the official saver, time per operation, per backend and door."""
    rows = _checkpoint_rows(result)
    sizes = result.get("sizes", {})
    keys, labels = [], []
    for metric, label in CHECKPOINT_OPS:
        for key in (metric, metric + SAME):
            if any(op == key and _cost(r) for (op, _b), r in rows.items()):
                keys.append(key)
                text = label.format(**sizes) if "{" in label else label
                labels.append(text + (", SqliteSaver NORMAL" if key.endswith(SAME) else ""))
    panels = [d for d in OFFICIAL if any(b.startswith(DIALECTS[d][0]) for _o, b in rows)]
    per_panel: list[list[Series]] = []
    for dialect in panels:
        series: list[Series] = []
        for door, colour in (("sync", BLUE), ("async", ORANGE)):
            by = {}
            for key in keys:
                row = rows.get((key, f"{DIALECTS[dialect][0]} {door}"))
                cost = _cost(row) if row else None
                if cost:
                    by[key] = cost
            series.append((f"{door} door", colour, by))
        per_panel.append(series)
    lims = _limits([s for series in per_panel for s in series])
    fig = _figure(2.2 + 0.36 * len(keys))
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, dialect, series in zip(axes, panels, per_panel, strict=True):
        _diverging(ax, keys, series, lims)
        ax.set_title(f"{DIALECTS[dialect][0]} / {OFFICIAL[dialect]}")
        ax.set_xlabel("time ours / official (log)\n\u2190 ours faster | slower \u2192")
    axes[0].set_yticklabels(labels)
    _frame(
        fig,
        "SQLAlchemySaver against the official savers, time per operation",
        f"Median of {sizes.get('repeats', '?')} interleaved repeats, whiskers min-max; "
        f"{_run(result)}.",
        "Throughput rows (put, put_writes, graph, workers) drawn as time: official rate / ours.",
        "SQLite writes: SqliteSaver as it ships (synchronous=FULL: waits for fsync, ours does "
        "not),",
        "and at NORMAL, as ours, where marked. MariaDB has no official saver (see the table).",
        legend=_handles(axes[0]),
    )
    return fig


# -- b. scale curves (scale.json) ------------------------------------------------------------

SCALE_OPS = (
    ("get_latest", "get_tuple latest"),
    ("get_id", "get_tuple by id"),
    ("list_thread", "list(thread, limit=10)"),
    ("list_global", "list(None, limit=10)"),
    ("filter_user", 'list(None, filter={"user_id": X})'),
    ("list_threads", "list_threads(limit=20)"),
    ("delete_thread", "delete_thread"),
    ("prune", "prune 100 threads"),
)


def _count(n: float) -> str:
    return f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1e3:g}k"


def scale(result: dict[str, Any]) -> Figure:
    """Chart b: milliseconds a call against the store's size, ours and the official saver."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    rows = {(r["dialect"], r["impl"], r["op"]): r for r in result["rows"]}
    ops = [(op, t) for op, t in SCALE_OPS if any(o == op for _d, _i, o in rows)]
    ncols = 2
    nrows = math.ceil(len(ops) / ncols)
    fig = _figure(1.7 + 2.15 * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False).flatten()
    sizes = sorted({int(s) for r in rows.values() for s in r["ms"]})
    for ax, (op, title) in zip(axes, ops, strict=False):
        values = []
        for dialect, (_name, colour, marker) in DIALECTS.items():
            for impl, style, face in (("ours", "-", colour), ("official", "--", "white")):
                row = rows.get((dialect, impl, op))
                if row is None:
                    continue
                xs = sorted(int(s) for s in row["ms"])
                ys = [row["ms"][str(x)] for x in xs]
                values += ys
                line: dict[str, Any] = {"color": colour, "marker": marker, "markerfacecolor": face}
                ax.plot(xs, ys, linestyle=style, markersize=5.5, linewidth=1.6, **line)
        ax.set_title(title, fontsize=9.5)
        ax.set_xscale("log")
        ax.set_xlim(sizes[0] / 1.6, sizes[-1] * 1.6)
        ax.xaxis.set_major_locator(FixedLocator(sizes))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: _count(v)))
        if values and max(values) / min(values) > 20:
            ax.set_yscale("log")
            ax.set_ylabel("ms a call (log)")
        else:
            ax.set_ylim(0, max(values) * 1.25)
            ax.set_ylabel("ms a call")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.grid(True)
    for ax in axes[len(ops) :]:
        ax.set_visible(False)
    for ax in axes[-ncols:]:
        ax.set_xlabel("checkpoints in the store (log)")
    handles = [
        Line2D([], [], color=c, marker=m, linestyle="-", label=n) for n, c, m in DIALECTS.values()
    ]
    handles += [
        Line2D([], [], color=INK, linestyle="-", marker="o", label="ours (filled)"),
        Line2D(
            [],
            [],
            color=INK,
            linestyle="--",
            marker="o",
            markerfacecolor="white",
            label="official saver (dashed, hollow)",
        ),
    ]
    _frame(
        fig,
        "Cost of an operation as the store grows",
        f"Warm reads; median of the calls over {result.get('calls', {}).get('rounds', '?')} "
        f"rounds, every size timed in each; {_run(result)}.",
        "MariaDB: to 300k checkpoints, no official saver. The official savers have no "
        "list_threads or prune.",
        legend=handles,
    )
    return fig


# -- c. store ratios (store.json) ------------------------------------------------------------

STORE_OPS = (
    ("put", "put, one memory"),
    ("get", "get"),
    ("search_filter", "search, filter, all users"),
    ("search_filter_ns", "search, filter, one user"),
    ("search_ns", "search, one user"),
    ("list_namespaces", "list_namespaces"),
    ("fill", "batch of 500 puts"),
    ("vector_search", "vector search, 128 dims"),
    ("vector_fill", "batch of 500 puts, embedded"),
    ("storage", "storage per memory (bytes)"),
)


def store(result: dict[str, Any]) -> Figure:
    """Chart c: ``SQLAlchemyStore`` / ``SqliteStore`` and ``PostgresStore``."""
    rows = {(r["metric"], r["backend"].removesuffix(" sync")): r for r in result["rows"]}
    keys = [m for m, _t in STORE_OPS if any(k[0] == m and _cost(r) for k, r in rows.items())]
    labels = [t for m, t in STORE_OPS if m in keys]
    series: list[Series] = []
    for dialect, colour in (("SQLite", BLUE), ("PostgreSQL", VERMILLION)):
        by = {}
        for key in keys:
            row = rows.get((key, dialect))
            cost = _cost(row) if row else None
            if cost:
                by[key] = cost
        name = f"{dialect}: ours / {'SqliteStore' if dialect == 'SQLite' else 'PostgresStore'}"
        series.append((name, colour, by))
    fig = _figure(2.4 + 0.42 * len(keys))
    ax = fig.subplots()
    _diverging(ax, keys, series, _limits(series))
    ax.set_yticklabels(labels)
    ax.set_xlabel(
        "time (storage: bytes) ours / official store (log)\n"
        "\u2190 ours faster or smaller    official faster or smaller \u2192"
    )
    s = result.get("sizes", {})
    skipped = sorted(
        {f"{s['metric']} on {DIALECTS[s['dialect']][0]}" for s in result.get("skipped", [])}
    )
    _frame(
        fig,
        "SQLAlchemyStore against the official stores",
        f"{s.get('items', 0):,} memories in {s.get('users', 0)} users, sync methods; median of "
        f"{s.get('repeats', '?')} repeats, whiskers min-max;",
        f"{_run(result)}. Throughput rows (put, batches) drawn as time: official rate / ours.",
        "MariaDB has no official store."
        + (f" Not measured: {', '.join(skipped)} (see the table)." if skipped else ""),
        legend=_handles(ax),
    )
    return fig


# -- d. instructions a call (instructions.json) ----------------------------------------------

PARTS: tuple[tuple[str, str, str], ...] = (
    ("serde", BLUE, "serde (ormsgpack + encoders)"),
    ("driver", ORANGE, "driver C code"),
)
PARTS += (("rest", SKY, "rest: Python (saver, SQLAlchemy, LangGraph)"),)


def _bars(ax: Axes, x: float, rec: dict[str, Any], call: str, official: bool) -> float:
    """One saver's bar of a call, stacked by part where the run has the split; its total."""
    style: dict[str, Any] = {"width": 0.75, "linewidth": 0.6, "hatch": "//" if official else None}
    style["edgecolor"] = INK if official else "none"
    total = float(rec["per_call"][call]) / 1e6
    split = rec.get("split", {}).get(call)
    if not split:
        ax.bar(x, total, color=GREY, **style)
        return total
    bottom = 0.0
    for part, colour, text in PARTS:
        ax.bar(x, split[part] / 1e6, bottom=bottom, color=colour, label=text, **style)
        bottom += split[part] / 1e6
    return total


def instructions(result: dict[str, Any]) -> Figure:
    """Chart d: CPU instructions a call, sync door, ours beside the official saver, split
    into serde, driver and the rest where the run has the split."""
    records = {(r["dialect"], r["impl"]): r for r in result["records"] if r["door"] == "sync"}
    dialects = [d for d in OFFICIAL if (d, "ours") in records and (d, "official") in records]
    calls = [
        c
        for c in ("put", "put_writes", "get_tuple", "list")
        if all(c in records[(d, "ours")]["per_call"] for d in dialects)
    ]
    fig = _figure(6.6)
    axes = fig.subplots(2, 2, squeeze=False).flatten()
    for ax, call in zip(axes, calls, strict=False):
        names, positions, top = [], [], 0.0
        for i, dialect in enumerate(dialects):
            x = i * 2.4
            ours = _bars(ax, x, records[(dialect, "ours")], call, False)
            theirs = _bars(ax, x + 1, records[(dialect, "official")], call, True)
            ax.text(x, ours, f"{ours / theirs:.2f}x", ha="center", va="bottom", fontweight="bold")
            names += [
                f"{DIALECTS[dialect][0]}\nours",
                f"{DIALECTS[dialect][0]}\n{OFFICIAL[dialect]}",
            ]
            positions += [x, x + 1]
            top = max(top, ours, theirs)
        ax.set_xticks(positions, names, fontsize=8)
        ax.set_title(call + (" (limit=10, read to the end)" if call == "list" else ""))
        ax.set_ylabel("million instructions a call")
        ax.set_ylim(0, top * 1.15)
        ax.grid(axis="y")
    for ax in axes[len(calls) :]:
        ax.set_visible(False)
    legend: dict[str, Any] = {}
    for handle, text in zip(*axes[0].get_legend_handles_labels(), strict=True):
        legend.setdefault(text, handle)  # a part once, from our (unhatched) bar
    calls_text = ", ".join(f"{k} {v}" for k, v in result.get("calls", {}).items())
    _frame(
        fig,
        "CPU instructions a call, sync door: ours beside the official saver",
        f"Callgrind, both savers at the same durability; calls a segment: {calls_text};",
        f"{_run(result)}. Above our bars: ours / official. The official savers' bars are hatched.",
        legend=list(legend.values()),
    )
    return fig


# -- e. allocations a call (allocations.json) ------------------------------------------------


def allocations(result: dict[str, Any]) -> Figure:
    """Memory blocks a call allocates (gross), ours beside the official saver."""
    rows = [r for r in result["rows"] if r["measure"] == "blocks" and r.get("official")]
    dialects = [d for d in DIALECTS if any(r["dialect"] == d for r in rows)]
    fig = _figure(3.9)
    axes = fig.subplots(1, len(dialects), sharey=True, squeeze=False)[0]
    for ax, dialect in zip(axes, dialects, strict=True):
        mine = [r for r in rows if r["dialect"] == dialect]
        xs = list(range(len(mine)))
        colour = DIALECTS[dialect][1]
        ax.bar([x - 0.2 for x in xs], [r["ours"] for r in mine], 0.4, color=colour, label="ours")
        theirs: dict[str, Any] = {
            "color": "white",
            "edgecolor": colour,
            "hatch": "//",
            "label": OFFICIAL[dialect],
        }
        ax.bar([x + 0.2 for x in xs], [r["official"] for r in mine], 0.4, **theirs)
        for x, r in zip(xs, mine, strict=True):
            ax.text(
                x - 0.2,
                r["ours"],
                f"{r['ratio']:.2f}x",
                ha="center",
                va="bottom",
                fontweight="bold",
            )
        ax.set_xticks(xs, [r["call"] for r in mine])
        ax.set_title(f"{DIALECTS[dialect][0]}: ours / {OFFICIAL[dialect]}")
        ax.legend(loc="upper left", fontsize=8.5)
        ax.grid(axis="y")
    axes[0].set_ylabel("memory blocks allocated a call")
    axes[0].set_ylim(0, max(max(r["ours"], r["official"]) for r in rows) * 1.15)
    _frame(
        fig,
        "Memory blocks a hot-path call allocates, sync door",
        f"Gross: every block allocated, freed or not; {result.get('calls', '?')} calls a segment; "
        f"{_run(result)}.",
        "Above our bars: ours / official.",
    )
    return fig


def long_thread(result: dict[str, Any]) -> Figure:
    """Chart f: bytes stored and instructions a turn against turns (:mod:`.long_report`)."""
    from .long_report import chart

    return chart(result)


# -- files -----------------------------------------------------------------------------------

#: chart name (the SVG is ``<name>.svg``) -> the results file it draws, and how.
CHARTS: dict[str, tuple[str, Callable[[dict[str, Any]], Figure]]] = {
    "ratios": ("latest.json", ratios),
    "scale": ("scale.json", scale),
    "store": ("store.json", store),
    "instructions": ("instructions.json", instructions),
    "allocations": ("allocations.json", allocations),
    "long_thread": ("long_thread.json", long_thread),
}


def _save(name: str, result: dict[str, Any], out: str, fmt: str = "svg") -> str:
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{name}.{fmt}")
    with _style():
        fig = CHARTS[name][1](result)
        if fmt == "svg":
            fig.savefig(path, format="svg", metadata=METADATA)
        else:
            fig.savefig(path, format=fmt, dpi=96)
    return path


def write_all(results: str = RESULTS, out: str = OUT, fmt: str = "svg") -> list[str]:
    """Draw every chart whose results file is in ``results`` into ``out``; return the
    paths written (a chart whose file is missing is left out, with a message)."""
    paths = []
    for name, (filename, _draw) in CHARTS.items():
        source = os.path.join(results, filename)
        if not os.path.exists(source):
            print(f"{name}: no {source}, not drawn")
            continue
        with open(source, encoding="utf-8") as f:
            paths.append(_save(name, json.load(f), out, fmt))
    return paths


def refresh(name: str, result: dict[str, Any], out: str = OUT) -> None:
    """Redraw one chart from a run's figures (a ``--markdown`` rewrite of its section);
    without matplotlib, say so and go on."""
    try:
        import matplotlib  # noqa: F401
    except ModuleNotFoundError:
        print(f"matplotlib is not installed: {name}.svg not redrawn (pip install -e '.[bench]')")
        return
    print(f"Chart: {_save(name, result, out)}")


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks --charts``: draw every chart from the results files."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks --charts", description=__doc__)
    parser.add_argument("--results", default=RESULTS, help="the JSON files (default: %(default)s)")
    parser.add_argument("--out", default=OUT, help="where the charts go (default: %(default)s)")
    parser.add_argument(
        "--format", default="svg", choices=("svg", "png"), help="png: to look at, not to commit"
    )
    args = parser.parse_args(argv)
    try:
        import matplotlib
    except ModuleNotFoundError:
        print("matplotlib is not installed: pip install -e '.[bench]'")
        return 1
    if not matplotlib.__version__.startswith(MATPLOTLIB_SERIES + "."):
        print(
            f"note: matplotlib {matplotlib.__version__}; the committed charts are drawn with "
            f"{MATPLOTLIB_SERIES}.x, other versions draw other bytes"
        )
    for path in write_all(args.results, args.out, args.format):
        print(path)
    return 0
