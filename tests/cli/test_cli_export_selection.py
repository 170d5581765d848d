"""``export`` chooses its threads by id, ``--all`` or ``--idle-for DURATION`` (with ids:
those of them that are idle), and refuses a choice that is none or twice as a usage
error before it touches anything; and the listings (``threads list``, ``stats``,
``store stats``, ``store list-namespaces``) name the database they read, its password
hidden: on stderr for people, as ``database`` in ``--json``. On SQLite, PostgreSQL and
MariaDB, through the real entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from sqlalchemy.engine import make_url

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._codec.display import shown_url
from langgraph.checkpoint.sqlalchemy._codec.threadinfo import id_at
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.checkpoint.sqlalchemy.transfer import import_plan

from ..provision import BACKENDS, fresh_database

SERVER_BACKENDS = [b for b in ("sqlite-file", "postgres", "mariadb") if b in BACKENDS]
SECRET = "S3cr3tPw"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_CHECKPOINT_URL"}
    return subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def put_thread(saver: SQLAlchemySaver, thread_id: str, days_ago: float) -> None:
    """Two checkpoints of ``thread_id``, the newest ``days_ago`` days old."""
    newest = datetime.now(timezone.utc) - timedelta(days=days_ago)
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    for step, at in enumerate((newest - timedelta(minutes=1), newest)):
        checkpoint = create_checkpoint(checkpoint, None, step)
        checkpoint["id"] = id_at(at)
        config = saver.put(config, checkpoint, {"source": "loop", "step": step}, {})


@pytest.fixture(params=SERVER_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Our tables with threads ``old1`` (40 days idle), ``old2`` (60) and ``new`` (0);
    the password of PostgreSQL's URL (trust authentication: any is accepted) is
    :data:`SECRET`."""
    with fresh_database(request.param, tmp_path, prefix="lgsa_cliexport") as plain:
        url = plain
        if request.param == "postgres":
            url = make_url(plain).set(password=SECRET).render_as_string(hide_password=False)
        with SQLAlchemySaver.from_conn_string(url) as saver:
            saver.setup()
            put_thread(saver, "old1", 40)
            put_thread(saver, "old2", 60)
            put_thread(saver, "new", 0)
        yield url


def exported(url: str, tmp_path: Path, *selection: str) -> dict[str, int]:
    """The threads (and their checkpoints) ``export *selection`` writes to a file."""
    path = tmp_path / f"export-{len(list(tmp_path.iterdir()))}.jsonl"
    done = cli("export", *selection, "-o", str(path), "--url", url, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    with path.open(encoding="utf-8") as fp:
        plan = import_plan(fp)
    assert report["threads"] == len(plan) and report["checkpoints"] == sum(plan.values())
    return plan


def test_export_all_and_idle_for_choose_the_threads(url: str, tmp_path: Path) -> None:
    assert exported(url, tmp_path, "--all") == {"old1": 2, "old2": 2, "new": 2}
    assert set(exported(url, tmp_path, "--idle-for", "30d")) == {"old1", "old2"}
    assert set(exported(url, tmp_path, "--idle-for", "50d")) == {"old2"}
    # with ids: those of them that are idle
    assert set(exported(url, tmp_path, "old1", "new", "--idle-for", "30d")) == {"old1"}
    # none idle that long: an empty export, whole (it imports as nothing)
    assert exported(url, tmp_path, "--idle-for", "100d") == {}
    assert exported(url, tmp_path, "new", "old1") == {"new": 2, "old1": 2}


@pytest.mark.parametrize(
    ("selection", "says"),
    [
        ((), "export needs THREAD ids, --all or --idle-for DURATION"),
        (("old1", "--all"), "give THREAD ids or --all, not both"),
        (("--all", "--idle-for", "1d"), "argument --idle-for: not allowed with argument --all"),
        (("--idle-for", "soon"), "invalid duration 'soon'"),
    ],
    ids=["none", "ids-and-all", "all-and-idle", "bad-duration"],
)
def test_export_refuses_no_choice_or_two_as_usage_errors(
    selection: tuple[str, ...], says: str, tmp_path: Path
) -> None:
    database = tmp_path / "absent.sqlite"  # never opened: refused before
    out = tmp_path / "out.jsonl"
    done = cli("export", *selection, "-o", str(out), "--url", str(database))
    # one line says it (after argparse's usage, for argparse's own errors)
    assert done.returncode == 2 and says in done.stderr.splitlines()[-1], done.stderr
    assert not out.exists() and not database.exists()


def test_export_of_an_unknown_thread_among_idle_ones_writes_nothing(
    url: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    done = cli("export", "nope", "--idle-for", "30d", "-o", str(out), "--url", url)
    assert done.returncode == 1 and "no thread 'nope'" in done.stderr
    assert not out.exists()


def test_listings_name_the_database_with_its_password_hidden(url: str) -> None:
    shown = shown_url(resolve_urls(url).sync)
    assert SECRET not in shown
    for argv, rows in (
        (["threads", "list"], "threads"),
        (["stats"], "tables"),
        (["store", "stats"], "items"),
        (["store", "list-namespaces"], "namespaces"),
    ):
        as_json = cli(*argv, "--url", url, "--json")
        assert as_json.returncode == 0, as_json.stderr
        document = json.loads(as_json.stdout)
        assert document["database"] == shown and rows in document, argv
        assert as_json.stderr == ""  # --json: stdout's document says it
        human = cli(*argv, "--url", url)
        assert human.returncode == 0, human.stderr
        assert human.stderr == f"database: {shown}\n", argv
        assert SECRET not in human.stdout + human.stderr + as_json.stdout
    if "://postgresql" in url or url.startswith("postgresql"):
        assert ":***@" in shown
