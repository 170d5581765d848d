"""``python -m benchmarks --scale``: the cost of each operation as a store grows.

Per dialect and size (10,000, 100,000 and 1,000,000 checkpoints; MariaDB to 300,000), one
store per saver (ours, and the official SqliteSaver / PostgresSaver beside it), loaded
through :mod:`.scaleload`. All stores exist at once and are timed side by side in rounds
(:class:`Scale`); every operation is timed call by call, warm (untimed calls first), the
savers alternating; the cost is the median call over the rounds. Only public saver
methods are called, so whatever HEAD's saver does is what is measured. Growth factor =
cost at the largest size / cost at the first.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from .backends import DIALECT_NAMES, DIALECTS, OFFICIAL_NAMES, Servers, has_official, open_sync
from .scaleload import PER_THREAD, Replicator, thread_id, user_id, write_template

FULL_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (2_000, 20_000)
MARIADB_MAX = 300_000

#: ``(op, label, ours only, growth target)``.
OPS: tuple[tuple[str, str, bool, float], ...] = (
    ("get_latest", "get_tuple latest", False, 1.5),
    ("get_id", "get_tuple by id", False, 1.5),
    ("list_thread", "list(thread, limit=10)", False, 1.5),
    ("list_global", "list(None, limit=10)", False, 1.5),
    ("list_threads", "list_threads(limit=20)", True, 1.5),
    ("delete_thread", "delete_thread (a fresh thread each call)", False, 1.5),
    ("prune", "prune {batch} threads, keep_latest", True, 1.5),
    ("filter_user", 'list(None, filter={"user_id": X}, limit=10), 1 thread matches', False, 2.0),
)


#: Untimed calls before the timed ones of a read operation (delete and prune: 1).
WARM = 3

#: The operations that read one thread: each has its own sample threads, and each call is
#: made twice on its thread, first *cold* (the thread's first read since the store was
#: loaded: its pages come from the disk, as an old thread's do) and then *warm* (read just
#: before, its pages cached, as a thread that an application is using). Both are kept;
#: the warm figure is the one judged (see docs/benchmarks.md, "Cold and warm").
READS = ("get_latest", "get_id", "list_thread", "filter_user")


@dataclass(frozen=True)
class Calls:
    """Timed calls per operation, saver and size (at most; ``budget`` seconds cut it short),
    spread over ``rounds``."""

    reads: int = 60  # per read operation (:data:`READS`; warm-up calls included)
    scans: int = 30  # list(None), list_threads, the filter
    deletes: int = 20
    prunes: int = 3  # calls of 100 threads each
    prune_batch: int = 100
    budget: float = 10.0  # seconds per operation, impl and size (at least 3 calls a round)
    rounds: int = 3  # every size is timed in every round


FULL_CALLS = Calls()
QUICK_CALLS = Calls(reads=16, scans=10, deletes=5, prunes=2, prune_batch=30, budget=5.0, rounds=2)


def sizes_for(dialect: str, base: tuple[int, ...], cap: int | None) -> list[int]:
    """The sizes (checkpoints) of ``dialect``: ``base`` capped at ``cap`` (and at 300,000 on
    MariaDB); a cap between two sizes becomes the last size."""
    limit = min(cap or base[-1], base[-1], MARIADB_MAX if dialect == "mariadb" else base[-1])
    sizes = [s for s in base if s <= limit]
    if not sizes or sizes[-1] < limit:
        sizes.append(limit)
    return sizes


def impls(dialect: str) -> tuple[str, ...]:
    return ("ours", "official") if has_official(dialect) else ("ours",)


class Scale:
    """The run: ``raw[(dialect, impl, op)][size]`` = per-call seconds; ``load`` the loading
    times.

    Every size has its own store per saver, and all of them exist at once: the sizes are
    timed side by side in rounds (each round times every operation at every size, the
    order of the sizes turning from round to round), so that what the machine does over
    the run's half hour (the page cache, other processes, the server's background work)
    falls on every size alike instead of on whichever size was timed last.

    Args:
        servers: Where the stores live.
        sizes: Per dialect, the sizes in checkpoints (multiples of 10).
        calls: How many calls to time.
        log: Progress sink.
    """

    def __init__(
        self,
        servers: Servers,
        sizes: dict[str, list[int]],
        calls: Calls,
        log: Callable[[str], None],
    ) -> None:
        self.servers = servers
        self.sizes = sizes
        self.calls = calls
        self.log = log
        self.raw: dict[tuple[str, str, str], dict[int, list[float]]] = {}
        #: The cold calls of :data:`READS`, as ``raw`` (the op named ``<op>_cold``).
        self.cold: dict[tuple[str, str, str], dict[int, list[float]]] = {}
        self.load: list[dict[str, Any]] = []

    def run(self) -> None:
        for dialect in self.sizes:
            self.dialect(dialect)

    def dialect(self, dialect: str) -> None:
        reps: dict[tuple[int, str], Replicator] = {}
        try:
            for size in self.sizes[dialect]:
                for impl in impls(dialect):
                    reps[size, impl] = self.grow(dialect, size, impl)
            t0 = time.perf_counter()
            for rep in reps.values():
                rep.settle()
            self.log(
                f"{dialect}: load written out (CHECKPOINT / sync) in "
                f"{time.perf_counter() - t0:.1f} s"
            )
            self.measure(dialect, reps)
        finally:
            for rep in reps.values():
                rep.close()
                self.servers.drop(rep.store)

    def grow(self, dialect: str, size: int, impl: str) -> Replicator:
        """A new store of ``impl`` holding ``size`` checkpoints (the stores grow one after
        the other: side by side, two loaders fight over the GIL and both go slower)."""
        store = self.servers.new_store(dialect)
        t0 = time.perf_counter()
        write_template(impl, store)
        rep = Replicator(store, self.log)
        self.log(
            f"{dialect}/{impl}: template thread in {time.perf_counter() - t0:.2f} s, "
            f"{rep.rows_per_thread} rows a thread in {', '.join(t.name for t in rep.tables)}; "
            f"growing to {size:,} checkpoints"
        )
        seconds = rep.grow(size // PER_THREAD)
        added = size - PER_THREAD
        self.load.append(
            {
                "dialect": dialect,
                "impl": impl,
                "size": size,
                "added": added,
                "seconds": round(seconds, 2),
                "ckpt_per_s": round(added / seconds) if seconds else None,
            }
        )
        return rep

    def samples(self, size: int) -> list[_Sample]:
        """One :class:`_Sample` a round for a store of ``size``: random threads, no thread
        in two samples (a thread deleted or pruned is never read again)."""
        c = self.calls
        threads = size // PER_THREAD
        per = _split(c.reads, c.rounds), _split(c.deletes, c.rounds), _split(c.prunes, c.rounds)
        scans = _split(c.scans, c.rounds)[0]
        need = sum(
            len(READS) * r + d + 1 + (p + 1) * c.prune_batch for r, d, p in zip(*per, strict=True)
        )
        if threads - 1 < need:
            raise ValueError(f"{size:,} checkpoints: too few threads for {need} sample threads")
        chosen = random.Random(size).sample(range(1, threads), need)
        out = []
        for reads, deletes, prunes in zip(*per, strict=True):
            readers: dict[str, list[int]] = {}
            for op in READS:
                readers[op], chosen = chosen[:reads], chosen[reads:]
            victims, chosen = chosen[: deletes + 1], chosen[deletes + 1 :]
            cut = (prunes + 1) * c.prune_batch
            rest, chosen = chosen[:cut], chosen[cut:]
            pruned = [rest[k : k + c.prune_batch] for k in range(0, len(rest), c.prune_batch)]
            out.append(_Sample(readers, victims, pruned, scans))
        return out

    def measure(self, dialect: str, reps: dict[tuple[int, str], Replicator]) -> None:
        c = self.calls
        sizes = self.sizes[dialect]
        samples = {size: self.samples(size) for size in sizes}
        with ExitStack() as stack:
            savers = {
                key: stack.enter_context(open_sync(key[1], rep.store)) for key, rep in reps.items()
            }
            for n in range(c.rounds):
                order = sizes[n % len(sizes) :] + sizes[: n % len(sizes)]
                for op, _label, ours_only, _target in OPS:
                    for size in order:
                        for impl in impls(dialect)[:: 1 if n % 2 == 0 else -1]:
                            if ours_only and impl != "ours":
                                continue
                            warm = 1 if op in ("delete_thread", "prune") else WARM
                            rep, sample = reps[size, impl], samples[size][n]
                            calls = op_calls(op, savers[size, impl], rep, sample)
                            cold: list[float] | None = [] if op in READS else None
                            if op in ("delete_thread", "prune"):
                                rep.quiesce()
                            seconds = _time(calls, c.budget / c.rounds, warm, cold)
                            got = self.raw.setdefault((dialect, impl, op), {})
                            got.setdefault(size, []).extend(seconds)
                            if cold is not None:
                                was = self.cold.setdefault((dialect, impl, f"{op}_cold"), {})
                                was.setdefault(size, []).extend(cold)
                            self.log(
                                f"{dialect} round {n + 1} {size:>9,} {impl:8} {op:14} "
                                f"{statistics.median(seconds) * 1000:9.2f} ms "
                                f"({len(seconds)} calls)"
                            )


def _split(total: int, rounds: int) -> list[int]:
    """``total`` calls over ``rounds`` rounds (at least 1 a round)."""
    return [max(1, total // rounds + (1 if k < total % rounds else 0)) for k in range(rounds)]


@dataclass(frozen=True)
class _Sample:
    """Thread indexes of one size and round: ``readers`` (per read operation of
    :data:`READS`: read, never changed), ``victims`` (one ``delete_thread`` each),
    ``pruned`` (batches for ``prune``); ``scans``: calls of the operations that take no
    thread (and of the filter)."""

    readers: dict[str, list[int]]
    victims: list[int]
    pruned: list[list[int]]
    scans: int


def _config(i: int, checkpoint_id: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread_id(i), "checkpoint_ns": ""}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def op_calls(op: str, saver: Any, rep: Replicator, sample: _Sample) -> list[Callable[[], Any]]:
    """The calls of ``op`` on ``saver`` (the first is the warm-up); public methods only."""
    s = sample
    if op == "get_latest":
        return [partial(saver.get_tuple, _config(i)) for i in s.readers[op]]
    if op == "get_id":
        return [
            partial(saver.get_tuple, _config(i, rep.checkpoint_id(i, 5))) for i in s.readers[op]
        ]
    if op == "list_thread":
        return [partial(_drain, saver.list, _config(i), limit=10) for i in s.readers[op]]
    if op == "list_global":
        return [partial(_drain, saver.list, None, limit=10)] * (s.scans + WARM)
    if op == "list_threads":
        return [partial(saver.list_threads, limit=20)] * (s.scans + WARM)
    if op == "delete_thread":
        return [partial(saver.delete_thread, thread_id(i)) for i in s.victims]
    if op == "prune":
        return [
            partial(saver.prune, [thread_id(i) for i in batch], strategy="keep_latest")
            for batch in s.pruned
        ]
    if op == "filter_user":
        return [
            partial(_one_thread, saver, {"user_id": user_id(i)})
            for i in s.readers[op][: s.scans + WARM]
        ]
    raise ValueError(op)


def _drain(method: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
    return list(method(*args, **kwargs))


def _one_thread(saver: Any, filter: dict[str, Any]) -> None:
    """``list(None, filter=..., limit=10)``, checked to give one thread's 10 checkpoints."""
    found = list(saver.list(None, filter=filter, limit=10))
    threads = {t.config["configurable"]["thread_id"] for t in found}
    if len(found) != PER_THREAD or len(threads) != 1:
        raise AssertionError(f"filter {filter} gave {len(found)} tuples of {len(threads)} threads")


def _time(
    calls: list[Callable[[], Any]], budget: float, warm: int = 1, cold: list[float] | None = None
) -> list[float]:
    """Make the first ``warm`` calls untimed (fewer if they take over ``budget / 4``), then
    time the rest until ``budget`` seconds (at least 3 calls, and at least one whatever
    ``warm`` asks). With ``cold``: each timed call is made twice, the first time appended
    to ``cold``, the second returned (a read of one thread, cold then warm)."""
    warm = min(warm, len(calls) - 1)
    t_warm = time.perf_counter() + budget / 4
    for call in calls[:warm]:
        call()
        if time.perf_counter() > t_warm:
            break  # a slow operation (seconds a call): one warm-up is enough
    seconds: list[float] = []
    t_end = time.perf_counter() + budget
    for call in calls[warm:]:
        if cold is not None:
            t0 = time.perf_counter()
            call()
            cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - t0)
        if len(seconds) >= 3 and time.perf_counter() > t_end:
            break
    return seconds


# -- results -----------------------------------------------------------------------------------


def rows(
    raw: dict[tuple[str, str, str], dict[int, list[float]]], calls: Calls
) -> list[dict[str, Any]]:
    """One row per (dialect, op, impl): median ms per size, growth and verdict (ours only)."""
    out = []
    for (dialect, impl, op), by_size in raw.items():
        base = op.removesuffix("_cold")
        _, label, _, goal = next(o for o in OPS if o[0] == base)
        target: float | None = goal
        if op != base:  # shown, not judged: see READS
            label, target = f"{label}, cold (the thread's first read)", None
        ms = {size: statistics.median(v) * 1000 for size, v in sorted(by_size.items())}
        first, last = ms[min(ms)], ms[max(ms)]
        growth = last / first if first else None
        judged = impl == "ours" and target is not None and len(ms) > 1 and growth is not None
        out.append(
            {
                "dialect": dialect,
                "impl": impl,
                "op": op,
                "label": label.replace("{batch}", str(calls.prune_batch)),
                "ms": {str(s): round(v, 3) for s, v in ms.items()},
                "calls": {str(s): len(v) for s, v in sorted(by_size.items())},
                "growth": round(growth, 2) if growth is not None else None,
                "target": target if impl == "ours" else None,
                "pass": (growth <= target) if judged and growth and target else None,
            }
        )
    order = {o[0]: n for n, o in enumerate(OPS)}
    return sorted(
        out,
        key=lambda r: (
            DIALECTS.index(r["dialect"]),
            order[r["op"].removesuffix("_cold")],
            r["op"].endswith("_cold"),
            r["impl"] != "ours",
        ),
    )


def saver_name(dialect: str, impl: str) -> str:
    return "ours" if impl == "ours" else OFFICIAL_NAMES[(dialect, "sync")]


def tables(result_rows: list[dict[str, Any]]) -> str:
    """Markdown: a table per dialect, operation x size (ms), growth, target, verdict."""
    parts = []
    for dialect in dict.fromkeys(r["dialect"] for r in result_rows):
        mine = [r for r in result_rows if r["dialect"] == dialect]
        sizes = sorted({int(s) for r in mine for s in r["ms"]})
        head = ["operation", "saver", *(f"{_size(s)} (ms)" for s in sizes)]
        head += [f"growth {_size(sizes[-1])}/{_size(sizes[0])}", "target", "met"]
        lines = [f"**{DIALECT_NAMES[dialect]}**", "", "| " + " | ".join(head) + " |"]
        lines.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(sizes) + 1) + ["---"] * 2) + "|")
        for r in mine:
            cells = [r["label"], saver_name(dialect, r["impl"])]
            cells += [f"{r['ms'][str(s)]:.2f}" if str(s) in r["ms"] else "-" for s in sizes]
            cells.append(f"{r['growth']:.2f}x" if r["growth"] is not None else "-")
            cells.append(f"<= {r['target']}x" if r["target"] else "")
            cells.append({True: "PASS", False: "**FAIL**", None: ""}[r["pass"]])
            lines.append("| " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k"


def load_table(load: list[dict[str, Any]]) -> str:
    lines = [
        "| dialect | saver | to size | added | seconds | ckpt/s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in load:
        lines.append(
            f"| {DIALECT_NAMES[r['dialect']]} | {saver_name(r['dialect'], r['impl'])} "
            f"| {r['size']:,} | {r['added']:,} | {r['seconds']:.1f} | {r['ckpt_per_s'] or 0:,} |"
        )
    return "\n".join(lines)


START = "<!-- scale-results:start -->"
END = "<!-- scale-results:end -->"


def markdown_section(result: dict[str, Any]) -> str:
    env = result["environment"]
    return "\n".join(
        [
            f"Run {result['started']} with `{result['command']}` in "
            f"{result['wall_seconds']:.0f} s (commit {env['commit']}; {env['nproc']} CPUs, "
            f"{env['memory']} RAM; "
            + ", ".join(f"{k} {v}" for k, v in env["servers"].items())
            + ").",
            "",
            tables(result["rows"]),
            "",
            "Loading (template thread through the saver, then bulk copies; no ANALYZE):",
            "",
            load_table(result["load"]),
            "",
        ]
    )


def update_doc(path: str, section: str) -> None:
    """Rewrite the text between the scale markers; add a ``## Scale`` section at the end
    of the document if it has none."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if START not in doc or END not in doc:
        doc = doc.rstrip("\n") + f"\n\n## Scale\n\n{START}\n{END}\n"
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}{START}\n{section}\n{END}{tail}")


def result_dict(
    scale: Scale, command: str, started: str, wall: float, env: dict[str, Any]
) -> dict[str, Any]:
    return {
        "command": command,
        "started": started,
        "wall_seconds": round(wall, 1),
        "sizes": scale.sizes,
        "calls": asdict(scale.calls),
        "environment": env,
        "load": scale.load,
        "rows": rows({**scale.raw, **scale.cold}, scale.calls),
        "raw": [
            {"dialect": d, "impl": i, "op": op, "seconds": {str(s): v for s, v in by.items()}}
            for (d, i, op), by in {**scale.raw, **scale.cold}.items()
        ],
    }


def default_out(root: str) -> str:
    return os.path.join(root, "benchmarks", "results", "scale.json")


def run_scale(args: Any, doc: str, root: str) -> int:
    """The ``--scale`` command (``args`` from ``python -m benchmarks``'s parser)."""
    import json
    import logging
    import sys
    from datetime import datetime, timezone

    from .report import environment
    from .runner import log

    logging.getLogger("asyncmy").setLevel(logging.ERROR)
    dialects = [d for d in DIALECTS if d in args.dialects.split(",")]
    base = QUICK_SIZES if args.quick else FULL_SIZES
    sizes = {d: sizes_for(d, base, args.scale_max) for d in dialects}
    calls = QUICK_CALLS if args.quick else FULL_CALLS
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    log(f"scale: sizes {sizes}")
    servers = Servers(tuple(dialects))
    try:
        env = environment(servers.server_versions())
        scale = Scale(servers, sizes, calls, log)
        scale.run()
    finally:
        servers.close()
    wall = time.perf_counter() - t0
    command = "python -m benchmarks" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else "")
    result = result_dict(scale, command, started.strftime("%Y-%m-%d %H:%M UTC"), wall, env)
    print(tables(result["rows"]))
    print()
    print(load_table(result["load"]))
    out = args.out or default_out(root)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"JSON: {out}")
    if args.markdown:
        from .charts import refresh

        update_doc(doc, markdown_section(result))
        print(f"Markdown: {doc}")
        refresh("scale", result)
    return 0
