"""New SQLite database files are readable by their owner only.

A checkpoint database holds conversations: the saver (sync and async, a path or a
``sqlite:///`` URL) and the command line create it 0600 whatever the umask, and so are
its ``-wal``/``-shm`` companions and the lock databases of ``lock_thread`` beside it
(their folder 0700). A file that exists keeps its mode.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, cli

CONFIG: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The common umask 022, under which SQLite alone creates files 0644."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def modes(folder: Path) -> dict[str, int]:
    """The mode of every file and folder under ``folder``, by relative path."""
    return {str(p.relative_to(folder)): mode(p) for p in folder.rglob("*")}


async def use(saver: SQLAlchemySaver, door: str) -> None:
    """Set up, write a checkpoint and take a thread lock through ``door``."""
    if door == "sync":
        saver.setup()
        saver.put(CONFIG, empty_checkpoint(), {}, {})
        with saver.lock_thread("t"):
            pass
        saver.close()
    else:
        await saver.asetup()
        await saver.aput(CONFIG, empty_checkpoint(), {}, {})
        async with saver.alock_thread("t"):
            pass
        await saver.aclose()


@pytest.mark.parametrize("door", ["sync", "async"])
@pytest.mark.parametrize("form", ["path", "url"])
async def test_the_saver_creates_owner_only_files(tmp_path: Path, door: str, form: str) -> None:
    db = tmp_path / "new.sqlite"
    saver = SQLAlchemySaver.from_conn_string(str(db) if form == "path" else f"sqlite:///{db}")
    # Open while looking: the -wal and -shm files exist only while a connection is open.
    await use(saver, door)
    found = modes(tmp_path)
    assert "new.sqlite" in found and "new.sqlite.lgsa-locks" in found, found
    assert any(name.startswith("new.sqlite.lgsa-locks/") for name in found), found
    for name, bits in found.items():
        assert bits == (0o700 if name == "new.sqlite.lgsa-locks" else 0o600), (name, oct(bits))


def test_wal_and_shm_files_are_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "new.sqlite"
    with SQLAlchemySaver.from_conn_string(str(db)) as saver:
        saver.setup()
        saver.put(CONFIG, empty_checkpoint(), {}, {})
        companions = [tmp_path / "new.sqlite-wal", tmp_path / "new.sqlite-shm"]
        assert all(p.exists() for p in companions)  # the saver still holds a connection
        assert [oct(mode(p)) for p in [db, *companions]] == [oct(0o600)] * 3


def test_the_command_line_creates_owner_only_files(tmp_path: Path) -> None:
    assert cli.main(["upgrade", "--url", str(tmp_path / "cli.sqlite")]) == 0
    source = tmp_path / "source.sqlite"
    with SQLAlchemySaver.from_conn_string(str(source)) as saver:
        saver.setup()
        saver.put(CONFIG, empty_checkpoint(), {}, {})
    os.chmod(source, 0o600)
    target = tmp_path / "copy.sqlite"
    assert cli.main(["copy", "--from", str(source), "--to", str(target)]) == 0
    assert oct(mode(tmp_path / "cli.sqlite")) == oct(0o600)
    assert oct(mode(target)) == oct(0o600)


@pytest.mark.parametrize("door", ["sync", "async"])
async def test_an_existing_file_keeps_its_mode(tmp_path: Path, door: str) -> None:
    db = tmp_path / "shared.sqlite"
    db.touch()
    os.chmod(db, 0o640)  # e.g. readable by a backup group on purpose
    await use(SQLAlchemySaver.from_conn_string(str(db)), door)
    assert oct(mode(db)) == oct(0o640)
