"""docs/moving.md runs as written: every code block of the page, in the order of its story.

On SQLite and on PostgreSQL, the official savers and stores write a thread and an item
(the page's "before" blocks), the page's copy moves them (its command line block, or its
Python block), and our saver resumes the thread and our store reads the item (its "after"
blocks): the thread then holds every run, official and ours. The page's PostgreSQL URL is
replaced by a database made for the test; nothing else of a block is changed. Its
``langgraph.json`` factories and its URL-from-the-environment block run too, and the
table of what the official savers do otherwise is checked on the versions it names.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import json
import operator
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from sqlalchemy.engine import make_url
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..end_to_end.test_delta_graphs import NoSnapshotLoopState, loop_graph

PAGE = Path(__file__).parents[2] / "docs" / "moving.md"
#: The PostgreSQL URL the page's blocks use, replaced by the test's database.
PAGE_URL = "postgresql://app@db:5432/agents"
FENCE = re.compile(r'^```(\w+)(?: title="([^"]*)")?\n(.*?)^```$', re.M | re.S)

SQLITE_BEFORE = ("SqliteSaver (before)", "AsyncSqliteSaver (before)", "SqliteStore (before)")
SQLITE_COPY = {"cli": "Copy with the command line: SQLite", "python": "Copy from Python"}
SQLITE_AFTER = (
    "SQLAlchemySaver on SQLite (after)",
    "SQLAlchemySaver on SQLite, async (after)",
    "SQLAlchemyStore (after)",
)
PG_BEFORE = (
    "PostgresSaver (before)",
    "AsyncPostgresSaver (before)",
    "PostgresSaver on a pool (before)",
    "PostgresStore (before)",
)
PG_COPY = "Copy with the command line: PostgreSQL"
PG_AFTER = (
    "SQLAlchemySaver on PostgreSQL (after)",
    "SQLAlchemySaver on PostgreSQL, async (after)",
    "SQLAlchemySaver with pool settings (after)",
)
OTHERS = ("The URL from the environment", "langgraph.json")


def blocks() -> dict[str, tuple[str, str]]:
    """The page's fenced blocks by title: ``{title: (language, code)}``."""
    found = FENCE.findall(PAGE.read_text(encoding="utf-8"))
    titled = {title: (lang, code) for lang, title, code in found}
    assert len(titled) == len(found), "every block of the page has a title of its own"
    return titled


def test_every_block_of_the_page_is_run_by_these_tests() -> None:
    known = {
        *SQLITE_BEFORE,
        *SQLITE_COPY.values(),
        *SQLITE_AFTER,
        *PG_BEFORE,
        PG_COPY,
        *PG_AFTER,
        *OTHERS,
    }
    assert set(blocks()) == known


# -- running a block ------------------------------------------------------------------------


class State(TypedDict):
    runs: Annotated[list[str], operator.add]


def names() -> dict[str, Any]:
    """What the page's blocks take as given: ``builder``, ``inputs``, ``config``."""
    builder = StateGraph(State)
    builder.add_node("step", lambda state: {"runs": ["step"]})
    builder.add_edge(START, "step")
    return {
        "__name__": "moving_page",
        "builder": builder,
        "inputs": {"runs": ["in"]},
        "config": {"configurable": {"thread_id": "moving"}},
    }


def run_python(title: str, url: str | None = None) -> dict[str, Any]:
    """Run the block ``title`` in the current folder, the page's PostgreSQL URL replaced
    by ``url``; its names afterwards."""
    lang, code = blocks()[title]
    assert lang == "python"
    if url is not None:
        assert PAGE_URL in code, title
        code = code.replace(PAGE_URL, url)
    namespace = names()
    exec(compile(code, f"docs/moving.md: {title}", "exec"), namespace)
    return namespace


def run_bash(title: str, cwd: Path, db_uri: str = "") -> None:
    """Run the block ``title`` with bash in ``cwd``, the command line on the PATH."""
    lang, code = blocks()[title]
    assert lang == "bash"
    env = {**os.environ, "DB_URI": db_uri}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("LANGGRAPH_CHECKPOINT_URL", None)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified" in done.stdout, done.stdout


def runs_in(url: str) -> list[str]:
    """The thread's state in our tables at ``url``, read by a new saver."""
    with SQLAlchemySaver.from_conn_string(url) as saver:
        graph = names()["builder"].compile(checkpointer=saver)
        return list(graph.get_state(names()["config"]).values["runs"])


def libpq(url: str) -> str:
    """A test database's URL as the official savers take it (no driver in the scheme)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


# -- the stories ----------------------------------------------------------------------------


@pytest.mark.parametrize("copy", ["cli", "python"])
def test_sqlite_story(copy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for title in SQLITE_BEFORE:
        run_python(title)
    official = official_rows()
    if copy == "cli":
        run_bash(SQLITE_COPY["cli"], tmp_path)
    else:
        run_python(SQLITE_COPY["python"])
    for title in SQLITE_AFTER:
        run_python(title)
    # two official runs copied, two of ours after them, in one thread
    assert runs_in("sqlite:///agents.sqlite") == ["in", "step"] * 4
    assert official_rows() == official  # the official tables are left as they were


def official_rows() -> tuple[int, int]:
    """Rows of the official SqliteSaver's tables in the current folder's file."""
    with sqlite3.connect("checkpoints.sqlite") as conn:
        checkpoints = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        writes = conn.execute("SELECT count(*) FROM writes").fetchone()[0]
    assert checkpoints > 0
    return checkpoints, writes


def test_postgresql_story(
    pg_database: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = libpq(pg_database())
    for title in PG_BEFORE:
        run_python(title, url)
    run_bash(PG_COPY, tmp_path, url)
    for title in PG_AFTER:
        run_python(title, url)
    # three official runs copied, three of ours after them
    assert runs_in(url) == ["in", "step"] * 6
    with SQLAlchemyStore.from_conn_string(url) as store:
        item = store.get(("users", "u1"), "prefs")
        assert item is not None and item.value == {"theme": "dark"}


def test_url_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LANGGRAPH_CHECKPOINT_URL", raising=False)
    saver = run_python("The URL from the environment")["saver"]
    assert saver.engine.url.database == "checkpoints.sqlite"
    saver.close()
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", f"sqlite:///{tmp_path / 'env.sqlite'}")
    saver = run_python("The URL from the environment")["saver"]
    assert saver.engine.url.database == str(tmp_path / "env.sqlite")
    saver.close()


def test_langgraph_json_factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lang, text = blocks()["langgraph.json"]
    assert lang == "json"
    config = json.loads(text)
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", f"sqlite:///{tmp_path / 'server.sqlite'}")
    monkeypatch.delenv("LANGGRAPH_STORE_URL", raising=False)
    for section in ("checkpointer", "store"):
        module, attr = config[section]["path"].split(":")
        factory = getattr(importlib.import_module(module), attr)

        async def enter(factory: Any = factory) -> Any:
            async with factory() as made:  # set up at start: a call works at once
                if isinstance(made, SQLAlchemySaver):
                    assert await made.aget_tuple(names()["config"]) is None
                else:
                    assert await made.aget(("users",), "none") is None
                return made

        made = asyncio.run(enter())
        assert isinstance(made, (SQLAlchemySaver, SQLAlchemyStore)), section


# -- what the official savers do otherwise (the page's table) -------------------------------


def checked_versions() -> dict[str, str]:
    """The versions the page says its table was checked with."""
    text = PAGE.read_text(encoding="utf-8")
    found = dict(re.findall(r"`(langgraph-checkpoint-(?:sqlite|postgres))`\s+(\d[\w.]*)", text))
    assert set(found) == {"langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres"}
    return found


@pytest.fixture
def page_versions() -> None:
    """Skip unless the installed official packages are the versions the page names."""
    for package, version in checked_versions().items():
        installed = importlib.metadata.version(package)
        if installed != version:
            pytest.skip(
                f"docs/moving.md was checked with {package} {version}, {installed} is "
                "installed: check its table with this version and name it on the page"
            )


def small_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    return names()["builder"].compile(checkpointer=saver)


@pytest.mark.usefixtures("page_versions")
def test_official_sqlite_savers_behave_as_the_page_says(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    config = names()["config"]
    with SqliteSaver.from_conn_string(str(tmp_path / "s.sqlite")) as saver:
        graph = small_graph(saver)
        graph.invoke(names()["inputs"], config)  # no setup(): tables made at first call
        with pytest.raises(NotImplementedError):
            asyncio.run(saver.aget_tuple(config))
        first = list(graph.get_state_history(config))[-1].config["configurable"]["checkpoint_id"]
        hand_written = {"configurable": {"thread_id": "moving", "checkpoint_id": first}}
        with pytest.raises(KeyError, match="checkpoint_ns"):
            graph.update_state(hand_written, {"runs": ["x"]})
        for method, args in (
            ("prune", (["moving"],)),
            ("copy_thread", ("moving", "other")),
            ("delete_for_runs", (["run"],)),
        ):
            with pytest.raises(NotImplementedError):
                getattr(saver, method)(*args)

    async def sync_call_on_the_loop() -> None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.sqlite")) as saver:
            await small_graph(saver).ainvoke(names()["inputs"], config)  # no setup()
            with pytest.raises(asyncio.InvalidStateError):
                saver.get_tuple(config)

    asyncio.run(sync_call_on_the_loop())


@pytest.mark.usefixtures("page_versions")
def test_official_postgres_savers_behave_as_the_page_says(pg_database: Callable[[], str]) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    url = libpq(pg_database())
    config = names()["config"]
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        graph = small_graph(saver)
        graph.invoke(names()["inputs"], config)
        graph.invoke(names()["inputs"], config)
        with pytest.raises(NotImplementedError):
            asyncio.run(saver.aget_tuple(config))
        # list() holds the saver's own lock while it yields: a saver call in the loop
        # would wait for it forever (a threading.Lock is not re-entrant)
        listing = saver.list(config)
        next(listing)
        assert saver.lock.locked()
        list(listing)
        assert not saver.lock.locked()
        for method, args in (("copy_thread", ("moving", "other")), ("delete_for_runs", (["r"],))):
            with pytest.raises(NotImplementedError):
                getattr(saver, method)(*args)
        delta = {"configurable": {"thread_id": "delta"}}
        loop_graph(saver, NoSnapshotLoopState).invoke({"items": [], "target": 3}, delta)
        with pytest.raises(NotImplementedError):
            saver.prune(["delta"], strategy="keep_latest")

    async def sync_call_on_the_loop() -> None:
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            with pytest.raises(asyncio.InvalidStateError):
                saver.get_tuple(config)

    asyncio.run(sync_call_on_the_loop())


@pytest.mark.usefixtures("page_versions")
def test_official_stores_from_conn_string_must_be_entered(tmp_path: Path) -> None:
    from langgraph.store.sqlite import SqliteStore

    opened = SqliteStore.from_conn_string(str(tmp_path / "store.sqlite"))
    assert not isinstance(opened, BaseStore)
    with opened as store:
        assert isinstance(store, BaseStore)
    ours = SQLAlchemyStore.from_conn_string(f"sqlite:///{tmp_path / 'ours.sqlite'}")
    assert isinstance(ours, BaseStore)
    ours.close()
