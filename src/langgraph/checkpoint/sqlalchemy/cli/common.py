"""What every CLI command uses: its error, output, argument types, and opening the
database.

The bottom of the :mod:`.cli` package but for :mod:`.helptext` (the words of ``--help``):
the command modules (:mod:`.schema`, :mod:`.threads`, :mod:`.data`, :mod:`.store`,
:mod:`.completion`) and :mod:`.explain` import it, and it imports none of them.

- :class:`CommandError`, which a command raises to stop with a message and an exit code
  (:mod:`.explain` turns it, and any other error a user can fix, into one line);
- output: :func:`emit` (``--json`` or text), :func:`confirm`, :func:`masked` URLs,
  :func:`read_from` (the database a listing reads, named);
- argparse: :func:`add_command` and :func:`add_group` (with the ``--help`` text of
  :mod:`.helptext`), :func:`path_argument` and the argument types :func:`count`,
  :func:`positive`, :func:`duration`;
- the database: :func:`resolve`, :func:`require_database`, :func:`require_folder`,
  :func:`schema_connection`, :func:`open_saver`, :func:`open_runner`,
  :func:`check_threads`.

Importing it costs the standard library only: SQLAlchemy, the saver and the transfer
machinery are imported inside the functions that use them (``threads list`` needs no
saver: :func:`open_runner`), so that building the parser
(``--help``, a usage error) imports none of them and each command pays only for what it
runs (``tests/cli/test_cli_startup.py`` checks it).
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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from langgraph.checkpoint.sqlalchemy import errors
from langgraph.checkpoint.sqlalchemy._codec.display import NOT_SHOWN, masked_text, shown_url
from langgraph.checkpoint.sqlalchemy.cli.helptext import (
    DATABASE_ENV,
    FILE_COMPLETION,
    NO_DATABASE,
    NOT_FOUND,
    PROG,
    SCHEMA_ENV,
    help_texts,
)

if TYPE_CHECKING:
    from langgraph.checkpoint.sqlalchemy._engine.doors import SyncRunner
    from langgraph.checkpoint.sqlalchemy._engine.engines import EngineURLs
    from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver
    from sqlalchemy import Connection
    from sqlalchemy.engine import URL

__all__ = [
    "DATABASE_ENV",
    "NOT_FOUND",
    "NO_DATABASE",
    "PROG",
    "SCHEMA_ENV",
    "CommandError",
    "Handler",
    "add_command",
    "add_group",
    "as_json",
    "cell",
    "check_threads",
    "confirm",
    "count",
    "duration",
    "emit",
    "engine_url",
    "masked",
    "open_runner",
    "open_saver",
    "opened",
    "path_argument",
    "positive",
    "read_from",
    "require_database",
    "require_folder",
    "resolve",
    "schema_connection",
    "sentence",
    "where",
]

#: Runs a command: its arguments in, its exit code out.
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


def masked(url: str | URL) -> str:
    """``url`` (a URL, a libpq connection string or a path the user gave) as text to
    show: its password and secret query parameters (``?password=``) as ``***``, and
    nothing of a connection string libpq would not read cleanly (see
    :func:`.shown_url`)."""
    return shown_url(url)


def sentence(what: object) -> str:
    """``what`` as a sentence: ends in ``.``, ``?`` or ``!``."""
    text = str(what).strip()
    return text if text.endswith((".", "?", "!")) else text + "."


def where(args: argparse.Namespace) -> str:
    """The database URL of ``args`` with the password hidden."""
    return masked(engine_url(args.url))


def read_from(args: argparse.Namespace) -> str:
    """The database a listing read (``args.url_in_use``, else ``--url``), password hidden,
    for its ``--json`` output; for people, also said on stderr (``database: URL``), so that
    stdout holds the listing alone."""
    shown = masked(engine_url(getattr(args, "url_in_use", None) or args.url))
    if not args.json:
        print(f"database: {shown}", file=sys.stderr)
    return shown


def engine_url(url: str) -> str | URL:
    """The sync engine URL of ``url``, or ``url`` itself when it does not resolve."""
    from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls

    try:
        return resolve_urls(url).sync
    except Exception:
        return url


# -- argparse ------------------------------------------------------------------------------


def add_command(
    sub: Any,
    common: argparse.ArgumentParser,
    name: str,
    handler: Handler,
    help: str,
    *,
    about: str,
    examples: Sequence[str],
    progress: bool = False,
    **texts: Any,
) -> argparse.ArgumentParser:
    """Add the command ``name`` to the subparsers ``sub``; it runs ``handler``.

    Args:
        sub: What ``ArgumentParser.add_subparsers`` returned.
        common: The parent parser of the global options (accepted after the command too).
        name: The command's name.
        handler: Runs the command and returns its exit code.
        help: One line, for the list of commands in the parent's ``--help``.
        about: What the command does, the description of its ``--help``.
        examples: Command lines after the program's name, shown in its ``--help``.
        progress: The command shows a progress bar: it gets ``--no-progress``
            (see :func:`.progress.progress_bar`).
        texts: ``env``, ``failed``, ``interrupted``: see :func:`.helptext.help_texts`.

    Returns:
        The command's parser, to add its own arguments to.
    """
    parser: argparse.ArgumentParser = sub.add_parser(
        name, parents=[common], help=help, **help_texts(about, examples, **texts)
    )
    parser.set_defaults(handler=handler)
    if progress:
        parser.add_argument(
            "--no-progress",
            action="store_true",
            help="no progress bar (it is shown only when stderr is a terminal, never with --json)",
        )
    return parser


def add_group(
    sub: Any, name: str, help: str, *, about: str, examples: Sequence[str], **texts: Any
) -> Any:
    """Add the command group ``name`` (``threads``, ``store``) to the subparsers ``sub``
    (``texts``: see :func:`.helptext.help_texts`).

    Returns:
        The group's subparsers, to add its commands to with :func:`add_command`.
    """
    group = sub.add_parser(name, help=help, **help_texts(about, examples, **texts))
    return group.add_subparsers(
        dest=f"{name}_command", required=True, metavar="ACTION", help="what to do"
    )


def path_argument(action: argparse.Action) -> argparse.Action:
    """Mark ``action`` as taking a file name, for the shell completion scripts."""
    action.complete = FILE_COMPLETION  # type: ignore[attr-defined]
    return action


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
    from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
    from sqlalchemy.exc import ArgumentError

    try:
        return resolve_urls(url)
    except errors.DriverNotInstalledError as e:  # the URL is fine: a package is missing
        raise CommandError(
            f"{masked(url)} ({option}): {sentence(masked_text(str(e), url))}", 2
        ) from e
    except (ValueError, ArgumentError) as e:
        why = sentence(masked_text(str(e), url))
        forms = (
            ""
            if "valid forms" in why.lower()
            else (
                " Valid forms: sqlite:///relative.db, sqlite:////abs/path.db, a file path, "
                ":memory:, postgresql://USER@HOST/DBNAME, mysql://USER@HOST/DBNAME"
            )
        )
        shown = masked(url)
        given = f"({option})" if shown == NOT_SHOWN else f"{shown!r} ({option})"
        raise CommandError(f"bad database URL {given}: {why}{forms}", 2) from e


def _database_file(url: str, option: str) -> str | None:
    """The absolute path of the file ``url``'s database lives in (a SQLite file); None for a
    server database, an in-memory one or a ``file:`` URI (its path is SQLite's to read).

    Raises:
        CommandError: A bad URL (exit code 2).
    """
    from langgraph.checkpoint.sqlalchemy.dialects import DIALECTS

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
        # A source read from (--from) is checked, never created: only the path can be wrong.
        create = (
            ""
            if option == "--from"
            else ", or create the tables there with: "
            f"langgraph-checkpoint-sqlalchemy upgrade --url {masked(url)}"
        )
        raise CommandError(
            f"no database at {masked_text(path, url)} ({option} {masked(url)}): nothing was "
            f"created. Check the path{create}",
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
            masked_text(
                f"no directory {os.path.dirname(path)} for the SQLite database {path} "
                f"({option} {masked(url)}): create the directory first",
                url,
            ),
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
    from langgraph.checkpoint.sqlalchemy._engine.engines import configure_engine, url_engine
    from langgraph.checkpoint.sqlalchemy.dialects import WRITE_OPTION
    from sqlalchemy.pool import NullPool

    _require(args.url, "--url", create=create)
    args.url_in_use = args.url
    engine = url_engine(resolve(args.url).sync, poolclass=NullPool)
    configure_engine(engine)
    try:
        with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            yield conn
    finally:
        engine.dispose()


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


@contextmanager
def opened(
    args: argparse.Namespace,
    build: Callable[[str], C],
    url: str | None = None,
    *,
    create: bool = False,
    option: str = "--url",
) -> Iterator[C]:
    """``build(url)`` (a saver or a store on ``url``, default ``--url``), closed on exit.

    ``create``: a SQLite file that does not exist may be created (``import``, the target
    of ``copy``); else it is refused (see :func:`require_database`). The URL is recorded
    as ``args.url_in_use`` for the error messages.

    Raises:
        CommandError: See :func:`require_database` and :func:`require_folder`.
    """
    url = url or args.url
    _require(url, option, create=create)
    args.url_in_use = url
    owner = build(url)
    try:
        yield owner
    finally:
        owner.close()


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
    """Our saver, :func:`opened` on ``url``, reading values as data (never rebuilding an
    object: :func:`.._transfer.sources.opaque_view`); its schema must be at head.
    ``threads``: thread ids that must have checkpoints there (see :func:`check_threads`:
    ``what`` says what was not done otherwise).

    Raises:
        CommandError: See :func:`opened` and :func:`check_threads`.
    """
    from langgraph.checkpoint.sqlalchemy._transfer.sources import opaque_view
    from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver

    def build(url: str) -> SQLAlchemySaver:
        # An operator's command fails fast on a server that is down (one retry, at
        # once). strict=False: the view below never rebuilds an object whatever the
        # environment.
        return SQLAlchemySaver.from_conn_string(
            url, schema=args.schema, retry_timeout=0, strict=False
        )

    with opened(args, build, url, create=create, option=option) as saver:
        check_threads(saver, threads, what)
        # Values as data (_codec/opaque.py): no command imports or calls what a row names.
        yield cast(SQLAlchemySaver, opaque_view(saver))


@contextmanager
def open_runner(args: argparse.Namespace) -> Iterator[SyncRunner]:
    """The door that :func:`open_saver`'s saver reads through on ``--url``, without the
    saver: for a command that runs a plan of the saver's on its own (``threads list``:
    :func:`.._plans.browse.threads_plan`), so that it imports neither LangGraph nor
    SQLAlchemy's asyncio extension.

    The same engine set-up (:func:`.._engine.engines.configure_engine`), access options, schema
    check (tables at head) and retry (one, at once) as the saver's, and the same errors
    for a URL, a missing driver or an absent SQLite file.

    Raises:
        CommandError: See :func:`require_database`.
    """
    from langgraph.checkpoint.sqlalchemy._engine.doors import Doors, SyncRunner, access_options
    from langgraph.checkpoint.sqlalchemy._engine.engines import (
        configure_engine,
        resolve_urls,
        url_engine,
    )
    from langgraph.checkpoint.sqlalchemy.dialects import query_builder

    _require(args.url, "--url", create=False)
    args.url_in_use = args.url
    urls = resolve_urls(args.url)
    urls.require_async()  # as the saver's from_conn_string does
    engine = url_engine(urls.sync)
    configure_engine(engine)
    try:
        qb = query_builder(engine.dialect.name)
        doors = Doors(engine, access_options(qb, args.schema))
        yield SyncRunner(doors, qb, args.schema, retry_timeout=0)
    finally:
        engine.dispose()


def check_threads(saver: Any, thread_ids: Sequence[str], what: str) -> None:
    """Refuse thread ids without any checkpoint in ``saver``, before anything changes
    (no ids: nothing to check).

    Raises:
        CommandError: Some are unknown (exit code 1); the message names them and ``what``
            was not done.
    """
    if not thread_ids:
        return
    from langgraph.checkpoint.sqlalchemy.transfer import missing_threads

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
