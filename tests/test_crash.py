"""A process killed with SIGKILL in the middle of a run loses no committed checkpoint.

SQLite runs in WAL mode with synchronous=NORMAL (the saver's default): that cannot corrupt
the database, and every transaction committed before the kill survives it (only an
operating-system crash or power loss may lose the last commits). The child process
reports each invoke once it returned, i.e. once its checkpoints were committed; it is
killed at a random point of the next one.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

CHILD = textwrap.dedent(
    """
    import sys
    from typing import TypedDict
    from langgraph.graph import START, StateGraph
    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

    class State(TypedDict):
        count: int
        payload: str

    def bump(state: State) -> dict:
        return {"count": state["count"] + 1, "payload": "x" * 5000}

    builder = StateGraph(State)
    builder.add_node("bump", bump)
    builder.add_edge(START, "bump")
    saver = SQLAlchemySaver.from_conn_string(sys.argv[1])
    saver.setup()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "crash"}}
    count = graph.get_state(config).values.get("count", 0)
    while True:
        count = graph.invoke({"count": count, "payload": ""}, config)["count"]
        print(count, flush=True)
    """
)


def graph_state(db: Path) -> int:
    from typing import TypedDict

    from langgraph.graph import START, StateGraph

    class State(TypedDict):
        count: int
        payload: str

    builder = StateGraph(State)
    builder.add_node("bump", lambda s: {"count": s["count"] + 1})
    builder.add_edge(START, "bump")
    with SQLAlchemySaver.from_conn_string(f"sqlite:///{db}") as saver:
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "crash"}}
        before = graph.get_state(config).values["count"]
        after = graph.invoke({"count": before, "payload": ""}, config)["count"]
        assert after == before + 1
        return int(before)


def test_sigkill_mid_run_keeps_every_committed_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite"
    reported = 0
    for _ in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, f"sqlite:///{db}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        deadline = time.monotonic() + 60
        target = reported + 20
        while reported < target and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            reported = int(line)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert reported >= target, "the child did not run"
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # Every invoke the child saw return is there, and the thread resumes from it
        # (one more invoke may have committed before the kill landed).
        stored = graph_state(db)
        assert reported <= stored <= reported + 1
        reported = stored + 1
