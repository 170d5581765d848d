"""``python -m benchmarks.large_read``: client instructions of ``get_tuple`` of a thread
whose ``messages`` channel holds 400 messages of 400 characters, ours beside the
official saver, under ``valgrind --tool=callgrind``.

    python -m benchmarks.large_read [--dialects postgres,sqlite] [--messages 400]
        [--calls 10] [--drivers psycopg,asyncpg] [--profile]

Each (dialect, saver) runs in a child process: it stores one checkpoint of the
messages and four scalar channels (every channel at a new version), reads it
:data:`WARM` times, then ``--calls`` times between two markers, and as many no-op calls
between two more (:mod:`.instructions`' marker technique). ``--drivers`` adds our saver
on other PostgreSQL drivers (the sync door of ``asyncpg`` is not one: it is measured on
the async door). ``--profile``: cProfile instead, the functions with the most own time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

__all__ = ["main", "messages"]

WARM = 5


def messages(count: int, size: int = 400) -> list[Any]:
    """``count`` chat messages of ``size`` characters, human and AI in turn."""
    from langchain_core.messages import AIMessage, HumanMessage

    from .data import _text

    rng = random.Random(400)
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(
            content=_text(rng, size), id=str(uuid.UUID(int=rng.getrandbits(128)))
        )
        for i in range(count)
    ]


def _checkpoint(saver: Any, count: int) -> tuple[Any, Any, Any, Any]:
    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    version = saver.get_next_version(None, None)
    values = {"messages": messages(count), "step": 1, "user": "u-1", "flag": True, "score": 0.5}
    cp["channel_values"] = values
    cp["channel_versions"] = {k: version for k in values}
    config = {"configurable": {"thread_id": "big", "checkpoint_ns": ""}}
    return config, cp, {"source": "loop", "step": 1}, dict(cp["channel_versions"])


def _url(spec: dict[str, Any]) -> str:
    url: str = spec["store"]["url"]
    driver = spec.get("driver")
    if driver and url.startswith("postgresql://"):
        url = url.replace("postgresql://", f"postgresql+{driver}://", 1)
    return url


def child(spec: dict[str, Any]) -> None:
    from .backends import Store, open_sync
    from .instructions import _marker, _settle

    mark = _marker(spec["marker"]) if spec.get("marker") else None
    store = Store(**{**spec["store"], "url": _url(spec)})
    n = spec["calls"]
    labels: list[str] = []
    if spec["door"] == "sync":
        with open_sync(spec["impl"], store, normal=True) as saver:
            cfg = saver.put(*_checkpoint(saver, spec["messages"]))
            for _ in range(WARM):
                saver.get_tuple(cfg)
            if mark is None:
                _profile(lambda: saver.get_tuple(cfg), n, spec)
                return
            mark()
            _settle()
            mark()
            labels.append("settle")
            for _ in range(n):
                saver.get_tuple(cfg)
            mark()
            labels.append("get_tuple")
            for _ in range(n):
                _noop(cfg)
            mark()
            labels.append("base")
    else:

        async def go() -> None:
            async with _open_async(spec, store) as saver:
                cfg = await saver.aput(*_checkpoint(saver, spec["messages"]))
                for _ in range(WARM):
                    await saver.aget_tuple(cfg)
                mark()
                _settle()
                mark()
                labels.append("settle")
                for _ in range(n):
                    await saver.aget_tuple(cfg)
                mark()
                labels.append("get_tuple")
                for _ in range(n):
                    _noop(cfg)
                mark()
                labels.append("base")

        asyncio.run(go())
    with open(spec["labels"], "w", encoding="utf-8") as f:
        json.dump(labels, f)


@asynccontextmanager
async def _open_async(spec: dict[str, Any], store: Any) -> AsyncIterator[Any]:
    """The async saver; asyncpg takes no libpq ``options`` (the store's search path):
    ours on it is given the schema instead."""
    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

    from .backends import open_async

    if spec.get("driver") != "asyncpg":
        async with open_async(spec["impl"], store, normal=True) as saver:
            yield saver
        return
    saver = SQLAlchemySaver.from_conn_string(store.url.split("?", 1)[0], schema=store.name)
    try:
        await saver.asetup()
        yield saver
    finally:
        await saver.aclose()


def _noop(*_args: Any) -> None:
    return None


def _profile(call: Any, n: int, spec: dict[str, Any], top: int = 20) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        call()
    prof.disable()
    st: Any = pstats.Stats(prof)
    print(f"\n{spec['tag']}: {st.total_calls / n:.0f} Python calls a call")
    for (file, line, name), (_cc, nc, tt, _ct, _c) in sorted(
        st.stats.items(), key=lambda kv: -kv[1][2]
    )[:top]:
        where = f"{os.path.basename(file)}:{line}" if line else file
        print(f"  {nc / n:8.1f} calls {tt / n * 1e6:8.1f} us  {name} ({where})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.large_read", description=__doc__)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dialects", default="postgres")
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--drivers", default="", help="our saver also on these PG drivers")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    from concurrent.futures import ThreadPoolExecutor

    from .backends import Servers, has_official
    from .instructions import _build_marker, _compile_ours, missing_tools, run_under_callgrind

    dialects = tuple(d for d in args.dialects.split(",") if d)
    if not args.profile and missing_tools():
        print(f"skipped: {missing_tools()}")
        return 0
    _compile_ours()
    tmp = tempfile.mkdtemp(prefix="lgsa_large_")
    servers = Servers(tuple(d for d in dialects if d != "sqlite"))
    try:
        marker = None if args.profile else _build_marker(tmp)
        jobs = []
        for dialect in dialects:
            runs = [("ours", None, "sync")]
            if has_official(dialect):
                runs.append(("official", None, "sync"))
            if dialect == "postgres":
                for d in (x for x in args.drivers.split(",") if x):
                    runs.append(("ours", d, "async" if d == "asyncpg" else "sync"))
            for impl, driver, door in runs:
                store = servers.new_store(dialect)
                tag = f"{dialect}.{impl}.{driver or 'default'}.{door}"
                spec = {
                    "marker": marker,
                    "impl": impl,
                    "driver": driver,
                    "door": door,
                    "tag": tag,
                    "messages": args.messages,
                    "calls": args.calls,
                    "store": {
                        "dialect": store.dialect,
                        "name": store.name,
                        "url": store.url,
                        "native": store.native,
                    },
                }
                jobs.append((tag, spec))
        if args.profile:
            for _tag, spec in jobs:
                if spec["door"] == "sync":
                    child(spec)
            return 0

        def one(job: tuple[str, dict[str, Any]]) -> tuple[str, dict[str, int]]:
            tag, spec = job
            try:
                segs = run_under_callgrind(spec, tmp, tag, "benchmarks.large_read")
            except RuntimeError as e:
                print(str(e)[-2000:])
                return tag, {"total": 0}
            get, base = segs["get_tuple"][1], segs["base"][1]
            per = {k: round((get[k] - base[k]) / args.calls) for k in get}
            return tag, per

        with ThreadPoolExecutor(max_workers=2) as pool:
            results = dict(pool.map(one, jobs))
        for tag, per in results.items():
            dialect = tag.split(".")[0]
            official = results.get(f"{dialect}.official.default.sync")
            ok = official and official["total"] and per["total"]
            ratio = f" {per['total'] / official['total']:.3f}x official" if ok else ""
            print(f"{tag}: {per}{ratio}")
    finally:
        servers.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
