"""The long commands (``prune``, ``export``, ``import``, ``copy``, ``store copy``,
``reindex-metadata``) show a progress bar of real units on a terminal, and nothing of it
when stderr is not a terminal, with ``--json`` or with ``--no-progress``.

Each command runs as a real process whose stderr is a pseudo-terminal (``pty``), as an
operator's shell gives it, or a pipe, as a script or cron gives it; stdout goes to a
file. The database is a SQLite file (the bar is the same on every backend: the library's
callbacks are tested on each in tests/saver and tests/transfer).
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from ..checkpoints import put_numbered_chain

THREADS, PER_THREAD = 4, 3
CHECKPOINTS = THREADS * PER_THREAD
ITEMS = 5
#: A terminal rich draws on: known type, wide enough for the bar on one line.
TERMINAL = {"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Seeds:
    """The files the commands read: our tables with :data:`THREADS` threads, their
    export, and an official ``SqliteStore`` file with :data:`ITEMS` items."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.source = folder / "source.sqlite"
        with SQLAlchemySaver.from_conn_string(str(self.source)) as saver:
            saver.setup()
            for t in range(THREADS):
                put_numbered_chain(
                    saver,
                    {"configurable": {"thread_id": f"t{t}", "checkpoint_ns": ""}},
                    PER_THREAD,
                    lambda step: {"source": "loop", "step": step, "tenant": f"x{step}"},
                )
        self.dump = folder / "dump.jsonl"
        done = run_piped(["export", "--all", "-o", str(self.dump), "--url", str(self.source)])
        assert done.returncode == 0, done.stderr
        from langgraph.store.sqlite import SqliteStore

        self.store = folder / "official-store.sqlite"
        with SqliteStore.from_conn_string(str(self.store)) as store:
            store.setup()
            for i in range(ITEMS):
                store.put(("users", f"u{i}"), "k", {"text": f"memory {i}"})
        self.n = 0

    def new(self, name: str, copy_of: Path | None = None) -> str:
        """A new path in the folder, a copy of ``copy_of`` if given."""
        self.n += 1
        path = self.folder / f"{self.n}-{name}"
        if copy_of is not None:
            shutil.copy(copy_of, path)
        return str(path)


#: Each command: the arguments that run it on fresh files, and what its bar counts.
COMMANDS: dict[str, tuple[Callable[[Seeds], list[str]], str, str]] = {
    "prune": (
        lambda s: ["prune", "--idle-for", "0s", "--yes", "--url", s.new("db", s.source)],
        "pruning",
        f"{THREADS}/{THREADS} threads",
    ),
    "export": (
        lambda s: ["export", "--all", "-o", s.new("out.jsonl"), "--url", str(s.source)],
        "exporting",
        f"{CHECKPOINTS}/{CHECKPOINTS} checkpoints",
    ),
    "import": (
        lambda s: ["import", str(s.dump), "--url", s.new("db")],
        "importing",
        f"{CHECKPOINTS}/{CHECKPOINTS} checkpoints",
    ),
    "copy": (
        lambda s: ["copy", "--from", str(s.source), "--to", s.new("db")],
        "copying",
        f"{CHECKPOINTS}/{CHECKPOINTS} checkpoints",
    ),
    "store copy": (
        lambda s: ["store", "copy", "--from", str(s.store), "--url", s.new("db")],
        "copying",
        f"{ITEMS}/{ITEMS} items",
    ),
    "reindex-metadata": (
        lambda s: ["reindex-metadata", "tenant", "--url", s.new("db", s.source)],
        "indexing",
        f"{CHECKPOINTS}/{CHECKPOINTS} checkpoints",
    ),
}


def _command(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", *argv]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_CHECKPOINT_URL"}
    return {**env, **TERMINAL}


def run_piped(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI with stdout and stderr on pipes (a script's, cron's)."""
    return subprocess.run(
        _command(argv),
        capture_output=True,
        text=True,
        env=_env(),
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def run_in_terminal(argv: list[str], stdout: Path) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal (stdout to the file ``stdout``):
    its exit code and everything it wrote to the terminal."""
    leader, follower = pty.openpty()
    with stdout.open("w") as out:
        process = subprocess.Popen(
            _command(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=follower, env=_env()
        )
    os.close(follower)  # the child holds it: reading ends when the child is gone
    shown = bytearray()
    try:
        while select.select([leader], [], [], 120)[0]:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: no process holds the terminal any more
                break
            if not data:
                break
            shown += data
    finally:
        os.close(leader)
        code = process.wait(timeout=120)
    return code, shown.decode("utf-8", "replace")


def plain(terminal: str) -> str:
    """What the terminal showed, without its escape sequences."""
    return _ESCAPES.sub("", terminal)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    return Seeds(tmp_path_factory.mktemp("progress"))


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_progress_bar_counts_real_units_on_a_terminal(
    name: str, seeds: Seeds, tmp_path: Path
) -> None:
    argv, what, counted = COMMANDS[name]
    code, shown = run_in_terminal(argv(seeds), tmp_path / "stdout")
    text = plain(shown)
    assert code == 0, text
    assert what in text and counted in text, text
    assert "━" in text  # the bar itself
    assert what not in (tmp_path / "stdout").read_text()  # the bar is stderr's alone


@pytest.mark.parametrize("quiet", ["piped", "--json", "--no-progress"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_progress_when_piped_with_json_or_no_progress(
    name: str, quiet: str, seeds: Seeds, tmp_path: Path
) -> None:
    argv, what, counted = COMMANDS[name]
    if quiet == "piped":
        done = run_piped(argv(seeds))
        code, stderr = done.returncode, done.stderr
    else:
        code, stderr = run_in_terminal([*argv(seeds), quiet], tmp_path / "stdout")
    assert code == 0, stderr
    assert what not in stderr and counted.split()[0] not in stderr, stderr
    assert "\x1b[" not in stderr and "━" not in stderr, stderr
