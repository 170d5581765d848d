"""Command line: migrate the checkpoint tables, browse and maintain threads, move data.

``python -m langgraph.checkpoint.sqlalchemy COMMAND`` (also installed as
``langgraph-checkpoint-sqlalchemy``). The URL comes from ``--url``, else the environment
variable ``LANGGRAPH_CHECKPOINT_URL``, else ``sqlite:///checkpoints.sqlite``. Output is
for people by default; ``--json`` prints one JSON document for scripts. Destructive
commands ask for confirmation unless ``--yes``.

Exit codes: 0 ok, 1 check failed (``current --check`` behind head, a refused
confirmation, a failed copy verification), 2 usage (argparse's own code, also for a bad
URL or argument value).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, create_engine
from sqlalchemy.pool import NullPool

from . import migrate
from .dialects import WRITE_OPTION, configure_engine, resolve_urls
from .errors import DatabaseURLError

__all__ = ["main"]

DEFAULT_URL = "sqlite:///checkpoints.sqlite"

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


def where(args: argparse.Namespace) -> str:
    """The database URL of ``args`` with the password hidden."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(resolve_urls(args.url).sync).render_as_string(hide_password=True)
    except Exception:
        return str(args.url)


# -- connections -------------------------------------------------------------------------


@contextmanager
def schema_connection(args: argparse.Namespace) -> Iterator[Connection]:
    """A write transaction on ``--url`` for schema commands (no saver, no schema check)."""
    engine = create_engine(resolve_urls(args.url).sync, poolclass=NullPool)
    configure_engine(engine)
    try:
        with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            yield conn
    finally:
        engine.dispose()


@contextmanager
def open_saver(args: argparse.Namespace, url: str | None = None) -> Iterator[Any]:
    """Our saver on ``url`` (default ``--url``); its schema must be at head."""
    from .saver import SQLAlchemySaver

    saver = SQLAlchemySaver.from_conn_string(url or args.url, schema=args.schema)
    try:
        yield saver
    finally:
        saver.close()


# -- schema commands -----------------------------------------------------------------------


def _revision_line(args: argparse.Namespace, current: str | None) -> None:
    print(f"{where(args)}: revision {current or 'none'} (head {migrate.head_revision()})")


def cmd_upgrade(args: argparse.Namespace) -> int:
    if args.sql:
        sys.stdout.write(migrate.offline_sql(args.url, "upgrade", args.revision, args.schema))
        return 0
    with schema_connection(args) as conn:
        migrate.upgrade(conn, args.revision, schema=args.schema)
        current = migrate.current_revision(conn, schema=args.schema)
    emit(args, _revision_json(current), lambda: _revision_line(args, current))
    return 0


def cmd_downgrade(args: argparse.Namespace) -> int:
    if args.sql:
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
        return 1
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    with schema_connection(args) as conn:
        migrate.stamp(conn, args.revision, schema=args.schema)
        current = migrate.current_revision(conn, schema=args.schema)
    emit(args, _revision_json(current), lambda: _revision_line(args, current))
    return 0


def _revision_json(current: str | None) -> dict[str, Any]:
    head = migrate.head_revision()
    return {"revision": current, "head": head, "at_head": current == head}


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
        default=os.environ.get("LANGGRAPH_CHECKPOINT_URL", DEFAULT_URL),
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 ok, 1 a check failed or a confirmation was refused, 2 usage
        (argparse exits with 2 itself).
    """
    args = _parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except CommandError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    except DatabaseURLError as e:  # a bad URL or a missing driver: usage, exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
