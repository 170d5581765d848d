"""Each engine of a URL gets its own driver's connection arguments.

One URL gives two engines, which may use two drivers (``postgresql+asyncpg://``:
psycopg for the sync engine, asyncpg for the async one). Before, both engines got the
whole query string and the whole ``connect_args``: asyncpg's
``prepared_statement_cache_size`` reached psycopg ("invalid connection option"), and the
argument check refused it on asyncpg too, so asyncpg behind PgBouncer could not be
configured. Now each query parameter and each ``connect_args`` key goes to the
engine(s) whose driver takes it; one that no driver of the pair takes, and TLS settings
that would reach one engine only, are refused at construction with a
``DatabaseURLError`` naming the drivers; an engine the application built is checked at
its first connection, the message naming its side. PgBouncer itself:
``tests/reliability/test_clusters.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from langgraph.checkpoint.sqlalchemy import DatabaseURLError, SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.checkpoint.sqlalchemy._engine.shared import shared_key
from langgraph.checkpoint.sqlalchemy.dialects.postgresql import PostgreSQLQueryBuilder
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..doors import Door
from ..provision import BACKENDS, fresh_database, new_saver_args

REPO = Path(__file__).resolve().parents[2]

NAME = "postgresql+asyncpg://app@db.example/agents"


def _name() -> str:
    return f"__asyncpg_{uuid.uuid4()}__"


#: (URL, connect_args, sync URL's query keys, async URL's query keys, sync connect_args
#: keys, async connect_args keys, modules needed)
Split = tuple[str, dict[str, Any], set[str], set[str], set[str], set[str], tuple[str, ...]]
SPLITS: list[Split] = [
    (  # asyncpg: its adapter's and its own arguments to the async engine only
        f"{NAME}?prepared_statement_cache_size=0&connect_timeout=5&command_timeout=9",
        {"statement_cache_size": 0, "prepared_statement_name_func": _name,
         "prepare_threshold": None, "timeout": 5, "keepalives": 1},
        {"connect_timeout"},
        {"prepared_statement_cache_size", "command_timeout"},
        {"prepare_threshold", "keepalives"},
        {"statement_cache_size", "prepared_statement_name_func", "timeout"},
        ("asyncpg", "psycopg"),
    ),
    (  # asyncpg's cache size given in connect_args lands in the async URL
        NAME,
        {"prepared_statement_cache_size": 0, "target_session_attrs": "read-write"},
        set(),
        {"prepared_statement_cache_size"},
        {"target_session_attrs"},
        {"target_session_attrs"},
        ("asyncpg", "psycopg"),
    ),
    (  # psycopg on both sides: everything to both
        "postgresql://app@db.example/agents?sslmode=require&connect_timeout=5",
        {"prepare_threshold": None, "application_name": "agents"},
        {"sslmode", "connect_timeout"},
        {"sslmode", "connect_timeout"},
        {"prepare_threshold", "application_name"},
        {"prepare_threshold", "application_name"},
        ("psycopg",),
    ),
    (  # psycopg2 (sync) and psycopg (async): libpq's keywords to both, each its own
        "postgresql+psycopg2://app@db.example/agents?sslmode=require",
        {"connection_factory": None, "prepare_threshold": None, "connect_timeout": 5},
        {"sslmode"},
        {"sslmode"},
        {"connection_factory", "connect_timeout"},
        {"prepare_threshold", "connect_timeout"},
        ("psycopg2", "psycopg"),
    ),
    (  # pg8000 (sync) and psycopg (async)
        "postgresql+pg8000://app@db.example/agents?application_name=agents",
        {"tcp_keepalive": True, "keepalives": 1, "timeout": 5},
        {"application_name"},
        {"application_name"},
        {"tcp_keepalive", "timeout"},
        {"keepalives"},
        ("pg8000", "psycopg"),
    ),
    (  # PyMySQL (sync) and asyncmy (async); ssl_ca becomes ``ssl``, which both take;
        # echo is asyncmy's own in every version we allow; its floor, 0.2.9, has no stmt_cache_size
        "mysql+pymysql://app@db.example/agents?write_timeout=30&read_timeout=30&ssl_ca=/ca.pem",
        {"echo": False, "bind_address": "127.0.0.1", "init_command": "SET @a = 1"},
        {"charset", "write_timeout", "read_timeout", "ssl_ca"},
        {"charset", "read_timeout", "ssl_ca"},
        {"bind_address", "init_command"},
        {"echo", "init_command"},
        ("pymysql", "asyncmy"),
    ),
    (  # pysqlite (sync) and aiosqlite (async): iter_chunk_size is aiosqlite's own
        "sqlite:///agents.db?timeout=30",
        {"iter_chunk_size": 16, "cached_statements": 64, "check_same_thread": False},
        {"timeout"},
        {"timeout"},
        {"cached_statements", "check_same_thread"},
        {"iter_chunk_size", "cached_statements", "check_same_thread"},
        ("aiosqlite",),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("url", "args", "sync_query", "async_query", "sync_args", "async_args", "modules"),
    SPLITS,
    ids=["asyncpg", "asyncpg-cache-in-args", "psycopg", "psycopg2", "pg8000", "pymysql", "sqlite"],
)
def test_each_engine_gets_only_its_own_drivers_arguments(
    url: str,
    args: dict[str, Any],
    sync_query: set[str],
    async_query: set[str],
    sync_args: set[str],
    async_args: set[str],
    modules: tuple[str, ...],
) -> None:
    for module in modules:
        pytest.importorskip(module)
    urls = resolve_urls(url, args)
    assert set(urls.sync.query) == sync_query
    assert set(urls.async_.query) == async_query
    assert set(urls.sync_args) == sync_args
    assert set(urls.async_args) == async_args
    for key in urls.sync_args:
        assert urls.sync_args[key] is args[key]
    for key in urls.async_args:
        assert urls.async_args[key] is args[key]


def test_without_connect_args_the_url_alone_is_split() -> None:
    pytest.importorskip("asyncpg")
    urls = resolve_urls(f"{NAME}?prepared_statement_cache_size=0")
    assert dict(urls.sync.query) == {} and urls.sync.drivername == "postgresql+psycopg"
    assert dict(urls.async_.query) == {"prepared_statement_cache_size": "0"}
    assert (dict(urls.sync_args), dict(urls.async_args)) == ({}, {})


def test_an_engines_twin_made_from_its_url_gets_only_its_own_arguments() -> None:
    """``SQLAlchemySaver(async_engine=...)`` makes the sync engine from the async one's
    URL: psycopg got ``prepared_statement_cache_size`` and refused every connection."""
    pytest.importorskip("asyncpg")
    async_engine = create_async_engine(f"{NAME}?prepared_statement_cache_size=0")
    saver = SQLAlchemySaver(async_engine=async_engine)
    try:
        assert saver.engine.url.drivername == "postgresql+psycopg"
        assert "prepared_statement_cache_size" not in saver.engine.url.query
    finally:
        saver.close()
        async_engine.sync_engine.dispose(close=False)


# -- refused: no driver takes it, TLS for one engine only, not a mapping -----------------


@pytest.mark.parametrize(
    ("url", "args", "source"),
    [
        (f"{NAME}?prepared_statment_cache_size=0", None, "the URL's query string"),
        (NAME, {"prepare_treshold": None}, "connect_args"),
        ("postgresql://app@db.example/agents", {"statement_cache_size": 0}, "connect_args"),
        ("mysql+pymysql://app@db.example/agents", {"bogus": "s3cret"}, "connect_args"),
        ("sqlite:///agents.db", {"bogus": "s3cret"}, "connect_args"),
    ],
)
def test_an_argument_no_driver_takes_is_refused_naming_both_drivers(
    url: str, args: dict[str, Any] | None, source: str
) -> None:
    pytest.importorskip("asyncpg")
    with pytest.raises(DatabaseURLError) as caught:
        SQLAlchemySaver.from_conn_string(url, **({"connect_args": args} if args else {}))
    message = str(caught.value)
    urls = resolve_urls(url.split("?")[0])
    assert urls.sync.drivername in message and urls.async_.drivername in message
    assert f"of {source}" in message and "s3cret" not in message
    with pytest.raises(DatabaseURLError):
        SQLAlchemyStore.from_conn_string(url, **({"connect_args": args} if args else {}))


@pytest.mark.parametrize(
    ("url", "args", "alone"),
    [
        (f"{NAME}?ssl=require", None, "async engine (postgresql+asyncpg)"),
        (NAME, {"sslmode": "verify-full"}, "sync engine (postgresql+psycopg)"),
        ("postgresql+pg8000://app@db.example/agents?sslmode=require", None, "async engine"),
        ("mysql+pymysql://app@db.example/agents", {"ssl_verify_identity": True}, "sync engine"),
    ],
)
def test_tls_settings_for_one_engine_only_are_refused(
    url: str, args: dict[str, Any] | None, alone: str
) -> None:
    """The other engine would connect without them: an asyncpg URL's ``ssl=require``
    would have left psycopg at libpq's ``sslmode=prefer``."""
    for module in ("asyncpg", "pg8000"):
        pytest.importorskip(module)
    with pytest.raises(DatabaseURLError, match="TLS") as caught:
        resolve_urls(url, args)
    assert f"reach only the {alone}" in str(caught.value)
    assert "would connect without them" in str(caught.value)


@pytest.mark.parametrize(
    ("url", "args"),
    [
        (f"{NAME}?ssl=require&sslmode=require", None),
        (NAME, {"ssl": "require", "sslmode": "verify-full"}),
        (f"{NAME}?sslmode=require", {"ssl": "require"}),
        ("postgresql+pg8000://app@db.example/agents?sslmode=require", {"ssl_context": True}),
        ("mysql+pymysql://app@db.example/agents?ssl_ca=/ca.pem", None),
    ],
)
def test_tls_settings_for_both_engines_are_taken(url: str, args: dict[str, Any] | None) -> None:
    for module in ("asyncpg", "pg8000"):
        pytest.importorskip(module)
    urls = resolve_urls(url, args)
    sides = [
        set(urls.sync.query) | set(urls.sync_args),
        set(urls.async_.query) | set(urls.async_args),
    ]
    assert all(any("ssl" in name for name in side) for side in sides)


@pytest.mark.parametrize("args", [[("timeout", 5)], {1: 5}, "timeout=5"])
def test_connect_args_that_are_not_a_mapping_of_names_are_a_type_error(args: Any) -> None:
    with pytest.raises(TypeError, match="connect_args must be a dict"):
        SQLAlchemySaver.from_conn_string("sqlite:///agents.db", connect_args=args)


def test_psycopg_sync_twin_of_asyncpg_url_refuses_psycopg2_arguments_when_psycopg_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With psycopg hidden the twin is psycopg2, which has no ``prepare_threshold``:
    refused, naming both drivers, instead of a TypeError at the first connection."""
    pytest.importorskip("asyncpg")
    pytest.importorskip("psycopg2")
    monkeypatch.setitem(sys.modules, "psycopg", None)
    urls = resolve_urls(NAME, {"connection_factory": None})
    assert urls.sync.drivername == "postgresql+psycopg2" and set(urls.sync_args) == {
        "connection_factory"
    }
    with pytest.raises(DatabaseURLError, match=r"postgresql\+psycopg2.*postgresql\+asyncpg"):
        resolve_urls(NAME, {"prepare_threshold": None})


# -- an engine the application built: checked at its first connection -------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_applications_engine_with_the_other_drivers_argument_names_its_side(
    mode: str,
) -> None:
    """Before, psycopg's libpq said 'invalid connection option' at the first connection
    and asyncpg's check refused ``prepare_threshold`` without saying which engine."""
    pytest.importorskip("asyncpg")
    where = "postgresql+{}://app@127.0.0.1:1/agents"
    engine = create_engine(where.format("psycopg"), connect_args={"statement_cache_size": 0})
    async_engine = create_async_engine(
        where.format("asyncpg"), connect_args={"prepare_threshold": None}
    )
    saver = SQLAlchemySaver(engine=engine, async_engine=async_engine)
    try:
        with pytest.raises(DatabaseURLError) as caught:
            if mode == "sync":
                saver.get_tuple({"configurable": {"thread_id": "t"}})
            else:
                await saver.aget_tuple({"configurable": {"thread_id": "t"}})
    finally:
        await saver.aclose()
        engine.dispose()
        await async_engine.dispose()
    message = str(caught.value)
    if mode == "sync":
        assert "sync engine's driver postgresql+psycopg" in message
        assert "'statement_cache_size'" in message
    else:
        assert "async engine's driver postgresql+asyncpg" in message
        assert "'prepare_threshold'" in message


# -- the shared engines' key --------------------------------------------------------------


def test_savers_share_engines_only_with_the_same_arguments_for_each_engine(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'agents.db'}"
    first = SQLAlchemySaver.from_conn_string(url, connect_args={"timeout": 30})
    same = SQLAlchemySaver.from_conn_string(url, connect_args={"timeout": 30})
    other = SQLAlchemySaver.from_conn_string(url, connect_args={"timeout": 31})
    chunk = SQLAlchemySaver.from_conn_string(url, connect_args={"iter_chunk_size": 8})
    callable_arg = SQLAlchemySaver.from_conn_string(url, connect_args={"factory": object})
    try:
        assert same.engine is first.engine and same.async_engine is first.async_engine
        assert other.engine is not first.engine
        assert chunk.engine is not first.engine
        assert callable_arg.engine is not first.engine
    finally:
        for saver in (first, same, other, chunk, callable_arg):
            saver.close()


def test_the_shared_key_holds_each_engines_own_arguments() -> None:
    pytest.importorskip("asyncpg")
    one = resolve_urls(NAME, {"prepare_threshold": None, "statement_cache_size": 0})
    two = resolve_urls(NAME, {"prepare_threshold": None, "statement_cache_size": 100})
    three = resolve_urls(NAME, {"prepare_threshold": 5, "statement_cache_size": 0})
    keys = [shared_key(u, None, {"connect_args": {}}) for u in (one, two, three)]
    assert None not in keys and len(set(keys)) == 3
    named = resolve_urls(NAME, {"prepared_statement_name_func": _name})
    assert shared_key(named, None, {}) is None  # a callable: engines of its own


# -- asyncpg with its statement cache off: one-statement calls in a transaction -----------


@pytest.mark.parametrize(
    ("url", "autocommit"),
    [
        (f"{NAME}?prepared_statement_cache_size=0", False),
        (f"{NAME}?prepared_statement_cache_size=100", True),
        (NAME, True),
        ("postgresql+psycopg://app@db.example/agents", True),
    ],
)
def test_asyncpg_without_its_statement_cache_runs_one_statement_calls_in_a_transaction(
    url: str, autocommit: bool
) -> None:
    """SQLAlchemy's asyncpg adapter prepares a statement in a round trip of its own:
    outside a transaction PgBouncer may run it on another server connection."""
    pytest.importorskip("asyncpg")
    engine = create_async_engine(url).sync_engine
    options = {"isolation_level": "AUTOCOMMIT", "schema_translate_map": {None: "s"}}
    got = PostgreSQLQueryBuilder.engine_options(engine, options)
    assert ("isolation_level" in got) is autocommit
    assert got["schema_translate_map"] == {None: "s"}
    engine.dispose()


# -- on the servers: each engine connects with its own arguments --------------------------


def _fresh(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, Any]:
    if backend not in BACKENDS:
        pytest.skip(f"{backend} not in LGSA_TEST_BACKENDS")
    args = new_saver_args(backend, request, tmp_path)
    return make_url(args["conn_string"]), args.get("schema")


async def _round_trip(saver: SQLAlchemySaver, mode: str) -> None:
    door = Door(saver, mode)
    await door.setup()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    stored = await door.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    got = await door.get_tuple(stored)
    assert got is not None and got.config == stored


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_asyncpg_url_with_the_pgbouncer_settings_connects_both_engines(
    mode: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The documented settings for PgBouncer in transaction mode, on the plain server:
    psycopg (sync) gets ``prepare_threshold``, asyncpg (async) its own three."""
    pytest.importorskip("asyncpg")
    url, schema = _fresh("postgres", request, tmp_path)
    names: list[str] = []

    def statement_name() -> str:
        names.append(_name())
        return names[-1]

    asyncpg_url = url.set(drivername="postgresql+asyncpg").update_query_dict(
        {"prepared_statement_cache_size": "0"}
    )
    connect_args = {
        "statement_cache_size": 0,
        "prepared_statement_name_func": statement_name,
        "prepare_threshold": None,
    }
    async with SQLAlchemySaver.from_conn_string(
        asyncpg_url, schema=schema, connect_args=connect_args
    ) as saver:
        await _round_trip(saver, mode)
        with saver.engine.connect() as conn:
            assert conn.connection.driver_connection.prepare_threshold is None  # type: ignore[union-attr]
        async with saver.async_engine.connect() as conn:
            assert await conn.scalar(text("SELECT 1")) == 1
        assert names  # asyncpg's statements were named by the function given


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("backend", "driver", "connect_args", "query"),
    [
        ("postgres", "psycopg2", {"connection_factory": "psycopg2", "prepare_threshold": 0}, {}),
        ("postgres", "pg8000", {"tcp_keepalive": True, "keepalives": 1}, {}),
        ("mariadb", "pymysql", {"stmt_cache_size": 64}, {"write_timeout": "30"}),
        ("mariadb", "asyncmy", {"bind_address": "127.0.0.1"}, {"write_timeout": "30"}),
        ("sqlite-file", "pysqlite", {"iter_chunk_size": 16, "timeout": 30}, {}),
    ],
    ids=["psycopg2", "pg8000", "pymysql", "asyncmy", "sqlite"],
)
async def test_one_drivers_arguments_no_longer_break_the_other_engine(
    backend: str,
    driver: str,
    connect_args: dict[str, Any],
    query: dict[str, str],
    mode: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """Each of these gave the other engine an argument its driver refuses (asyncmy and
    PyMySQL: ``write_timeout``, ``stmt_cache_size``, ``bind_address``; psycopg2:
    ``prepare_threshold``; psycopg: ``connection_factory``; pg8000: ``keepalives``;
    pysqlite: ``iter_chunk_size``)."""
    module = {"pysqlite": "sqlite3", "asyncmy": "asyncmy"}.get(driver, driver)
    pytest.importorskip(module)
    if connect_args.get("connection_factory") == "psycopg2":  # its default, given
        connect_args = {
            **connect_args,
            "connection_factory": pytest.importorskip("psycopg2.extensions").connection,
        }
    url, schema = _fresh(backend, request, tmp_path)
    family = url.get_backend_name()
    url = url.set(drivername=f"{family}+{driver}").update_query_dict(query)
    async with SQLAlchemySaver.from_conn_string(
        url, schema=schema, connect_args=connect_args
    ) as saver:
        await _round_trip(saver, mode)


@pytest.mark.parametrize("tool", ["cli", "alembic"])
def test_command_line_and_alembic_use_the_sync_engines_share_of_an_asyncpg_url(
    tool: str, tmp_path: Path
) -> None:
    """Both use the sync engine only: psycopg refused every connection with
    ``invalid connection option "prepared_statement_cache_size"``."""
    pytest.importorskip("asyncpg")
    with fresh_database("postgres") as server_url:
        url = make_url(server_url).set(drivername="postgresql+asyncpg")
        text_url = url.update_query_dict({"prepared_statement_cache_size": "0"}).render_as_string(
            hide_password=False
        )
        if tool == "cli":
            command = [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", "upgrade"]
            command += ["--url", text_url]
        else:
            command = [sys.executable, "-m", "alembic", "-c", str(REPO / "alembic.ini")]
            command += ["-x", f"url={text_url}", "upgrade", "head"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("LANGGRAPH_CHECKPOINT")}
        done = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr
        with SQLAlchemySaver.from_conn_string(text_url) as saver:
            assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None  # at head
