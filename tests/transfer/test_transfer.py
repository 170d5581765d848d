"""Copy, export and import: from the official savers' databases, and between ours.

The sources are real: an official ``SqliteSaver`` file and an official ``PostgresSaver``
database (each PostgreSQL database made for one test and dropped after), filled by
running real LangGraph graphs: one left at an ``interrupt()``, one whose subgraph is
interrupted (checkpoints in a non-empty ``checkpoint_ns``), and one where a node raised
after its sibling succeeded in the same superstep (the sibling's pending writes
stored). The copies are made through the CLI's real entry point, and every graph is
resumed both from the copy and from the original: the results must be the same.
"""

from __future__ import annotations

import json
import operator
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from sqlalchemy import create_engine, delete, func, select, text
from sqlalchemy.engine import make_url
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy.schema import checkpoints as lgsa_checkpoints
from langgraph.checkpoint.sqlalchemy.transfer import (
    EXPORT_FORMAT,
    ExportFormatError,
    UnknownSourceError,
    copy_threads,
    export_threads,
    import_threads,
    open_source,
)

from ..graphs import chain
from ..graphs import thread as cfg
from ..waiting import until

PROG = [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy"]
THREADS = ("hitl", "sub", "fail")


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROG, *args], capture_output=True, text=True, input=stdin, timeout=300, check=False
    )


# -- databases --------------------------------------------------------------------------


@contextmanager
def official_saver(kind: str, where: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """The official saver on a SQLite file path or a PostgreSQL URL, tables set up."""
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(where, check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            saver.setup()
            yield saver
        finally:
            conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        libpq = make_url(where).set(drivername="postgresql").render_as_string(False)
        with PostgresSaver.from_conn_string(libpq) as saver:
            saver.setup()
            yield saver


@contextmanager
def our_saver(url: str) -> Iterator[SQLAlchemySaver]:
    saver = SQLAlchemySaver.from_conn_string(url)
    try:
        saver.setup()
        yield saver
    finally:
        saver.close()


# -- the graphs ---------------------------------------------------------------------------


class State(TypedDict):
    log: Annotated[list[str], operator.add]


class Calls:
    """Node side effects: how often each node ran, and whether ``boom`` fails."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.fail = True

    def hit(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1


def hitl_graph(saver: BaseCheckpointSaver[Any], calls: Calls) -> Any:
    def draft(state: State) -> dict[str, Any]:
        calls.hit("draft")
        return {"log": ["draft"]}

    def review(state: State) -> dict[str, Any]:
        calls.hit("review")
        answer = interrupt({"question": "approve?", "seen": list(state["log"])})
        return {"log": [f"review:{answer}"]}

    def publish(state: State) -> dict[str, Any]:
        return {"log": [f"publish after {len(state['log'])}"]}

    return chain(State, draft, review, publish, checkpointer=saver)


def sub_graph(saver: BaseCheckpointSaver[Any], calls: Calls) -> Any:
    def inner_a(state: State) -> dict[str, Any]:
        calls.hit("inner_a")
        return {"log": ["inner_a"]}

    def inner_ask(state: State) -> dict[str, Any]:
        answer = interrupt("inner question")
        return {"log": [f"inner_ask:{answer}"]}

    inner = chain(State, inner_a, inner_ask)

    def before(state: State) -> dict[str, Any]:
        return {"log": ["before"]}

    def after(state: State) -> dict[str, Any]:
        return {"log": [f"after {len(state['log'])}"]}

    return chain(State, before, ("inner", inner), after, checkpointer=saver)


def fail_graph(saver: BaseCheckpointSaver[Any], calls: Calls) -> Any:
    """The graph of thread ``fail``: ``boom`` fails (once ``calls.fail`` is False, not)
    beside ``ok``, whose writes stay pending."""

    def start(state: State) -> dict[str, Any]:
        return {"log": ["start"]}

    def ok(state: State) -> dict[str, Any]:
        calls.hit("ok")
        return {"log": ["ok"]}

    def ok_stored() -> bool:
        stored = saver.get_tuple(cfg("fail"))
        return stored is not None and ("log", ["ok"]) in [w[1:] for w in stored.pending_writes]

    def boom(state: State) -> dict[str, Any]:
        calls.hit("boom")
        if calls.fail:
            # The sibling's writes are kept only if they are stored first: the two tasks
            # race, and a failure cancels what still runs.
            until(ok_stored, "the writes of the sibling task to be stored")
            raise RuntimeError("boom")
        return {"log": ["boom fixed"]}

    def join(state: State) -> dict[str, Any]:
        return {"log": [f"join {sorted(state['log'])}"]}

    b = StateGraph(State)
    b.add_node("start", start)
    b.add_node("ok", ok)
    b.add_node("boom", boom)
    b.add_node("join", join)
    b.add_edge(START, "start")
    b.add_edge("start", "ok")
    b.add_edge("start", "boom")
    b.add_edge(["ok", "boom"], "join")
    b.add_edge("join", END)
    return b.compile(checkpointer=saver)


def run_graphs(saver: BaseCheckpointSaver[Any]) -> None:
    """Leave the three threads as the tests expect: two interrupted, one failed."""
    calls = Calls()
    hitl_graph(saver, calls).invoke({"log": ["in"]}, cfg("hitl"))
    sub_graph(saver, calls).invoke({"log": ["in"]}, cfg("sub"))
    with pytest.raises(RuntimeError, match="boom"):
        fail_graph(saver, calls).invoke({"log": ["in"]}, cfg("fail"))


def resume_graphs(saver: BaseCheckpointSaver[Any]) -> dict[str, Any]:
    """Resume every thread; the final states and which nodes ran again."""
    calls = Calls()
    calls.fail = False
    out = {
        "hitl": hitl_graph(saver, calls).invoke(Command(resume="yes"), cfg("hitl")),
        "sub": sub_graph(saver, calls).invoke(Command(resume="fine"), cfg("sub")),
        "fail": fail_graph(saver, calls).invoke(None, cfg("fail")),
    }
    return {"results": out, "calls": calls.counts}


def history(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[Any]:
    """Every checkpoint of a thread, every namespace: ids, parents, metadata, values and
    pending writes, comparable across savers."""
    found = []
    for t in saver.list(cfg(thread_id)):
        c = t.config["configurable"]
        parent = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        meta = {k: v for k, v in t.metadata.items() if k != "writes"}
        found.append(
            (
                c["checkpoint_ns"],
                c["checkpoint_id"],
                parent,
                meta,
                repr(sorted(t.checkpoint["channel_values"].items())),
                sorted(repr(w) for w in t.pending_writes or []),
            )
        )
    return sorted(found, key=lambda x: (x[1], x[0]))


def build_source(kind: str, tmp_path: Path, pg_database: Callable[[], str]) -> str:
    """A real official saver database with the three threads; its URL."""
    where = str(tmp_path / "official.sqlite") if kind == "sqlite" else pg_database()
    with official_saver(kind, where) as saver:
        run_graphs(saver)
        namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(cfg("sub"))}
        assert any(ns for ns in namespaces), "the subgraph must store checkpoints of its own"
        failed = saver.get_tuple(cfg("fail"))
        assert failed is not None
        assert any(ch == "log" for _, ch, _ in failed.pending_writes or []), (
            "the successful sibling's writes must be stored"
        )
    return where


def target_url(kind: str, tmp_path: Path, pg_database: Callable[[], str]) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'ours.sqlite'}"
    return pg_database()


# -- copy from the official savers, with the CLI, and resume ------------------------------


@pytest.mark.parametrize("target_kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("source_kind", ["sqlite", "postgres"])
def test_cli_copy_from_official_saver_resumes_like_the_original(
    source_kind: str, target_kind: str, tmp_path: Path, pg_database: Callable[[], str]
) -> None:
    source = build_source(source_kind, tmp_path, pg_database)
    target = target_url(target_kind, tmp_path, pg_database)

    done = cli("copy", "--from", source, "--to", target, "--yes")
    assert done.returncode == 0, done.stderr
    assert "verified" in done.stdout
    # again: everything is skipped, nothing duplicated
    again = cli("copy", "--from", source, "--to", target, "--json", "--into-existing")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["checkpoints_copied"] == 0
    assert report["checkpoints_skipped"] > 0
    assert report["mismatches"] == []

    with official_saver(source_kind, source) as original, our_saver(target) as copy:
        for t in THREADS:
            assert history(copy, t) == history(original, t), t
        from_copy = resume_graphs(copy)
        from_original = resume_graphs(original)
    assert from_copy == from_original
    # The interrupted and the failed threads resumed where they stopped: the nodes
    # before the interrupts did not run again, nor did the sibling that succeeded.
    assert from_copy["calls"] == {"review": 1, "boom": 1}
    assert from_copy["results"]["hitl"]["log"][-2:] == ["review:yes", "publish after 3"]
    assert "inner_ask:fine" in from_copy["results"]["sub"]["log"]
    assert from_copy["results"]["fail"]["log"][-1].startswith("join")


def test_cli_copy_one_thread_and_task_paths(tmp_path: Path, pg_database: Callable[[], str]) -> None:
    source = build_source("postgres", tmp_path, pg_database)
    target = target_url("sqlite", tmp_path, pg_database)
    done = cli("copy", "--from", source, "--to", target, "--thread", "fail", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["threads"] == 1
    engine = create_engine(target)
    src = create_engine(source)
    try:
        with engine.connect() as conn:
            threads = conn.execute(text("SELECT DISTINCT thread_id FROM lgsa_checkpoints"))
            assert [r[0] for r in threads] == ["fail"]
            ours = conn.execute(
                text(
                    "SELECT checkpoint_id, task_id, task_path, idx, channel "
                    "FROM lgsa_checkpoint_writes ORDER BY 1, 2, 4"
                )
            ).all()
        with src.connect() as conn:
            theirs = conn.execute(
                text(
                    "SELECT checkpoint_id, task_id, task_path, idx, channel "
                    "FROM checkpoint_writes WHERE thread_id = 'fail' ORDER BY 1, 2, 4"
                )
            ).all()
    finally:
        engine.dispose()
        src.dispose()
    assert [tuple(r) for r in ours] == [tuple(r) for r in theirs]
    assert any(r[2] for r in ours), "PostgresSaver stores task paths; they are copied"


# -- resumable copy ------------------------------------------------------------------------


class Stop(Exception):
    pass


def test_interrupted_copy_rerun_leaves_exactly_one_copy(tmp_path: Path) -> None:
    """A copy stopped half-way (an exception from its progress callback) leaves each
    thread whole or absent; the same call again copies the rest, exactly once."""
    source = build_source("sqlite", tmp_path, lambda: "")
    target = f"sqlite:///{tmp_path / 'ours.sqlite'}"

    def stop_after(n: int) -> Callable[[int], None]:
        def progress(done: int) -> None:
            if done >= n:
                raise Stop

        return progress

    with open_source(source) as src, our_saver(target) as dst:
        counts = {t: len(list(src.list(cfg(t)))) for t in THREADS}
        total = sum(counts.values())
        with pytest.raises(Stop):
            copy_threads(src, dst, progress=stop_after(total // 2))
        c = lgsa_checkpoints.c

        def held() -> dict[str, int]:
            with dst.engine.connect() as conn:
                return {
                    t: conn.execute(select(func.count()).where(c.thread_id == t)).scalar_one()
                    for t in THREADS
                }

        after_stop = held()
        assert all(after_stop[t] in (0, counts[t]) for t in THREADS), after_stop
        whole = sum(after_stop.values())
        assert 0 < whole < total // 2 + 1
        report = copy_threads(src, dst)  # the same call again: no into_existing needed
        assert report.checkpoints_skipped == whole
        assert report.checkpoints_copied == total - whole
        assert report.mismatches == []
        assert held() == counts
        # and a third run skips everything
        third = copy_threads(src, dst, into_existing=True)
        assert (third.checkpoints_copied, third.checkpoints_skipped) == (0, total)
        with official_saver("sqlite", source) as original:
            for t in THREADS:
                assert history(dst, t) == history(original, t)


def test_copy_rerun_after_target_moved_on_verifies(tmp_path: Path) -> None:
    """The copy is verified by key, not by counting: a target thread that moved on after
    the first copy (more checkpoints there than in the source) is whole, skipped. One
    that lacks a source checkpoint is refused without --into-existing."""
    source = build_source("sqlite", tmp_path, lambda: "")
    target = f"sqlite:///{tmp_path / 'ours.sqlite'}"
    first = cli("copy", "--from", source, "--to", target, "--thread", "hitl")
    assert first.returncode == 0, first.stderr
    with our_saver(target) as dst:
        before = list(dst.list(cfg("hitl")))
        hitl_graph(dst, Calls()).invoke(Command(resume="yes"), cfg("hitl"))
        assert len(list(dst.list(cfg("hitl")))) > len(before)
    again = cli("copy", "--from", source, "--to", target, "--thread", "hitl")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "MISMATCH" not in again.stdout
    assert "verified: every checkpoint and pending write" in again.stdout
    oldest = before[-1].config["configurable"]["checkpoint_id"]
    engine = create_engine(target)
    with engine.begin() as conn:
        conn.execute(delete(lgsa_checkpoints).where(lgsa_checkpoints.c.checkpoint_id == oldest))
    engine.dispose()
    refused = cli("copy", "--from", source, "--to", target, "--thread", "hitl")
    assert refused.returncode == 1 and "--into-existing" in refused.stderr, refused.stderr
    fixed = cli("copy", "--from", source, "--to", target, "--thread", "hitl", "--into-existing")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "copied 1 checkpoints" in fixed.stdout
    assert "verified: every checkpoint and pending write" in fixed.stdout


def test_copy_reports_checkpoints_and_writes_missing_from_the_target(tmp_path: Path) -> None:
    """Verification reads the target back: rows of a thread that vanish as they are
    written (here a trigger deletes them, as another process could) are reported."""
    source = build_source("sqlite", tmp_path, lambda: "")
    target = f"sqlite:///{tmp_path / 'ours.sqlite'}"
    with open_source(source) as src, our_saver(target) as dst:
        counts = {t: len(list(src.list(cfg(t)))) for t in THREADS}
        source_writes = sum(len(t.pending_writes or []) for t in src.list(cfg("sub")))
        assert source_writes > 0
        with dst.engine.begin() as conn:
            conn.execute(
                text(
                    "CREATE TRIGGER vanish AFTER INSERT ON lgsa_checkpoints "
                    "WHEN NEW.thread_id = 'sub' BEGIN "
                    "DELETE FROM lgsa_checkpoint_writes WHERE thread_id = 'sub'; "
                    "DELETE FROM lgsa_checkpoints WHERE thread_id = 'sub'; END"
                )
            )
        report = copy_threads(src, dst)
    assert [m.thread_id for m in report.mismatches] == ["sub"]
    (m,) = report.mismatches
    assert (m.source_count, m.missing_checkpoints) == (counts["sub"], counts["sub"])
    assert m.missing_writes == source_writes
    assert m.first_missing


def test_unknown_source(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    with pytest.raises(UnknownSourceError, match="no checkpoint tables"), open_source(str(empty)):
        pass
    done = cli("copy", "--from", str(empty), "--to", str(tmp_path / "t.sqlite"))
    assert done.returncode == 2
    assert "no checkpoint tables found" in done.stderr
    missing = cli("copy", "--from", str(tmp_path / "nope.sqlite"), "--to", str(empty))
    assert missing.returncode == 1
    assert "no database at" in missing.stderr
    assert not (tmp_path / "nope.sqlite").exists()
    bad_scheme = cli("copy", "--from", "foo://x", "--to", str(empty))
    assert bad_scheme.returncode == 2
    assert "Unsupported database URL scheme" in bad_scheme.stderr


# -- between our databases ----------------------------------------------------------------


def test_cli_copy_between_our_databases(
    tmp_path: Path, pg_database: Callable[[], str], mariadb_database: Callable[[], str]
) -> None:
    first = f"sqlite:///{tmp_path / 'first.sqlite'}"
    with our_saver(first) as saver:
        run_graphs(saver)
    pg = pg_database()
    maria = mariadb_database()
    for src, dst in ((first, pg), (pg, maria)):
        done = cli("copy", "--from", src, "--to", dst, "--no-progress", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["mismatches"] == []
    with our_saver(first) as a, our_saver(pg) as b, our_saver(maria) as c:
        for t in THREADS:
            assert history(b, t) == history(a, t)
            assert history(c, t) == history(a, t)
        results = [resume_graphs(s) for s in (a, b, c)]
    assert results[0] == results[1] == results[2]


# -- export / import -----------------------------------------------------------------------


def test_cli_export_import_round_trip(tmp_path: Path, pg_database: Callable[[], str]) -> None:
    ours = f"sqlite:///{tmp_path / 'ours.sqlite'}"
    with our_saver(ours) as saver:
        run_graphs(saver)
    dump = tmp_path / "threads.jsonl"
    done = cli("--url", ours, "export", *THREADS, "-o", str(dump))
    assert done.returncode == 0, done.stderr
    lines = dump.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": EXPORT_FORMAT, "version": 3}
    assert json.loads(lines[-1])["end_of_export"] == EXPORT_FORMAT
    records = len(lines) - 2 - len(THREADS)  # header, end lines
    assert json.loads(lines[-1])["checkpoints"] == records
    first = json.loads(lines[1])
    assert set(first) >= {"thread_id", "checkpoint_ns", "checkpoint_id", "metadata"}
    assert set(first["checkpoint"]) == {"type", "data"}
    assert all(set(v) == {"type", "data"} for v in first["channel_values"].values())

    # -o - writes to stdout, the same document
    to_stdout = cli("--url", ours, "export", *THREADS, "-o", "-")
    assert to_stdout.returncode == 0
    assert to_stdout.stdout.splitlines() == lines

    pg = pg_database()
    imported = cli("import", str(dump), "--url", pg, "--json")
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["checkpoints_imported"] == records
    assert report["threads"] == len(THREADS)
    assert sorted(report["thread_ids"]) == sorted(THREADS)
    # The threads are whole there now: the same import skips them.
    again = cli("import", "-", "--url", pg, "--json", stdin=dump.read_text())
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["checkpoints_skipped"] == records
    # A thread that lacks one of the file's checkpoints is written to only on request.
    engine = create_engine(pg)
    with engine.begin() as conn:
        latest = conn.execute(
            select(func.max(lgsa_checkpoints.c.checkpoint_id)).where(
                lgsa_checkpoints.c.thread_id == "hitl"
            )
        ).scalar_one()
        conn.execute(delete(lgsa_checkpoints).where(lgsa_checkpoints.c.checkpoint_id == latest))
    engine.dispose()
    refused = cli("import", "-", "--url", pg, stdin=dump.read_text())
    assert refused.returncode == 1
    assert "--into-existing" in refused.stderr and "nothing was imported" in refused.stderr
    fixed = cli("import", "-", "--url", pg, "--json", "--into-existing", stdin=dump.read_text())
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout)["checkpoints_imported"] == 1

    with our_saver(ours) as a, our_saver(pg) as b:
        for t in THREADS:
            assert history(b, t) == history(a, t)
        assert resume_graphs(b) == resume_graphs(a)


def test_cli_import_rejects_bad_files(tmp_path: Path) -> None:
    ours = str(tmp_path / "ours.sqlite")
    cases = {
        "other.jsonl": ('{"format": "something-else", "version": 1}\n', "unknown export format"),
        "future.jsonl": (
            json.dumps({"format": EXPORT_FORMAT, "version": 99}) + "\n",
            "version 99 is not supported",
        ),
        "csv.jsonl": ("a,b,c\n1,2,3\n", "not an export of langgraph-checkpoint-sqlalchemy"),
        "broken.jsonl": (
            json.dumps({"format": EXPORT_FORMAT, "version": 3}) + '\n{"thread_id": "x"}\n',
            "line 2: not a checkpoint record",
        ),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_text(content)
        done = cli("--url", ours, "import", str(path))
        assert done.returncode == 2, (name, done.stderr)
        assert message in done.stderr, (name, done.stderr)
    missing = cli("--url", ours, "import", str(tmp_path / "missing.jsonl"))
    assert missing.returncode == 2
    assert "No such file" in missing.stderr


def test_export_import_api_with_official_source(tmp_path: Path) -> None:
    """export_threads reads any source open_source gives; the file imports into ours."""
    source = build_source("sqlite", tmp_path, lambda: "")
    dump = tmp_path / "official.jsonl"
    with open_source(source) as src, open(dump, "w") as fp:
        exported = export_threads(src, None, fp)
    assert exported.threads == len(THREADS)
    with our_saver(f"sqlite:///{tmp_path / 'ours.sqlite'}") as dst, open(dump) as fp:
        report = import_threads(dst, fp)
        assert report.checkpoints_imported == exported.checkpoints
        assert report.writes_imported == exported.writes
        with official_saver("sqlite", source) as original:
            for t in THREADS:
                assert history(dst, t) == history(original, t)
    with open(dump) as fp:
        fp.readline()
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"format": "x"}\n' + fp.read())
    with (
        our_saver(f"sqlite:///{tmp_path / 'x.sqlite'}") as dst,
        open(bad) as fp,
        pytest.raises(ExportFormatError, match="unknown export format"),
    ):
        import_threads(dst, fp)


def test_copy_refuses_a_thread_too_long_for_us_and_copies_the_others(tmp_path: Path) -> None:
    """An official SqliteSaver stores any thread id; one over our limit is refused before
    any of its checkpoints is written, and the copy goes on with the other threads."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    source = tmp_path / "official.sqlite"
    conn = sqlite3.connect(source, check_same_thread=False)
    try:
        official = SqliteSaver(conn)
        official.setup()
        for thread_id in ("L" * 300, "X" * 1500, "ok"):
            checkpoint = empty_checkpoint()
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
            official.put(config, checkpoint, {"source": "input", "step": -1}, {})
    finally:
        conn.close()
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    for again in ((), ("--into-existing",)):  # a re-run ends the same way
        done = cli("copy", "--from", str(source), "--to", target, "--no-progress", *again)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert "REFUSED thread 'XXXX" in done.stdout
        assert "limit is 1000" in done.stdout
    with our_saver(target) as ours:
        assert {t.thread_id for t in ours.list_threads()} == {"L" * 300, "ok"}
