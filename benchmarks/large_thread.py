"""Copy and import one very long thread, which each moves in one transaction.

    python -m benchmarks.large_thread [--checkpoints 100000] [--dialects sqlite,postgres,mariadb]

Fills a SQLite file of ours with one thread of ``--checkpoints`` checkpoints (a counter
and a 200-byte text in each, a pending write on one in ten), exports it, then into a new
database of each dialect runs the real CLI's ``copy`` (from the SQLite file) and
``import`` (of the export), each in a process of its own, and prints its wall time and
peak memory (the process's maximum resident set) and that the target holds the whole
thread. ``copy`` and ``import`` write a thread in one transaction: this is the size that
transaction is measured at.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from .backends import DIALECT_NAMES, DIALECTS, Servers

CLI = [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy"]
THREAD = "long"


def fill(url: str, count: int) -> None:
    """One thread of ``count`` checkpoints in our tables at ``url``."""
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        checkpoint = empty_checkpoint()
        config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
        for step in range(count):
            checkpoint = create_checkpoint(checkpoint, None, step)
            version = saver.get_next_version(None, None)
            checkpoint["channel_values"] = {"n": step, "note": f"{step:08d}" * 25}
            checkpoint["channel_versions"] = {"n": version, "note": version}
            meta = {"source": "loop", "step": step}
            config = saver.put(config, checkpoint, meta, {"n": version, "note": version})  # type: ignore[arg-type]
            if step % 10 == 0:
                saver.put_writes(config, [("n", step)], f"task-{step}")


def timed(argv: list[str]) -> tuple[float, float]:
    """Run the CLI with ``argv``; its wall seconds and peak resident memory (MB)."""
    start = time.perf_counter()
    proc = subprocess.Popen([*CLI, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise RuntimeError(f"{argv[0]} failed ({status}): {err}")
    return elapsed, usage.ru_maxrss / 1024  # kilobytes on Linux


def held(url: str) -> int:
    with SQLAlchemySaver.from_conn_string(url) as saver:
        return sum(t.checkpoints for t in saver.list_threads())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.large_thread", description=__doc__)
    parser.add_argument("--checkpoints", type=int, default=100_000)
    parser.add_argument("--dialects", default=",".join(DIALECTS))
    args = parser.parse_args(argv)
    dialects = tuple(d for d in args.dialects.split(",") if d)
    servers = Servers(tuple(d for d in dialects if d != "sqlite"))
    try:
        source = os.path.join(servers.tmp, "source.sqlite")
        start = time.perf_counter()
        fill(source, args.checkpoints)
        print(f"filled {args.checkpoints} checkpoints: {time.perf_counter() - start:.1f} s")
        dump = os.path.join(servers.tmp, "long.jsonl")
        seconds, peak = timed(["--url", source, "export", THREAD, "-o", dump])
        size = os.path.getsize(dump) / 1e6
        print(f"export: {seconds:.1f} s, {peak:.0f} MB peak, file {size:.0f} MB")
        print("| target | command | seconds | checkpoints/s | peak MB | whole |")
        print("|---|---|---|---|---|---|")
        for dialect in dialects:
            for command in ("copy", "import"):
                url = servers.new_store(dialect).url
                if command == "copy":
                    seconds, peak = timed(["copy", "--from", source, "--to", url, "--no-progress"])
                else:
                    seconds, peak = timed(["import", dump, "--url", url])
                whole = held(url) == args.checkpoints
                rate = args.checkpoints / seconds
                print(
                    f"| {DIALECT_NAMES[dialect]} | {command} | {seconds:.1f} | {rate:,.0f} "
                    f"| {peak:.0f} | {'yes' if whole else 'NO'} |"
                )
    finally:
        servers.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
