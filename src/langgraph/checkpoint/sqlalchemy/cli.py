"""Command line: migrate the checkpoint tables of a database.

``python -m langgraph.checkpoint.sqlalchemy upgrade --url URL`` (also installed as
``langgraph-checkpoint-sqlalchemy``). The URL comes from ``--url``, else the environment
variable ``LANGGRAPH_CHECKPOINT_URL``, else ``sqlite:///checkpoints.sqlite``.
Exit codes: 0 ok, 1 check failed (``current --check`` behind head), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from . import migrate
from .dialects import WRITE_OPTION, configure_engine, resolve_urls

__all__ = ["main"]

DEFAULT_URL = "sqlite:///checkpoints.sqlite"


def _parser() -> argparse.ArgumentParser:
    # --url/--schema are accepted before or after the command ("upgrade --url URL").
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS, help="database URL or SQLite path")
    common.add_argument("--schema", default=argparse.SUPPRESS, help="PostgreSQL schema")
    parser = argparse.ArgumentParser(
        prog="langgraph-checkpoint-sqlalchemy",
        description="Manage the checkpoint tables of langgraph-checkpoint-sqlalchemy.",
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
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("upgrade", parents=[common], help="migrate the tables up (to head)")
    up.add_argument("revision", nargs="?", default="head")
    down = sub.add_parser(
        "downgrade", parents=[common], help="migrate down to REVISION ('base' drops our tables)"
    )
    down.add_argument("revision")
    cur = sub.add_parser("current", parents=[common], help="print the database's revision")
    cur.add_argument("--check", action="store_true", help="exit 1 unless at head")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 ok, 1 ``current --check`` found the database behind, 2 usage
        (argparse exits with 2 itself).
    """
    args = _parser().parse_args(argv)
    engine = create_engine(resolve_urls(args.url).sync, poolclass=NullPool)
    configure_engine(engine)
    try:
        with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            if args.command == "upgrade":
                migrate.upgrade(conn, args.revision, schema=args.schema)
            elif args.command == "downgrade":
                migrate.downgrade(conn, args.revision, schema=args.schema)
            current = migrate.current_revision(conn, schema=args.schema)
    finally:
        engine.dispose()
    head = migrate.head_revision()
    where = engine.url.render_as_string(hide_password=True)
    print(f"{where}: revision {current or 'none'} (head {head})")
    if args.command == "current" and args.check and current != head:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
