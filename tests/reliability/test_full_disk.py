"""A full disk is a typed error that says what to do, and loses nothing.

Saver and store, sync and async, ``setup`` and the command line: the write that does not
fit raises :class:`CheckpointStorageFullError` (an ``OSError`` with ``errno`` ENOSPC,
naming the database and never the SQL), its transaction is rolled back, what was stored
before reads back intact, and writes work again once there is room.

How each backend's disk is made full, for real, without filling the machine's disk:

- **SQLite** (file and in memory): ``PRAGMA max_page_count`` set to the database's size
  on every connection the engine checks out, so SQLite's own pager refuses to grow the
  database with ``SQLITE_FULL`` ("database or disk is full"), the result code of a full
  disk. Where this process may mount a file system (root), a database on a 256 KiB tmpfs
  is also filled to the last byte, through the saver, and gives the same code.
- **PostgreSQL**: where the server runs on this machine and this process may mount a
  file system (root), the saver's tables are moved into a tablespace on a 1 MiB tmpfs
  (``setup`` is pointed there by ``default_tablespace``): the server's own "could not
  extend file ...: No space left on device", SQLSTATE 53100. Skipped elsewhere.
- **MariaDB**: not provoked. A table on a small tmpfs (``DATA DIRECTORY``) made MariaDB
  10.11 abort when the statement that filled it rolled back ("[FATAL] InnoDB: Error (Out
  of disk space) in rollback", signal 6): no test may do that to a shared server, and a
  MEMORY table's or ``MAX_ROWS`` limit is another cause under the same code. What is
  tested is the classification, on the drivers' real error classes (PyMySQL's and
  asyncmy's ``OperationalError``) carrying the codes MariaDB and MySQL document for a
  full disk (1021, 1114, 20, and errno 28 in 3, 1026, 1030, 1180), through the retry
  every call of the saver and the store goes through.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import OperationalError as SAOperationalError
from sqlalchemy.pool import NullPool, Pool

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConnectionError,
    CheckpointStorageFullError,
    SQLAlchemySaver,
    cli,
    migrate,
)
from langgraph.checkpoint.sqlalchemy._engine.retry import Retry
from langgraph.checkpoint.sqlalchemy.dialects import query_builder
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..checkpoints import config
from ..conftest import StoreDoor
from ..doors import Door
from ..provision import BACKENDS, new_name

#: SQLite's result code of a full disk (and of ``max_page_count`` reached).
SQLITE_FULL = 13
#: Words of the SQL the saver runs: none may reach a message.
SQL_WORDS = ("INSERT", "SELECT", "UPDATE", "lgsa_checkpoints (", "VALUES")


# -- making a disk full ---------------------------------------------------------------------


class PageLimit:
    """SQLite's ``max_page_count`` on every connection ``engine`` checks out while
    :attr:`full`: the database cannot grow past its size then (``SQLITE_FULL``).
    ``engines=None`` puts it on every pool of the process (the command line's own)."""

    def __init__(self, engine: Engine | None) -> None:
        self.target: Any = engine if engine is not None else Pool
        self.full = True
        event.listen(self.target, "checkout", self._limit)

    def _limit(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            (pages,) = cursor.execute("PRAGMA page_count").fetchone()
            # 4294967294: SQLite's largest, the limit lifted (a lower one is kept as is)
            limit = max(pages, 1) if self.full else 4294967294
            cursor.execute(f"PRAGMA max_page_count = {limit}")
        finally:
            cursor.close()

    def free(self) -> None:
        self.full = False

    def remove(self) -> None:
        event.remove(self.target, "checkout", self._limit)


@contextmanager
def tmpfs(size: str, owner: tuple[int, int] = (0, 0)) -> Iterator[Path]:
    """A tmpfs of ``size`` on a new folder owned by ``owner`` (uid, gid), unmounted on
    exit. Skips the test where this process may not mount one (not root)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    folder = Path(tempfile.mkdtemp(prefix="lgsa-full-"))
    uid, gid = owner
    options = f"size={size},uid={uid},gid={gid},mode=0700"
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            # a server's process may still hold a deleted file open: detach it now
            subprocess.run(["umount", "-l", str(folder)], check=True)
        folder.rmdir()


def grow(folder: Path, size: str = "64m") -> None:
    """Make room on the tmpfs at ``folder``: what an operator's freeing space does."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True)


@contextmanager
def postgres_tablespace(url: str, size: str) -> Iterator[tuple[str, Path]]:
    """``(name, folder)``: a tablespace on a tmpfs of ``size``, for the database at
    ``url`` (a superuser's). On exit every relation of that database in it goes back to
    ``pg_default``, and the tablespace is dropped. Skips the test where the server's
    files are not on this machine or this process may not mount a file system."""
    admin = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            data = conn.execute(text("SHOW data_directory")).scalar_one()
            if not os.path.isdir(data):
                pytest.skip("the PostgreSQL server's files are not on this machine")
            owner = os.stat(data)
            with tmpfs(size, (owner.st_uid, owner.st_gid)) as folder:
                name = new_name("lgsa_full")
                conn.execute(text(f"CREATE TABLESPACE \"{name}\" LOCATION '{folder}'"))
                try:
                    if not any(folder.iterdir()):  # the server wrote elsewhere
                        pytest.skip("the PostgreSQL server is not on this machine")
                    yield name, folder
                finally:
                    for kind in ("TABLE", "INDEX", "MATERIALIZED VIEW"):
                        back = f'ALTER {kind} ALL IN TABLESPACE "{name}" SET TABLESPACE pg_default'
                        conn.execute(text(back))
                    conn.execute(text(f'DROP TABLESPACE "{name}"'))
    finally:
        admin.dispose()


def move_schema(url: str, schema: str, tablespace: str) -> None:
    """Move every table and index of ``schema`` into ``tablespace``."""
    admin = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relkind IN ('r', 'i')"
                ),
                {"s": schema},
            ).all()
            for relname, relkind in rows:
                kind = "TABLE" if relkind == "r" else "INDEX"
                conn.execute(
                    text(f'ALTER {kind} "{schema}"."{relname}" SET TABLESPACE "{tablespace}"')
                )
    finally:
        admin.dispose()


@contextmanager
def disk_full(owner: Any, backend: str) -> Iterator[Callable[[], None]]:
    """The disk of ``owner``'s database (a saver or a store) full, made real as the
    module says; yields what frees space."""
    if backend.startswith("sqlite"):
        limit = PageLimit(owner.engine)
        try:
            yield limit.free
        finally:
            limit.remove()
        return
    if backend == "postgres":
        url = owner.engine.url.render_as_string(hide_password=False)
        with postgres_tablespace(url, "1m") as (name, folder):
            move_schema(url, owner.schema, name)
            yield lambda: grow(folder)
        return
    pytest.skip(
        "a full disk is not provoked on MariaDB (it aborted the server: see the module); "
        "its codes are tested on the drivers' error classes below"
    )


def incompressible(size: int) -> bytes:
    """Bytes no compression shrinks (PostgreSQL's TOAST would compress repeated ones)."""
    return os.urandom(size)


#: A value larger than any database made full here can take: 2 MiB.
BIG = 2 * 1024 * 1024


def assert_full(error: BaseException, *names: str) -> None:
    """``error`` is the typed full-disk error: an OSError (ENOSPC, not a
    ConnectionError), naming ``names``, saying what to do, without SQL."""
    assert isinstance(error, CheckpointStorageFullError), repr(error)
    assert isinstance(error, OSError) and not isinstance(error, ConnectionError)
    assert error.errno == errno.ENOSPC
    message = str(error)
    for name in names:
        assert name in message, message
    assert "Nothing of this call was stored" in message and "Free space" in message
    assert not any(word in message for word in SQL_WORDS), message
    assert "\n" not in message
    assert isinstance(error.__cause__, DBAPIError)


def where(owner: Any) -> str:
    """What the message of ``owner``'s database names: the SQLite file, else the host."""
    url = owner.engine.url
    if url.get_backend_name() == "sqlite":
        database = url.database or ""
        return database if database.startswith("/") else "SQLite database"
    return f"{url.host}:{url.port}"


# -- the saver ------------------------------------------------------------------------------


async def put_chain(door: Door, thread_id: str, steps: int) -> dict[str, Any]:
    """``steps`` checkpoints of ``thread_id`` and a pending write on the last one,
    through ``door``; the last one's config."""
    cfg: dict[str, Any] = config(thread_id, ns="")
    checkpoint = empty_checkpoint()
    for step in range(steps):
        checkpoint = create_checkpoint(checkpoint, None, step)
        version = door.saver.get_next_version(None, None)
        checkpoint["channel_values"] = {"n": step}
        checkpoint["channel_versions"] = {"n": version}
        cfg = await door.put(cfg, checkpoint, {"step": step}, {"n": version})
    await door.put_writes(cfg, [("n", 99)], "task-1")
    return cfg


async def test_a_full_disk_is_a_typed_error_and_loses_nothing(door: Door, backend: str) -> None:
    last = await put_chain(door, "t", 3)
    before = await door.get_tuple(config("t", ns=""))
    assert before is not None
    big = create_checkpoint(before.checkpoint, None, 3)
    version = door.saver.get_next_version(None, None)
    big["channel_values"] = {"n": incompressible(BIG)}
    big["channel_versions"] = {"n": version}
    with disk_full(door.saver, backend) as free:
        with pytest.raises(CheckpointStorageFullError) as e:
            await door.put(last, big, {"step": 3}, {"n": version})
        assert_full(e.value, where(door.saver))
        with pytest.raises(CheckpointStorageFullError) as e:
            await door.put_writes(last, [("big", incompressible(BIG))], "task-2")
        assert_full(e.value)
        # nothing of the failed calls, everything from before
        after = await door.get_tuple(config("t", ns=""))
        assert after is not None and after.checkpoint["id"] == before.checkpoint["id"]
        assert after.checkpoint["channel_values"] == {"n": 2}
        assert after.pending_writes == [("task-1", "n", 99)]
        assert [t.metadata["step"] for t in await door.list(config("t"))] == [2, 1, 0]
        free()
        stored = await door.put(last, big, {"step": 3}, {"n": version})
    got = await door.get_tuple(stored)
    assert got is not None and got.checkpoint["channel_values"]["n"] == big["channel_values"]["n"]


@pytest.mark.parametrize("kind", [SQLAlchemySaver, SQLAlchemyStore], ids=["saver", "store"])
@pytest.mark.parametrize("backend", [b for b in ("sqlite-file", "postgres") if b in BACKENDS])
async def test_setup_on_a_full_disk_changes_nothing(
    kind: Any, backend: str, mode: str, fresh_databases: Callable[..., str], tmp_path: Path
) -> None:
    """``setup()`` of a new database that does not fit: the typed error, no revision
    recorded (PostgreSQL's migration is one transaction; SQLite's too), and a ``setup()``
    once there is room migrates it whole."""
    url = fresh_databases(backend)
    if backend == "postgres":
        with postgres_tablespace(url, "64k") as (name, folder):
            # every connection of this saver creates its tables in the small tablespace
            small = make_url(url).update_query_dict({"options": f"-c default_tablespace={name}"})
            saver = kind.from_conn_string(small.render_as_string(hide_password=False))
            try:
                with pytest.raises(CheckpointStorageFullError) as e:
                    await (saver.asetup() if mode == "async" else _ran(saver.setup))
                assert_full(e.value, f"{small.host}:{small.port}")
                assert _revision(url) is None
                grow(folder)
                await (saver.asetup() if mode == "async" else _ran(saver.setup))
                assert _revision(url) == migrate.head_revision()
            finally:
                await saver.aclose()
        return
    saver = kind.from_conn_string(url)
    limit = PageLimit(saver.engine)
    try:
        with pytest.raises(CheckpointStorageFullError) as e:
            await (saver.asetup() if mode == "async" else _ran(saver.setup))
        assert_full(e.value, str(tmp_path / "db.sqlite"))
        assert _revision(url) is None
        limit.free()
        await (saver.asetup() if mode == "async" else _ran(saver.setup))
        assert _revision(url) == migrate.head_revision()
    finally:
        limit.remove()
        await saver.aclose()


async def _ran(call: Callable[[], Any]) -> None:
    call()


def _revision(url: str) -> str | None:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return migrate.current_revision(conn)
    finally:
        engine.dispose()


# -- the store ------------------------------------------------------------------------------


async def test_a_full_disk_in_a_store_put_is_typed_and_loses_nothing(
    store_door: StoreDoor, backend: str
) -> None:
    await store_door.put(("users", "u1"), "a", {"n": 1})
    with disk_full(store_door.store, backend) as free:
        with pytest.raises(CheckpointStorageFullError) as e:
            await store_door.put(("users", "u1"), "b", {"blob": incompressible(BIG).hex()})
        assert_full(e.value, where(store_door.store))
        with pytest.raises(CheckpointStorageFullError):
            await store_door.put(("users", "u1"), "a", {"n": 2, "blob": incompressible(BIG).hex()})
        item = await store_door.get(("users", "u1"), "a")
        assert item is not None and item.value == {"n": 1}
        assert await store_door.get(("users", "u1"), "b") is None
        free()
        await store_door.put(("users", "u1"), "b", {"n": 3})
    item = await store_door.get(("users", "u1"), "b")
    assert item is not None and item.value == {"n": 3}


# -- SQLite: the page limit is a full disk's code; a real full disk through the saver ----------


def _sqlite_full_code(path: Path, *, page_limit: bool) -> int:
    """The result code of a write that does not fit in the database at ``path``: past
    its page limit, or past the end of its file system."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (x BLOB)")
        if page_limit:
            (pages,) = conn.execute("PRAGMA page_count").fetchone()
            conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(sqlite3.OperationalError) as e:
            for _ in range(1000):
                conn.execute("INSERT INTO t VALUES (?)", (incompressible(64 * 1024),))
        assert str(e.value) == "database or disk is full"
        return getattr(e.value, "sqlite_errorcode", SQLITE_FULL)
    finally:
        conn.close()


def test_the_page_limit_gives_the_code_of_a_full_disk(tmp_path: Path) -> None:
    assert _sqlite_full_code(tmp_path / "limited.sqlite", page_limit=True) == SQLITE_FULL
    with tmpfs("256k") as folder:
        assert _sqlite_full_code(folder / "full.sqlite", page_limit=False) == SQLITE_FULL


@pytest.mark.parametrize("kind", ["saver", "store"])
async def test_a_sqlite_file_on_a_full_file_system(kind: str, mode: str) -> None:
    """The most real case: the database's own file system is full (a 512 KiB tmpfs,
    filled through the saver or the store until it refuses)."""
    with tmpfs("512k") as folder:
        path = folder / "db.sqlite"
        owner: Any = (SQLAlchemySaver if kind == "saver" else SQLAlchemyStore).from_conn_string(
            str(path)
        )
        try:
            owner.setup()
            stored = []
            with pytest.raises(CheckpointStorageFullError) as e:
                for i in range(100):
                    value = {"blob": incompressible(32 * 1024).hex()}
                    if kind == "store":
                        await (owner.aput if mode == "async" else _sync(owner.put))(
                            ("ns",), f"k{i}", value
                        )
                    else:
                        cp = create_checkpoint(empty_checkpoint(), None, i)
                        cp["channel_values"] = value
                        cp["channel_versions"] = {"blob": 1}
                        put = owner.aput if mode == "async" else _sync(owner.put)
                        await put(config(f"t{i}", ns=""), cp, {}, {"blob": 1})
                    stored.append(value)
            assert_full(e.value, str(path))
            assert stored  # some fitted before the disk filled up
            cause = e.value.__cause__
            assert getattr(cause, "orig", None).__class__ is sqlite3.OperationalError
            if hasattr(cause.orig, "sqlite_errorcode"):  # type: ignore[union-attr]
                assert cause.orig.sqlite_errorcode == SQLITE_FULL  # type: ignore[union-attr]
            for i, value in enumerate(stored):
                if kind == "store":
                    item = owner.get(("ns",), f"k{i}")
                    assert item is not None and item.value == value
                else:
                    got = owner.get_tuple(config(f"t{i}", ns=""))
                    assert got is not None and got.checkpoint["channel_values"] == value
        finally:
            await owner.aclose()


def _sync(method: Callable[..., Any]) -> Callable[..., Any]:
    async def call(*args: Any) -> Any:
        return method(*args)

    return call


# -- MySQL/MariaDB: the codes, on the drivers' real error classes ----------------------------


def _driver_errors() -> list[Any]:
    classes = []
    for module in ("pymysql.err", "asyncmy.errors"):
        try:
            imported = __import__(module, fromlist=["OperationalError"])
        except ImportError:
            continue
        classes.append(imported.OperationalError)
    return classes


MYSQL_FULL = [
    (1114, "The table 'lgsa_checkpoints' is full"),
    (1021, "Disk full (./app/lgsa_blobs.ibd); waiting for someone to free some space..."),
    (20, "Disk is full writing './app/lgsa_writes.MYD' (Errcode: 28 \"No space left on device\")"),
    (1030, 'Got error 28 "No space left on device" from storage engine InnoDB'),
    (1026, "Error writing file './app/x.frm' (errno: 28 \"No space left on device\")"),
    (3, "Error writing file '/tmp/MYfd=40' (OS errno 28 - No space left on device)"),
    (1180, 'Got error 28 "No space left on device" during COMMIT'),
]
MYSQL_NOT_FULL = [
    (1030, 'Got error 12 "Cannot allocate memory" from storage engine InnoDB'),
    (1180, "Got error 4 during COMMIT"),
    (1146, "Table 'app.lgsa_checkpoints' doesn't exist"),
]


def _wrapped(driver_error: BaseException) -> DBAPIError:
    """``driver_error`` as SQLAlchemy raises it from a statement."""
    return SAOperationalError("INSERT INTO lgsa_checkpoints VALUES (%s)", ("x",), driver_error)


@pytest.mark.parametrize("error_class", _driver_errors(), ids=lambda c: c.__module__)
@pytest.mark.parametrize(("code", "words"), MYSQL_FULL)
def test_mysql_full_disk_codes_are_typed_and_not_retried(
    error_class: type[Exception], code: int, words: str
) -> None:
    url = make_url("mysql+pymysql://app:S3cret@db.example:3306/app")
    for dialect in ("mysql", "mariadb"):
        retry = Retry(query_builder(dialect), 30, url)
        with pytest.raises(CheckpointStorageFullError) as e:
            retry.pause(_wrapped(error_class(code, words)))
        assert_full(e.value, "db.example:3306", words)
        assert "S3cret" not in str(e.value)


@pytest.mark.parametrize("error_class", _driver_errors(), ids=lambda c: c.__module__)
@pytest.mark.parametrize(("code", "words"), MYSQL_NOT_FULL)
def test_other_mysql_errors_are_not_taken_for_a_full_disk(
    error_class: type[Exception], code: int, words: str
) -> None:
    qb = query_builder("mariadb")
    error = _wrapped(error_class(code, words))
    assert not qb.storage_full(error)
    assert not isinstance(qb.translate_error(error), CheckpointStorageFullError)
    if code == 1180:  # still retried as the cluster's refusal it is
        assert qb.transient(error) == "connection"


def _postgres_errors() -> list[Any]:
    found = []
    for module, name in (
        ("psycopg.errors", "DiskFull"),
        ("asyncpg.exceptions", "DiskFullError"),
    ):
        try:
            found.append(getattr(__import__(module, fromlist=[name]), name))
        except ImportError:
            continue
    return found


@pytest.mark.parametrize("error_class", _postgres_errors(), ids=lambda c: c.__module__)
def test_postgresql_disk_full_on_each_drivers_class(error_class: type[Exception]) -> None:
    """Where the real 53100 above cannot be made (no root, a server elsewhere), and for
    asyncpg, which it does not run (SQLAlchemy's adapter copies asyncpg's SQLSTATE onto
    the error it raises): the drivers' own class of SQLSTATE 53100. (psycopg2 sets its
    ``pgcode`` from the server's answer only: an instance made here has none.)"""
    url = make_url("postgresql+psycopg://app:S3cret@db.example:5433/app")
    words = 'could not extend file "base/16384/16500": No space left on device'
    with pytest.raises(CheckpointStorageFullError) as e:
        Retry(query_builder("postgresql"), 30, url).pause(_wrapped(error_class(words)))
    assert_full(e.value, "db.example:5433", words, "SQLSTATE 53100")
    assert "S3cret" not in str(e.value)


# -- the command line -----------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


def assert_one_line(err: str, *names: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "is full" in err or "no disk space left" in err, err
    assert "Nothing of this call was stored" in err and "Free space" in err
    assert "Traceback" not in err and not any(word in err for word in SQL_WORDS), err
    for name in names:
        assert name in err, err


def test_the_command_line_says_a_full_sqlite_disk_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "db.sqlite"
    with SQLAlchemySaver.from_conn_string(str(path)) as saver:
        saver.setup()
        checkpoint = create_checkpoint(empty_checkpoint(), None, 0)
        checkpoint["channel_values"] = {"blob": incompressible(256 * 1024)}
        checkpoint["channel_versions"] = {"blob": 1}
        saver.put(config("t0", ns=""), checkpoint, {}, {"blob": 1})
    fresh = tmp_path / "new.sqlite"
    limit = PageLimit(None)  # every pool of this process: the command line's engines
    try:
        # through the saver (copy-thread), and through the command's own engine (upgrade)
        code, err = run(capsys, "copy-thread", "t0", "t1", "--url", str(path))
        assert code == 1
        assert_one_line(err, str(path))
        code, err = run(capsys, "upgrade", "--url", f"sqlite:///{fresh}")
        assert code == 1
        assert_one_line(err, str(fresh))
    finally:
        limit.remove()
    assert run(capsys, "copy-thread", "t0", "t1", "--url", str(path))[0] == 0


@pytest.mark.skipif("postgres" not in BACKENDS, reason="PostgreSQL not in LGSA_TEST_BACKENDS")
def test_the_command_line_says_a_full_postgresql_disk_in_one_line(
    capsys: pytest.CaptureFixture[str], pg_database: Callable[[], str]
) -> None:
    url = pg_database()
    with postgres_tablespace(url, "64k") as (name, _folder):
        small = make_url(url).update_query_dict({"options": f"-c default_tablespace={name}"})
        code, err = run(capsys, "upgrade", "--url", small.render_as_string(hide_password=False))
        assert code == 1
        assert_one_line(err, f"{small.host}:{small.port}", "No space left on device", "53100")
    assert _revision(url) is None


def test_a_full_disk_is_not_a_connection_error() -> None:
    """What a caller's ``except`` clauses see: an ``OSError`` (as Python's own file writes
    report a full disk), not a ``CheckpointConnectionError`` (retriable: LangGraph's
    default retry policy retries every ``ConnectionError``)."""
    assert issubclass(CheckpointStorageFullError, OSError)
    assert not issubclass(CheckpointStorageFullError, (ConnectionError, CheckpointConnectionError))
