"""The command line never prints a traceback.

Every command, against a missing SQLite file, a server that is down, a database that does
not exist, tables behind or ahead of this package, a bad URL or a missing driver, prints
one line ``error: ...`` on stderr, masks passwords, and exits with the documented code
(2 usage or bad URL, 1 check failed or not found). An unknown thread is exit 1 with
nothing changed, ``copy`` verifies by key, and ``... | head`` ends quietly.

Most cases run in-process through ``cli.main(argv)``; the traceback cases also run as a
real ``python -m langgraph.checkpoint.sqlalchemy`` process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import Column, MetaData, String, Table, create_engine, update
from sqlalchemy.engine import make_url

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, cli, migrate

from ..checkpoints import put_numbered_chain
from ..provision import BACKENDS, MARIADB_ADMIN_URL, POSTGRES_ADMIN_URL, fresh_database

PROG = [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy"]
SERVER_BACKENDS = [b for b in ("sqlite-file", "postgres", "mariadb") if b in BACKENDS]
version_table = Table("lgsa_alembic_version", MetaData(), Column("version_num", String(32)))


# -- databases ------------------------------------------------------------------------------


@pytest.fixture(params=SERVER_BACKENDS)
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """URL of an empty database of this test: a SQLite path not yet created, a new
    PostgreSQL database or a new MariaDB database (dropped afterwards)."""
    with fresh_database(request.param, tmp_path, prefix="lgsa_clierr") as url:
        yield url


def put_chain(saver: SQLAlchemySaver, thread_id: str, steps: int, note: str = "") -> None:
    put_numbered_chain(
        saver,
        {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
        steps,
        lambda step: {"source": "loop", "step": step, "note": note},
    )


@pytest.fixture
def url(empty_url: str) -> str:
    """A database with our tables and threads ``t0`` (3 checkpoints) and ``t1`` (2)."""
    with SQLAlchemySaver.from_conn_string(empty_url) as saver:
        saver.setup()
        put_chain(saver, "t0", 3)
        put_chain(saver, "t1", 2)
    return empty_url


def set_revision(url: str, revision: str) -> None:
    with create_engine(url).begin() as conn:
        conn.execute(update(version_table).values(version_num=revision))


# -- running the command line ------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``cli.main(argv)`` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROG, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def assert_one_error_line(err: str, *, secret: str = "s3cret") -> None:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert secret not in err


def every_command(url: str, tmp_path: Path) -> list[list[str]]:
    """Every command of the CLI, with ``url`` as the database each one uses."""
    source = tmp_path / "source.sqlite"
    if not source.exists():
        with SQLAlchemySaver.from_conn_string(str(source)) as saver:
            saver.setup()
            put_chain(saver, "t0", 2)
    dump = tmp_path / "dump.jsonl"
    if not dump.exists():
        dump.write_text(
            json.dumps({"format": "langgraph-checkpoint-sqlalchemy/jsonl", "version": 1}) + "\n"
        )
    out = str(tmp_path / "out.jsonl")
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    u = ["--url", url]
    return [
        ["upgrade", *u],
        ["downgrade", "base", "--yes", *u],
        ["current", *u],
        ["current", "--check", *u],
        ["stamp", "head", *u],
        ["reindex-metadata", "tenant", *u],
        ["threads", "list", *u],
        ["threads", "show", "t0", *u],
        ["threads", "show", "t0", "--checkpoint", "x", *u],
        ["threads", "delete", "t0", "--yes", *u],
        ["prune", "t0", "--dry-run", *u],
        ["prune", "t0", "--yes", *u],
        ["prune", "--idle-for", "0s", "--yes", *u],
        ["copy-thread", "t0", "t9", *u],
        ["stats", *u],
        ["stats", "--thread", "t0", *u],
        ["export", "t0", "-o", out, *u],
        ["import", str(dump), *u],
        ["copy", "--from", url, "--to", target],
        ["copy", "--from", str(source), "--to", url],
    ]


# -- item 1: read-only commands create nothing ---------------------------------------------


READ_ONLY = [
    ["threads", "list"],
    ["threads", "show", "t0"],
    ["threads", "delete", "t0", "--yes"],
    ["stats"],
    ["stats", "--thread", "t0"],
    ["current"],
    ["current", "--check"],
    ["downgrade", "base", "--yes"],
    ["export", "t0", "-o", "-"],
    ["prune", "t0", "--dry-run"],
    ["prune", "t0", "--yes"],
    ["copy-thread", "t0", "t9"],
    ["stamp", "head"],
    ["reindex-metadata", "tenant"],
]


@pytest.mark.parametrize("argv", READ_ONLY, ids=lambda a: " ".join(a))
def test_read_only_command_on_a_missing_sqlite_path_creates_nothing(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nope.sqlite"
    for url in (str(path), f"sqlite:///{path}"):
        code, out, err = run(capsys, *argv, "--url", url)
        assert code == 1, (out, err)
        assert_one_error_line(err)
        assert f"no database at {path}" in err
        assert not path.exists()
        assert not list(tmp_path.iterdir()), "nothing may be created"


def test_copy_from_a_missing_sqlite_path_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "copy", "--from", str(tmp_path / "nope.sqlite"), "--to", str(tmp_path / "t.db")
    )
    assert code == 1
    assert_one_error_line(err)
    assert "no database at" in err
    assert not list(tmp_path.iterdir())


def test_write_commands_create_the_sqlite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "new.sqlite"
    code, _, err = run(capsys, "upgrade", "--url", str(path))
    assert code == 0, err
    assert path.exists()
    code, out, err = run(capsys, "current", "--check", "--url", str(path))
    assert code == 0, err
    assert "at head" in out


def test_missing_sqlite_path_as_a_process(tmp_path: Path) -> None:
    done = run_process("threads", "list", "--url", str(tmp_path / "nope.sqlite"))
    assert done.returncode == 1
    assert_one_error_line(done.stderr)
    assert not list(tmp_path.iterdir())


# -- item 5: servers down, databases missing, bad URLs, missing drivers ---------------------


DOWN = {
    "postgres": "postgresql://postgres:s3cret@127.0.0.1:1/lgsa",
    "mariadb": "mysql://root:s3cret@127.0.0.1:1/lgsa",
}


@pytest.mark.parametrize("backend", [b for b in DOWN if b in BACKENDS])
def test_every_command_on_a_server_that_is_down(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in every_command(DOWN[backend], tmp_path):
        code, out, err = run(capsys, *argv)
        assert code == 1, (argv, out, err)
        assert_one_error_line(err)
        assert "cannot connect" in err and "server is running" in err, err
    done = run_process("threads", "list", "--url", DOWN[backend])
    assert done.returncode == 1
    assert_one_error_line(done.stderr)


@pytest.mark.parametrize("backend", [b for b in ("postgres", "mariadb") if b in BACKENDS])
def test_every_command_on_a_database_that_does_not_exist(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = POSTGRES_ADMIN_URL if backend == "postgres" else MARIADB_ADMIN_URL
    url = make_url(admin).set(database=f"lgsa_nosuch_{uuid.uuid4().hex[:8]}")
    text_url = url.render_as_string(hide_password=False)
    for argv in every_command(text_url, tmp_path):
        code, out, err = run(capsys, *argv)
        assert code == 1, (argv, out, err)
        assert_one_error_line(err)
        assert "database exists" in err, err
    done = run_process("stats", "--url", text_url)
    assert done.returncode == 1
    assert_one_error_line(done.stderr)


BAD_URLS = [
    "foo://x/y",
    "postgresql+nosuchdriver://postgres:s3cret@127.0.0.1:1/lgsa",
    "postgresql://postgres:s3cret@127.0.0.1:notaport/lgsa",
    "postgresql+pg8000://postgres:s3cret@127.0.0.1:1/lgsa",
    "mysql+mysqldb://root:s3cret@127.0.0.1:1/lgsa",
]


def _installed(url: str) -> bool:
    module = {"pg8000": "pg8000", "mysqldb": "MySQLdb"}.get(url.split("://")[0].partition("+")[2])
    return module is not None and importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("url", BAD_URLS)
def test_every_command_with_a_bad_url_or_driver_is_a_usage_error(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if _installed(url):
        pytest.skip("the driver is installed here")
    offline = [] if "pg8000" in url or "mysqldb" in url else [["upgrade", "--sql", "--url", url]]
    # (--sql needs no driver: it connects to nothing)
    for argv in [*every_command(url, tmp_path), *offline]:
        code, out, err = run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert_one_error_line(err)
    done = run_process("threads", "list", env={"LANGGRAPH_CHECKPOINT_URL": url})
    assert done.returncode == 2
    assert_one_error_line(done.stderr)


def test_missing_driver_names_what_to_install(capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql+pg8000://postgres@127.0.0.1:1/lgsa"
    if _installed(url):
        pytest.skip("pg8000 is installed here")
    code, _, err = run(capsys, "stats", "--url", url)
    assert code == 2
    assert "pg8000" in err and "pip install" in err


# -- schemas behind and ahead --------------------------------------------------------------


def test_every_command_on_tables_behind_head(
    empty_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with create_engine(empty_url).begin() as conn:
        migrate.upgrade(conn, "0001_initial")
    reading = [
        ["threads", "list"],
        ["threads", "show", "t0"],
        ["stats"],
        ["export", "t0", "-o", str(tmp_path / "x.jsonl")],
        ["copy-thread", "t0", "t9"],
        ["threads", "delete", "t0", "--yes"],
        ["prune", "t0", "--dry-run"],
    ]
    for argv in reading:
        code, out, err = run(capsys, *argv, "--url", empty_url)
        assert code == 1, (argv, out, err)
        assert_one_error_line(err)
        assert "upgrade" in err
    code, out, err = run(capsys, "current", "--check", "--url", empty_url)
    assert code == 1 and "behind head" in out + err


def test_every_command_on_tables_ahead_of_this_package(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    set_revision(url, "9999_future")
    code, out, err = run(capsys, "current", "--url", url)
    assert code == 0, err
    assert "ahead of this package" in out
    code, out, err = run(capsys, "current", "--check", "--url", url)
    assert code == 1
    assert "ahead of this package" in out and "ahead of this package" in err
    code, out, _ = run(capsys, "current", "--json", "--url", url)
    assert json.loads(out)["ahead"] is True
    for argv in every_command(url, tmp_path):
        if argv[0] == "current":
            continue
        code, out, err = run(capsys, *argv)
        assert code == 1, (argv, out, err)
        assert_one_error_line(err)
        assert "newer version" in err, (argv, err)
    # nothing changed it
    with create_engine(url).connect() as conn:
        assert conn.execute(version_table.select()).scalar_one() == "9999_future"
    for argv in (["upgrade", "--url", url], ["current", "--check", "--url", url]):
        done = run_process(*argv)
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        assert "newer version" in done.stderr or "ahead of this package" in done.stderr


# -- unknown threads ------------------------------------------------------------------------


def thread_ids(url: str) -> list[str]:
    with SQLAlchemySaver.from_conn_string(url) as saver:
        return sorted(t.thread_id for t in saver.list_threads(limit=None))


def test_unknown_thread_is_exit_1_and_changes_nothing(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "export.jsonl"
    target = tmp_path / "copy-target.sqlite"
    cases = [
        ["threads", "delete", "NOPE", "--yes"],
        ["threads", "delete", "t0", "NOPE", "--yes"],
        ["threads", "show", "NOPE"],
        ["copy-thread", "NOPE", "X"],
        ["export", "NOPE", "-o", str(out_file)],
        ["export", "t0", "NOPE", "-o", "-"],
        ["stats", "--thread", "NOPE"],
        ["prune", "NOPE", "--yes"],
        ["prune", "t0", "NOPE", "--strategy", "delete", "--yes"],
    ]
    for argv in cases:
        code, out, err = run(capsys, *argv, "--url", url)
        assert code == 1, (argv, out, err)
        assert_one_error_line(err)
        assert "NOPE" in err
        assert out == "", argv
        assert thread_ids(url) == ["t0", "t1"], argv
    code, out, err = run(capsys, "copy", "--from", url, "--to", str(target), "--thread", "NOPE")
    assert code == 1, (out, err)
    assert_one_error_line(err)
    assert not out_file.exists() and not target.exists()
    with SQLAlchemySaver.from_conn_string(url) as saver:
        assert len(list(saver.list({"configurable": {"thread_id": "t0"}}))) == 3
    done = run_process("threads", "delete", "NOPE", "--yes", "--url", url)
    assert done.returncode == 1 and "deleted" not in done.stdout
    assert_one_error_line(done.stderr)


# -- copy verification -----------------------------------------------------------------------


def test_copy_rerun_after_the_target_moved_on_is_verified(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    code, out, err = run(capsys, "copy", "--from", url, "--to", target, "--no-progress")
    assert code == 0, (out, err)
    with SQLAlchemySaver.from_conn_string(target) as saver:
        put_chain(saver, "t0", 4, note="after the copy")
    code, out, err = run(capsys, "copy", "--from", url, "--to", target, "--json", "--into-existing")
    assert code == 0, (out, err)
    report = json.loads(out)
    assert report["mismatches"] == [] and report["checkpoints_copied"] == 0


# -- stdout closed early ------------------------------------------------------------------


def test_output_piped_into_head_ends_quietly(url: str) -> None:
    # 20 checkpoints with 20 kB of metadata each: far more than a pipe buffer, so the
    # command is still writing when head exits.
    with SQLAlchemySaver.from_conn_string(url) as saver:
        put_chain(saver, "big", 20, note="x" * 20_000)
    command = " ".join([*PROG, "threads", "show", "big", "--json", "--url", f"'{url}'"])
    done = subprocess.run(
        ["sh", "-c", f"{command} | head -1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.startswith("[")
    assert done.stderr == "", done.stderr
    # the same with the reading end closed by hand, and the exit code seen
    proc = subprocess.Popen(
        [*PROG, "threads", "show", "big", "--json", "--url", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == "", err


# -- hostile arguments and files: argparse errors or one line, never a traceback ----------


@pytest.mark.parametrize(
    "argv",
    [
        ["threads", "list", "--limit", "-1"],
        ["threads", "list", "--offset", "-5"],
        ["threads", "show", "t0", "--limit", "0"],
        ["stats", "--top", "-1"],
        ["threads", "list", "--idle-for", "99999999999d"],
    ],
    ids=lambda a: " ".join(a),
)
def test_bad_numbers_are_usage_errors(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert run(capsys, "upgrade", "--url", url)[0] == 0
    with pytest.raises(SystemExit) as info:  # argparse's own usage error
        cli.main([*argv, "--url", url])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "error: argument" in err


def test_idle_for_longer_than_any_date_lists_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert run(capsys, "upgrade", "--url", url)[0] == 0
    for argv in (["threads", "list"], ["prune", "--dry-run"]):
        code, _out, err = run(capsys, *argv, "--idle-for", "999999d", "--url", url)
        assert code == 0, err


def test_import_of_a_binary_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 20)
    code, _, err = run(capsys, "import", str(junk), "--url", url)
    assert code == 2
    assert_one_error_line(err)
    assert "not UTF-8 text" in err


def test_downgrade_refused_for_long_names_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        checkpoint = empty_checkpoint()
        saver.put({"configurable": {"thread_id": "t" * 300}}, checkpoint, {}, {})
    code, _, err = run(capsys, "downgrade", "0002_inline_values", "--yes", "--url", url)
    assert code == 1
    assert_one_error_line(err)
    assert "cannot downgrade below 0003_long_names" in err
    assert run(capsys, "current", "--check", "--url", url)[0] == 0  # nothing changed


@pytest.mark.parametrize("argv", [["upgrade"], ["import", "{dump}"]], ids=["upgrade", "import"])
def test_sqlite_file_in_a_missing_directory_is_one_line(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"format": "langgraph-checkpoint-sqlalchemy/jsonl", "version": 1}\n')
    url = f"sqlite:///{tmp_path / 'no' / 'such' / 'db.sqlite'}"
    code, _, err = run(capsys, *[a.format(dump=dump) for a in argv], "--url", url)
    assert code == 1
    assert_one_error_line(err)
    assert "create the directory first" in err
    assert not (tmp_path / "no").exists()


def test_export_never_replaces_a_file_without_yes_nor_follows_a_symlink(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "existing.jsonl"
    existing.write_text("keep me\n")
    existing.chmod(0o644)
    code, _, err = run(capsys, "export", "t0", "-o", str(existing), "--url", url)
    assert code == 1, err
    assert_one_error_line(err)
    assert "--yes" in err
    assert existing.read_text() == "keep me\n"
    code, _, err = run(capsys, "export", "t0", "-o", str(existing), "--yes", "--url", url)
    assert code == 0, err
    assert existing.read_text().startswith("{")
    assert existing.stat().st_mode & 0o777 == 0o600  # replaced: its owner's only too
    # a symbolic link is refused, --yes or not, and its target is untouched
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(victim)
    for extra in ([], ["--yes"]):
        code, _, err = run(capsys, "export", "t0", "-o", str(link), *extra, "--url", url)
        assert code == 2, err
        assert "symbolic link" in err
        assert victim.read_text() == "precious\n"
    # a new file is its owner's only: it holds conversations
    fresh = tmp_path / "fresh.jsonl"
    code, _, err = run(capsys, "export", "t0", "-o", str(fresh), "--url", url)
    assert code == 0, err
    assert fresh.stat().st_mode & 0o777 == 0o600
