"""Every driver SQLAlchemy documents for a dialect works end to end, or is refused at
construction with one typed error that names the fix.

The matrix: (dialect, driver) x (sync, async door). A driver that imports here runs the
whole path on the real server (setup, put, put_writes, get_tuple, list), each test in a
store of its own; a driver that does not import must raise ``DriverNotInstalledError``
from ``from_conn_string`` naming what to install; aiomysql is refused
(``UnsupportedDriverError`` naming asyncmy). Then the twin rules: an async-only or
sync-only URL takes the first installed driver of the other side, else the typed error
(drivers are hidden by putting ``None`` in ``sys.modules``, which makes their import fail
exactly as when they are not installed).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from langgraph.checkpoint.sqlalchemy import (
    DriverNotInstalledError,
    SQLAlchemySaver,
    UnsupportedDriverError,
)
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls

from ..doors import Door
from ..provision import BACKENDS, new_saver_args

#: (backend of conftest, URL dialect, driver, module the driver imports)
MATRIX = [
    ("sqlite-file", "sqlite", "pysqlite", "sqlite3"),
    ("sqlite-file", "sqlite", "aiosqlite", "aiosqlite"),
    ("postgres", "postgresql", "psycopg", "psycopg"),
    ("postgres", "postgresql", "psycopg_async", "psycopg"),
    ("postgres", "postgresql", "asyncpg", "asyncpg"),
    ("postgres", "postgresql", "psycopg2", "psycopg2"),
    ("postgres", "postgresql", "pg8000", "pg8000"),
    ("mariadb", "mysql", "pymysql", "pymysql"),
    ("mariadb", "mysql", "asyncmy", "asyncmy"),
    ("mariadb", "mysql", "aiomysql", "aiomysql"),
    ("mariadb", "mysql", "mysqldb", "MySQLdb"),
    ("mariadb", "mysql", "mariadbconnector", "mariadb"),
    ("mariadb", "mariadb", "pymysql", "pymysql"),
    ("mariadb", "mariadb", "asyncmy", "asyncmy"),
]
REFUSED = {"aiomysql": "asyncmy"}


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _url_and_schema(
    backend: str, dialect: str, driver: str, request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[str, str | None]:
    """A URL naming ``dialect+driver`` for a fresh store on ``backend``, and its schema."""
    if backend not in BACKENDS:
        pytest.skip(f"{backend} not in LGSA_TEST_BACKENDS")
    args = new_saver_args(backend, request, tmp_path)
    url = make_url(args["conn_string"]).set(drivername=f"{dialect}+{driver}")
    return url.render_as_string(False), args.get("schema")


async def _whole_path(door: Door) -> None:
    await door.setup()
    config = {"configurable": {"thread_id": "t-drivers", "checkpoint_ns": ""}}
    first = empty_checkpoint()
    first["channel_values"] = {"a": "é😀", "big": b"\x00\xff" * 20_000}
    first["channel_versions"] = {"a": door.saver.get_next_version(None, None), "big": "1"}
    stored = await door.put(
        config, first, {"source": "input", "step": -1}, dict(first["channel_versions"])
    )
    await door.put_writes(stored, [("a", "written"), ("bytes", b"\x01\x02")], "task-1")
    second = empty_checkpoint()
    second["channel_values"] = {"a": "second"}
    second["channel_versions"] = {"a": door.saver.get_next_version(1, None)}
    latest = await door.put(
        stored, second, {"source": "loop", "step": 0}, {"a": second["channel_versions"]["a"]}
    )
    got = await door.get_tuple(stored)
    assert got is not None
    assert got.checkpoint["channel_values"] == first["channel_values"]
    assert got.metadata["step"] == -1
    assert [(w[1], w[2]) for w in got.pending_writes or []] == [
        ("a", "written"),
        ("bytes", b"\x01\x02"),
    ]
    newest = await door.get_tuple(config)
    assert newest is not None and newest.config == latest
    listed = await door.list(config)
    assert [t.checkpoint["id"] for t in listed] == [second["id"], first["id"]]
    assert [t.checkpoint["id"] for t in await door.list(config, filter={"step": 0})] == [
        second["id"]
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("backend", "dialect", "driver", "module"),
    MATRIX,
    ids=[f"{d}+{drv}" for _, d, drv, _ in MATRIX],
)
async def test_driver_works_or_is_refused_at_construction(
    backend: str,
    dialect: str,
    driver: str,
    module: str,
    mode: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    url, schema = _url_and_schema(backend, dialect, driver, request, tmp_path)
    if driver in REFUSED:
        with pytest.raises(UnsupportedDriverError, match=REFUSED[driver]):
            SQLAlchemySaver.from_conn_string(url, schema=schema)
        return
    if not _importable(module):
        with pytest.raises(DriverNotInstalledError, match="pip install") as caught:
            SQLAlchemySaver.from_conn_string(url, schema=schema)
        assert isinstance(caught.value, ImportError)
        return
    saver = SQLAlchemySaver.from_conn_string(url, schema=schema)
    try:
        # the named driver serves the side(s) it can serve
        sides = (saver.engine.url.drivername, saver.async_engine.url.drivername)
        assert f"{dialect}+{driver}" in sides
        assert not saver.engine.dialect.is_async and saver.async_engine.dialect.is_async
        await _whole_path(Door(saver, mode))
    finally:
        await saver.aclose()


# -- the other side: first installed driver, else the typed error ------------------------


def _hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_async_only_url_takes_first_installed_sync_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("asyncpg")
    pytest.importorskip("psycopg2")
    assert resolve_urls("postgresql+asyncpg://u@h/db").sync.drivername == "postgresql+psycopg"
    _hide(monkeypatch, "psycopg")
    urls = resolve_urls("postgresql+asyncpg://u@h/db")
    assert (urls.sync.drivername, urls.async_.drivername) == (
        "postgresql+psycopg2",
        "postgresql+asyncpg",
    )


def test_sync_only_url_takes_first_installed_async_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("asyncpg")
    pytest.importorskip("pg8000")
    _hide(monkeypatch, "psycopg")
    urls = resolve_urls("postgresql+pg8000://u@h/db")
    assert (urls.sync.drivername, urls.async_.drivername) == (
        "postgresql+pg8000",
        "postgresql+asyncpg",
    )


@pytest.mark.parametrize(
    ("url", "hidden", "fix"),
    [
        ("postgresql+asyncpg://u@h/db", ("psycopg", "psycopg2", "pg8000"), "[postgres]"),
        ("postgresql+psycopg2://u@h/db", ("psycopg", "asyncpg"), "[postgres]"),
        ("postgresql://u@h/db", ("psycopg", "psycopg2", "pg8000"), "[postgres]"),
        ("postgresql+asyncpg://u@h/db", ("asyncpg",), "[asyncpg]"),
        ("postgresql+psycopg://u@h/db", ("psycopg",), "[postgres]"),
        ("mysql+pymysql://u@h/db", ("asyncmy",), "[mysql]"),
        ("mysql+asyncmy://u@h/db", ("pymysql", "MySQLdb", "mariadb", "mysql.connector"), "[mysql]"),
        ("mariadb://u@h/db", ("pymysql",), "[mysql]"),
    ],
)
def test_missing_driver_is_a_typed_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, hidden: tuple[str, ...], fix: str
) -> None:
    _hide(monkeypatch, *hidden)
    with pytest.raises(DriverNotInstalledError) as caught:
        SQLAlchemySaver.from_conn_string(url)
    message = str(caught.value)
    assert f'pip install "langgraph-checkpoint-sqlalchemy{fix}"' in message
    # Before the package is on the index, the checkout's command is the one that works.
    assert f'from a checkout of the repository: pip install -e ".{fix}"' in message
    assert f'the extra "{fix[1:-1]}"' in message


def test_missing_aiosqlite_names_the_package_and_the_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _hide(monkeypatch, "aiosqlite")
    with pytest.raises(DriverNotInstalledError) as caught:
        SQLAlchemySaver.from_conn_string("sqlite+aiosqlite:///x.db")
    message = str(caught.value)
    assert 'pip install "langgraph-checkpoint-sqlalchemy"' in message
    assert "from a checkout of the repository: pip install -e ." in message


def test_unknown_driver_is_refused() -> None:
    with pytest.raises(UnsupportedDriverError, match="postgresql\\+psycopg"):
        SQLAlchemySaver.from_conn_string("postgresql+nosuchdriver://u@h/db")


def test_given_engine_missing_twin_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("psycopg2")
    engine = create_engine("postgresql+psycopg2://u@h/db")
    _hide(monkeypatch, "psycopg", "asyncpg")
    with pytest.raises(DriverNotInstalledError, match=r"\[postgres\]"):
        SQLAlchemySaver(engine=engine)
    engine.dispose()


def test_given_async_engine_takes_an_installed_sync_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("asyncpg")
    pytest.importorskip("pg8000")
    async_engine = create_async_engine("postgresql+asyncpg://u@h/db")
    _hide(monkeypatch, "psycopg", "psycopg2")
    saver = SQLAlchemySaver(async_engine=async_engine)
    assert saver.engine.url.drivername == "postgresql+pg8000"
    saver.close()
    async_engine.sync_engine.dispose(close=False)


def test_async_driver_engine_given_as_sync_engine_is_refused() -> None:
    pytest.importorskip("asyncpg")
    engine = create_engine("postgresql+asyncpg://u@h/db")
    with pytest.raises(UnsupportedDriverError, match="async_engine="):
        SQLAlchemySaver(engine=engine)
    engine.dispose()


def test_psycopg_async_url_gets_a_sync_psycopg_engine() -> None:
    """``postgresql+psycopg_async://`` used to give the sync engine the async driver too
    (MissingGreenlet on the first sync call)."""
    urls = resolve_urls("postgresql+psycopg_async://u@h/db")
    assert (urls.sync.drivername, urls.async_.drivername) == (
        "postgresql+psycopg",
        "postgresql+psycopg_async",
    )


def test_sync_only_users_need_no_async_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line and Alembic use the sync URL only: a missing async driver does
    not stop them; the saver refuses it (test above)."""
    pytest.importorskip("psycopg2")
    _hide(monkeypatch, "psycopg", "asyncpg")
    urls = resolve_urls("postgresql+psycopg2://u@h/db")
    assert urls.sync.drivername == "postgresql+psycopg2"
    assert urls.async_missing is not None and "[postgres]" in urls.async_missing
    with pytest.raises(DriverNotInstalledError, match=r"\[postgres\]"):
        urls.require_async()
