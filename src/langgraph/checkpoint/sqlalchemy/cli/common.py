"""What every CLI command uses: errors and their one-line explanation, output, argument
types, and opening the database.

The bottom of the :mod:`.cli` package: the command modules (:mod:`.schema`,
:mod:`.threads`, :mod:`.data`) import it, and it imports none of them.

- :class:`CommandError` and :func:`explain`, which turns any exception a user can fix
  into ``error: <what happened>. <what to do>`` and an exit code (see :mod:`.cli`);
- output: :func:`emit` (``--json`` or text), :func:`confirm`, :func:`masked` URLs;
- argparse: :func:`add_command` and the argument types :func:`count`,
  :func:`positive`, :func:`duration`;
- the database: :func:`resolve`, :func:`require_database`, :func:`require_folder`,
  :func:`schema_connection`, :func:`open_saver`, :func:`check_threads`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, cast

from alembic.util import CommandError as AlembicCommandError

from sqlalchemy import Connection, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.pool import NullPool

from .. import errors, migrate
from .._display import SECRET_PARAMETERS, masked_text, shown_url
from .._engines import EngineURLs, configure_engine, resolve_urls
from .._sources import opaque_view
from ..dialects import DIALECTS, WRITE_OPTION
from ..saver import SQLAlchemySaver
from ..transfer import missing_threads

Handler = Callable[[argparse.Namespace], int]


class CommandError(Exception):
    """A command cannot run as asked: printed to stderr, exit code ``code``."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


# -- output ------------------------------------------------------------------------------


#: Bidirectional-text controls: they reorder what a terminal shows (Trojan Source).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escaped(text: str, keep: str = "") -> str:
    return "".join(
        f"\\u{ord(ch):04x}"
        if ch not in keep and (ch in _BIDI or unicodedata.category(ch) == "Cc")
        else ch
        for ch in text
    )


def cell(value: Any) -> str:
    """``value`` as text for a terminal: control characters (ESC, C1, newlines) and
    bidirectional controls a row may hold are shown as ``\\uXXXX``, never sent to the
    terminal (where they could recolour, hide or reorder what the operator reads)."""
    return _escaped("" if value is None else str(value))


def as_json(data: Any) -> str:
    """``data`` as indented JSON for a terminal: the same JSON, with the C1 and
    bidirectional controls that ``json.dumps`` leaves raw written as ``\\uXXXX``."""
    return _escaped(json.dumps(data, indent=1, default=str, ensure_ascii=False), keep="\n")


def emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    """Print ``data`` as JSON with ``--json``, else call ``human`` to print text."""
    if args.json:
        print(as_json(data))
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
    """``url`` as text with its password and secret query parameters (``?password=``)
    hidden (``***``), even when it does not parse (see :func:`.shown_url`)."""
    if isinstance(url, URL):
        return shown_url(url)
    # text may be a whole message that holds URLs: mask in place, do not parse
    return masked_text(str(url))


def _end(what: object) -> str:
    """``what`` as a sentence: ends in ``.``, ``?`` or ``!``."""
    text = str(what).strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def where(args: argparse.Namespace) -> str:
    """The database URL of ``args`` with the password hidden."""
    return masked(_resolve_or_text(args.url))


def _resolve_or_text(url: str) -> str | URL:
    """The sync engine URL of ``url``, or ``url`` itself when it does not resolve."""
    try:
        return resolve_urls(url).sync
    except Exception:
        return url


# -- argparse ------------------------------------------------------------------------------


def add_command(
    sub: Any, common: argparse.ArgumentParser, name: str, handler: Handler, help: str
) -> argparse.ArgumentParser:
    """Add the command ``name`` to the subparsers ``sub``; it runs ``handler``.

    Args:
        sub: What ``ArgumentParser.add_subparsers`` returned.
        common: The parent parser of the global options (accepted after the command too).
        name: The command's name.
        handler: Runs the command and returns its exit code.
        help: One line for ``--help``.

    Returns:
        The command's parser, to add its own arguments to.
    """
    parser: argparse.ArgumentParser = sub.add_parser(name, parents=[common], help=help)
    parser.set_defaults(handler=handler)
    return parser


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` as a ``timedelta`` (argparse type).

    Raises:
        argparse.ArgumentTypeError: Not a number followed by s, m, h, d or w.
    """
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: use a number and a unit s, m, h, d or w (e.g. 30d)"
        )
    try:
        return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    except OverflowError:
        raise argparse.ArgumentTypeError(
            f"duration {text!r} is too long (at most 999999999 days)"
        ) from None


def count(text: str) -> int:
    """A whole number >= 0 (argparse type of ``--limit``, ``--offset``, ``--top``).

    Raises:
        argparse.ArgumentTypeError: Not a whole number, or negative.
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def positive(text: str) -> int:
    """A whole number >= 1 (argparse type of ``threads show --limit``).

    Raises:
        argparse.ArgumentTypeError: Not a whole number, or less than 1.
    """
    value = count(text)
    if value < 1:
        raise argparse.ArgumentTypeError("give 1 or more")
    return value


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
        why = _end(e)
        forms = (
            ""
            if "valid forms" in why.lower()
            else (
                " Valid forms: sqlite:///relative.db, sqlite:////abs/path.db, a file path, "
                ":memory:, postgresql://USER@HOST/DBNAME, mysql://USER@HOST/DBNAME"
            )
        )
        raise CommandError(f"bad database URL {masked(url)!r} ({option}): {why}{forms}", 2) from e


def _database_file(url: str, option: str) -> str | None:
    """The absolute path of the file ``url``'s database lives in (a SQLite file); None for a
    server database, an in-memory one or a ``file:`` URI (its path is SQLite's to read).

    Raises:
        CommandError: A bad URL (exit code 2).
    """
    sync = resolve(url, option).sync
    return DIALECTS[sync.get_backend_name()].database_file(sync)


def require_database(url: str, option: str = "--url") -> None:
    """Refuse a SQLite path that does not exist, creating nothing: for commands that only
    read (or change existing threads), an absent file is "not found", not a new database.

    Raises:
        CommandError: No file at the path (exit code 1), or a bad URL (2).
    """
    path = _database_file(url, option)
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
    path = _database_file(url, option)
    if path is not None and not os.path.isdir(os.path.dirname(path)):
        raise CommandError(
            f"no directory {os.path.dirname(path)} for the SQLite database {path} "
            f"({option} {masked(url)}): create the directory first",
            1,
        )


def _require(url: str, option: str, *, create: bool) -> None:
    """:func:`require_folder` if the command may create ``url``, else :func:`require_database`."""
    if create:
        require_folder(url, option)
    else:
        require_database(url, option)


@contextmanager
def schema_connection(args: argparse.Namespace, *, create: bool = False) -> Iterator[Connection]:
    """A write transaction on ``--url`` for schema commands (no saver, no schema check).

    ``create``: a SQLite file that does not exist may be created (``upgrade``); else it
    is refused (see :func:`require_database`).
    """
    _require(args.url, "--url", create=create)
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
    args: argparse.Namespace,
    url: str | None = None,
    *,
    create: bool = False,
    option: str = "--url",
    threads: Sequence[str] = (),
    what: str = "",
) -> Iterator[SQLAlchemySaver]:
    """Our saver on ``url`` (default ``--url``), reading values as data (never rebuilding
    an object: :func:`.._sources.opaque_view`); its schema must be at head.

    ``create``: a SQLite file that does not exist may be created (``import``, the target
    of ``copy``); else it is refused (see :func:`require_database`). ``threads``: thread
    ids that must have checkpoints there (see :func:`check_threads`: ``what`` says what
    was not done otherwise).

    Raises:
        CommandError: See :func:`require_database`, :func:`require_folder` and
            :func:`check_threads`.
    """
    url = url or args.url
    _require(url, option, create=create)
    args.url_in_use = url
    # An operator's command fails fast on a server that is down (one retry, at once).
    # strict=False: the view below never rebuilds an object whatever the environment.
    saver = SQLAlchemySaver.from_conn_string(url, schema=args.schema, retry_timeout=0, strict=False)
    try:
        check_threads(saver, threads, what)
        # Values as data (module _opaque): no command imports or calls what a row names.
        yield cast(SQLAlchemySaver, opaque_view(saver))
    finally:
        saver.close()


def check_threads(saver: Any, thread_ids: Sequence[str], what: str) -> None:
    """Refuse thread ids without any checkpoint in ``saver``, before anything changes
    (no ids: nothing to check).

    Raises:
        CommandError: Some are unknown (exit code 1); the message names them and ``what``
            was not done.
    """
    if not thread_ids:
        return
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


# -- errors ----------------------------------------------------------------------------------

#: The package whose errors are ours (this module is in its ``cli`` sub-package).
_PACKAGE = errors.__name__.rpartition(".")[0]

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
# What to install for a driver module a raw ImportError names: the dialects' own hints.
_DRIVERS = {
    module.partition(".")[0]: install
    for dialect in DIALECTS.values()
    for module, install in dialect.driver_modules.values()
}


def _ours(e: BaseException) -> bool:
    return type(e).__module__.startswith(_PACKAGE)


def explain(e: BaseException, url: str | None = None) -> tuple[str, int] | None:
    """The one-line message and exit code of an error a user can fix, or None for a bug.

    Args:
        e: The exception a command raised.
        url: The database URL the command was using, if known (shown masked).
    """
    at = f" at {masked(_resolve_or_text(url))}" if url else ""
    if isinstance(e, CommandError):
        return str(e), e.code
    lost = isinstance(e, errors.CheckpointConnectionError)
    if (
        lost
        and not isinstance(e, errors.CheckpointReadOnlyError)
        and isinstance(e.__cause__, DBAPIError)
    ):
        return explain(e.__cause__, url)  # the driver's own words
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
                f"it: {_DRIVERS[module]}",
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


def one_line(message: str, urls: Sequence[str]) -> str:
    """``message`` on one line, with the secrets of each of ``urls`` masked: the password
    field and the secret query parameters (``?password=``), wherever the message quotes
    them (an error may show part of a URL, e.g. a URL taken for a revision)."""
    for url in urls:
        for secret in _secrets(url):
            if len(secret) >= 4:
                # (shorter ones are masked where they appear in a URL, by masked() below)
                message = message.replace(secret, "***")
    return " ".join(masked(message).split())


def _secrets(url: str) -> list[str]:
    """The password and secret query parameter values of ``url`` (any text that may be
    a URL; none when it is not one)."""
    try:
        parsed = make_url(url)
    except Exception:
        match = _PASSWORD_IN_URL.search(url)
        return [match.group(0)[len(match.group(1)) : -1]] if match else []
    found = [str(parsed.password)] if parsed.password else []
    for key, value in parsed.query.items():
        if key.lower() in SECRET_PARAMETERS:
            found.extend([value] if isinstance(value, str) else value)
    return found
