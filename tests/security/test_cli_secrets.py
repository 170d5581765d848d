"""No password in any output of the command line, for every command.

The commands are read from the CLI's own argparse parser (:func:`leaf_commands`), so a new
command is run here without a change (an argument this file does not know fails the test
and names it). Each one runs in-process through ``cli.main`` (stdout, stderr, every log
record at DEBUG and any exception are searched) with a password placed in the URL's
password field, as ``?password=`` and as ``?sslpassword=``, in ``--url``, in
``LANGGRAPH_CHECKPOINT_URL`` and in ``copy``'s ``--from`` and ``--to``:

- failing: a server that is down (a closed port on 127.0.0.1), a database that does not
  exist, bad arguments (the URL without ``--url``, a URL without ``//``);
- succeeding: a real SQLite file and a real PostgreSQL database (MariaDB's root has no
  password here, so it is tested failing only); on PostgreSQL also as the password of a
  libpq connection string, with ``PGPASSWORD`` set to it too.

A couple run as real processes too. Every other way to write a password, and the near
misses, go through every command in ``test_secret_forms.py``.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, cli
from langgraph.checkpoint.sqlalchemy.cli import build_parser

from ..checkpoints import put_numbered_chain
from ..provision import BACKENDS, MARIADB_ADMIN_URL, POSTGRES_ADMIN_URL, fresh_database

SECRET = "S3cr3tPw"
#: Where a URL carries a password: its password field, or a query parameter.
POSITIONS = ("field", "password", "sslpassword")
#: Thread ids the commands work on or create.
THREAD, IMPORTED = "t0", "imported"


def with_secret(url: str, position: str) -> str:
    """``url`` with :data:`SECRET` as its password field, as the query parameter
    ``position``, or (``conninfo``) as the password of the libpq connection string of
    the same database, quoted with a space in it."""
    u = make_url(url)
    if position == "conninfo":
        return (
            f"host={u.host} port={u.port} user={u.username} dbname={u.database} "
            f"password='{SECRET} and more'"
        )
    u = u.set(password=SECRET) if position == "field" else u.update_query_dict({position: SECRET})
    return u.render_as_string(hide_password=False)


def leaf_commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of the CLI that opens a database (``("threads", "list")``, ...) with
    its parser, read from the parser itself (``completion`` reads none: it is left out)."""
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            if path != ("completion",):
                found.append((path, parser))
            return
        for sub in subs:
            for name, child in sub.choices.items():
                walk(child, (*path, name))

    walk(build_parser(), ())
    return found


COMMANDS = leaf_commands()


def test_every_command_is_found() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"upgrade", "threads list", "copy", "import", "export", "prune"} <= names
    assert "threads" not in names  # a group, not a command


class Files:
    """Files the commands read or write: a SQLite source with :data:`THREAD` (for ``copy
    --to``) and an export file of thread :data:`IMPORTED` (for ``import``)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.source = tmp_path / "source.sqlite"
        with SQLAlchemySaver.from_conn_string(str(self.source)) as saver:
            saver.setup()
            put_chain(saver, THREAD)
            put_chain(saver, IMPORTED)
        self.dump = tmp_path / "dump.jsonl"
        assert cli.main(["export", IMPORTED, "-o", str(self.dump), "--url", str(self.source)]) == 0
        self.n = 0
        # An official SqliteStore file: the source of ``store copy`` (the secret is in --url).
        from langgraph.store.sqlite import SqliteStore

        self.official_store = tmp_path / "official-store.sqlite"
        with SqliteStore.from_conn_string(str(self.official_store)) as store:
            store.setup()
            store.put(("users", "u1"), "k", {"text": "a memory"})

    def new(self, name: str) -> str:
        """A new path in the test's folder."""
        self.n += 1
        return str(self.tmp / f"{name}{self.n}")


def put_chain(saver: SQLAlchemySaver, thread_id: str) -> None:
    put_numbered_chain(
        saver,
        {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
        2,
        lambda step: {"source": "loop", "step": step},
    )


def argv_for(
    path: tuple[str, ...],
    parser: argparse.ArgumentParser,
    url: str,
    files: Files,
    *,
    secret_in: str = "--from",
    yes: bool,
) -> list[str]:
    """The arguments that run command ``path`` on ``url``; for ``copy``, ``url`` is
    ``secret_in`` (``--from`` or ``--to``) and the other side a SQLite file."""
    argv = list(path)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.dest in ("url", "yes"):
            continue
        if action.option_strings and not action.required:
            continue
        dest = action.dest
        if dest == "revision":
            value = "base" if path == ("downgrade",) else "head"
        elif dest in ("thread", "threads", "thread_ids") or (
            path == ("copy-thread",) and dest == "source"
        ):
            value = THREAD
        elif path == ("copy-thread",) and dest == "target":
            value = f"copy-{files.n}"
            files.n += 1
        elif path == ("store", "copy") and dest == "source":
            value = str(files.official_store)
        elif dest == "source":  # copy --from
            value = url if secret_in == "--from" else str(files.source)
        elif dest == "target":  # copy --to
            value = url if secret_in == "--to" else f"sqlite:///{files.new('target')}.sqlite"
        elif dest == "output":
            value = files.new("out") + ".jsonl"
        elif dest == "file":
            value = str(files.dump)
        elif dest == "key":  # reindex-metadata
            value = "tenant"
        else:
            pytest.fail(f"teach test_cli_secrets the argument {dest!r} of {' '.join(path)}")
        argv += [action.option_strings[0], value] if action.option_strings else [value]
    # Commands run again on the same files write into threads they wrote before.
    if any("--into-existing" in a.option_strings for a in parser._actions):
        argv.append("--into-existing")
    return [*argv, "--url", url, *(["--yes"] if yes else [])]


def runs(url: str, files: Files, *, yes: bool) -> Iterator[list[str]]:
    """Every command on ``url`` (``copy`` twice: ``url`` as ``--from`` and as ``--to``)."""
    for path, parser in COMMANDS:
        sides = ("--from", "--to") if path == ("copy",) else ("--from",)
        for side in sides:
            yield argv_for(path, parser, url, files, secret_in=side, yes=yes)


@pytest.fixture
def files(tmp_path: Path) -> Files:
    return Files(tmp_path)


Leaks = list[str]


@pytest.fixture
def cli_run(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> Callable[[list[str]], tuple[int | str, Leaks]]:
    """Run the CLI in this process; return its exit code and where :data:`SECRET` showed
    (stdout, stderr, log records, a raised exception)."""
    caplog.set_level(logging.DEBUG)

    def run(argv: list[str]) -> tuple[int | str, Leaks]:
        capsys.readouterr()
        caplog.clear()
        leaks: Leaks = []
        try:
            code: int | str = cli.main(argv)
        except SystemExit as e:  # argparse's usage errors
            code = f"exit {e.code}"
        except Exception as e:  # a bug; its message must still hold no secret
            code = f"raised {type(e).__name__}"
            if SECRET in str(e):
                leaks.append(f"exception: {e}")
        out, err = capsys.readouterr()
        for name, text in (("stdout", out), ("stderr", err), ("log", caplog.text)):
            if SECRET in text:
                line = next(line for line in text.splitlines() if SECRET in line)
                leaks.append(f"{name}: {line[:300]}")
        for record in caplog.records:
            if SECRET in record.getMessage() or SECRET in str(record.exc_info or ""):
                leaks.append(f"log record {record.name}: {record.getMessage()[:300]}")
        return code, [f"{' '.join(argv)} -> {leak}" for leak in leaks]

    return run


# -- failing -------------------------------------------------------------------------------


def _failing_targets() -> dict[str, str]:
    """Server databases that cannot be used, by name."""
    targets = {}
    if "postgres" in BACKENDS:
        pg = make_url(POSTGRES_ADMIN_URL)
        targets["postgres down"] = pg.set(port=1, database="db").render_as_string(False)
        targets["postgres no database"] = pg.set(database="lgsa_no_such_db").render_as_string(False)
    if "mariadb" in BACKENDS:
        my = make_url(MARIADB_ADMIN_URL)
        targets["mariadb down"] = my.set(port=1).render_as_string(False)
        targets["mariadb wrong password"] = my.set(database="lgsa_no_such_db").render_as_string(
            False
        )
    return targets


FAILING = _failing_targets()


@pytest.mark.parametrize("target", sorted(FAILING))
def test_failing_commands_show_no_secret(
    target: str,
    files: Files,
    cli_run: Callable[[list[str]], tuple[int | str, Leaks]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    leaks: Leaks = []
    for position in POSITIONS:
        url = with_secret(FAILING[target], position)
        for yes in (False, True):  # without --yes, destructive commands ask (and refuse)
            for argv in runs(url, files, yes=yes):
                code, found = cli_run(argv)
                leaks += found
                assert code != 0, argv
        # The URL from the environment (the default of --url).
        monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", url)
        for argv in (["threads", "list"], ["current"], ["downgrade", "base"]):
            code, found = cli_run(argv)
            leaks += found
            assert code != 0, argv
        monkeypatch.delenv("LANGGRAPH_CHECKPOINT_URL")
    assert not leaks, "\n".join(leaks)


@pytest.mark.parametrize("position", POSITIONS)
def test_bad_arguments_show_no_secret(
    position: str,
    files: Files,
    cli_run: Callable[[list[str]], tuple[int | str, Leaks]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(files.tmp)  # without --url: the default SQLite file is made here
    url = with_secret("postgresql+psycopg://user@127.0.0.1:1/db", position)
    no_slashes = url.replace("://", ":", 1)  # refused as a URL: its error shows the text
    leaks: Leaks = []
    for path, parser in COMMANDS:
        for argv in (
            [*path, url],  # --url forgotten: argparse reports an unrecognized argument
            [url, *path],  # the URL where the command goes: an invalid choice
            argv_for(path, parser, no_slashes, files, yes=False),
            argv_for(path, parser, url.replace(":1/", ":port/"), files, yes=False),
        ):
            code, found = cli_run(argv)
            leaks += found
            assert code != 0, argv
    assert not leaks, "\n".join(leaks)


# -- succeeding ----------------------------------------------------------------------------


def _seed(url: str) -> None:
    """Our tables at ``url`` with thread :data:`THREAD` alone (what the commands use)."""
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        for t in saver.list_threads(limit=None):
            saver.delete_thread(t.thread_id)
        put_chain(saver, THREAD)


@pytest.mark.parametrize("backend", [b for b in ("sqlite-file", "postgres") if b in BACKENDS])
@pytest.mark.filterwarnings("ignore:Query string argument:sqlalchemy.exc.SAWarning")
def test_succeeding_commands_show_no_secret(
    backend: str,
    files: Files,
    tmp_path: Path,
    cli_run: Callable[[list[str]], tuple[int | str, Leaks]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SQLite ignores the password field (no server): only the query parameters apply.
    # PostgreSQL (trust authentication here) also takes a libpq connection string, and
    # libpq reads PGPASSWORD, which is never shown either.
    positions = (*POSITIONS, "conninfo") if backend == "postgres" else POSITIONS[1:]
    if backend == "postgres":
        monkeypatch.setenv("PGPASSWORD", SECRET)
    leaks: Leaks = []
    with fresh_database(backend, tmp_path, prefix="lgsa_clisecret") as plain:
        for position in positions:
            url = with_secret(plain, position)
            for argv in runs(url, files, yes=True):
                _seed(plain)
                code, found = cli_run(argv)
                leaks += found
                assert code == 0, argv
    assert not leaks, "\n".join(leaks)


# -- real processes --------------------------------------------------------------------------


def test_processes_show_no_secret(tmp_path: Path) -> None:
    down = with_secret("postgresql+psycopg://user@127.0.0.1:1/db", "password")
    down = with_secret(down, "field")
    for argv in (
        ["threads", "list", "--url", down],
        ["threads", "list", down],
        ["current", "--url", down.replace("://", ":", 1)],
        ["copy", "--from", down, "--to", str(tmp_path / "t.sqlite")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "LANGGRAPH_CHECKPOINT_URL": down},
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode in (1, 2), (argv, done.stderr)
        assert SECRET not in done.stdout + done.stderr, (argv, done.stderr)


# -- the saver --------------------------------------------------------------------------------


def test_the_saver_repr_shows_no_secret() -> None:
    url = with_secret(with_secret(POSTGRES_ADMIN_URL, "field"), "sslpassword")
    saver = SQLAlchemySaver.from_conn_string(url)
    try:
        assert SECRET not in repr(saver)
        assert SECRET not in str(saver)
    finally:
        saver.close()
