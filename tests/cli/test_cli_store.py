"""The ``store`` commands of the command line: ``store list-namespaces``,
``store stats``, ``store sweep``, run in-process through ``cli.main(argv)`` on a SQLite
file, PostgreSQL and MariaDB; their errors (one line, documented exit codes); what
``store --help`` imports; and the LangGraph server's store factory
(``langgraph.store.sqlalchemy.server:store``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from langgraph.checkpoint.sqlalchemy import SchemaOutOfDateError, cli
from langgraph.checkpoint.sqlalchemy.migrate import head_revision
from langgraph.store.sqlalchemy import SQLAlchemyStore, StoredItem

from ..provision import BACKENDS, fresh_database
from .test_cli_startup import DATABASE, LANGGRAPH, MIGRATIONS, PROGRESS, SAVER, imported, loaded

SERVER_BACKENDS = [b for b in ("sqlite-file", "postgres", "mariadb") if b in BACKENDS]

#: The namespaces of :func:`url`'s live items, in the order list_namespaces gives them.
NAMESPACES = [
    "docs",
    "users.u1.memories",
    "users.u2.memories",
    "users.u2.prefs",
    "users.u2-x.memories",
]


@pytest.fixture(params=SERVER_BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of an empty database of this test (dropped afterwards)."""
    with fresh_database(request.param, tmp_path, prefix="lgsa_clistore") as url:
        yield url


@pytest.fixture
def url(empty_url: str) -> str:
    """A store with 7 live items in :data:`NAMESPACES` and 2 expired ones in ``old``."""
    with SQLAlchemyStore.from_conn_string(empty_url) as store:
        store.setup()
        for i, ns in enumerate(NAMESPACES):
            store.put(tuple(ns.split(".")), f"k{i}", {"n": i})
        store.put(("users", "u1", "memories"), "more", {"n": 10}, ttl=60)
        store.put(("docs",), "more", {"n": 11})
        past = datetime.now(timezone.utc) - timedelta(days=2)
        store.load_items(
            StoredItem(("old",), f"e{i}", {"n": i}, past, past, past + timedelta(hours=1), 60.0)
            for i in range(2)
        )
    return empty_url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``cli.main(argv)`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys: pytest.CaptureFixture[str], url: str, *options: str) -> list[str]:
    code, out, err = run(capsys, "store", "list-namespaces", "--url", url, "--json", *options)
    assert code == 0, err
    document = json.loads(out)
    assert set(document) == {"database", "namespaces"}
    names = document["namespaces"]
    assert isinstance(names, list)
    return names


def stats(capsys: pytest.CaptureFixture[str], url: str) -> dict[str, Any]:
    """``store stats --json``'s counts (the database it names set aside)."""
    code, out, err = run(capsys, "store", "stats", "--url", url, "--json")
    assert code == 0, err
    counts: dict[str, Any] = json.loads(out)
    assert counts.pop("database").split("://")[0] in (
        "sqlite+pysqlite",
        "postgresql+psycopg",
        "mysql+pymysql",
    )
    return counts


# -- list-namespaces ---------------------------------------------------------------------


def test_list_namespaces_in_order_with_prefix_suffix_depth_and_pages(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert listed(capsys, url) == NAMESPACES  # the expired items' "old" is not listed
    assert listed(capsys, url, "--prefix", "users") == NAMESPACES[1:]
    assert listed(capsys, url, "--prefix", "users.u2") == ["users.u2.memories", "users.u2.prefs"]
    assert listed(capsys, url, "--prefix", "users.*.prefs") == ["users.u2.prefs"]
    assert listed(capsys, url, "--suffix", "memories") == [
        "users.u1.memories",
        "users.u2.memories",
        "users.u2-x.memories",
    ]
    assert listed(capsys, url, "--prefix", "users", "--suffix", "prefs") == ["users.u2.prefs"]
    assert listed(capsys, url, "--max-depth", "2") == [
        "docs",
        "users.u1",
        "users.u2",
        "users.u2-x",
    ]
    assert listed(capsys, url, "--limit", "2", "--offset", "1") == NAMESPACES[1:3]
    assert listed(capsys, url, "--prefix", "nobody") == []
    code, out, err = run(capsys, "store", "list-namespaces", "--url", url, "--limit", "2")
    assert code == 0, err
    assert out.splitlines() == ["docs", "users.u1.memories", "next page: --offset 2"]
    code, out, _ = run(capsys, "store", "list-namespaces", "--url", url, "--prefix", "nobody")
    assert (code, out) == (0, "no namespaces\n")


# -- stats and sweep ---------------------------------------------------------------------


def test_stats_then_sweep_deletes_the_expired_items_once(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert stats(capsys, url) == {"items": 7, "namespaces": 5, "vectors": 0, "expired": 2}
    code, out, err = run(capsys, "store", "stats", "--url", url)
    assert code == 0, err
    assert out.splitlines()[:4] == [
        "items       7",
        "namespaces  5",
        "vectors     0",
        "expired     2",
    ]
    assert "store sweep" in out
    code, out, err = run(capsys, "store", "sweep", "--url", url)
    assert (code, out, err) == (0, "deleted 2 expired item(s)\n", "")
    code, out, _ = run(capsys, "store", "sweep", "--url", url, "--json")
    assert (code, json.loads(out)) == (0, {"deleted": 0})
    assert stats(capsys, url) == {"items": 7, "namespaces": 5, "vectors": 0, "expired": 0}
    assert listed(capsys, url) == NAMESPACES  # live items untouched


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["store", "stats"],
        ["store", "sweep"],
        ["store", "list-namespaces"],
    ],
)
def test_an_absent_sqlite_file_is_not_found_and_not_created(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nope.sqlite"
    code, out, err = run(capsys, *argv, "--url", str(path))
    assert (code, out) == (1, "")
    assert err.startswith("error: no database at ") and err.count("\n") == 1
    assert not path.exists()


def test_tables_without_the_store_revision_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    path = tmp_path / "other.sqlite"
    sqlite3.connect(path).close()
    path.write_bytes(path.read_bytes())  # an existing, empty SQLite file
    code, _, err = run(capsys, "store", "stats", "--url", str(path))
    # the store's tables come with the head revision: the error names the one to reach
    assert code == 1 and head_revision() in err and err.count("\n") == 1


@pytest.mark.parametrize("bad", ["a..b", ".a", "a.", ""])
def test_a_bad_prefix_is_a_usage_error(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "store", "list-namespaces", "--url", str(tmp_path / "x"), "--prefix", bad
    )
    assert (code, out) == (2, "")
    assert err.startswith("error: --prefix") and err.count("\n") == 1


def test_a_server_that_is_down_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "store", "stats", "--url", "postgresql://postgres:s3cret@127.0.0.1:1/x"
    )
    assert code == 1 and err.startswith("error: cannot connect") and "s3cret" not in err


def test_store_help_imports_no_database_library() -> None:
    for argv in (["--help"], ["store", "--help"], ["store", "copy", "--help"]):
        modules, out = imported("-m", "langgraph.checkpoint.sqlalchemy", *argv)
        assert loaded(modules, DATABASE + LANGGRAPH + MIGRATIONS + PROGRESS + SAVER) == []
        assert "langgraph.store.sqlalchemy" not in modules
        if argv == ["store", "--help"]:
            for action in ("list-namespaces", "stats", "sweep", "copy"):
                assert action in out


# -- the server's store factory ----------------------------------------------------------


async def test_server_store_sets_up_and_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.sqlalchemy import server

    checkpoints, store_db = tmp_path / "c.sqlite", tmp_path / "s.sqlite"
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", f"sqlite:///{checkpoints}")
    monkeypatch.delenv("LANGGRAPH_STORE_URL", raising=False)
    monkeypatch.delenv("LANGGRAPH_STORE", raising=False)
    async with server.store() as store:
        assert isinstance(store, SQLAlchemyStore)
        await store.aput(("a",), "k", {"v": 1})
        assert (await store.aget(("a",), "k")).value == {"v": 1}  # type: ignore[union-attr]
        assert store._asweeper is None  # no TTL config: no sweeper
    assert checkpoints.exists() and not store_db.exists()
    # LANGGRAPH_STORE_URL comes first.
    monkeypatch.setenv("LANGGRAPH_STORE_URL", f"sqlite:///{store_db}")
    async with server.store() as store:
        assert await store.aget(("a",), "k") is None
    assert store_db.exists()


async def test_server_store_reads_langgraph_store_and_runs_the_sweeper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.sqlalchemy import server

    monkeypatch.setenv("LANGGRAPH_STORE_URL", f"sqlite:///{tmp_path / 's.sqlite'}")
    monkeypatch.setenv(
        "LANGGRAPH_STORE",
        json.dumps(
            {
                "path": "langgraph.store.sqlalchemy.server:store",
                "ttl": {
                    "default_ttl": 5,
                    "refresh_on_read": False,
                    "omit_expired": True,
                    "sweep_interval_minutes": 1,
                },
            }
        ),
    )
    async with server.store() as store:
        assert store.ttl_config == {
            "default_ttl": 5,
            "refresh_on_read": False,
            "omit_expired": True,
            "sweep_interval_minutes": 1,
        }
        task = store._asweeper
        assert task is not None and not task.done()
        await store.aput(("a",), "k", {"v": 1})  # default_ttl applies
        item = (await store.asearch(("a",)))[0]
        assert item.key == "k"
    await asyncio.sleep(0)
    assert task.done() and store._asweeper is None  # stopped on exit


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("LANGGRAPH_CHECKPOINT_SETUP", "disable", "LANGGRAPH_CHECKPOINT_SETUP"),
        ("LANGGRAPH_STORE", "{not json", "LANGGRAPH_STORE is not JSON"),
        ("LANGGRAPH_STORE", "[1]", "must be a JSON object"),
        ("LANGGRAPH_STORE", '{"ttl": {"default_ttl": "5"}}', "default_ttl"),
        ("LANGGRAPH_STORE", '{"ttl": {"sweep_interval_minutes": 0}}', "sweep_interval"),
        ("LANGGRAPH_STORE", '{"ttl": {"refresh_on_read": "yes"}}', "refresh_on_read"),
        ("LANGGRAPH_STORE", '{"index": {"dims": 0, "embed": "x:y"}}', "dims"),
        ("LANGGRAPH_STORE", '{"index": {"dims": 4}}', "embed"),
        ("LANGGRAPH_STORE", '{"index": {"dims": 4, "embed": "x:y", "fields": "a"}}', "fields"),
        ("LANGGRAPH_STORE", '{"index": {"dims": 4, "embed": "x:y", "text_fields": "a"}}', "text_f"),
        (
            "LANGGRAPH_STORE",
            '{"index": {"dims": 4, "embed": "x:y", "fields": ["a"], "text_fields": ["b"]}}',
            "text_fields",
        ),
        (
            "LANGGRAPH_STORE",
            '{"index": {"dims": 4, "embed": "x:y", "distance_type": "hamming"}}',
            "distance_type",
        ),
        ("LANGGRAPH_STORE", '{"ttl": {"omit_expired": "yes"}}', "omit_expired"),
    ],
)
async def test_server_store_refuses_bad_settings_before_opening_anything(
    name: str, value: str, match: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.sqlalchemy import server

    database = tmp_path / "s.sqlite"
    monkeypatch.setenv("LANGGRAPH_STORE_URL", f"sqlite:///{database}")
    monkeypatch.delenv("LANGGRAPH_STORE", raising=False)
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=match):
        async with server.store():
            pytest.fail("started")
    assert not database.exists()


async def test_server_store_without_setup_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.sqlalchemy import server

    monkeypatch.setenv("LANGGRAPH_STORE_URL", f"sqlite:///{tmp_path / 's.sqlite'}")
    monkeypatch.delenv("LANGGRAPH_STORE", raising=False)
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_SETUP", "off")
    async with server.store() as store:
        with pytest.raises(SchemaOutOfDateError):
            await store.aget(("a",), "k")


EMBED_FILE = """
import hashlib


def embed(texts):
    return [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:4]] for t in texts]
"""


async def test_server_store_embeds_with_a_function_from_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``"embed": "./file.py:function"``, as the LangGraph server's own store takes it."""
    from langgraph.store.sqlalchemy import server

    (tmp_path / "emb.py").write_text(EMBED_FILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LANGGRAPH_STORE_URL", f"sqlite:///{tmp_path / 's.sqlite'}")
    index = {"dims": 4, "embed": "./emb.py:embed", "fields": ["text"]}
    monkeypatch.setenv("LANGGRAPH_STORE", json.dumps({"index": index}))
    async with server.store() as store:
        await store.aput(("a",), "x", {"text": "apples"})
        await store.aput(("a",), "y", {"text": "pears"})
        hits = await store.asearch(("a",), query="pears")
        assert hits[0].key == "y" and hits[0].score == pytest.approx(1.0, abs=1e-6)
        assert (await store.astats()).vectors == 2
    # SqliteStore's names: text_fields for fields; distance_type as the officials read it.
    other = {**index, "text_fields": index["fields"], "distance_type": "l2"}
    del other["fields"]
    monkeypatch.setenv("LANGGRAPH_STORE", json.dumps({"index": other}))
    async with server.store() as store:
        assert store.index_config is not None
        assert store.index_config["distance_type"] == "l2"  # type: ignore[typeddict-item]
        hits = await store.asearch(("a",), query="pears")
        assert hits[0].key == "y" and hits[0].score == pytest.approx(0.0, abs=1e-6)
        assert hits[1].score is not None and hits[1].score < 0  # minus the L2 distance
    for embed, match in (("./nope.py:embed", "no such file"), ("./emb.py:other", "no function")):
        monkeypatch.setenv("LANGGRAPH_STORE", json.dumps({"index": {**index, "embed": embed}}))
        with pytest.raises(ValueError, match=match):
            async with server.store():
                pytest.fail("started")


SENTINEL_FILE = """
import pathlib

pathlib.Path(__file__).with_name("ran").write_text("the embedding file ran")


def embed(texts):
    return [[1.0, 0.0, 0.0, 0.0] for _ in texts]
"""


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"index": {"dims": 0}}, "dims"),
        ({"index": {"fields": "text"}}, "fields"),
        ({"ttl": {"default_ttl": -1}}, "default_ttl"),
        ({"ttl": {"refresh_on_read": "yes"}}, "refresh_on_read"),
        ({"url": "postgresql+nosuchdriver://h/db"}, "nosuchdriver"),
        ({"setup": "maybe"}, "LANGGRAPH_CHECKPOINT_SETUP"),
    ],
)
async def test_server_store_config_is_checked_before_an_embedding_file_runs(
    env: dict[str, Any], match: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store config is trusted code (its ``embed`` file is imported), so every other
    part of it, the URL and the setup switch are checked first: a bad one runs nothing."""
    from langgraph.store.sqlalchemy import server

    (tmp_path / "emb.py").write_text(SENTINEL_FILE)
    index = {"dims": 4, "embed": f"{tmp_path / 'emb.py'}:embed", "fields": ["text"]}
    index.update(env.get("index", {}))
    config: dict[str, Any] = {"index": index}
    if "ttl" in env:
        config["ttl"] = env["ttl"]
    monkeypatch.setenv("LANGGRAPH_STORE", json.dumps(config))
    monkeypatch.setenv("LANGGRAPH_STORE_URL", env.get("url", f"sqlite:///{tmp_path / 's.db'}"))
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_SETUP", env.get("setup", "on"))
    with pytest.raises(ValueError, match=match):
        async with server.store():
            pytest.fail("started")
    assert not (tmp_path / "ran").exists()
    assert not (tmp_path / "s.db").exists()


async def test_server_store_on_every_backend(
    empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.sqlalchemy import server

    monkeypatch.setenv("LANGGRAPH_STORE_URL", empty_url)
    monkeypatch.setenv("LANGGRAPH_STORE", json.dumps({"ttl": {"sweep_interval_minutes": 5}}))
    async with server.store() as store:
        assert store._asweeper is not None
        await store.aput(("a", "b"), "k", {"v": 1}, ttl=1)
        assert (await store.aget(("a", "b"), "k")).value == {"v": 1}  # type: ignore[union-attr]
        assert await store.alist_namespaces() == [("a", "b")]
        assert (await store.astats()).items == 1
