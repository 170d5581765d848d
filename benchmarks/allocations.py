"""``python -m benchmarks --allocations``: memory allocated per hot-path call, ours and the
official saver's (sync door): how much a call feeds Python's allocator and cyclic GC.

Each (dialect, saver) runs in a child process of its own (``PYTHONHASHSEED=0``) on a store
of its own, set up as :mod:`.instructions` sets it up, with its code: ``open_sync(...,
normal=True)`` (SQLite: both savers in WAL mode at ``synchronous = NORMAL``; PostgreSQL:
``PostgresSaver``; MariaDB: ours only), a thread of :data:`.instructions.HISTORY`
checkpoints with two pending writes each, every call warmed up, then each call
:data:`.instructions.CALLS` times (``--calls N``: N times) in a segment of its own,
followed by a segment calling a no-op with the same arguments. The markers that
:func:`.instructions._segments_sync` calls between segments read the counters here
instead of dumping callgrind's. Calls: ``put`` (the next realistic checkpoint of a
thread), ``put_writes`` (two writes, a new task each call), ``get_tuple`` (the latest
checkpoint of the filled thread, with its pending writes).

Three figures per call, each measured in its own pass (a fresh child, store and saver):

- ``blocks``: memory blocks **allocated** (gross: every block counts, however soon it is
  freed). A hook of about 30 lines of C, compiled here with ``cc``, wraps the interpreter's
  allocators of the ``PYMEM_DOMAIN_OBJ`` and ``PYMEM_DOMAIN_MEM`` domains (every Python
  object and interpreter buffer; ``PyMem_SetAllocator`` chaining to the previous
  allocator, as ``tracemalloc`` does) and counts ``malloc``, ``calloc`` and ``realloc``
  of NULL. The ``RAW`` domain (allocations made without the GIL, by C code) is not
  counted. The no-op segment's count is subtracted. Neither ``tracemalloc`` snapshots,
  ``sys.getallocatedblocks()`` nor ``gc.get_count()`` can give this figure: all three
  are net (allocated minus freed).
- ``gc``: what a call adds to the cyclic GC's generation-0 counter, with automatic
  collection off during the segment (``gc.disable()``; ``gc.collect()`` at each marker).
  In CPython 3.11 that counter goes up at each allocation of a GC-capable object
  (containers: dicts, lists, instances, frames, ...) and down at each deallocation of
  one (never below 0); a generation-0 collection runs when it passes 700
  (``gc.get_threshold()[0]``). So this is net, not gross, and it is exactly what brings
  the next collection nearer: 70 a call means a collection every 10 calls. Objects made
  and freed within the call cost nothing here (they cost in ``blocks``); objects a call
  leaves in reference cycles, or keeps (caches), count. The counter is started at
  :data:`BALLAST` (that many empty lists kept alive over the segment) so that its floor
  at 0 cannot swallow the decrements of a call that frees older objects.
- ``peak``: ``tracemalloc`` peak of traced memory above the segment's start, in bytes,
  over the segment's calls (automatic GC on, as an application runs): the largest
  transient heap a call needs, plus what the segment's calls kept.

The table prints each figure for ours and the official saver and their ratio; the JSON
(``benchmarks/results/allocations.json``) keeps every segment's figure. Needs a C
compiler (``cc``) and the interpreter's headers for ``blocks``; without them that figure
is skipped with a message and the other two are measured.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import tracemalloc
from typing import Any

from .instructions import CALLS, OPS, _segments_sync

__all__ = ["MEASURES", "main", "measure", "rows", "table"]

#: The calls measured (sync door).
CALL_NAMES = ("put", "put_writes", "get_tuple")
#: What each pass measures, in the table's order.
MEASURES = ("blocks", "gc", "peak")
#: GC-tracked objects kept alive over a ``gc`` segment (see :class:`_Meter`).
BALLAST = 100_000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "benchmarks", "results", "allocations.json")

_HOOK_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyMemAllocatorEx prev_obj, prev_mem;
static unsigned long long blocks;
static int installed;

#define WRAP(name, prev)                                                          \
    static void *name##_malloc(void *ctx, size_t size) {                         \
        blocks++;                                                                 \
        return prev.malloc(prev.ctx, size);                                       \
    }                                                                             \
    static void *name##_calloc(void *ctx, size_t nelem, size_t elsize) {         \
        blocks++;                                                                 \
        return prev.calloc(prev.ctx, nelem, elsize);                              \
    }                                                                             \
    static void *name##_realloc(void *ctx, void *ptr, size_t size) {             \
        if (ptr == NULL) blocks++;                                                \
        return prev.realloc(prev.ctx, ptr, size);                                 \
    }                                                                             \
    static void name##_free(void *ctx, void *ptr) { prev.free(prev.ctx, ptr); }

WRAP(obj, prev_obj)
WRAP(mem, prev_mem)

int lgsa_hook_install(void) {
    if (installed) return 0;
    PyMemAllocatorEx obj = {NULL, obj_malloc, obj_calloc, obj_realloc, obj_free};
    PyMemAllocatorEx mem = {NULL, mem_malloc, mem_calloc, mem_realloc, mem_free};
    PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &prev_obj);
    PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &prev_mem);
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj);
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem);
    installed = 1;
    return 1;
}

int lgsa_hook_uninstall(void) {
    if (!installed) return 0;
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &prev_obj);
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &prev_mem);
    installed = 0;
    return 1;
}

unsigned long long lgsa_hook_blocks(void) { return blocks; }
"""


# -- the child ------------------------------------------------------------------------------


class _Meter:
    """The marker :func:`.instructions._segments_sync` calls between segments: reads one
    counter at each call; :meth:`segments` gives the counter's change over each segment."""

    def __init__(self, measure: str, hook: Any) -> None:
        self.measure = measure
        self.hook = hook
        self.readings: list[tuple[int, int]] = []  # (end of a segment, start of the next)
        self.ballast: list[list[int]] = []

    def _read(self) -> int:
        if self.measure == "blocks":
            return int(self.hook.lgsa_hook_blocks())
        if self.measure == "gc":
            return gc.get_count()[0]
        return tracemalloc.get_traced_memory()[0]

    def __call__(self) -> None:
        if self.measure == "peak":
            current, peak = tracemalloc.get_traced_memory()
            end = peak if self.readings else current
            tracemalloc.reset_peak()
            self.readings.append((end, tracemalloc.get_traced_memory()[0]))
            return
        end = self._read()
        self.ballast = []
        gc.collect()  # the segment's garbage goes; the gen-0 counter restarts at 0
        if self.measure == "gc":
            # The counter never goes below 0: a call freeing older objects while it is
            # near 0 would lose those decrements and count high. Start it at ~BALLAST.
            self.ballast = [[] for _ in range(BALLAST)]
        self.readings.append((end, self._read()))

    def segments(self) -> list[int]:
        return [
            end - start
            for (_, start), (end, _) in zip(self.readings, self.readings[1:], strict=False)
        ]


def _load_hook(path: str) -> Any:
    import ctypes

    lib = ctypes.PyDLL(path)
    lib.lgsa_hook_blocks.restype = ctypes.c_ulonglong
    return lib


def child(spec: dict[str, Any]) -> dict[str, int]:
    """One pass: one (dialect, saver, measure) on its own store; the change of the
    measure's counter over each labelled segment."""
    from .backends import Store, open_sync

    measure = spec["measure"]
    hook = _load_hook(spec["hook"]) if measure == "blocks" else None
    meter = _Meter(measure, hook)
    n = {op: spec["calls"] for op in OPS}
    with open_sync(spec["impl"], Store(**spec["store"]), normal=True) as saver:
        # Set-up and warm-up run before the first marker, with the counters off; the
        # first marker starts them, the last stops them.
        started = False

        def mark() -> None:
            nonlocal started
            if not started:
                started = True
                if hook is not None:
                    hook.lgsa_hook_install()
                elif measure == "gc":
                    gc.disable()
                else:
                    tracemalloc.start()
            meter()

        try:
            labels = _segments_sync(saver, mark, n, list(CALL_NAMES))
        finally:
            if hook is not None:
                hook.lgsa_hook_uninstall()
            gc.enable()
            tracemalloc.stop()
    return dict(zip(labels, meter.segments(), strict=True))


# -- the parent -----------------------------------------------------------------------------


def build_hook(tmp: str) -> tuple[str | None, str]:
    """The allocator hook's shared library, or None and why it cannot be built."""
    if shutil.which("cc") is None:
        return None, "no C compiler (cc): the blocks figure is skipped"
    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        return None, f"no Python.h in {include}: the blocks figure is skipped"
    src, lib = os.path.join(tmp, "hook.c"), os.path.join(tmp, "hook.so")
    with open(src, "w", encoding="utf-8") as f:
        f.write(_HOOK_SOURCE)
    done = subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", f"-I{include}", "-o", lib, src],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return None, f"the hook did not compile: the blocks figure is skipped\n{done.stderr}"
    return lib, ""


def _run_child(spec: dict[str, Any]) -> dict[str, int]:
    cmd = [sys.executable, "-m", "benchmarks.allocations", "--child", json.dumps(spec)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        where = f"{spec['impl']} on {spec['store']['dialect']}"
        raise RuntimeError(f"{where} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _per_call(segments: dict[str, int], measure: str, calls: int) -> dict[str, float]:
    """Per call: the segment minus its no-op segment (``peak``: the segment's peak)."""
    out: dict[str, float] = {}
    for op in CALL_NAMES:
        if op not in segments:
            continue
        if measure == "peak":
            out[op] = float(segments[op])
        else:
            out[op] = (segments[op] - segments[f"{op}:base"]) / calls
    return out


def measure(
    dialects: tuple[str, ...], calls: int, measures: tuple[str, ...], hook: str | None
) -> list[dict[str, Any]]:
    """Every (dialect, saver, measure) in a child of its own; one record each."""
    from .backends import Servers, has_official

    servers = Servers(dialects)
    records = []
    try:
        for dialect in dialects:
            impls = ("ours", "official") if has_official(dialect) else ("ours",)
            for m in measures:
                if m == "blocks" and hook is None:
                    continue
                for impl in impls:
                    store = servers.new_store(dialect)
                    spec = {
                        "impl": impl,
                        "measure": m,
                        "calls": calls,
                        "hook": hook,
                        "store": {
                            "dialect": store.dialect,
                            "name": store.name,
                            "url": store.url,
                            "native": store.native,
                        },
                    }
                    t0 = time.perf_counter()
                    segments = _run_child(spec)
                    per = _per_call(segments, m, calls)
                    servers.drop(store)
                    shown = ", ".join(f"{op} {v:,.1f}" for op, v in per.items())
                    took = time.perf_counter() - t0
                    print(f"  {dialect} {impl} {m}: {shown} ({took:.0f} s)", flush=True)
                    records.append(
                        {
                            "dialect": dialect,
                            "impl": impl,
                            "measure": m,
                            "segments": segments,
                            "per_call": per,
                        }
                    )
    finally:
        servers.close()
    return records


def rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (dialect, call, measure): ours, official, ours / official."""
    by = {(r["dialect"], r["impl"], r["measure"]): r["per_call"] for r in records}
    out = []
    dialects = list(dict.fromkeys(r["dialect"] for r in records))
    for dialect in dialects:
        for op in CALL_NAMES:
            for m in MEASURES:
                ours = by.get((dialect, "ours", m), {}).get(op)
                if ours is None:
                    continue
                row: dict[str, Any] = {"dialect": dialect, "call": op, "measure": m, "ours": ours}
                official = by.get((dialect, "official", m), {}).get(op)
                if official is not None:
                    row["official"] = official
                    # A net figure can be 0 or negative (older objects freed): no ratio.
                    row["ratio"] = ours / official if official > 0 and ours >= 0 else None
                out.append(row)
    return out


_MEASURE_LABELS = {
    "blocks": "blocks allocated a call (gross)",
    "gc": "GC gen-0 count added a call (net)",
    "peak": "tracemalloc peak (bytes)",
}


def table(rs: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    from .backends import DIALECT_NAMES, OFFICIAL_NAMES

    lines = [
        "| backend | call | figure | ours | official | ours / official |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in rs:
        name = OFFICIAL_NAMES.get((r["dialect"], "sync"), "")
        official = f"{r['official']:,.1f} {name}" if "official" in r else ""
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") is not None else ""
        lines.append(
            f"| {DIALECT_NAMES[r['dialect']]} sync | {r['call']} | {_MEASURE_LABELS[r['measure']]} "
            f"| {r['ours']:,.1f} | {official} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks --allocations [--dialects ...] [--calls N]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks --allocations", description=__doc__)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dialects", default="sqlite,postgres,mariadb")
    parser.add_argument(
        "--calls",
        type=int,
        default=CALLS["put"],
        help=f"calls of each kind per segment (default {CALLS['put']})",
    )
    parser.add_argument(
        "--measures", default=",".join(MEASURES), help="a subset of blocks, gc, peak"
    )
    parser.add_argument("--out", default=OUT)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    from .backends import DIALECTS

    dialects = tuple(d for d in DIALECTS if d in args.dialects.split(","))
    measures = tuple(m for m in MEASURES if m in args.measures.split(","))
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="lgsa_alloc_")
    try:
        hook, why = build_hook(tmp) if "blocks" in measures else (None, "")
        if why:
            print(f"note: {why}")
        records = measure(dialects, args.calls, measures, hook)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rs = rows(records)
    print(table(rs))
    result = {
        "command": " ".join(["python -m benchmarks --allocations", *argv]),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "wall_seconds": round(time.perf_counter() - t0),
        "python": sys.version.split()[0],
        "calls": args.calls,
        "gc_threshold": gc.get_threshold()[0],
        "records": records,
        "rows": rs,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
