"""Every password form libpq and SQLAlchemy accept, and their near misses, through every
path that echoes a URL or connection string: no secret, nor any piece of it four
characters long, in any output.

:data:`FORMS` is the table: URL user information (``user:pw@``, ``user:p@ss@host``, a
space, a ``/``, percent-encoded), URL query parameters (``?password=``, ``sslpassword``,
any case, a percent-encoded name or value, repeated), libpq keyword/value strings
(``password=``, ``PASSWORD =``, ``sslpassword``, quoted values with spaces and escaped
quotes, an open quote, values with ``=`` and spaces) and near misses (``pasword``,
``passwd``, ``pwd``, a bare word, double quotes, a quoted keyword), each with the secret
``s3cr3t-Pw`` (or the same with a space, ``@``, ``=`` or quote in it). Servers are down
(port 1 of 127.0.0.1), so each form fails where it would fail for a user.

Each form goes through each path, every output searched (:func:`leaks`):

- the command line in-process: every command that opens a database, the form as
  ``--url``, as ``LANGGRAPH_CHECKPOINT_URL``, as ``copy``'s ``--from`` and ``--to``, and
  where a command or argument goes (argparse's usage errors); stdout, stderr, every log
  record;
- ``SQLAlchemySaver`` and ``SQLAlchemyStore`` (``from_conn_string``, ``setup`` and
  ``asetup``, a put through each door) and ``transfer.open_source``: the exception's str
  and repr and its printed traceback (causes and contexts as Python prints them), and
  every log record;
- the ``alembic`` tool (a subprocess) with the form as ``-x url=...`` (online, and
  offline with ``--sql``) and as an ini file's ``sqlalchemy.url`` (``%`` written ``%%``,
  and as given: ``%40`` must not be quoted by configparser's error).

``PGPASSWORD`` in the environment is tested the same way.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, cli, migrate
from langgraph.store.sqlalchemy import SQLAlchemyStore

from .test_cli_secrets import COMMANDS, Files, argv_for

S = "s3cr3t-Pw"
DOWN = "127.0.0.1:1"
PG = "postgresql+psycopg"


@dataclass(frozen=True)
class Form:
    """A way to write a password: ``url`` as given, the ``secrets`` it holds (as
    written and as the driver would read it) and environment variables it needs."""

    name: str
    url: str
    secrets: tuple[str, ...] = (S,)
    env: dict[str, str] = field(default_factory=dict)


FORMS = [
    # -- URL user information
    Form("url-field", f"{PG}://u:{S}@{DOWN}/db"),
    Form("url-field-at", f"{PG}://u:s3cr3t@Pw@{DOWN}/db", ("s3cr3t@Pw",)),
    Form("url-field-encoded", f"{PG}://u:s3cr3t%40Pw@{DOWN}/db", ("s3cr3t%40Pw", "s3cr3t@Pw")),
    Form("url-field-space", f"{PG}://u:s3cr3t Pw@{DOWN}/db", ("s3cr3t Pw",)),
    Form("url-field-slash", f"{PG}://u:s3cr3t/Pw@{DOWN}/db", ("s3cr3t/Pw",)),
    Form("url-field-no-host", f"{PG}://u:{S}/db"),  # the password read as a port
    Form("url-field-bad-port", f"{PG}://u:{S}@127.0.0.1:port/db"),
    Form("url-no-slashes", f"{PG}:u:{S}@{DOWN}/db"),
    Form("mysql-field", f"mysql+pymysql://u:{S}@{DOWN}/db"),
    # -- URL query parameters
    Form("query-password", f"{PG}://u@{DOWN}/db?password={S}"),
    Form("query-PASSWORD", f"{PG}://u@{DOWN}/db?PASSWORD={S}"),
    Form("query-sslpassword", f"{PG}://u@{DOWN}/db?sslpassword={S}"),
    Form("query-SslPassword", f"{PG}://u@{DOWN}/db?SslPassword={S}&application_name=x"),
    Form("query-encoded-name", f"{PG}://u@{DOWN}/db?pass%77ord={S}"),
    Form("query-encoded-value", f"{PG}://u@{DOWN}/db?password=s3cr3t%2DPw", ("s3cr3t%2DPw", S)),
    Form("query-plus", f"{PG}://u@{DOWN}/db?sslpassword=s3cr3t+Pw", ("s3cr3t+Pw", "s3cr3t Pw")),
    Form("query-repeated", f"{PG}://u@{DOWN}/db?password=x&password={S}"),
    Form("query-oauth-secret", f"{PG}://u@{DOWN}/db?oauth_client_secret={S}"),
    Form("mysql-passwd", f"mysql+pymysql://u@{DOWN}/db?passwd={S}"),
    # -- libpq keyword/value strings
    Form("kv", f"host=127.0.0.1 port=1 password={S}"),
    Form("kv-password-first", f"password={S} host=127.0.0.1 port=1"),
    Form("kv-spaces-around", f"host=127.0.0.1 port=1 password = {S}"),
    Form("kv-quoted-space", "host=127.0.0.1 port=1 password='s3cr3t Pw'", ("s3cr3t Pw",)),
    Form(
        "kv-escaped-quote",
        "host=127.0.0.1 port=1 password='s3cr3t \\' Pw'",
        ("s3cr3t \\' Pw", "s3cr3t ' Pw"),
    ),
    Form("kv-escaped-space", "host=127.0.0.1 port=1 password=s3cr3t\\ Pw", ("s3cr3t\\ Pw",)),
    Form("kv-equals-in-value", "host=127.0.0.1 port=1 password=s3cr3t=Pw", ("s3cr3t=Pw",)),
    Form("kv-sslpassword", f"host=127.0.0.1 port=1 sslpassword='{S}'"),
    Form("kv-oauth-secret", f"host=127.0.0.1 port=1 oauth_client_secret={S}"),
    Form("kv-tabs", f"host=127.0.0.1\tport=1\tpassword={S}"),
    Form("kv-nested-dbname", f"host=127.0.0.1 port=1 dbname='host=x password={S}'"),
    Form("kv-bad-port", f"password={S} host=127.0.0.1 port=abc"),
    # -- connection strings libpq refuses
    Form("kv-unquoted-space", "host=127.0.0.1 port=1 password=s3cr3t Pw", ("s3cr3t Pw",)),
    Form("kv-unquoted-space-equals", "host=127.0.0.1 password=s3cr3t Pw=x", ("s3cr3t Pw=x",)),
    Form("kv-open-quote", f"host=127.0.0.1 port=1 password='{S}"),
    Form("kv-UPPER", f"host=127.0.0.1 port=1 PASSWORD={S}"),
    Form("kv-UPPER-spaces", f"host=127.0.0.1 port=1 PASSWORD = {S}"),
    Form("kv-sslpassword-space", "host=127.0.0.1 sslpassword=s3cr3t Pw", ("s3cr3t Pw",)),
    Form("kv-pasword", f"host=127.0.0.1 port=1 pasword={S}"),
    Form("kv-passwd", f"host=127.0.0.1 port=1 passwd={S}"),
    Form("kv-pwd", f"host=127.0.0.1 port=1 pwd={S}"),
    Form("kv-bare-word", f"host=127.0.0.1 port=1 user=u {S}"),
    Form("kv-double-quotes", 'host=127.0.0.1 password="s3cr3t Pw"', ("s3cr3t Pw",)),
    Form("kv-quoted-keyword", f"'password'={S}"),
    Form("kv-newline", f"host=127.0.0.1\nport=1\npassword='{S}"),
    # -- the environment
    Form("PGPASSWORD", f"{PG}://u@{DOWN}/db", env={"PGPASSWORD": S}),
]
IDS = [f.name for f in FORMS]


def test_the_table_has_every_form() -> None:
    assert len(FORMS) >= 24 and len(set(IDS)) == len(IDS)


def fragments(form: Form) -> set[str]:
    """Every piece of ``form``'s secrets four characters long or more."""
    return {s[i:j] for s in form.secrets for i in range(len(s)) for j in range(i + 4, len(s) + 1)}


def leaks(form: Form, where: str, text: str) -> list[str]:
    """``where: <the longest piece of a secret found in text>`` when there is one."""
    found = sorted((f for f in fragments(form) if f in text), key=len)
    if not found:
        return []
    at = text.index(found[-1])
    return [f"{form.name}: {where}: {found[-1]!r} in ...{text[max(0, at - 120) : at + 60]!r}"]


def exception_text(e: BaseException) -> str:
    """What an exception shows: its str and repr, and its traceback as Python prints it
    (its cause, or its context unless suppressed)."""
    return f"{e}\n{e!r}\n" + "".join(traceback.format_exception(e))


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        f"{r.getMessage()} {r.exc_text or ''} "
        + ("".join(traceback.format_exception(*r.exc_info)) if r.exc_info else "")
        for r in caplog.records
    )


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory of the test's own (a form read as a SQLite path makes a file
    there), without the URL variables of the environment."""
    monkeypatch.chdir(tmp_path)
    for name in ("LANGGRAPH_CHECKPOINT_URL", "PGPASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# -- the command line -----------------------------------------------------------------------


def cli_runs(form: Form, files: Files) -> Iterator[tuple[list[str], dict[str, str]]]:
    """Every command on ``form`` (``copy`` with it as ``--from`` and as ``--to``), then
    the form in the environment, then where argparse reports it (usage errors)."""
    for path, parser in COMMANDS:
        for side in ("--from", "--to") if path == ("copy",) else ("--from",):
            yield argv_for(path, parser, form.url, files, secret_in=side, yes=True), {}
    for argv in (["threads", "list"], ["current"], ["upgrade", "--sql"]):
        yield argv, {"LANGGRAPH_CHECKPOINT_URL": form.url}
    yield ["threads", "list", f"--url={form.url}"], {}
    yield ["threads", "list", f"--ur={form.url}"], {}  # a misspelt option
    yield ["threads", "list", form.url], {}  # --url forgotten: an unrecognized argument
    yield [form.url, "threads", "list"], {}  # the URL where the command goes
    yield ["stamp", form.url, "--url", "sqlite://"], {}  # the URL taken for a revision


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_command_line(
    form: Form,
    in_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    files = Files(in_tmp)
    caplog.set_level(logging.DEBUG)
    found: list[str] = []
    for name, value in form.env.items():
        monkeypatch.setenv(name, value)
    for argv, env in cli_runs(form, files):
        with monkeypatch.context() as m:
            for name, value in env.items():
                m.setenv(name, value)
            capsys.readouterr()
            caplog.clear()
            try:
                cli.main(argv)
            except SystemExit:  # argparse's usage errors
                pass
            except Exception as e:  # a bug: still no secret in what it shows
                found += leaks(form, f"{argv}: raised", exception_text(e))
            out, err = capsys.readouterr()
            for where, text in (("stdout", out), ("stderr", err), ("log", log_text(caplog))):
                found += leaks(form, f"{argv}: {where}", text)
    assert not found, "\n".join(found)


# -- the saver, the store, transfer ----------------------------------------------------------

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _saver_sync(url: str) -> None:
    with SQLAlchemySaver.from_conn_string(url, retry_timeout=0) as saver:
        saver.setup()
        saver.put(CONFIG, empty_checkpoint(), {}, {})


def _saver_async(url: str) -> None:
    async def run() -> None:
        saver = SQLAlchemySaver.from_conn_string(url, retry_timeout=0)
        try:
            await saver.asetup()
            await saver.aput(CONFIG, empty_checkpoint(), {}, {})
        finally:
            saver.close()

    asyncio.run(run())


def _store_sync(url: str) -> None:
    with SQLAlchemyStore.from_conn_string(url) as store:
        store.setup()
        store.put(("n",), "k", {"v": 1})


def _store_async(url: str) -> None:
    async def run() -> None:
        with SQLAlchemyStore.from_conn_string(url) as store:
            await store.asetup()
            await store.aput(("n",), "k", {"v": 1})

    asyncio.run(run())


def _open_source(url: str) -> None:
    from langgraph.checkpoint.sqlalchemy.transfer import open_source

    with open_source(url) as source:
        list(source.list(None))


CALLS: dict[str, Callable[[str], None]] = {
    "saver": _saver_sync,
    "saver-async": _saver_async,
    "store": _store_sync,
    "store-async": _store_async,
    "open_source": _open_source,
}


@pytest.mark.parametrize("form", FORMS, ids=IDS)
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
def test_library_errors_and_logs(
    form: Form,
    in_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    for name, value in form.env.items():
        monkeypatch.setenv(name, value)
    found: list[str] = []
    for what, call in CALLS.items():
        caplog.clear()
        try:
            call(form.url)
        except Exception as e:
            found += leaks(form, f"{what}: exception", exception_text(e))
        found += leaks(form, f"{what}: log", log_text(caplog))
    assert not found, "\n".join(found)


# -- the alembic tool ----------------------------------------------------------------------


def _alembic(ini: Path, *args: str, env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "-c", str(ini), *args],
        cwd=ini.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("form", FORMS, ids=IDS)
def test_alembic_tool(form: Form, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGGRAPH_", "PG"))}
    env.update(form.env)
    location = f"script_location = {migrate.script_location()}"
    inis = {"plain": ""}
    if "\n" not in form.url:  # an ini value is one line
        # as docs/migrations.md says to write it ('%' as '%%'), and as given ('%40' is
        # then an ini syntax error, whose words must not quote the value)
        inis["escaped"] = f"sqlalchemy.url = {form.url.replace('%', '%%')}\n"
        inis["raw"] = f"sqlalchemy.url = {form.url}\n"
    for name, url_line in inis.items():
        (tmp_path / f"{name}.ini").write_text(f"[alembic]\n{location}\n{url_line}", "utf-8")
    runs: list[tuple[Path, tuple[str, ...]]] = [
        (tmp_path / "plain.ini", ("-x", f"url={form.url}", "current")),
        (tmp_path / "plain.ini", ("-x", f"url={form.url}", "upgrade", "head", "--sql")),
        *((tmp_path / f"{name}.ini", ("current",)) for name in inis if name != "plain"),
    ]
    found: list[str] = []
    for ini, args in runs:
        _, output = _alembic(ini, *args, env=env)
        found += leaks(form, f"alembic -c {ini.name} {' '.join(args)}", output)
    assert not found, "\n".join(found)


def test_alembic_tells_to_double_a_percent_sign(tmp_path: Path) -> None:
    """``%40`` in an ini file's ``sqlalchemy.url``: one line saying to write ``%%40``,
    naming the file, not the value (configparser's own error quoted the rest of it)."""
    ini = tmp_path / "my.ini"
    ini.write_text(
        f"[alembic]\nscript_location = {migrate.script_location()}\n"
        f"sqlalchemy.url = postgresql://u:s3cr3t%40Pw@{DOWN}/db\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGGRAPH_")}
    code, output = _alembic(ini, "current", env=env)
    assert code != 0
    assert "FAILED:" in output and "Traceback" not in output, output
    assert "%%40" in output and str(ini.name) in output
    assert not leaks(Form("percent", "", ("s3cr3t%40Pw", "s3cr3t@Pw")), "alembic", output)


# -- what is still shown ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "shown_as"),
    [
        (f"host=127.0.0.1 port=1 password={S}", "host=127.0.0.1 port=1 password=***"),
        ("host=db dbname='my app' password='a b'", "host=db dbname='my app' password=***"),
        (f"{PG}://u:{S}@db/app?sslpassword={S}&sslmode=require", "sslmode=require"),
        (f"host=db pasword={S}", "the connection string (not shown: it may hold a password)"),
    ],
)
def test_what_is_known_safe_is_still_shown(given: str, shown_as: str) -> None:
    from langgraph.checkpoint.sqlalchemy._codec.display import shown_url

    assert shown_as in shown_url(given)


def test_a_misspelt_keyword_is_named_by_what_was_meant(in_tmp: Path) -> None:
    from langgraph.checkpoint.sqlalchemy.errors import DatabaseURLError

    for given, meant in (
        (f"host=db pasword={S}", 'did you mean "password"?'),
        (f"host=db PASSWORD={S}", 'keywords are lower case: "password"'),
        (f"host=db password={S} Pw=x", "if it is a piece of the value before it"),
        ("host=db password=s3cr3t Pw", "item 3 has no '='"),
        (f"host=db password='{S}", "single quote that opens value 2 is never closed"),
    ):
        with pytest.raises(DatabaseURLError) as caught:
            SQLAlchemySaver.from_conn_string(given)
        assert meant in str(caught.value)
        assert "s3cr3t" not in exception_text(caught.value)
        assert caught.value.__context__ is None  # libpq's words are not kept either
