"""Operator commands through the real entry point (``python -m
langgraph.checkpoint.sqlalchemy``), the Python API under them (``list_threads``,
``storage_stats``) and the LangGraph server factory, on a SQLite file and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.sqlalchemy import SchemaOutOfDateError, SQLAlchemySaver, cli, server
from langgraph.checkpoint.sqlalchemy._codec.threadinfo import checkpoint_time, id_at

from ..checkpoints import put_numbered_chain
from ..provision import BACKENDS, fresh_database


@pytest.fixture(params=[b for b in ("sqlite-file", "postgres") if b in BACKENDS])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """URL of an empty database with our tables (its own file, or its own PostgreSQL
    database for this test)."""
    with fresh_database(
        request.param, tmp_path, prefix="lgsa_cli", filename="cli.sqlite"
    ) as target:
        yield target


def run_cli(*args: str, url: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LANGGRAPH_CHECKPOINT_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        timeout=120,
    )


def listed_threads(stdout: str) -> list[dict[str, Any]]:
    """The threads of ``threads list --json``'s output."""
    threads: list[dict[str, Any]] = json.loads(stdout)["threads"]
    return threads


def fill(saver: SQLAlchemySaver, threads: int, per_thread: int, ns: str = "") -> None:
    """``per_thread`` checkpoints (a chain) on each of ``threads`` threads, with a write."""
    for t in range(threads):
        put_numbered_chain(
            saver,
            {"configurable": {"thread_id": f"t{t}", "checkpoint_ns": ns}},
            per_thread,
            lambda step: {"source": "loop", "step": step, "parents": {}},
        )


@pytest.fixture
def filled(url: str) -> str:
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        fill(saver, 3, 4)
        fill(saver, 1, 2, ns="child:1")
    return url


def test_threads_list_human_and_json(filled: str) -> None:
    human = run_cli("threads", "list", url=filled)
    assert human.returncode == 0, human.stderr
    assert human.stdout.splitlines()[0].split()[:3] == ["THREAD", "CHECKPOINTS", "NAMESPACES"]
    listed = run_cli("threads", "list", "--json", url=filled)
    threads = listed_threads(listed.stdout)
    # newest activity first: t0's subgraph namespace was written last, then t2, t1
    assert [t["thread_id"] for t in threads] == ["t0", "t2", "t1"]
    assert {t["thread_id"]: t["checkpoints"] for t in threads} == {"t0": 6, "t1": 4, "t2": 4}
    assert threads[0]["namespaces"] == 2
    assert all(t["bytes"] > 0 and t["last_activity"] for t in threads)
    page = listed_threads(
        run_cli("threads", "list", "--limit", "1", "--offset", "1", "--json", url=filled).stdout
    )
    assert [t["thread_id"] for t in page] == ["t2"]


def test_threads_show_history_and_one_checkpoint(filled: str) -> None:
    history = json.loads(run_cli("threads", "show", "t1", "--json", url=filled).stdout)
    assert [h["metadata"]["step"] for h in history] == [3, 2, 1, 0]
    assert history[0]["pending_writes"] == 1
    newest = history[0]["checkpoint_id"]
    one = run_cli("threads", "show", "t1", "--checkpoint", newest, "--json", url=filled)
    assert one.returncode == 0, one.stderr
    state = json.loads(one.stdout)
    assert state["channel_values"] == {"n": 3}
    assert state["pending_writes"] == [{"task_id": "task-1", "channel": "n", "value": 99}]
    text_out = run_cli("threads", "show", "t0", "--ns", "child:1", url=filled)
    assert text_out.returncode == 0 and "child:1" in text_out.stdout
    missing = run_cli("threads", "show", "nope", url=filled)
    assert missing.returncode == 1 and "no checkpoints" in missing.stderr


def test_threads_delete_asks_then_deletes(filled: str) -> None:
    refused = run_cli("threads", "delete", "t0", url=filled, stdin="")
    assert refused.returncode == 1 and "--yes" in refused.stderr
    done = run_cli("threads", "delete", "t0", "t1", "--yes", url=filled)
    assert done.returncode == 0, done.stderr
    left = listed_threads(run_cli("threads", "list", "--json", url=filled).stdout)
    assert [t["thread_id"] for t in left] == ["t2"]


def test_prune_dry_run_then_keep_latest_and_idle(filled: str) -> None:
    plan = json.loads(run_cli("prune", "t1", "--dry-run", "--json", url=filled).stdout)
    assert plan["dry_run"] and [t["thread_id"] for t in plan["threads"]] == ["t1"]
    assert (
        listed_threads(run_cli("threads", "list", "--json", url=filled).stdout)[1]["checkpoints"]
        == 4
    )
    done = json.loads(run_cli("prune", "t1", "--yes", "--json", url=filled).stdout)
    assert done["checkpoints_after"] == {"t1": 1}
    # nothing has been idle for a day: nothing to prune
    idle = json.loads(run_cli("prune", "--idle-for", "1d", "--json", "--yes", url=filled).stdout)
    assert idle["threads"] == []
    # everything has been idle for 0 seconds: --strategy delete removes all
    gone = run_cli("prune", "--idle-for", "0s", "--strategy", "delete", "--yes", url=filled)
    assert gone.returncode == 0, gone.stderr
    assert listed_threads(run_cli("threads", "list", "--json", url=filled).stdout) == []
    usage = run_cli("prune", url=filled)
    assert usage.returncode == 2 and "--idle-for" in usage.stderr
    bad = run_cli("prune", "--idle-for", "soon", url=filled)
    assert bad.returncode == 2 and "invalid duration" in bad.stderr


def test_copy_thread_and_stats(filled: str) -> None:
    done = run_cli("copy-thread", "t1", "t9", url=filled)
    assert done.returncode == 0, done.stderr
    again = run_cli("copy-thread", "t1", "t9", url=filled)
    assert again.returncode == 1 and "already has" in again.stderr
    stats = json.loads(run_cli("stats", "--json", url=filled).stdout)
    assert stats["tables"]["lgsa_checkpoints"]["rows"] == 4 + 4 + 4 + 2 + 4
    assert stats["tables"]["lgsa_checkpoint_writes"]["rows"] == 5
    one = json.loads(run_cli("stats", "--thread", "t9", "--json", url=filled).stdout)
    assert one["tables"]["lgsa_checkpoints"]["rows"] == 4
    assert "threads" not in one
    human = run_cli("stats", url=filled)
    assert "lgsa_checkpoints" in human.stdout


def test_schema_commands_stamp_and_offline_sql(url: str) -> None:
    sql = run_cli("upgrade", "--sql", url=url)
    assert sql.returncode == 0, sql.stderr
    assert "CREATE TABLE lgsa_checkpoints" in sql.stdout
    assert "inline_values" in sql.stdout
    down_sql = run_cli("downgrade", "base", "--sql", url=url)
    assert down_sql.returncode == 0 and "DROP TABLE lgsa_checkpoints" in down_sql.stdout
    # --sql never touches the database
    if url.startswith("sqlite:///"):
        assert not Path(url[len("sqlite:///") :]).exists()
    else:
        assert json.loads(run_cli("current", "--json", url=url).stdout)["revision"] is None
    if url.startswith("sqlite:///"):
        # stamp records a revision in an existing database; it creates no SQLite file
        refused = run_cli("stamp", "0001_initial", url=url)
        assert refused.returncode == 1 and "no database at" in refused.stderr
        Path(url[len("sqlite:///") :]).touch()
    stamped = run_cli("stamp", "0001_initial", "--json", url=url)
    assert stamped.returncode == 0, stamped.stderr
    assert json.loads(stamped.stdout)["revision"] == "0001_initial"
    behind = run_cli("current", "--check", url=url)
    assert behind.returncode == 1


def test_threads_list_decodes_no_checkpoint(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 10,000 checkpoints in 100 threads, listed without a single serde call.
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        fill(saver, 100, 100)
    calls = 0
    original = JsonPlusSerializer.loads_typed

    def counting(self: Any, data: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(self, data)

    monkeypatch.setattr(JsonPlusSerializer, "loads_typed", counting)
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", url)
    assert cli.main(["threads", "list", "--limit", "100", "--json"]) == 0
    assert calls == 0
    with SQLAlchemySaver.from_conn_string(url) as saver:
        threads = saver.list_threads(limit=None)
    assert calls == 0
    assert len(threads) == 100 and sum(t.checkpoints for t in threads) == 10_000


def test_list_threads_arguments_and_idle(url: str) -> None:
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        fill(saver, 2, 1)
        assert [t.thread_id for t in saver.list_threads(limit=1)] == ["t1"]
        assert saver.list_threads(idle_for=timedelta(hours=1)) == []
        assert len(saver.list_threads(idle_for=timedelta(0))) == 2
        for bad in ({"limit": -1}, {"offset": -1}, {"limit": True}):
            with pytest.raises(ValueError):
                saver.list_threads(**bad)


def test_checkpoint_ids_carry_their_time() -> None:
    from datetime import datetime, timezone

    from langgraph.checkpoint.base.id import uuid6

    before = datetime.now(timezone.utc)
    made = str(uuid6())
    when = checkpoint_time(made)
    assert when is not None and abs((when - before).total_seconds()) < 5
    assert id_at(before - timedelta(seconds=1)) < made < id_at(before + timedelta(seconds=5))
    assert checkpoint_time("not-a-uuid") is None
    assert checkpoint_time(str(uuid.uuid4())) is None


async def test_server_checkpointer_runs_setup_and_serves(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", url)
    async with server.checkpointer() as saver:
        assert isinstance(saver, SQLAlchemySaver)
        config: dict[str, Any] = {"configurable": {"thread_id": "s", "checkpoint_ns": ""}}
        checkpoint = create_checkpoint(empty_checkpoint(), None, 0)
        await saver.aput(config, checkpoint, {"source": "input", "step": -1}, {})
        assert await saver.aget_tuple(config) is not None


async def test_server_checkpointer_without_setup_fails_clearly(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.sqlalchemy import SchemaOutOfDateError

    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", url)
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_SETUP", "0")
    async with server.checkpointer() as saver:
        with pytest.raises(SchemaOutOfDateError, match="upgrade"):
            await saver.aget_tuple({"configurable": {"thread_id": "s"}})


@pytest.mark.parametrize("value", ["disable", "skip", "2", "nope"])
async def test_server_checkpointer_refuses_an_unknown_setup_value(
    value: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``LANGGRAPH_CHECKPOINT_SETUP=disable`` used to mean "yes" (only 0/false/no/off were
    read) and migrate; an unknown value is now an error, and nothing is created."""
    database = tmp_path / "server.sqlite"
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", f"sqlite:///{database}")
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_SETUP", value)
    with pytest.raises(ValueError, match="LANGGRAPH_CHECKPOINT_SETUP"):
        async with server.checkpointer():
            pytest.fail("started")
    assert not database.exists()
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_SETUP", " Off ")
    async with server.checkpointer() as saver:
        with pytest.raises(SchemaOutOfDateError):
            await saver.aget_tuple({"configurable": {"thread_id": "s"}})


@pytest.mark.parametrize(
    ("ours", "langgraph", "expected"),
    [
        (None, None, True),  # the factory's default: strict
        ("0", None, False),
        (" Off ", "true", False),  # ours wins
        ("yes", "false", True),
        (None, "false", False),  # LangGraph's explicit switch decides when ours is unset
        ("maybe", None, ValueError),
        ("", None, True),
        # A LangGraph value LangGraph itself does not read never turns the default off.
        (None, "on", True),
        (None, "enabled", True),
        ("", "", True),
    ],
)
async def test_server_checkpointer_is_strict_unless_told_otherwise(
    ours: str | None,
    langgraph: str | None,
    expected: bool | type[Exception],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    database = tmp_path / "server.sqlite"
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", f"sqlite:///{database}")
    for name, value in (
        ("LANGGRAPH_CHECKPOINT_STRICT", ours),
        ("LANGGRAPH_STRICT_MSGPACK", langgraph),
    ):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    if expected is ValueError:
        with pytest.raises(ValueError, match="LANGGRAPH_CHECKPOINT_STRICT"):
            async with server.checkpointer():
                pytest.fail("started")
        assert not database.exists()
        return
    async with server.checkpointer() as saver:
        assert saver.strict is expected
        assert saver.strict_decode is False  # blocked objects read back as LangGraph gives them
