"""A SQLite database this process may not write is a typed error naming the file.

Saver and store, sync and async, and the command line: a write to a read-only file, to a
file whose folder is read-only (SQLite makes its ``-wal``/``-shm`` or ``-journal`` files
there), through a ``mode=ro`` URL or on a ``PRAGMA query_only`` connection raises
:class:`CheckpointFileReadOnlyError` (a ``PermissionError``) naming the file (never the
SQL), saying which of the file or the folder is not writable and how to open it for
reading; nothing is stored, and the data reads back intact once permissions are fixed.

Every case is real SQLite refusing a write. File permissions (``chmod 0444`` on the
file, ``0555`` on the folder) do not stop root: under root the permission cases run with
the effective user ``nobody`` (``os.seteuid``, restored after each block), so that the
kernel checks them as it would for any service account; as another user they run as
that user. ``mode=ro`` and ``query_only`` hold for every user, root included.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import alembic.util  # noqa: F401  (imported now: nobody may not read Python's own files)
import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from sqlalchemy import event

from langgraph.checkpoint.sqlalchemy import CheckpointFileReadOnlyError, SQLAlchemySaver, cli
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..checkpoints import config
from ..doors import Door
from ..provision import BACKENDS

SQL_WORDS = ("INSERT", "SELECT", "UPDATE", "VALUES", "lgsa_")


def _nobody() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


NOBODY = _nobody()


@contextmanager
def unprivileged() -> Iterator[None]:
    """File permissions apply inside the block: this process's own user, or, under root
    (whom permissions do not stop), the effective user ``nobody`` (who may not be able
    to read the Python installation: what the block imports is imported before it)."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(NOBODY[1])
    os.seteuid(NOBODY[0])
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@pytest.fixture
def folder() -> Iterator[Path]:
    """A new folder of the user :func:`unprivileged` runs as (under ``/tmp``: pytest's
    own folders are root's alone under root), removed after the test."""
    path = Path(tempfile.mkdtemp(prefix="lgsa-ro-"))
    if os.geteuid() == 0:
        os.chown(path, *NOBODY)
    yield path
    for p in [path, *path.rglob("*")]:
        p.chmod(stat.S_IRWXU)
    shutil.rmtree(path)


def build(kind: str, url: str) -> Any:
    return (SQLAlchemySaver if kind == "saver" else SQLAlchemyStore).from_conn_string(url)


async def write(owner: Any, mode: str, n: int) -> None:
    """One write of ``owner`` (a checkpoint, or a store item) through ``mode``."""
    is_async = mode == "async"
    if isinstance(owner, SQLAlchemyStore):
        args: tuple[Any, ...] = (("ns",), f"k{n}", {"n": n})
        await owner.aput(*args) if is_async else owner.put(*args)
        return
    checkpoint = create_checkpoint(empty_checkpoint(), None, n)
    checkpoint["channel_values"] = {"n": n}
    checkpoint["channel_versions"] = {"n": 1}
    args = (config(f"t{n}", ns=""), checkpoint, {}, {"n": 1})
    await owner.aput(*args) if is_async else owner.put(*args)


async def read(owner: Any, mode: str, n: int) -> Any:
    """What ``write(owner, mode, n)`` stored (None when absent)."""
    is_async = mode == "async"
    if isinstance(owner, SQLAlchemyStore):
        item = await owner.aget(("ns",), f"k{n}") if is_async else owner.get(("ns",), f"k{n}")
        return None if item is None else item.value["n"]
    cfg = config(f"t{n}", ns="")
    got = await owner.aget_tuple(cfg) if is_async else owner.get_tuple(cfg)
    return None if got is None else got.checkpoint["channel_values"]["n"]


def assert_read_only(error: CheckpointFileReadOnlyError, path: Path, *says: str) -> None:
    assert isinstance(error, PermissionError) and not isinstance(error, ConnectionError)
    message = str(error)
    assert f"the SQLite database {path}" in message and error.path == str(path), message
    assert "Nothing of this call was stored" in message, message
    for words in says:
        assert words in message, message
    assert not any(word in message for word in SQL_WORDS), message
    assert "\n" not in message


@pytest.mark.parametrize("kind", ["saver", "store"])
@pytest.mark.parametrize("how", ["file 0444", "folder 0555"])
async def test_a_read_only_file_or_folder(kind: str, how: str, mode: str, folder: Path) -> None:
    path = folder / "db.sqlite"
    locked = path if how == "file 0444" else folder
    with unprivileged():
        with build(kind, str(path)) as owner:
            owner.setup()
            await write(owner, mode, 1)
        locked.chmod(0o444 if locked == path else 0o555)
        try:
            owner = build(kind, str(path))
            try:
                with pytest.raises(CheckpointFileReadOnlyError) as e:
                    await write(owner, mode, 2)
                if how == "file 0444":
                    # the -wal and -shm files this reader made are the database's mode too
                    locked_files = f"{path}, {path}-wal, {path}-shm are not writable"
                    assert_read_only(e.value, path, locked_files, "mode=ro&uri=true")
                    assert await read(owner, mode, 1) == 1  # reads work
                else:
                    assert_read_only(e.value, path, f"its folder {folder} is not writable")
                    assert "immutable=1&uri=true" in str(e.value)
                    # in WAL mode a read needs the -shm file too: the same error, typed
                    with pytest.raises(CheckpointFileReadOnlyError, match="folder"):
                        await read(owner, mode, 1)
            finally:
                await owner.aclose()
        finally:  # what the message asks for: every file of the database writable
            folder.chmod(0o755)
            for made in folder.iterdir():
                made.chmod(0o644)
        with build(kind, str(path)) as owner:
            assert await read(owner, mode, 1) == 1
            assert await read(owner, mode, 2) is None
            await write(owner, mode, 2)
            assert await read(owner, mode, 2) == 2


@pytest.mark.parametrize("kind", ["saver", "store"])
async def test_a_new_database_in_a_read_only_folder(kind: str, mode: str, folder: Path) -> None:
    path = folder / "db.sqlite"
    with unprivileged():
        folder.chmod(0o555)
        try:
            owner = build(kind, str(path))
            try:
                with pytest.raises(CheckpointFileReadOnlyError) as e:
                    await (owner.asetup() if mode == "async" else _done(owner.setup()))
            finally:
                await owner.aclose()
        finally:
            folder.chmod(0o755)
    message = str(e.value)
    assert f"cannot create the SQLite database {path}" in message, message
    assert f"its folder {folder} is not writable" in message and e.value.path == str(path)
    assert not path.exists()


async def _done(awaitable: Any) -> None:
    await awaitable


@pytest.mark.parametrize("kind", ["saver", "store"])
async def test_a_read_only_url(kind: str, mode: str, tmp_path: Path) -> None:
    """``?mode=ro``: what the error tells a reader to use, read-only for root too."""
    path = tmp_path / "db.sqlite"
    with build(kind, str(path)) as owner:
        owner.setup()
        await write(owner, mode, 1)
    owner = build(kind, f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        assert await read(owner, mode, 1) == 1
        with pytest.raises(CheckpointFileReadOnlyError) as e:
            await write(owner, mode, 2)
        assert_read_only(e.value, path, "its URL opens it read-only")
    finally:
        await owner.aclose()


@pytest.mark.parametrize("backend", [b for b in ("sqlite-file", "sqlite-memory") if b in BACKENDS])
async def test_a_query_only_connection(door: Door, backend: str) -> None:
    """``PRAGMA query_only`` on every connection the saver checks out (a read-only
    replica's set-up, a policy): the put is typed, reads work."""
    saver = door.saver
    checkpoint = create_checkpoint(empty_checkpoint(), None, 0)
    stored = await door.put(config("t", ns=""), checkpoint, {}, {})

    def query_only(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        dbapi_connection.execute("PRAGMA query_only = 1")

    event.listen(saver.engine, "checkout", query_only)
    try:
        with pytest.raises(CheckpointFileReadOnlyError) as e:
            await door.put(stored, create_checkpoint(checkpoint, None, 1), {}, {})
        message = str(e.value)
        assert "the connection is read-only (PRAGMA query_only" in message, message
        assert not any(word in message for word in SQL_WORDS), message
        got = await door.get_tuple(config("t", ns=""))
        assert got is not None and got.checkpoint["id"] == checkpoint["id"]
    finally:
        event.remove(saver.engine, "checkout", query_only)


# -- the command line -----------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


def assert_one_line(err: str, *says: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and not any(word in err for word in SQL_WORDS), err
    for words in says:
        assert words in err, err


def test_the_command_line_says_a_read_only_file_in_one_line(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    path = folder / "db.sqlite"
    with unprivileged():
        with SQLAlchemySaver.from_conn_string(str(path)) as saver:
            saver.setup()
            saver.put(config("t0", ns=""), create_checkpoint(empty_checkpoint(), None, 0), {}, {})
        path.chmod(0o444)
        try:
            for argv in (
                ["threads", "delete", "t0", "--yes"],
                ["copy-thread", "t0", "t1"],
                ["prune", "--strategy", "delete", "t0", "--yes"],
            ):
                code, err = run(capsys, *argv, "--url", str(path))
                assert code == 1, err
                assert_one_line(err, f"cannot write the SQLite database {path}: {path}")
                assert "not writable by this process" in err
        finally:
            for made in folder.iterdir():
                made.chmod(0o644)
        with SQLAlchemySaver.from_conn_string(str(path)) as saver:
            assert saver.get_tuple(config("t0", ns="")) is not None


def test_the_command_line_says_a_read_only_url_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Through the saver (``copy-thread``) and through the command's own engine
    (``upgrade`` of an empty file)."""
    path = tmp_path / "db.sqlite"
    with SQLAlchemySaver.from_conn_string(str(path)) as saver:
        saver.setup()
        saver.put(config("t0", ns=""), create_checkpoint(empty_checkpoint(), None, 0), {}, {})
    code, err = run(
        capsys, "copy-thread", "t0", "t1", "--url", f"sqlite:///file:{path}?mode=ro&uri=true"
    )
    assert code == 1
    assert_one_line(err, f"cannot write the SQLite database {path}", "opens it read-only")
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    code, err = run(capsys, "upgrade", "--url", f"sqlite:///file:{empty}?mode=ro&uri=true")
    assert code == 1
    assert_one_line(err, f"cannot write the SQLite database {empty}", "opens it read-only")
