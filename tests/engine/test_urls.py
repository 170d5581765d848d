"""A URL never means something other than what SQLAlchemy means by it.

``sqlite://relative.db`` (two slashes) used to become an in-memory database silently:
``upgrade`` said it succeeded and everything was lost at exit; SQLAlchemy itself refuses
that URL (the text after ``//`` is a host). Such URLs are refused at construction
(``from_conn_string``, the command line's ``--url``, ``alembic -x url=``) with
``DatabaseURLError``, whose message lists the valid forms; in-memory happens only when
asked for (``:memory:``, ``sqlite://``, ``sqlite:///:memory:``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine, event, make_url
from sqlalchemy.ext.asyncio import create_async_engine

from langgraph.checkpoint.sqlalchemy import DatabaseURLError, SchemaOutOfDateError, SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls

from ..provision import fresh_database

REPO = Path(__file__).resolve().parents[2]
FORMS = ("sqlite:///relative.db", "sqlite:////abs/path.db", ":memory:")
REFUSED = [
    "sqlite://relative.db",
    "sqlite+pysqlite://relative.db",
    "sqlite+aiosqlite://relative.db",
    "sqlite://user@host/x.db",
    "sqlite:///",
    "",
    "   ",
    "sqlite:relative.db",
    "postgresql:/db",
]


@pytest.mark.parametrize("url", REFUSED)
def test_misread_url_is_refused_and_creates_nothing(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatabaseURLError) as caught:
        SQLAlchemySaver.from_conn_string(url)
    assert isinstance(caught.value, ValueError)
    for form in FORMS:
        assert form in str(caught.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", [":memory:", "sqlite://", "sqlite:///:memory:"])
def test_in_memory_only_when_asked_for(url: str) -> None:
    assert resolve_urls(url).memory is not None
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        saver.put(config, empty_checkpoint(), {}, {})
        assert saver.get_tuple(config) is not None


@pytest.mark.parametrize("form", ["sqlite:///relative.db", "relative.db", "sqlite:////ABS"])
def test_file_forms_write_the_file(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = form.replace("/ABS", str(tmp_path / "relative.db"))
    assert resolve_urls(url).memory is None
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
    assert (tmp_path / "relative.db").is_file()


def test_a_relative_sqlite_url_is_the_file_of_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Savers of one relative URL opened from two folders in turn (a test runner, a
    process that changes folder) each write their own folder's file: the second does not
    reuse the engines the first left for the same URL text."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        with SQLAlchemySaver.from_conn_string("sqlite:///here.db") as saver:
            saver.setup()
            saver.put({"configurable": {"thread_id": folder}}, empty_checkpoint(), {}, {})
        with SQLAlchemySaver.from_conn_string(f"sqlite:///{tmp_path / folder / 'here.db'}") as s:
            assert [t.config["configurable"]["thread_id"] for t in s.list(None)] == [folder]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("LANGGRAPH_CHECKPOINT_URL", "LANGGRAPH_CHECKPOINT_SCHEMA"):
        env.pop(name, None)
    return env


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", "upgrade", "--url"],
        [sys.executable, "-m", "alembic", "-c", str(REPO / "alembic.ini"), "-x"],
    ],
    ids=["cli", "alembic"],
)
def test_command_line_refuses_two_slash_sqlite(command: list[str], tmp_path: Path) -> None:
    url = "sqlite://relative.db"
    args = (
        [*command, url] if command[-1] == "--url" else [*command, f"url={url}", "upgrade", "head"]
    )
    done = subprocess.run(
        args, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "sqlite:///relative.db" in done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []
    if command[-1] == "--url":  # the command line: one line, exit 2 (a bad URL)
        assert done.returncode == 2
        assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr


@pytest.mark.parametrize("form", ["{dir}", "sqlite:///{dir}", "sqlite+aiosqlite:///{dir}"])
def test_a_directory_as_sqlite_path_is_refused_at_construction(form: str, tmp_path: Path) -> None:
    # SQLite would fail at the first connection with a raw "unable to open database file".
    with pytest.raises(DatabaseURLError, match="is a directory"):
        SQLAlchemySaver.from_conn_string(form.format(dir=tmp_path))


@pytest.mark.parametrize("value", [None, b"sqlite:///x.db", 42])
def test_a_url_that_is_not_text_is_a_typed_error(value: object) -> None:
    with pytest.raises(DatabaseURLError, match="must be a str"):
        SQLAlchemySaver.from_conn_string(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("driver", ["pymysql", "asyncmy"])
async def test_a_query_parameter_the_driver_refuses_is_a_typed_error(
    driver: str, mariadb_url: str
) -> None:
    # PyMySQL and asyncmy take the query string as keyword arguments: a TypeError at the
    # first connection, with SQLAlchemy's frames, until it was typed. from_conn_string
    # refuses it when neither engine's driver takes it; an engine the application built
    # itself is refused at its first connection, naming its side and driver.
    url = make_url(mariadb_url).set(drivername=f"mysql+{driver}")
    url = url.update_query_dict({"bogus_option": "1"})
    text = url.render_as_string(hide_password=False)
    with pytest.raises(DatabaseURLError, match="bogus_option") as caught:
        SQLAlchemySaver.from_conn_string(text)
    assert "remove it from the URL's query string" in str(caught.value)
    assert "mysql+pymysql" in str(caught.value) and "mysql+asyncmy" in str(caught.value)
    engine = create_engine(url.set(drivername="mysql+pymysql"))
    async_engine = create_async_engine(url.set(drivername="mysql+asyncmy"))
    try:
        async with SQLAlchemySaver(engine=engine, async_engine=async_engine) as saver:
            with pytest.raises(DatabaseURLError, match="bogus_option") as sync_error:
                saver.get_tuple({"configurable": {"thread_id": "t"}})
            with pytest.raises(DatabaseURLError, match="bogus_option") as async_error:
                await saver.aget_tuple({"configurable": {"thread_id": "t"}})
    finally:
        engine.dispose()
        await async_engine.dispose()
    assert "sync engine's driver mysql+pymysql" in str(sync_error.value)
    assert "async engine's driver mysql+asyncmy" in str(async_error.value)
    assert "remove it from the URL's query string or connect_args" in str(sync_error.value)


@pytest.mark.parametrize("driver", ["pymysql", "asyncmy"])
async def test_a_number_in_the_query_string_is_checked(driver: str, mariadb_url: str) -> None:
    """``?port=abc`` was PyMySQL's raw ValueError at the first connection and
    ``?connect_timeout=abc`` SQLAlchemy's when the engine was made (from the hostile
    review); both are typed now, and ``?port=3306`` (text) connects."""
    url = make_url(mariadb_url).set(drivername=f"mysql+{driver}")
    with pytest.raises(DatabaseURLError, match="cannot be used"):
        SQLAlchemySaver.from_conn_string(
            url.update_query_dict({"connect_timeout": "abc"}).render_as_string(False)
        )
    bad = url.update_query_dict({"port": "abc"}).render_as_string(hide_password=False)
    async with SQLAlchemySaver.from_conn_string(bad) as saver:
        with pytest.raises(DatabaseURLError, match="'port' is a number"):
            saver.get_tuple({"configurable": {"thread_id": "t"}})
        with pytest.raises(DatabaseURLError, match="'port' is a number"):
            await saver.aget_tuple({"configurable": {"thread_id": "t"}})
    port = str(url.port or 3306)
    good = url.update_query_dict({"port": port}).render_as_string(hide_password=False)
    async with SQLAlchemySaver.from_conn_string(good) as saver:
        with pytest.raises(SchemaOutOfDateError):  # connected: the tables are missing
            await saver.aget_tuple({"configurable": {"thread_id": "t"}})


async def test_an_applications_do_connect_listener_still_connects(mariadb_url: str) -> None:
    # The saver's argument check returns no connection: a listener the application adds
    # afterwards (SQLAlchemy's token-injection pattern) still decides how to connect.
    called: list[str] = []
    with fresh_database("mariadb") as own:
        wrong = make_url(own).set(password="wrong-password")
        engine = create_engine(wrong)
        async_engine = create_async_engine(wrong.set(drivername="mysql+asyncmy"))
        saver = SQLAlchemySaver(engine=engine, async_engine=async_engine)
        for target in (engine, async_engine.sync_engine):

            @event.listens_for(target, "do_connect")
            def inject(dialect: Any, _rec: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
                called.append(dialect.driver)
                cparams["password"] = ""  # the server's root has an empty password

        try:
            saver.setup()
            assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
            assert await saver.aget_tuple({"configurable": {"thread_id": "t"}}) is None
        finally:
            saver.close()
            engine.dispose()
            await async_engine.dispose()
    assert set(called) == {"pymysql", "asyncmy"}


def test_a_password_in_the_query_string_is_masked_like_one_before_the_at() -> None:
    urls = resolve_urls("postgresql://app@db.example/prod?password=s3cret&connect_timeout=5")
    for url in (urls.sync, urls.async_):
        assert url.password == "s3cret" and "password" not in url.query
        assert url.query["connect_timeout"] == "5"
        assert "s3cret" not in repr(url) and "s3cret" not in str(url)
    both = resolve_urls("postgresql://app:one@db.example/prod?password=two")
    assert both.sync.password == "one" and both.sync.query["password"] == "two"


async def test_a_password_moved_out_of_the_query_still_connects(mariadb_url: str) -> None:
    with fresh_database("mariadb") as own:
        url = make_url(own).update_query_dict({"password": ""})
        assert url.password is None  # the server's root has an empty password
        async with SQLAlchemySaver.from_conn_string(url.render_as_string(False)) as saver:
            assert "password" not in repr(saver.engine)
            saver.setup()
            assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is None
            assert await saver.aget_tuple({"configurable": {"thread_id": "t"}}) is None
