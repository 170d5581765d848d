"""What a newcomer meets first, on every backend it concerns, sync and async.

- ``await saver.setup()`` (the idiom of the async official savers) works, as does
  ``setup()`` called from a sync helper inside a running loop; ``setup()`` outside a loop
  has migrated when it returns (a done coroutine); not awaited at once in a coroutine,
  the same. The same for the store. (``setup()`` blocks however it is called and
  ``asetup()`` keeps the loop free: ``tests/migrations/test_setup_blocking.py``.)
- A libpq connection string (``"host=... dbname=... user=..."``) is PostgreSQL, never a
  SQLite file of that name; other strings that are not file paths are refused.
- A database never reached fails at once, naming its host and port (password masked),
  every host and port of a libpq host list, a socket folder as that folder, and nothing
  the URL did not name; a database that does not exist, with the server's words; one
  reached once is still retried through an outage.
- A SQLite file in a folder that does not exist, and a password holding an unencoded
  ``@``, are typed errors that say what to do.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy.engine import make_url

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConnectionError,
    DatabaseURLError,
    RetryEvent,
    SQLAlchemySaver,
    cli,
)
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..outage import Proxy
from ..provision import BACKENDS, new_saver_args

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
SERVERS = [b for b in ("postgres", "mariadb") if b in BACKENDS]
#: Nothing listens on port 1 of 127.0.0.1.
DOWN = {
    "postgres": "postgresql://u:S3cretPw@127.0.0.1:1/x",
    "mariadb": "mysql://u:S3cretPw@127.0.0.1:1/x",
}
Owner = Callable[..., Any]
OWNERS: dict[str, Owner] = {
    "saver": SQLAlchemySaver.from_conn_string,
    "store": SQLAlchemyStore.from_conn_string,
}


def _probe(owner: Any) -> Any:
    """A read through the owner's sync door: fails if its tables are missing."""
    if isinstance(owner, SQLAlchemyStore):
        return owner.search(("a",))
    return owner.get_tuple(CONFIG)


async def _aprobe(owner: Any) -> Any:
    if isinstance(owner, SQLAlchemyStore):
        return await owner.asearch(("a",))
    return await owner.aget_tuple(CONFIG)


# -- await setup() ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", OWNERS)
def test_setup_outside_a_loop_returns_a_done_coroutine(
    kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``setup()`` has migrated when it returns; what it returns is a coroutine already
    done, so ``asyncio.run(saver.setup())`` works too and nothing warns if it is dropped."""
    args = new_saver_args(backend, request, tmp_path)
    with OWNERS[kind](args.pop("conn_string"), **args) as owner, warnings.catch_warnings():
        warnings.simplefilter("error")
        done = owner.setup()
        _probe(owner)
        assert asyncio.run(done) is None  # type: ignore[arg-type]
        asyncio.run(owner.setup())  # type: ignore[arg-type]
        del done
        gc.collect()


@pytest.mark.parametrize("kind", OWNERS)
async def test_await_setup_works_like_asetup(
    kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    args = new_saver_args(backend, request, tmp_path)
    async with OWNERS[kind](args.pop("conn_string"), **args) as owner:
        await owner.setup()
        await _aprobe(owner)
        _probe(owner)
        await owner.setup()  # idempotent, awaited again
        await owner.asetup()


@pytest.mark.parametrize("kind", OWNERS)
async def test_setup_in_a_coroutine_not_awaited_at_once_migrates_before_returning(
    kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Sync methods work inside a running loop: ``setup()`` written in a coroutine without
    ``await`` has migrated when it returns, and its result can still be awaited."""
    args = new_saver_args(backend, request, tmp_path)
    async with OWNERS[kind](args.pop("conn_string"), **args) as owner:
        pending = owner.setup()
        _probe(owner)
        await pending  # does nothing more
        await asyncio.gather(owner.setup())
        await asyncio.create_task(owner.setup())  # type: ignore[arg-type]
        await _aprobe(owner)


@pytest.mark.parametrize("kind", OWNERS)
async def test_setup_from_a_sync_helper_inside_a_loop_migrates_before_returning(
    kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    args = new_saver_args(backend, request, tmp_path)
    async with OWNERS[kind](args.pop("conn_string"), **args) as owner:

        def helper() -> None:  # a sync function called on the loop's thread
            owner.setup()  # not awaited: the tables must exist all the same
            _probe(owner)

        helper()
        await _aprobe(owner)


# -- libpq connection strings and other strings that are not file paths ---------------------


@pytest.mark.parametrize(
    ("conninfo", "expected"),
    [
        ("host=127.0.0.1 dbname=app user=u", "postgresql+psycopg://u@127.0.0.1/app"),
        (
            "host = db.example port=6543 dbname='my app' user=u password='p w\\'d'",
            "postgresql+psycopg://u:p w%27d@db.example:6543/my app",
        ),
        ("dbname=app", "postgresql+psycopg:///app"),
        (
            "host=/var/run/postgresql dbname=app sslmode=disable",
            "postgresql+psycopg:///app?host=%2Fvar%2Frun%2Fpostgresql&sslmode=disable",
        ),
        (
            "host=a,b port=5432,5433 dbname=app",
            "postgresql+psycopg:///app?host=a%2Cb&port=5432%2C5433",
        ),
    ],
)
def test_a_libpq_connection_string_is_postgresql(
    conninfo: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    urls = resolve_urls(conninfo)
    assert urls.sync.render_as_string(hide_password=False) == expected
    assert urls.async_.drivername == "postgresql+psycopg"
    assert "p w'd" not in repr(urls.sync)  # the password field is masked
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif("postgres" not in BACKENDS, reason="PostgreSQL not in LGSA_TEST_BACKENDS")
async def test_a_libpq_connection_string_connects_sync_and_async(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = make_url(postgres_url)
    conninfo = (
        f"host={url.host} port={url.port or 5432} dbname='{url.database}' user={url.username}"
    )
    async with SQLAlchemySaver.from_conn_string(conninfo, schema="t_conninfo") as saver:
        await saver.asetup()
        saver.put(CONFIG, empty_checkpoint(), {}, {})
        assert await saver.aget_tuple(CONFIG) is not None
        assert saver.engine.dialect.name == "postgresql"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # a string libpq refuses is not quoted back, nor are libpq's words (they may
        # quote a piece of a password): the item it stopped at, and what was meant
        ("foo=bar", "the keyword of item 1 is not one libpq knows"),
        ("x=1.db", "sqlite:///path"),
        ("dbname=app user", "item 2 has no '='"),
        ("dbname='app", "the single quote that opens value 1 is never closed"),
        ("password=S3cretPw bogus=1", "not one libpq reads: the keyword of item 2"),
        ("port=abc dbname=x", "not a number"),
        ("my file = x.db", "looks like a connection string"),
        (
            "Server=db;Database=app; User Id=u",
            'item 1 is not one libpq knows (did you mean "host"',
        ),
        ("localhost:5432/app", "host:port without a scheme"),
        ("db.example:3306", "host:port without a scheme"),
    ],
)
def test_strings_that_are_not_file_paths_are_refused(
    text: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for kind in OWNERS:
        with pytest.raises(DatabaseURLError, match=says.replace("(", r"\(")) as e:
            OWNERS[kind](text)
        assert "S3cret" not in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_a_libpq_connection_string_without_psycopg_says_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg fails
    with pytest.raises(DatabaseURLError, match=r"pip install 'psycopg\[binary\]'"):
        SQLAlchemySaver.from_conn_string("host=127.0.0.1 dbname=app user=u")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "sync", "async_"),
    [
        ("postgres://u@h/x", "postgresql+psycopg", "postgresql+psycopg"),
        ("postgres+asyncpg://u@h/x", "postgresql+psycopg", "postgresql+asyncpg"),
        ("postgresql+asyncpg://u@h/x", "postgresql+psycopg", "postgresql+asyncpg"),
        ("postgresql+psycopg://u@h/x", "postgresql+psycopg", "postgresql+psycopg"),
        ("mariadb://u@h/x", "mariadb+pymysql", "mariadb+asyncmy"),
    ],
)
def test_url_schemes_and_aliases_pick_their_drivers(url: str, sync: str, async_: str) -> None:
    urls = resolve_urls(url)
    assert (urls.sync.drivername, urls.async_.drivername) == (sync, async_)


def test_a_file_name_with_an_equals_sign_still_opens_as_sqlite_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SQLAlchemySaver.from_conn_string("sqlite:///x=1.db") as saver:
        saver.setup()
    assert (tmp_path / "x=1.db").is_file()


# -- a database never reached fails at once; one reached once is retried -------------------


@pytest.mark.parametrize("kind", OWNERS)
@pytest.mark.parametrize("backend", SERVERS)
async def test_a_database_never_reached_fails_at_once_naming_host_and_port(
    backend: str, kind: str
) -> None:
    retried: list[RetryEvent] = []  # at once: not one retry (30 s of them otherwise)
    owner = OWNERS[kind](DOWN[backend], retry_timeout=30, on_retry=retried.append)
    try:
        for call in (owner.setup, lambda: _probe(owner)):
            with pytest.raises(CheckpointConnectionError) as e:
                call()
            assert retried == []
            message = str(e.value)
            assert "host 127.0.0.1, port 1" in message and "S3cretPw" not in message
            assert "u:***@127.0.0.1:1/x" in message and "server is running" in message
            assert e.value.__cause__ is None  # one short traceback
        for acall in (owner.asetup, lambda: _aprobe(owner)):
            with pytest.raises(CheckpointConnectionError, match="port 1"):
                await acall()
            assert retried == []
    finally:
        await owner.aclose()


def free_ports(count: int) -> list[int]:
    """``count`` TCP ports of 127.0.0.1 that nothing listens on (bound by the system,
    then released)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


BOTH = "host 127.0.0.1, port {a}; host 127.0.0.1, port {b}"
#: ``(URL or connection string, the servers the error names, environment)``: host lists
#: in each spelling, a socket folder, nothing named. Filled in by the test: ``{a}`` and
#: ``{b}``, ports of 127.0.0.1 nothing listens on; ``{folder}``, a folder of the test
#: without a socket.
NAMED_SERVERS = [
    pytest.param(
        "host=127.0.0.1,127.0.0.1 port={a},{b} dbname=x user=u password=S3cretPw",
        BOTH,
        {},
        id="conninfo-host-list",
    ),
    pytest.param(
        "postgresql://u:S3cretPw@/x?host=127.0.0.1,127.0.0.1&port={a},{b}",
        BOTH,
        {},
        id="url-libpq-lists",
    ),
    pytest.param(
        "postgresql://u:S3cretPw@/x?host=127.0.0.1:{a}&host=127.0.0.1:{b}",
        BOTH,
        {},
        id="url-host-port-pairs",
    ),
    pytest.param(
        "host={folder} port={a} dbname=x user=u password=S3cretPw",
        "socket folder {folder}, port {a}",
        {},
        id="conninfo-socket-folder",
    ),
    pytest.param(
        "postgresql://u:S3cretPw@/x?host={folder}",
        "socket folder {folder}, port 5432",
        {},
        id="url-socket-folder",
    ),
    pytest.param(
        "postgresql://u:S3cretPw@/x",
        "the default socket, port {a}",
        {"PGPORT": "{a}"},
        id="nothing-named",
    ),
    pytest.param(
        "postgresql://u:S3cretPw@/x",
        "host 127.0.0.1 (PGHOST), port {a}",
        {"PGHOST": "127.0.0.1", "PGPORT": "{a}"},
        id="pghost",
    ),
    pytest.param(
        "mysql://u:S3cretPw@/x?unix_socket={folder}/mysqld.sock",
        "socket {folder}/mysqld.sock",
        {},
        id="mysql-socket",
    ),
]


@pytest.mark.parametrize("kind", OWNERS)
@pytest.mark.parametrize(("url", "named", "env"), NAMED_SERVERS)
async def test_a_first_connection_names_exactly_what_the_url_names(
    url: str,
    named: str,
    env: dict[str, str],
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every host and port of a host list, a socket folder as that folder, PGHOST and
    PGPORT where libpq reads them: never a "localhost" the URL did not name, never the
    password. Sync and async, saver and store."""
    a, b = free_ports(2)
    fill = {"a": a, "b": b, "folder": tmp_path}
    for name in ("PGHOST", "PGPORT", "PGHOSTADDR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(**fill))
    url, named = url.format(**fill), named.format(**fill)
    owner = OWNERS[kind](url)
    try:
        for call in (owner.setup, lambda: _probe(owner), owner.asetup, lambda: _aprobe(owner)):
            with pytest.raises(CheckpointConnectionError) as e:
                result = call()
                if asyncio.iscoroutine(result):
                    await result
            message = str(e.value)
            assert f"({named}): " in message, message
            assert "S3cretPw" not in message, message
            # (the driver's own words may say localhost: PyMySQL's do for a socket)
            assert "localhost" not in message.partition(f"({named}): ")[0], message
    finally:
        await owner.aclose()


@pytest.mark.parametrize("kind", OWNERS)
@pytest.mark.parametrize("backend", SERVERS)
async def test_setup_on_a_database_that_does_not_exist_says_so(
    backend: str, kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """What the README says: ``setup()`` on a database not created yet raises
    :class:`CheckpointConnectionError` (not SQLAlchemy's ``OperationalError``), with the
    server's own words, at once."""
    args = new_saver_args(backend, request, tmp_path)
    missing = make_url(args["conn_string"]).set(database="lgsa_no_such_database")
    says = (
        'database "lgsa_no_such_database" does not exist'
        if backend == "postgres"
        else "Unknown database 'lgsa_no_such_database'"
    )
    owner = OWNERS[kind](missing.render_as_string(hide_password=False))
    try:
        for call in (owner.setup, owner.asetup):
            with pytest.raises(CheckpointConnectionError) as e:
                result = call()
                if asyncio.iscoroutine(result):
                    await result
            assert says in str(e.value) and "CREATE DATABASE" in str(e.value)
    finally:
        await owner.aclose()


@pytest.fixture(params=SERVERS)
def proxied(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[dict[str, Any], Proxy]]:
    """``(from_conn_string arguments, proxy)``: a fresh database of the backend reached
    through a :class:`Proxy`."""
    args = new_saver_args(str(request.param), request, tmp_path)
    url = make_url(args["conn_string"])
    proxy = Proxy(url.port or (5432 if request.param == "postgres" else 3306))
    args["conn_string"] = url.set(port=proxy.port).render_as_string(hide_password=False)
    yield args, proxy
    proxy.stop()


@pytest.mark.parametrize("kind", OWNERS)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_outage_after_the_first_connection_is_ridden_through(
    proxied: tuple[dict[str, Any], Proxy], kind: str, mode: str
) -> None:
    args, proxy = proxied
    retried: list[RetryEvent] = []

    def back_once_met(event: RetryEvent) -> None:  # the server returns once the call met it gone
        retried.append(event)
        if len(retried) == 1:
            proxy.start()

    owner = OWNERS[kind](args.pop("conn_string"), retry_timeout=15, on_retry=back_once_met, **args)
    try:
        owner.setup()
        await _aprobe(owner)
        proxy.stop()
        if mode == "sync":
            await asyncio.to_thread(_probe, owner)
        else:
            await _aprobe(owner)
        assert retried, "the call never met the outage"  # it waited for the server, did not fail
    finally:
        await owner.aclose()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_outage_after_the_first_connection_fails_after_retry_timeout(
    proxied: tuple[dict[str, Any], Proxy], mode: str
) -> None:
    args, proxy = proxied
    saver = SQLAlchemySaver.from_conn_string(args.pop("conn_string"), retry_timeout=0.5, **args)
    try:
        saver.setup()
        await saver.aget_tuple(CONFIG)
        proxy.stop()
        with pytest.raises(CheckpointConnectionError, match="cannot reach") as e:
            if mode == "sync":
                saver.get_tuple(CONFIG)
            else:
                await saver.aget_tuple(CONFIG)
        attempts = int(str(e.value).split(" attempts over ")[0].rsplit("(", 1)[1])
        # retried, not given up at the first refusal (how many more fit in 0.5 s depends
        # on the machine's speed)
        assert attempts >= 2
    finally:
        proxy.start()  # for the fixture's stop
        await saver.aclose()


# -- a SQLite file in a missing folder; a password with an unencoded '@' --------------------


@pytest.mark.parametrize("kind", OWNERS)
@pytest.mark.parametrize("form", ["sqlite:///{path}", "{path}"])
async def test_a_sqlite_file_in_a_missing_folder_names_the_folder(
    kind: str, form: str, tmp_path: Path
) -> None:
    path = tmp_path / "no" / "such" / "db.sqlite"
    owner = OWNERS[kind](form.format(path=path))
    try:
        for call in (owner.setup, lambda: _probe(owner)):
            with pytest.raises(DatabaseURLError) as e:
                call()
            message = str(e.value)
            assert str(path) in message and f"folder {tmp_path / 'no' / 'such'}" in message
            assert "does not exist" in message and "Create the folder" in message
        for acall in (owner.asetup, lambda: _aprobe(owner)):
            with pytest.raises(DatabaseURLError, match="does not exist"):
                await acall()
    finally:
        await owner.aclose()
    assert not (tmp_path / "no").exists()


AT_IN_PASSWORD = [
    "postgresql://u:p@ss@127.0.0.1:5999/x",
    "postgresql+psycopg://u:p@ss@127.0.0.1/x",
    "mysql://u:p@ss@127.0.0.1:3306/x",
    "mariadb+asyncmy://u@name:p@ss@127.0.0.1/x",
]


@pytest.mark.parametrize("url", AT_IN_PASSWORD)
def test_an_unencoded_at_in_the_password_is_refused_masked(url: str) -> None:
    for kind in OWNERS:
        with pytest.raises(DatabaseURLError, match="%40") as e:
            OWNERS[kind](url)
        message = str(e.value)
        assert "ss@" not in message and "p@" not in message and "u:" not in message
        assert "***@127.0.0.1" in message


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://postgres:MyS3cret@Pass:Word9@127.0.0.1:5432/x",  # port read as 'Word9@..'
        "postgresql://postgres:S3cret@Pw@[::1]:5432/x",
        "host=127.0.0.1 dbname=x user=postgres password=Tr0ub4dor &3xtraSecret",
        "host=127.0.0.1 password=a b=SecretTail",
    ],
)
def test_no_piece_of_a_password_reaches_a_url_error(text: str) -> None:
    """Neither SQLAlchemy's port parser nor libpq's parser may quote a piece of a password
    written without encoding or quotes."""
    for kind in OWNERS:
        with pytest.raises(DatabaseURLError) as e:
            OWNERS[kind](text)
        message = str(e.value)
        for piece in ("Word9", "S3cret", "Secret", "3xtra", "Pass", "Pw"):
            assert piece not in message, message


def test_a_libpq_value_holding_a_url_is_still_libpq() -> None:
    urls = resolve_urls("host=127.0.0.1 dbname=x user=u options='-c search_path=a://b'")
    assert urls.sync.drivername == "postgresql+psycopg"
    assert urls.sync.query["options"] == "-c search_path=a://b"


@pytest.mark.parametrize("url", AT_IN_PASSWORD)
def test_the_command_line_shows_no_part_of_such_a_password(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["current", "--url", url],
        ["upgrade", "--url", url],
        ["threads", "list", "--url", url],
    ):
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == 2, err
        assert err.count("\n") == 1 and err.startswith("error: ")
        assert "ss@" not in err and "p@" not in err and "%40" in err
