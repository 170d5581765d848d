"""Command line: migrate the checkpoint tables, browse and maintain threads, move data.

``python -m langgraph.checkpoint.sqlalchemy COMMAND`` (also installed as
``langgraph-checkpoint-sqlalchemy``). The URL comes from ``--url``, else the environment
variable ``LANGGRAPH_CHECKPOINT_URL``, else ``sqlite:///checkpoints.sqlite``. Output is
for people by default; ``--json`` prints one JSON document for scripts. Destructive
commands ask for confirmation unless ``--yes``.

Exit codes: 0 ok; 1 a check failed or something was not found (``current --check`` not
at head, a refused confirmation, a failed copy verification, an unknown thread, no
database at the path or URL, a server that cannot be reached, tables at another
revision); 2 usage (argparse's own code, also for a bad URL, an unknown or missing
driver, a bad argument value or file); 141 stdout closed early (``... | head``), as a
process killed by SIGPIPE; 130 interrupted.

Every error is one line on stderr, ``error: <what happened>. <what to do>``, with the
password of any URL masked; no traceback. Only a bug of this program prints one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from alembic.util import CommandError as AlembicCommandError

from sqlalchemy import Connection, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.pool import NullPool

from . import errors, migrate
from ._engines import DEFAULT_URL, EngineURLs, configure_engine, resolve_urls, url_from_env
from .dialects import WRITE_OPTION

__all__ = ["main"]


Handler = Callable[[argparse.Namespace], int]


class CommandError(Exception):
    """A command cannot run as asked: printed to stderr, exit code ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


# -- output ------------------------------------------------------------------------------


def emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    """Print ``data`` as JSON with ``--json``, else call ``human`` to print text."""
    if args.json:
        json.dump(data, sys.stdout, indent=1, default=str, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        human()


def confirm(args: argparse.Namespace, question: str) -> None:
    """Ask before a destructive step unless ``--yes``; without a terminal, refuse.

    Raises:
        CommandError: The answer was not yes (exit code 1).
    """
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise CommandError(f"{question} Refused: pass --yes to confirm without a terminal.", 1)
    answer = input(f"{question} [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise CommandError("Aborted.", 1)


_PASSWORD_IN_URL = re.compile(r"(://[^:/?#@\s]*:)[^@/?#\s]*@")


def masked(url: str | URL) -> str:
    """``url`` as text with its password hidden (``***``), even when it does not parse."""
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    return _PASSWORD_IN_URL.sub(r"\1***@", str(url))


def _end(what: object) -> str:
    """``what`` as a sentence: ends in ``.``, ``?`` or ``!``."""
    text = str(what).strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def where(args: argparse.Namespace) -> str:
    """The database URL of ``args`` with the password hidden."""
    try:
        return masked(resolve_urls(args.url).sync)
    except Exception:
        return masked(args.url)


# -- connections -------------------------------------------------------------------------


def resolve(url: str, option: str = "--url") -> EngineURLs:
    """The engine URLs of ``url``, given as ``option``.

    Raises:
        CommandError: A URL SQLAlchemy or this library cannot read (exit code 2).
    """
    try:
        return resolve_urls(url)
    except errors.DriverNotInstalledError as e:  # the URL is fine: a package is missing
        raise CommandError(f"{masked(url)} ({option}): {_end(e)}", 2) from e
    except (ValueError, ArgumentError) as e:
        raise CommandError(
            f"bad database URL {masked(url)!r} ({option}): {_end(e)} Valid forms: "
            "sqlite:///relative.db, sqlite:////abs/path.db, a file path, :memory:, "
            "postgresql://USER@HOST/DBNAME, mysql://USER@HOST/DBNAME",
            2,
        ) from e


def _sqlite_file(url: str, option: str) -> str | None:
    """The absolute path of the SQLite file ``url`` names; None for another database, an
    in-memory one or a ``file:`` URI (their paths are SQLite's to read).

    Raises:
        CommandError: A bad URL (exit code 2).
    """
    sync = resolve(url, option).sync
    if sync.get_backend_name() != "sqlite" or sync.query.get("uri"):
        return None
    path = sync.database or ""
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return os.path.abspath(path)


def require_database(url: str, option: str = "--url") -> None:
    """Refuse a SQLite path that does not exist, creating nothing: for commands that only
    read (or change existing threads), an absent file is "not found", not a new database.

    Raises:
        CommandError: No file at the path (exit code 1), or a bad URL (2).
    """
    path = _sqlite_file(url, option)
    if path is not None and not os.path.exists(path):
        raise CommandError(
            f"no database at {path} ({option} {masked(url)}): nothing was "
            "created. Check the path, or create the tables there with: "
            f"langgraph-checkpoint-sqlalchemy upgrade --url {masked(url)}",
            1,
        )


def require_folder(url: str, option: str = "--url") -> None:
    """Refuse a SQLite file whose directory does not exist (SQLite creates the file, not
    its directory: it would fail with "unable to open database file").

    Raises:
        CommandError: No such directory (exit code 1), or a bad URL (2).
    """
    path = _sqlite_file(url, option)
    if path is not None and not os.path.isdir(os.path.dirname(path)):
        raise CommandError(
            f"no directory {os.path.dirname(path)} for the SQLite database {path} "
            f"({option} {masked(url)}): create the directory first",
            1,
        )


@contextmanager
def schema_connection(args: argparse.Namespace, *, create: bool = False) -> Iterator[Connection]:
    """A write transaction on ``--url`` for schema commands (no saver, no schema check).

    ``create``: a SQLite file that does not exist may be created (``upgrade``); else it
    is refused (see :func:`require_database`).
    """
    if create:
        require_folder(args.url)
    else:
        require_database(args.url)
    args.url_in_use = args.url
    engine = create_engine(resolve(args.url).sync, poolclass=NullPool)
    configure_engine(engine)
    try:
        with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            yield conn
    finally:
        engine.dispose()


@contextmanager
def open_saver(
    args: argparse.Namespace, url: str | None = None, *, create: bool = False, option: str = "--url"
) -> Iterator[Any]:
    """Our saver on ``url`` (default ``--url``); its schema must be at head.

    ``create``: a SQLite file that does not exist may be created (``import``, the target
    of ``copy``); else it is refused (see :func:`require_database`).
    """
    from .saver import SQLAlchemySaver

    url = url or args.url
    if create:
        require_folder(url, option)
    else:
        require_database(url, option)
    args.url_in_use = url
    saver = SQLAlchemySaver.from_conn_string(url, schema=args.schema)
    try:
        yield saver
    finally:
        saver.close()


def check_threads(saver: Any, thread_ids: Sequence[str], what: str) -> None:
    """Refuse thread ids without any checkpoint in ``saver``, before anything changes.

    Raises:
        CommandError: Some are unknown (exit code 1); the message names them and ``what``
            was not done.
    """
    from .transfer import missing_threads

    missing = missing_threads(saver, thread_ids)
    if missing:
        names = ", ".join(repr(t) for t in missing)
        raise CommandError(
            f"no thread {names} in {_saver_url(saver)}: {what}. List the threads with: "
            "langgraph-checkpoint-sqlalchemy threads list",
            1,
        )


def _saver_url(saver: Any) -> str:
    """Where ``saver`` reads, password hidden: our saver's URL, else "the source"."""
    engine = getattr(saver, "engine", None)
    return masked(engine.url) if engine is not None else "the source"


# -- schema commands -----------------------------------------------------------------------


def _state(current: str | None) -> str:
    if current == migrate.head_revision():
        return "at head"
    if migrate.is_ahead(current):
        return (
            "ahead of this package: migrated by a newer version of "
            "langgraph-checkpoint-sqlalchemy; upgrade the package"
        )
    return "behind head: run langgraph-checkpoint-sqlalchemy upgrade"


def _revision_line(args: argparse.Namespace, current: str | None) -> None:
    print(
        f"{where(args)}: revision {current or 'none'} (head {migrate.head_revision()}), "
        f"{_state(current)}"
    )


def cmd_upgrade(args: argparse.Namespace) -> int:
    if args.sql:
        resolve(args.url)
        sys.stdout.write(migrate.offline_sql(args.url, "upgrade", args.revision, args.schema))
        return 0
    with schema_connection(args, create=True) as conn:
        migrate.upgrade(conn, args.revision, schema=args.schema)
        current = migrate.current_revision(conn, schema=args.schema)
    emit(args, _revision_json(current), lambda: _revision_line(args, current))
    return 0


def cmd_downgrade(args: argparse.Namespace) -> int:
    if args.sql:
        resolve(args.url)
        sys.stdout.write(migrate.offline_sql(args.url, "downgrade", args.revision, args.schema))
        return 0
    if args.revision == "base":
        confirm(args, f"Drop every checkpoint table of this library at {where(args)}?")
    with schema_connection(args) as conn:
        migrate.downgrade(conn, args.revision, schema=args.schema)
        current = migrate.current_revision(conn, schema=args.schema)
    emit(args, _revision_json(current), lambda: _revision_line(args, current))
    return 0


def cmd_current(args: argparse.Namespace) -> int:
    with schema_connection(args) as conn:
        current = migrate.current_revision(conn, schema=args.schema)
    emit(args, _revision_json(current), lambda: _revision_line(args, current))
    if args.check and current != migrate.head_revision():
        print(f"error: the tables are {_state(current)}", file=sys.stderr)
        return 1
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    # No new SQLite file: a version table alone would pass "current --check" with no tables.
    with schema_connection(args) as conn:
        migrate.stamp(conn, args.revision, schema=args.schema)
        current = migrate.current_revision(conn, schema=args.schema)
    emit(args, _revision_json(current), lambda: _revision_line(args, current))
    return 0


def _revision_json(current: str | None) -> dict[str, Any]:
    head = migrate.head_revision()
    return {
        "revision": current,
        "head": head,
        "at_head": current == head,
        "ahead": migrate.is_ahead(current),
    }


# -- the parser ----------------------------------------------------------------------------


def _common() -> argparse.ArgumentParser:
    # Global options are accepted before or after the command ("upgrade --url URL").
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS, help="database URL or SQLite path")
    common.add_argument("--schema", default=argparse.SUPPRESS, help="PostgreSQL schema")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    common.add_argument(
        "--yes",
        "-y",
        action="store_true",
        default=argparse.SUPPRESS,
        help="do not ask before destructive steps",
    )
    return common


def _parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="langgraph-checkpoint-sqlalchemy",
        description="Manage the checkpoint tables and threads of langgraph-checkpoint-sqlalchemy.",
    )
    parser.add_argument(
        "--url",
        default=url_from_env(),
        help="database URL or SQLite path (default: $LANGGRAPH_CHECKPOINT_URL, else "
        f"{DEFAULT_URL})",
    )
    parser.add_argument(
        "--schema",
        default=os.environ.get("LANGGRAPH_CHECKPOINT_SCHEMA"),
        help="PostgreSQL schema of the tables (default: $LANGGRAPH_CHECKPOINT_SCHEMA)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--yes", "-y", action="store_true", help="do not ask before destructive steps"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    up = sub.add_parser("upgrade", parents=[common], help="migrate the tables up (to head)")
    up.add_argument("revision", nargs="?", default="head")
    up.add_argument("--sql", action="store_true", help="print the DDL instead (offline)")
    up.set_defaults(handler=cmd_upgrade)
    down = sub.add_parser(
        "downgrade", parents=[common], help="migrate down to REVISION ('base' drops our tables)"
    )
    down.add_argument("revision")
    down.add_argument("--sql", action="store_true", help="print the DDL instead (offline)")
    down.set_defaults(handler=cmd_downgrade)
    cur = sub.add_parser("current", parents=[common], help="print the database's revision")
    cur.add_argument("--check", action="store_true", help="exit 1 unless at head")
    cur.set_defaults(handler=cmd_current)
    stamp = sub.add_parser(
        "stamp", parents=[common], help="record REVISION as current without migrating"
    )
    stamp.add_argument("revision")
    stamp.set_defaults(handler=cmd_stamp)

    from . import _cli_data, _cli_transfer

    _cli_data.add_commands(sub, common)
    _cli_transfer.add_commands(sub, common)
    return parser


# -- errors ----------------------------------------------------------------------------------

#: Typed errors of this library that mean "found something else than needed" (exit 1);
#: its other ValueErrors are bad input (exit 2).
_NOT_FOUND: tuple[type[BaseException], ...] = (
    errors.SchemaOutOfDateError,
    errors.ThreadNotEmptyError,
    errors.CheckpointDecodeError,
    errors.CheckpointHistoryError,
    errors.CheckpointConflictError,
    errors.CheckpointConnectionError,
    errors.ThreadLockTimeout,
)

#: Driver module -> what to install.
_DRIVERS = {
    "psycopg": '"langgraph-checkpoint-sqlalchemy[postgres]"',
    "psycopg2": "psycopg2-binary",
    "pg8000": "pg8000",
    "asyncpg": "asyncpg",
    "pymysql": '"langgraph-checkpoint-sqlalchemy[mysql]"',
    "asyncmy": '"langgraph-checkpoint-sqlalchemy[mysql]"',
    "aiomysql": "aiomysql",
    "MySQLdb": "mysqlclient",
    "mariadb": "mariadb",
    "mysql": "mysql-connector-python",
    "aiosqlite": "aiosqlite",
}


def _ours(e: BaseException) -> bool:
    return type(e).__module__.startswith(__package__ or "langgraph.checkpoint.sqlalchemy")


def explain(e: BaseException, url: str | None = None) -> tuple[str, int] | None:
    """The one-line message and exit code of an error a user can fix, or None for a bug.

    Args:
        e: The exception a command raised.
        url: The database URL the command was using, if known (shown masked).
    """
    at = f" at {masked(_resolve_or_text(url))}" if url else ""
    if isinstance(e, CommandError):
        return str(e), e.code
    if isinstance(e, _NOT_FOUND):
        return str(e), 1
    if isinstance(e, NoSuchModuleError):
        return (
            f"unknown database driver: {_end(e)} Use a driver SQLAlchemy documents, e.g. "
            "postgresql+psycopg://, mysql+pymysql://, sqlite:///path.db",
            2,
        )
    if isinstance(e, ArgumentError):
        return f"bad database URL: {_end(e)} Use e.g. sqlite:///path.db or postgresql://host/db", 2
    if isinstance(e, ImportError) and not _ours(e):
        module = (e.name or "").split(".")[0]
        if module in _DRIVERS:
            return (
                f"the database driver {module!r} named by the URL is not installed. Install "
                f"it: pip install {_DRIVERS[module]}",
                2,
            )
        return f"{_end(e)} Install the missing package", 2
    if isinstance(e, DBAPIError):
        detail = str(e.orig if e.orig is not None else e)
        if e.statement is None or isinstance(e.orig, ConnectionError):
            return (
                f"cannot connect to the database{at}: {_end(detail)} Check that the server is "
                "running, that the database exists (create it first, e.g. CREATE DATABASE) "
                "and that the URL, user and password are right",
                1,
            )
        return f"the database{at} failed: {_end(detail)} Check the database and retry", 1
    if isinstance(e, PoolTimeoutError):
        return f"the database{at} did not answer: {_end(e)} Retry later", 1
    if isinstance(e, AlembicCommandError):
        known = ", ".join(sorted(migrate.known_revisions()))
        return f"{_end(e)} Known revisions: {known}, head, base", 2
    if _ours(e):
        return str(e), 2 if isinstance(e, (ValueError, TypeError, ImportError)) else 1
    if isinstance(e, OSError) and not isinstance(e, ConnectionError):
        name = f"{e.filename}: " if e.filename else ""
        return f"{name}{_end(e.strerror or e)} Check the path and its permissions", 2
    return None


def _resolve_or_text(url: str) -> str | URL:
    """The sync engine URL of ``url``, or ``url`` itself when it does not resolve."""
    try:
        return resolve_urls(url).sync
    except Exception:
        return url


def _one_line(message: str, urls: Sequence[str]) -> str:
    """``message`` on one line, with the password of each of ``urls`` masked."""
    for url in urls:
        try:
            password = make_url(url).password
        except Exception:
            match = _PASSWORD_IN_URL.search(url)
            password = match.group(0)[len(match.group(1)) : -1] if match else None
        if password and len(str(password)) >= 4:
            # (shorter ones are masked where they appear in a URL, by masked() below)
            message = message.replace(str(password), "***")
    return " ".join(masked(message).split())


def _stdout_gone() -> int:
    # The reader of stdout went away (``| head``): as the Python docs advise for SIGPIPE,
    # point stdout at devnull so that the interpreter's final flush cannot fail again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 ok; 1 a check failed, a confirmation was refused, or something
        was not found (a thread, the database, the server); 2 usage, a bad URL or a
        missing driver (argparse exits with 2 itself); 141 stdout was closed early; 130
        interrupted. Errors are one line on stderr, never a traceback (except for a bug).
    """
    args = _parser().parse_args(argv)
    handler: Handler = args.handler
    urls = [
        u
        for u in (args.url, getattr(args, "source", None), getattr(args, "target", None))
        if isinstance(u, str)
    ]
    try:
        code = handler(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _stdout_gone()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        explained = explain(e, getattr(args, "url_in_use", None))
        if explained is None:
            raise
        message, code = explained
        print(f"error: {_one_line(message, urls)}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
