"""``python -m benchmarks.delta_turns``: client instructions of one chat turn's saver calls,
for a graph whose messages are a ``DeltaChannel``, ours beside the official saver.

    python -m benchmarks.delta_turns [--turns 10,100] [--dialects sqlite,postgres]
        [--profile]

A one-node chat graph (``messages`` a ``DeltaChannel`` appending lists, default
``snapshot_frequency``; each turn a 400-character human message in, a 400-character
AI message out) is run once on an ``InMemorySaver`` that records every saver call with
its arguments (copied at the call). Each turn's calls are then replayed, in order, on
each saver under ``valgrind --tool=callgrind``: the turns before the measured one
unmeasured (they fill the thread and warm every statement up), the measured turn one
call a segment between two markers (:mod:`.instructions`' marker technique; a no-op
segment is subtracted a call). A turn is ``get_tuple``, ``get_delta_channel_history``,
then three ``put`` and two ``put_writes``; the table shows each call and the turn's sum,
ours over the official saver's. SQLite both at ``synchronous = NORMAL``; PostgreSQL
the client side only.

``--profile``: the replayed turn under cProfile instead (no valgrind), the functions
with the most own time per saver and call kind.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import pickle
import random
import shutil
import sys
import tempfile
import uuid
from collections.abc import Sequence
from typing import Annotated, Any

from langgraph.channels.delta import DeltaChannel
from typing_extensions import TypedDict

__all__ = ["fill", "main", "record", "replay"]

#: Characters of each message.
MESSAGE = 400
#: Configurable keys a recorded config keeps (LangGraph's own runtime objects go).
_KEYS = ("thread_id", "checkpoint_ns", "checkpoint_id")
THREAD = "delta-chat"


def extend(state: list[Any], writes: Sequence[Any]) -> list[Any]:
    """The DeltaChannel reducer: each write (a list of messages) appended in order."""
    return [*state, *(m for w in writes for m in (w if isinstance(w, list) else [w]))]


class ChatState(TypedDict):
    """The chat's state: its messages, a ``DeltaChannel``."""

    messages: Annotated[list[Any], DeltaChannel(extend)]


def _config(config: Any) -> dict[str, Any]:
    conf = config.get("configurable", {})
    return {"configurable": {k: conf[k] for k in _KEYS if k in conf}}


def record(turns: int) -> list[list[tuple[str, tuple[Any, ...], dict[str, Any]]]]:
    """Run the chat graph ``turns`` turns on a recording ``InMemorySaver``; each turn's
    saver calls as ``(method, args, kwargs)``."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from .data import _text

    rng = random.Random(44)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    class Recording(InMemorySaver):
        def get_tuple(self, config: Any) -> Any:
            calls.append(("get_tuple", (_config(config),), {}))
            return super().get_tuple(config)

        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            args = (_config(config), *copy.deepcopy((checkpoint, metadata, new_versions)))
            calls.append(("put", args, {}))
            return super().put(config, checkpoint, metadata, new_versions)

        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            args = (_config(config), copy.deepcopy(list(writes)), task_id, task_path)
            calls.append(("put_writes", args, {}))
            super().put_writes(config, writes, task_id, task_path)

        def get_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
            kwargs = {"config": _config(config), "channels": list(channels)}
            calls.append(("get_delta_channel_history", (), kwargs))
            return super().get_delta_channel_history(config=config, channels=channels)

    def reply(state: ChatState) -> dict[str, Any]:
        text = _text(rng, MESSAGE)
        return {"messages": [AIMessage(content=text, id=str(uuid.UUID(int=rng.getrandbits(128))))]}

    builder = StateGraph(ChatState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=Recording())
    config = {"configurable": {"thread_id": THREAD}}
    out = []
    for _ in range(turns):
        calls.clear()
        message = HumanMessage(
            content=_text(rng, MESSAGE), id=str(uuid.UUID(int=rng.getrandbits(128)))
        )
        graph.invoke({"messages": [message]}, config)
        out.append(list(calls))
    return out


def _call(saver: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    result = getattr(saver, method)(*args, **kwargs)
    if method == "get_delta_channel_history":
        result = dict(result)
    return result


def fill(saver: Any, turns: list[Any]) -> None:
    """Replay ``turns`` on ``saver``, unmeasured."""
    for turn in turns:
        for method, args, kwargs in turn:
            _call(saver, method, args, kwargs)


def replay(saver: Any, turns: list[Any], mark: Any = None) -> list[str]:
    """Replay ``turns`` on ``saver``: all but the last unmeasured, the last one call a
    segment between markers, then as many no-op segments; the segments' labels."""
    from .instructions import _settle

    fill(saver, turns[:-1])
    last = copy.deepcopy(turns[-1])
    labels: list[str] = []
    if mark is None:
        for method, args, kwargs in last:
            _call(saver, method, args, kwargs)
        return labels
    mark()  # everything before: the first dump
    _settle()
    mark()
    labels.append("settle")
    for i, (method, args, kwargs) in enumerate(last):
        _call(saver, method, args, kwargs)
        mark()
        labels.append(f"{i}:{method}")
    for i in range(len(last)):
        _noop(saver, "get_tuple", (), {})
        mark()
        labels.append(f"base:{i}")
    return labels


def _noop(*_args: Any) -> None:
    return None


def child(spec: dict[str, Any]) -> None:
    """Under callgrind: open the saver, replay, write the labels."""
    from .backends import Store, open_sync
    from .instructions import _marker

    mark = _marker(spec["marker"])
    with open(spec["turns"], "rb") as f:
        turns = pickle.load(f)
    store = Store(**spec["store"])
    with open_sync(spec["impl"], store, normal=True) as saver:
        labels = replay(saver, turns, mark)
    with open(spec["labels"], "w", encoding="utf-8") as f:
        json.dump(labels, f)


def measure(
    dialects: tuple[str, ...], counts: tuple[int, ...], keep: bool = False
) -> list[dict[str, Any]]:
    """Each (dialect, saver, turn count) under callgrind, two at a time."""
    from concurrent.futures import ThreadPoolExecutor

    from .backends import Servers, has_official
    from .instructions import _build_marker, _compile_ours, run_under_callgrind

    _compile_ours()
    tmp = tempfile.mkdtemp(prefix="lgsa_delta_")
    servers = Servers(tuple(d for d in dialects if d != "sqlite"))
    try:
        marker = _build_marker(tmp)
        recorded = record(max(counts))
        jobs = []
        for n in counts:
            path = os.path.join(tmp, f"turns.{n}.pickle")
            with open(path, "wb") as f:
                pickle.dump(recorded[:n], f)
            for dialect in dialects:
                for impl in ("ours", "official") if has_official(dialect) else ("ours",):
                    store = servers.new_store(dialect)
                    spec = {
                        "marker": marker,
                        "impl": impl,
                        "turns": path,
                        "store": {
                            "dialect": store.dialect,
                            "name": store.name,
                            "url": store.url,
                            "native": store.native,
                        },
                    }
                    jobs.append((f"{dialect}.{impl}.{n}", spec, dialect, impl, n))

        def one(job: tuple[str, dict[str, Any], str, str, int]) -> dict[str, Any]:
            tag, spec, dialect, impl, n = job
            segments = run_under_callgrind(spec, tmp, tag, "benchmarks.delta_turns")
            base = [seg["total"] for label, (_, seg) in segments.items() if label[:5] == "base:"]
            per_base = round(sum(base) / len(base)) if base else 0
            calls = {
                label: seg["total"] - per_base
                for label, (_, seg) in segments.items()
                if label != "settle" and label[:5] != "base:"
            }
            print(f"  {tag}: turn {sum(calls.values()):,}", flush=True)
            return {"dialect": dialect, "impl": impl, "turns": n, "calls": calls}

        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(one, jobs))
    finally:
        servers.close()
        if keep:
            print(f"callgrind dumps kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def table(records: list[dict[str, Any]]) -> str:
    """Per (dialect, turn count): each call and the turn, ours, official, ratio."""
    by = {(r["dialect"], r["turns"], r["impl"]): r["calls"] for r in records}
    lines = [
        "| backend | turn | call | ours | official | ours / official |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for (dialect, n, impl), calls in by.items():
        if impl != "ours":
            continue
        theirs = by.get((dialect, n, "official"), {})
        rows = [*calls.items(), ("turn", sum(calls.values()))]
        their_rows = {**theirs, "turn": sum(theirs.values())} if theirs else {}
        for label, ours in rows:
            official = their_rows.get(label)
            ratio = f"{ours / official:.2f}x" if official else ""
            shown = f"{official:,}" if official else ""
            lines.append(f"| {dialect} | {n} | {label} | {ours:,} | {shown} | {ratio} |")
    return "\n".join(lines)


def profile(dialects: tuple[str, ...], n: int, top: int = 15) -> str:
    """The measured turn under cProfile, per saver: the Python calls it makes and the
    functions with the most own time."""
    import cProfile
    import pstats

    from .backends import Servers, has_official, open_sync

    recorded = record(n)
    servers = Servers(tuple(d for d in dialects if d != "sqlite"))
    out = []
    try:
        for dialect in dialects:
            for impl in ("ours", "official") if has_official(dialect) else ("ours",):
                with open_sync(impl, servers.new_store(dialect), normal=True) as saver:
                    fill(saver, recorded[:-1])
                    last = copy.deepcopy(recorded[-1])
                    prof = cProfile.Profile()
                    prof.enable()
                    for method, args, kwargs in last:
                        _call(saver, method, args, kwargs)
                    prof.disable()
                    st: Any = pstats.Stats(prof)
                    out.append(f"\n{dialect} {impl} turn {n}: {st.total_calls} Python calls")
                    entries = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
                    for (file, line, name), (_cc, nc, tt, _ct, _callers) in entries:
                        where = f"{os.path.basename(file)}:{line}" if line else file
                        out.append(f"  {nc:6d} calls {tt * 1e6:8.0f} us  {name} ({where})")
    finally:
        servers.close()
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.delta_turns", description=__doc__)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--turns", default="10,100", help="turn numbers measured")
    parser.add_argument("--dialects", default="sqlite,postgres")
    parser.add_argument("--profile", action="store_true", help="cProfile instead of callgrind")
    parser.add_argument("--keep", action="store_true", help="keep the callgrind dumps")
    parser.add_argument("--out", help="write the records as JSON here")
    args = parser.parse_args(argv)
    if args.child:
        child(json.loads(args.child))
        return 0
    dialects = tuple(d for d in args.dialects.split(",") if d)
    counts = tuple(int(n) for n in args.turns.split(",") if n)
    if args.profile:
        print(profile(dialects, max(counts)))
        return 0
    from .instructions import missing_tools

    why = missing_tools()
    if why:
        print(f"skipped: {why}")
        return 0
    gc.collect()
    records = measure(dialects, counts, args.keep)
    print(table(records))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
