"""``python -m benchmarks --instructions``: CPU instructions per hot-path call, ours and the
official saver's, counted by ``valgrind --tool=callgrind`` (load-independent, unlike wall
time on a shared machine).

Each (dialect, door, saver) runs in a child process under callgrind. The child opens the
saver on a store of its own (SQLite: both in WAL mode at ``synchronous = NORMAL``;
PostgreSQL: the client side only, the server is another process), fills a thread of
:data:`HISTORY` checkpoints with two pending writes each, warms every call up, then runs
each call :data:`CALLS` times between two markers, and the same loop calling a no-op
between two more. A marker is a call of a C function that callgrind dumps its counters
before (``--dump-before``); the instructions of a call are those of its segment minus the
no-op segment, divided by the number of calls. Startup is a child of its own that imports
the saver's module, constructs the saver and runs ``setup()`` on an up-to-date database,
between two markers.

Calls (the realistic checkpoint of :mod:`.data`: 20 messages and 4 scalar channels):

- ``put``: the next checkpoint of a thread, every channel at a new version;
- ``put_writes``: the two writes of :func:`.data.write_batch`, a new task each call;
- ``get_tuple``: the latest checkpoint of the filled thread (it has two pending writes);
- ``list``: ``list(config of the thread, limit=10)`` read to the end;
- ``startup``: ``import``, construct, ``setup()`` (sync door, up-to-date database).

``--profile`` adds, from one in-process run without valgrind, the Python functions that
cost each call most (cProfile, ``tottime``) and the Python function calls a call makes, for
both savers. Needs ``valgrind`` and a C compiler (``cc``) for the marker; skips with a
message where either is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .cgsplit import split
from .instreport import rows, split_table, table

OPS = ("put", "put_writes", "get_tuple", "list")
HISTORY = 50
CALLS = {"put": 100, "put_writes": 100, "get_tuple": 100, "list": 10}
_MARK_SOURCE = """
__attribute__((noinline)) void lgsa_callgrind_dump(void) { __asm__ volatile(""); }
void lgsa_mark(void) { lgsa_callgrind_dump(); }
"""
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "benchmarks", "results", "instructions.json")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")


# -- the child (runs under callgrind) -------------------------------------------------------


def _marker(path: str) -> Any:
    import ctypes

    lib = ctypes.CDLL(path)
    return lib.lgsa_mark


def _put_args(saver: Any, thread_id: str, n: int) -> list[tuple[Any, ...]]:
    from .data import History

    h = History(saver, thread_id)
    args = []
    for _ in range(n):
        cfg, cp, meta, versions = h.next()
        args.append((cfg, cp, meta, versions))
        key = {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": cp["id"]}
        h._advance({"configurable": key})
    return args


def _settle() -> None:
    """Before a segment: collect, then freeze what is alive (``gc.freeze``), so that a
    full collection falling inside a segment scans what the calls made, not the whole
    heap (whose size, and when the collection lands, would swing a segment by tens of
    millions of instructions). Its own cost is a segment of its own, not counted."""
    gc.collect()
    gc.freeze()


def _noop(*_args: Any, **_kwargs: Any) -> None:
    return None


async def _anoop(*_args: Any, **_kwargs: Any) -> None:
    return None


class _Calls:
    """The argument lists of each call, built before any marker."""

    def __init__(self, saver: Any, n: dict[str, int]) -> None:
        from .workloads import thread_config

        self.saver = saver
        self.n = n
        self.reads = thread_config("reads")
        # a put chain that starts after the warm-up chain's last checkpoint
        chain = _put_args(saver, f"puts-{uuid.uuid4().hex[:6]}", n["put"] + 20)
        self.put_warm, self.put = chain[:20], chain[20:]
        self.writes_cfg: Any = None

    def writes(self, count: int) -> list[tuple[Any, ...]]:
        from .data import write_batch

        return [(self.writes_cfg, write_batch(i), str(uuid.uuid4())) for i in range(count)]


def _fill_sync(saver: Any) -> Any:
    from .data import History, write_batch

    reads = History(saver, "reads")
    for i in range(HISTORY):
        reads.put()
        saver.put_writes(reads.config, write_batch(i), str(uuid.uuid4()))
    w = History(saver, f"writes-{uuid.uuid4().hex[:6]}")
    w.put()
    return w.config


async def _fill_async(saver: Any) -> Any:
    from .data import History, write_batch

    reads = History(saver, "reads")
    for i in range(HISTORY):
        await reads.aput()
        await saver.aput_writes(reads.config, write_batch(i), str(uuid.uuid4()))
    w = History(saver, f"writes-{uuid.uuid4().hex[:6]}")
    await w.aput()
    return w.config


def _segments_sync(saver: Any, mark: Any, n: dict[str, int], ops: list[str]) -> list[str]:
    calls = _Calls(saver, n)
    calls.writes_cfg = _fill_sync(saver)
    # warm-up: every call a few times (statements compiled, caches filled)
    for a in calls.put_warm:
        saver.put(*a)
    for a in calls.writes(20):
        saver.put_writes(*a)
    for _ in range(10):
        saver.get_tuple(calls.reads)
        list(saver.list(calls.reads, limit=10))
    labels: list[str] = []
    plans = {
        "put": (saver.put, calls.put),
        "put_writes": (saver.put_writes, calls.writes(n["put_writes"])),
        "get_tuple": (saver.get_tuple, [(calls.reads,)] * n["get_tuple"]),
        "list": (lambda c: list(saver.list(c, limit=10)), [(calls.reads,)] * n["list"]),
    }
    mark()
    for op in ops:
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
    return labels


async def _segments_async(saver: Any, mark: Any, n: dict[str, int], ops: list[str]) -> list[str]:
    calls = _Calls(saver, n)
    calls.writes_cfg = await _fill_async(saver)
    for a in calls.put_warm:
        await saver.aput(*a)
    for a in calls.writes(20):
        await saver.aput_writes(*a)

    async def alist(c: Any) -> list[Any]:
        return [t async for t in saver.alist(c, limit=10)]

    for _ in range(10):
        await saver.aget_tuple(calls.reads)
        await alist(calls.reads)
    labels: list[str] = []
    plans = {
        "put": (saver.aput, calls.put),
        "put_writes": (saver.aput_writes, calls.writes(n["put_writes"])),
        "get_tuple": (saver.aget_tuple, [(calls.reads,)] * n["get_tuple"]),
        "list": (alist, [(calls.reads,)] * n["list"]),
    }
    mark()
    for op in ops:
        fn, arglist = plans[op]
        _settle()
        mark()
        labels.append(f"{op}:settle")
        for a in arglist:
            await fn(*a)
        mark()
        labels.append(op)
        for a in arglist:
            await _anoop(*a)
        mark()
        labels.append(f"{op}:base")
    return labels


def _startup(impl: str, dialect: str, target: str, mark: Any) -> list[str]:
    mark()
    if impl == "ours":
        from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

        saver = SQLAlchemySaver.from_conn_string(target)
        saver.setup()
        mark()
        saver.close()
    elif dialect == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(target, check_same_thread=False)
        official: Any = SqliteSaver(conn)
        official.setup()
        mark()
        conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        pg = Connection.connect(target, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        official = PostgresSaver(pg)  # type: ignore[arg-type]
        official.setup()
        mark()
        pg.close()
    return ["startup"]


def child(spec: dict[str, Any]) -> None:
    """Run one (dialect, door, saver) under callgrind; write the segment labels."""
    mark = _marker(spec["marker"])
    if spec.get("no_lane"):
        # --no-lane: every call through the full door, as if the short door did not
        # exist (what the short door saves is the difference)
        from langgraph.checkpoint.sqlalchemy._engine.lane import Lane

        Lane.open = lambda _self, _access: False  # type: ignore[method-assign]
    impl, dialect, door = spec["impl"], spec["dialect"], spec["door"]
    if door == "startup":
        labels = _startup(impl, dialect, spec["target"], mark)
    else:
        from .backends import Store, open_async, open_sync

        store = Store(**spec["store"])
        n = {op: spec["calls"][op] for op in OPS}
        if door == "sync":
            with open_sync(impl, store, normal=True) as saver:
                labels = _segments_sync(saver, mark, n, spec["ops"])
        else:

            async def go() -> list[str]:
                async with open_async(impl, store, normal=True) as saver:
                    return await _segments_async(saver, mark, n, spec["ops"])

            labels = asyncio.run(go())
    with open(spec["labels"], "w", encoding="utf-8") as f:
        json.dump(labels, f)


# -- the parent -------------------------------------------------------------------------------


def missing_tools() -> str | None:
    """Why the instruction benchmark cannot run here, or None."""
    for tool in ("valgrind", "cc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed: the instruction benchmark needs valgrind and cc"
    return None


def _build_marker(tmp: str) -> str:
    src = os.path.join(tmp, "mark.c")
    lib = os.path.join(tmp, "mark.so")
    with open(src, "w", encoding="utf-8") as f:
        f.write(_MARK_SOURCE)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", lib, src], check=True)
    return lib


def run_under_callgrind(
    spec: dict[str, Any], tmp: str, tag: str, module: str = "benchmarks.instructions"
) -> dict[str, tuple[str, dict[str, int]]]:
    """Run ``python -m <module> --child <spec>`` under callgrind, dumping at each marker
    (:func:`_build_marker`); per labelled segment, its dump's path and its instructions
    split (:func:`.cgsplit.split`). The child writes its labels, in order, to
    ``spec["labels"]`` (set here)."""
    out = os.path.join(tmp, f"cg.{tag}")
    spec = {**spec, "labels": os.path.join(tmp, f"labels.{tag}.json")}
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--dump-before=lgsa_callgrind_dump",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        module,
        "--child",
        json.dumps(spec),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{tag} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    with open(spec["labels"], encoding="utf-8") as f:
        labels = json.load(f)
    # out.1 is everything before the first marker; out.2... the segments, in order.
    dumps = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    segments = zip(labels, dumps[1 : 1 + len(labels)], strict=True)
    return {label: (p, split(p)) for label, p in segments}


def _run_child(spec: dict[str, Any], tmp: str, tag: str) -> dict[str, dict[str, int]]:
    """Run ``child(spec)`` under callgrind; the instructions of each labelled segment,
    split (:func:`.cgsplit.split`)."""
    return {label: seg for label, (_, seg) in run_under_callgrind(spec, tmp, tag).items()}


def _per_call(
    segments: dict[str, dict[str, int]], calls: dict[str, int]
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Instructions per call, and their split (:mod:`.cgsplit`), by call."""
    totals: dict[str, int] = {}
    parts: dict[str, dict[str, int]] = {}
    for label, seg in segments.items():
        if label == "startup":
            totals["startup"], parts["startup"] = seg["total"], seg
        elif not label.endswith((":base", ":settle")):
            base = segments[f"{label}:base"]
            n = calls[label]
            parts[label] = {k: round((seg[k] - base[k]) / n) for k in seg}
            totals[label] = parts[label]["total"]
    return totals, parts


def measure(
    dialects: tuple[str, ...],
    doors: tuple[str, ...],
    ops: tuple[str, ...],
    calls: dict[str, int],
    keep: bool = False,
    no_lane: bool = False,
) -> list[dict[str, Any]]:
    """Every (dialect, door, saver) under callgrind, two at a time; one record each
    (``no_lane``: ours with the short door closed)."""
    from .backends import Servers, has_official

    _compile_ours()
    tmp = tempfile.mkdtemp(prefix="lgsa_instr_")
    servers = Servers(dialects)
    jobs: list[tuple[str, dict[str, Any], str]] = []
    try:
        marker = _build_marker(tmp)
        for dialect in dialects:
            impls = ("ours", "official") if has_official(dialect) else ("ours",)
            for door in doors:
                for impl in impls:
                    store = servers.new_store(dialect)
                    spec: dict[str, Any] = {
                        "marker": marker,
                        "impl": impl,
                        "dialect": dialect,
                        "door": door,
                        "calls": calls,
                        "ops": [op for op in ops if op != "startup"],
                        "no_lane": no_lane,
                    }
                    if door == "startup":
                        _prepare(impl, store)
                        spec["target"] = store.url if impl == "ours" else store.native
                    else:
                        spec["store"] = {
                            "dialect": store.dialect,
                            "name": store.name,
                            "url": store.url,
                            "native": store.native,
                        }
                    jobs.append((f"{dialect}.{door}.{impl}", spec, impl))

        def one(job: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
            tag, spec, impl = job
            t0 = time.perf_counter()
            per, parts = _per_call(_run_child(spec, tmp, tag), calls)
            print(f"  {tag}: {per} ({time.perf_counter() - t0:.0f} s)", flush=True)
            return {
                "dialect": spec["dialect"],
                "door": spec["door"],
                "impl": impl,
                "per_call": per,
                "split": parts,
            }

        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(one, jobs))
    finally:
        servers.close()
        if keep:
            print(f"callgrind dumps kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _compile_ours() -> None:
    """Byte-compile our packages and migration scripts (``__pycache__``), as installing a
    wheel does. The official savers' modules come compiled from site-packages; without
    this, a checkout run with ``PYTHONDONTWRITEBYTECODE`` set has every child compile
    ours from source, counted in ``startup`` (about 0.37 G instructions)."""
    import compileall
    import importlib.util

    for package in ("langgraph.checkpoint.sqlalchemy", "langgraph.store.sqlalchemy"):
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(folder, quiet=1)
    if os.path.isdir(os.path.join(ROOT, "migrations")):
        compileall.compile_dir(os.path.join(ROOT, "migrations"), quiet=1)


def _prepare(impl: str, store: Any) -> None:
    """Bring ``store`` to an up-to-date schema in another process (imports stay cold)."""
    code = (
        "import sys; from benchmarks.backends import Store, open_sync; "
        "s = Store(*sys.argv[1:5]); "
        f"cm = open_sync({impl!r}, s); cm.__enter__(); cm.__exit__(None, None, None)"
    )
    args = [store.dialect, store.name, store.url, store.native]
    subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, check=True)


def profile(dialects: tuple[str, ...], ops: tuple[str, ...], top: int) -> str:
    """cProfile of each call, ours and official (sync door, in this process): the
    functions with the most ``tottime`` per call and the Python calls a call makes."""
    import cProfile
    import pstats

    from .backends import Servers, has_official, open_sync

    servers = Servers(dialects)
    out: list[str] = []
    try:
        for dialect in dialects:
            impls = ("ours", "official") if has_official(dialect) else ("ours",)
            for impl in impls:
                with open_sync(impl, servers.new_store(dialect), normal=True) as saver:
                    calls = _Calls(saver, {op: CALLS[op] for op in OPS})
                    calls.writes_cfg = _fill_sync(saver)
                    for a in calls.put_warm:
                        saver.put(*a)
                    plans = {
                        "put": (saver.put, calls.put),
                        "put_writes": (saver.put_writes, calls.writes(CALLS["put_writes"])),
                        "get_tuple": (saver.get_tuple, [(calls.reads,)] * CALLS["get_tuple"]),
                        "list": (lambda c: list(saver.list(c, limit=10)), [(calls.reads,)] * 10),
                    }
                    for op in ops:
                        if op == "startup":
                            continue
                        fn, arglist = plans[op]
                        prof = cProfile.Profile()
                        prof.enable()
                        for a in arglist:
                            fn(*a)
                        prof.disable()
                        st: Any = pstats.Stats(prof)
                        n = len(arglist)
                        out.append(
                            f"\n{dialect} {impl} {op}: {st.total_calls / n:.0f} Python function "
                            f"calls per call; top {top} by own time:\n"
                        )
                        entries = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
                        for (file, line, name), (_cc, nc, tt, _ct, _callers) in entries:
                            where = f"{os.path.basename(file)}:{line}" if line else file
                            out.append(
                                f"  {nc / n:6.1f} calls  {tt / n * 1e6:7.1f} us  {name} ({where})"
                            )
    finally:
        servers.close()
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks --instructions", description=__doc__
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dialects", default="sqlite,postgres,mariadb")
    parser.add_argument("--doors", default="sync,async,startup", help="sync, async, startup")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--calls", type=float, default=1.0, help="scale the calls per segment")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--profile", action="store_true", help="also cProfile each call")
    parser.add_argument("--keep", action="store_true", help="keep the callgrind dumps")
    parser.add_argument(
        "--no-lane",
        action="store_true",
        help="ours with the short door (_engine/lane.py) closed: what it saves, by difference",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="rewrite the instruction-results section of the doc"
    )
    parser.add_argument("--render", metavar="JSON", help="run nothing: render a saved run")
    parser.add_argument(
        "--before", metavar="JSON", help="a run of an earlier commit, shown beside (--markdown)"
    )
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    if args.render:
        with open(args.render, encoding="utf-8") as f:
            saved = json.load(f)
        return _publish(saved, args)
    why = missing_tools()
    if why:
        print(f"skipped: {why}")
        return 0
    from .backends import DIALECTS

    dialects = tuple(d for d in DIALECTS if d in args.dialects.split(","))
    doors = tuple(d for d in ("sync", "async", "startup") if d in args.doors.split(","))
    ops = tuple(op for op in OPS if op in args.ops.split(","))
    calls = {op: max(1, round(n * args.calls)) for op, n in CALLS.items()}
    t0 = time.perf_counter()
    records = measure(dialects, doors, ops, calls, args.keep, args.no_lane)
    rs = rows(records)
    print(table(rs))
    print()
    print(split_table(records))
    result = {
        "command": " ".join(
            ["python -m benchmarks --instructions", *(sys.argv[1:] if argv is None else argv)]
        ),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_seconds": round(time.perf_counter() - t0),
        "calls": calls,
        "records": records,
        "rows": rs,
    }
    if args.profile:
        result["profile"] = profile(dialects, ops, 12)
        print(result["profile"])
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"JSON: {args.out}")
    return _publish(result, args) if args.markdown else 0


def _publish(result: dict[str, Any], args: argparse.Namespace) -> int:
    """Print a run's tables; with ``--markdown`` rewrite the doc's section."""
    from .instreport import section, update_doc

    before = None
    if args.before:
        with open(args.before, encoding="utf-8") as f:
            before = json.load(f)
    text = section(result, before)
    print(text)
    if args.markdown:
        from .charts import refresh

        update_doc(DOC, text)
        print(f"Markdown: {DOC}")
        refresh("instructions", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
