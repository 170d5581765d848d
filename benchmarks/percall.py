"""``python -m benchmarks.percall``: microseconds per call of the hot-path operations, ours
and the official saver's, side by side in this process, with an optional cProfile.

This is the tool for working on the hot path: it measures what one call costs
(not a workload's rate), interleaves the savers call by call in rounds, and reports the
median round. ``--profile OP`` prints the top functions of ``OP`` for both savers, so
the Python cost of one call can be compared function by function.

Operations: ``put`` (the realistic checkpoint of :mod:`.data`, every channel new),
``put1`` (the same checkpoint with one channel changed: what a graph step puts),
``put_writes`` (2 writes of a new task), ``get_latest`` and ``get_by_id`` (a thread of
50 checkpoints, each with 2 pending writes).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import time
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack, ExitStack
from typing import Any

from .backends import DIALECTS, Servers, open_async, open_sync
from .data import History, write_batch
from .workloads import thread_config

OPS = ("put", "put1", "put_writes", "get_latest", "get_by_id")
HISTORY = 50


class _Subject:
    """One saver with its data: a History for puts, a filled thread for reads."""

    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.all = History(saver, f"all-{uuid.uuid4().hex[:6]}")
        self.one = History(saver, f"one-{uuid.uuid4().hex[:6]}", changes=("step",))
        self.reads = History(saver, "reads")
        self.writes = History(saver, f"writes-{uuid.uuid4().hex[:6]}")

    def fill(self) -> None:
        for i in range(HISTORY):
            self.reads.put()
            self.saver.put_writes(self.reads.config, write_batch(i), str(uuid.uuid4()))
        self.one.put()
        self.writes.put()

    async def afill(self) -> None:
        for i in range(HISTORY):
            await self.reads.aput()
            await self.saver.aput_writes(self.reads.config, write_batch(i), str(uuid.uuid4()))
        await self.one.aput()
        await self.writes.aput()

    def call(self, op: str) -> Callable[[], Any]:
        s = self.saver
        if op == "put":
            return self.all.put
        if op == "put1":
            return self.one.put
        if op == "put_writes":
            return lambda: s.put_writes(self.writes.config, write_batch(1), str(uuid.uuid4()))
        if op == "get_latest":
            cfg = thread_config("reads")
            return lambda: s.get_tuple(cfg)
        cfg = thread_config("reads", self.reads.ids[HISTORY // 2])
        return lambda: s.get_tuple(cfg)

    def acall(self, op: str) -> Callable[[], Any]:
        s = self.saver
        if op == "put":
            return self.all.aput
        if op == "put1":
            return self.one.aput
        if op == "put_writes":
            return lambda: s.aput_writes(self.writes.config, write_batch(1), str(uuid.uuid4()))
        if op == "get_latest":
            cfg = thread_config("reads")
            return lambda: s.aget_tuple(cfg)
        cfg = thread_config("reads", self.reads.ids[HISTORY // 2])
        return lambda: s.aget_tuple(cfg)


def _us(f: Callable[[], Any], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e6


async def _aus(f: Callable[[], Any], n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        await f()
    return (time.perf_counter() - t) / n * 1e6


def _report(dialect: str, mode: str, op: str, times: dict[str, list[float]]) -> None:
    ours = statistics.median(times["ours"])
    if "official" in times:
        off = statistics.median(times["official"])
        print(
            f"{dialect:9} {mode:5} {op:11} ours {ours:8.0f} us  official {off:8.0f} us"
            f"  time ratio {ours / off:5.2f}"
        )
    else:
        print(f"{dialect:9} {mode:5} {op:11} ours {ours:8.0f} us")


def _profile(label: str, f: Callable[[], Any], n: int) -> None:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        f()
    prof.disable()
    print(f"--- {label}: {n} calls")
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def run_sync(servers: Servers, dialect: str, ops: tuple[str, ...], args: Any) -> None:
    impls = ("ours", "official") if dialect != "mariadb" else ("ours",)
    with ExitStack() as stack:
        subjects = {}
        for impl in impls:
            saver = stack.enter_context(open_sync(impl, servers.new_store(dialect)))
            subjects[impl] = _Subject(saver)
            subjects[impl].fill()
        for op in ops:
            times: dict[str, list[float]] = {impl: [] for impl in impls}
            calls = {impl: subjects[impl].call(op) for impl in impls}
            for impl in impls:
                _us(calls[impl], 10)  # warm up
            for _ in range(args.rounds):
                for impl in impls:
                    times[impl].append(_us(calls[impl], args.calls))
            _report(dialect, "sync", op, times)
            if op in args.profile:
                for impl in impls:
                    _profile(f"{dialect} sync {op} {impl}", calls[impl], args.calls)


async def run_async(servers: Servers, dialect: str, ops: tuple[str, ...], args: Any) -> None:
    impls = ("ours", "official") if dialect != "mariadb" else ("ours",)
    async with AsyncExitStack() as stack:
        subjects = {}
        for impl in impls:
            saver = await stack.enter_async_context(open_async(impl, servers.new_store(dialect)))
            subjects[impl] = _Subject(saver)
            await subjects[impl].afill()
        for op in ops:
            times: dict[str, list[float]] = {impl: [] for impl in impls}
            calls = {impl: subjects[impl].acall(op) for impl in impls}
            for impl in impls:
                await _aus(calls[impl], 10)
            for _ in range(args.rounds):
                for impl in impls:
                    times[impl].append(await _aus(calls[impl], args.calls))
            _report(dialect, "async", op, times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.percall", description=__doc__)
    parser.add_argument("--dialects", default="sqlite,postgres", help="comma list")
    parser.add_argument("--ops", default=",".join(OPS), help="comma list of " + ", ".join(OPS))
    parser.add_argument("--modes", default="sync,async", help="sync, async or both")
    parser.add_argument("--calls", type=int, default=100, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (median reported)")
    parser.add_argument("--profile", default="", help="ops to cProfile (sync door)")
    args = parser.parse_args(argv)
    args.profile = tuple(args.profile.split(",")) if args.profile else ()
    dialects = tuple(d for d in DIALECTS if d in args.dialects.split(","))
    ops = tuple(op for op in OPS if op in args.ops.split(","))
    servers = Servers(dialects)
    try:
        for dialect in dialects:
            if "sync" in args.modes.split(","):
                run_sync(servers, dialect, ops, args)
            if "async" in args.modes.split(","):
                asyncio.run(run_async(servers, dialect, ops, args))
    finally:
        servers.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
