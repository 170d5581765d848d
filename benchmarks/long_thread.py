"""``python -m benchmarks.long_thread`` (or ``python -m benchmarks --long-thread``): long
threads, turn by turn. A chat and a tool-calling agent (:mod:`.long_graphs`), each also
with its state rewritten with ``DeltaChannel``, run for ``--turns`` turns on one thread,
on our saver and on the official one of each backend (SQLite: ``SqliteSaver``;
PostgreSQL: ``PostgresSaver``; MariaDB: ours alone), sync door. Per turn: the client CPU
instructions of that turn's saver calls (callgrind, :mod:`.long_probe`) and the bytes the
turn added to the saver's stored values; the stored bytes after 50, 100 and 200 turns;
the ratios against the issue's targets (:mod:`.long_report`).

Each (workload, backend, saver) runs in a child process of its own on a fresh database
(SQLite file, PostgreSQL schema, MariaDB database), two children at a time, under
``valgrind --tool=callgrind --collect-atstart=no`` when ``valgrind`` and ``cc`` are
installed and ``--no-callgrind`` is not given (without them: bytes only, instructions
``null``). Both SQLite savers in WAL mode at ``synchronous = NORMAL``.

    python -m benchmarks.long_thread                    # 200 turns, SQLite and PostgreSQL
    python -m benchmarks.long_thread --quick            # 12 turns
    python -m benchmarks.long_thread --markdown         # and rewrite docs/benchmarks.md
    python -m benchmarks.long_thread --render JSON --markdown   # run nothing: a saved run
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

from .backends import DIALECTS, OFFICIAL_NAMES, Servers, Store, has_official, storage_bytes
from .cgsplit import split
from .long_graphs import WORKLOADS
from .long_probe import CALIBRATION_CALLS, CALLGRIND_SOURCE

__all__ = ["OUT", "QUICK_TURNS", "main", "measure"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "benchmarks", "results", "long_thread.json")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
QUICK_TURNS = 12
PARTS = ("total", "serde", "driver", "rest")


def missing_tools() -> str | None:
    """Why instructions cannot be counted here, or None."""
    for tool in ("valgrind", "cc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.path.exists("/usr/include/valgrind/callgrind.h"):
        return "valgrind/callgrind.h is missing (the valgrind development headers)"
    return None


def build_library(tmp: str) -> str:
    """Compile :data:`.long_probe.CALLGRIND_SOURCE` into a shared library; its path."""
    src, lib = os.path.join(tmp, "callgrind.c"), os.path.join(tmp, "callgrind.so")
    with open(src, "w", encoding="utf-8") as f:
        f.write(CALLGRIND_SOURCE)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", lib, src], check=True)
    return lib


def saver_name(impl: str, dialect: str) -> str:
    return "ours" if impl == "ours" else OFFICIAL_NAMES[(dialect, "sync")]


def _segments(out: str, labels: list[str]) -> dict[str, list[dict[str, int]]]:
    """The split of each dump (``out.1``, ``out.2``, ... in order: one a ``dump()`` call),
    by label; each dump deleted once read."""
    dumps = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    if len(dumps) < len(labels):
        raise RuntimeError(f"{len(dumps)} callgrind dumps for {len(labels)} labels")
    found: dict[str, list[dict[str, int]]] = {}
    for label, path in zip(labels, dumps, strict=False):
        found.setdefault(label, []).append(split(path))
    for path in [*dumps, out]:
        if os.path.exists(path):
            os.remove(path)
    return found


def _net(seg: dict[str, int], overhead: float) -> dict[str, int]:
    """A segment less the probe's own instructions (taken from the Python rest)."""
    rest = seg["rest"] - overhead
    return {**seg, "total": round(seg["total"] - overhead), "rest": round(rest)}


def _record(
    spec: dict[str, Any], child: dict[str, Any], found: dict[str, list[dict[str, int]]] | None
) -> dict[str, Any]:
    """One (workload, backend, saver): per turn instructions (net of the probe), calls,
    bytes stored and written; the calibration and the final ``get_tuple``."""
    outer = nested = 0.0
    calibration: dict[str, Any] | None = None
    if found is not None:
        outer = found["calibrate:outer"][0]["total"] / CALIBRATION_CALLS
        nested = found["calibrate:nested"][0]["total"] / CALIBRATION_CALLS - outer
        leak = max(s["total"] for s in found.get("settle", [{"total": 0}]))
        calibration = {"outer": round(outer), "nested": round(nested), "settle_max": leak}
    turns, before = [], 0
    for i, t in enumerate(child["turns"]):
        row: dict[str, Any] = {"turn": t["turn"], "instructions": None, "split": None}
        if found is not None:
            cost = sum(t["calls"].values()) * outer + t["nested_calls"] * nested
            row["split"] = _net(found["turn:" + str(t["turn"])][0], cost)
            row["instructions"] = row["split"]["total"]
        row.update(calls=t["calls"], nested_calls=t["nested_calls"], stored=t["stored"])
        row.update(written=t["stored"] - before, wall_seconds=t["wall_seconds"])
        before = t["stored"]
        turns.append(row)
        if i == len(child["turns"]) - 1:
            stored_by_column = t.get("stored_by_column", {})
    reads = None
    if found is not None:
        reads = [_net(s, outer) for s in found["get_tuple:final"]]
    return {
        "workload": spec["workload"],
        "graph": WORKLOADS[spec["workload"]][0],
        "delta": WORKLOADS[spec["workload"]][1],
        "dialect": spec["dialect"],
        "impl": spec["impl"],
        "saver": saver_name(spec["impl"], spec["dialect"]),
        "messages": child["messages"],
        "wrapped": child["wrapped"],
        "value_columns": child["value_columns"],
        "stored_by_column": stored_by_column,
        "calibration": calibration,
        "final_get_tuple": min(reads, key=lambda s: s["total"]) if reads else None,
        "turns": turns,
    }


def run_one(spec: dict[str, Any], store: Store, tmp: str, library: str | None) -> dict[str, Any]:
    """Run one child (under callgrind with ``library``); its record."""
    tag = f"{spec['workload']}.{spec['dialect']}.{spec['impl']}"
    spec = {
        **spec,
        "store": {"dialect": store.dialect, "name": store.name, "url": store.url},
        "result": os.path.join(tmp, f"result.{tag}.json"),
        "library": library,
    }
    spec["store"]["native"] = store.native
    cmd = [sys.executable, "-m", "benchmarks.long_probe", json.dumps(spec)]
    out = os.path.join(tmp, f"cg.{tag}")
    if library:
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            f"--callgrind-out-file={out}",
            *cmd,
        ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{tag} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    with open(spec["result"], encoding="utf-8") as f:
        child = json.load(f)
    found = _segments(out, child["labels"]) if library else None
    record = _record(spec, child, found)
    tables = sorted({c.split(".", 1)[0] for c in child["value_columns"]})
    record["disk_bytes"] = storage_bytes(store, tuple(tables))
    record["wall_seconds"] = round(time.perf_counter() - t0, 1)
    return record


def measure(
    workloads: dict[str, int],
    dialects: tuple[str, ...],
    *,
    callgrind: bool,
    jobs: int = 2,
    log: Any = print,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every (workload, backend, saver): ``workloads`` maps a workload to its turns.
    Their records, and the servers' versions."""
    tmp = tempfile.mkdtemp(prefix="lgsa_long_")
    servers = Servers(dialects)
    try:
        versions = servers.server_versions()
        library = build_library(tmp) if callgrind else None
        specs = [
            {"workload": w, "turns": n, "dialect": d, "impl": impl}
            for w, n in workloads.items()
            for d in dialects
            for impl in (("ours", "official") if has_official(d) else ("ours",))
        ]

        def one(spec: dict[str, Any]) -> dict[str, Any]:
            store = servers.new_store(spec["dialect"])
            try:
                record = run_one(spec, store, tmp, library)
            finally:
                servers.drop(store)
            last = record["turns"][-1]
            log(
                f"  {spec['workload']} {spec['dialect']} {record['saver']}: "
                f"{spec['turns']} turns, stored {last['stored']:,} B, last turn "
                f"{last['instructions'] or 0:,} instructions ({record['wall_seconds']} s)"
            )
            return record

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, specs)), versions
    finally:
        servers.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module's docstring)."""
    from . import long_report

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.long_thread",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=200, help="turns a thread (default 200)")
    parser.add_argument(
        "--agent-turns", type=int, help="turns of the agent workloads (default: --turns)"
    )
    parser.add_argument(
        "--dialects",
        default="sqlite,postgres",
        help="comma list of sqlite, postgres, mariadb (ours only); default sqlite,postgres",
    )
    parser.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma list of {', '.join(WORKLOADS)} (default: all)",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TURNS} turns (smoke run; CI)")
    parser.add_argument(
        "--no-callgrind", action="store_true", help="bytes only, no valgrind (instructions null)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="children at a time (default 2)")
    parser.add_argument("--out", default=OUT, help="JSON results (default: %(default)s)")
    parser.add_argument(
        "--markdown",
        action="store_true",
        help=f"rewrite the long-thread section of {DOC} and redraw its chart",
    )
    parser.add_argument("--render", metavar="JSON", help="run nothing: render a saved run")
    args = parser.parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as f:
            return long_report.publish(json.load(f), DOC, markdown=args.markdown)
    turns = QUICK_TURNS if args.quick else args.turns
    agent_turns = args.agent_turns or turns
    workloads = {
        w: agent_turns if WORKLOADS[w][0] == "agent" else turns
        for w in WORKLOADS
        if w in args.workloads.split(",")
    }
    dialects = tuple(d for d in DIALECTS if d in args.dialects.split(","))
    why = None if not args.no_callgrind else "--no-callgrind"
    why = why or missing_tools()
    if why:
        print(f"instructions not counted: {why} (bytes only)")
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    print(f"long threads: {workloads}, {', '.join(dialects)}", flush=True)
    records, versions = measure(workloads, dialects, callgrind=why is None, jobs=args.jobs)
    from .report import environment

    result = {
        "command": " ".join(
            ["python -m benchmarks.long_thread", *(sys.argv[1:] if argv is None else argv)]
        ),
        "started": started.strftime("%Y-%m-%d %H:%M UTC"),
        "wall_seconds": round(time.perf_counter() - t0),
        "quick": args.quick,
        "instructions": why is None,
        "workloads": workloads,
        "dialects": list(dialects),
        "environment": environment(versions),
        "records": records,
    }
    result["targets"] = long_report.targets(result)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"JSON: {args.out}")
    return long_report.publish(result, DOC, markdown=args.markdown)


if __name__ == "__main__":
    raise SystemExit(main())
