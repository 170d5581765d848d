"""Command line: migrate the checkpoint tables, browse and maintain threads, move data.

``python -m langgraph.checkpoint.sqlalchemy COMMAND`` (also installed as
``langgraph-checkpoint-sqlalchemy``; ``--version`` prints the package's version). The URL
comes from ``--url``, else the environment variable ``LANGGRAPH_CHECKPOINT_URL``, else
``sqlite:///checkpoints.sqlite``. Output is for people by default; ``--json`` prints one
JSON document for scripts. Destructive commands ask for confirmation unless ``--yes``.
Long commands (``prune``, ``export``, ``import``, ``copy``, ``store copy``,
``reindex-metadata``) show a progress bar on stderr when it is a terminal (not with
``--json`` or ``--no-progress``). Every command's ``--help`` has examples, the
environment variables it reads and its exit codes (worded once, in :mod:`.helptext`);
``completion bash|zsh|tcsh`` prints a shell completion script (:mod:`.completion`).

Exit codes: 0 ok; 1 a check failed or something was not found (``current --check`` not
at head, a refused confirmation, a failed copy verification, an unknown thread, no
database at the path or URL, a server that cannot be reached, tables at another
revision); 2 usage (argparse's own code, also for a bad URL, an unknown or missing
driver, a bad argument value or file); 141 stdout closed early (``... | head``), as a
process killed by SIGPIPE; 130 interrupted.

Every error is one line on stderr, ``error: <what happened>. <what to do>``, with the
password of any URL masked; no traceback. Only a bug of this program prints one.

This module builds the parser (:func:`build_parser`) and runs :func:`main`;
:mod:`.explain` words a failed command's error. The commands live in one module each by
what they work on, and import only :mod:`.common` (their error, output, argument types,
help text, opening the database) and :mod:`.progress` (the progress bar), never each
other or this module:

- :mod:`.schema`: ``upgrade``, ``downgrade``, ``current``, ``stamp``, ``reindex-metadata``;
- :mod:`.threads`: ``threads list|show|delete``, ``prune``, ``copy-thread``, ``stats``;
- :mod:`.data`: ``copy``, ``export``, ``import``;
- :mod:`.store`: ``store list-namespaces|stats|sweep|copy`` (the long-term memory store);
- :mod:`.completion`: ``completion``, which is handed the finished parser.

Building the parser imports no database library: the command modules import SQLAlchemy,
Alembic, LangGraph and the saver inside the commands that need them, so that ``--help``
and a usage error start fast and each command pays only for what it runs
(``tests/cli/test_cli_startup.py`` checks which modules ``--help`` and ``threads list`` import).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextvars import ContextVar
from typing import NoReturn

from langgraph.checkpoint.sqlalchemy import __version__
from langgraph.checkpoint.sqlalchemy._codec.display import masked_text
from langgraph.checkpoint.sqlalchemy._engine.defaults import DEFAULT_URL, url_from_env
from langgraph.checkpoint.sqlalchemy.cli import completion, data, schema, store, threads
from langgraph.checkpoint.sqlalchemy.cli.common import PROG, SCHEMA_ENV, Handler
from langgraph.checkpoint.sqlalchemy.cli.explain import explain, one_line
from langgraph.checkpoint.sqlalchemy.cli.helptext import help_texts

__all__ = ["build_parser", "main"]


#: The arguments :func:`main` is parsing: what a usage error may quote.
_ARGV: ContextVar[tuple[str, ...]] = ContextVar("lgsa_cli_argv", default=())


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors show no password: ``threads list URL``
    (``--url`` forgotten) reports the URL as an unrecognized argument, shown as
    :func:`.display.shown_url` shows it (a connection string libpq would refuse, not
    at all)."""

    def error(self, message: str) -> NoReturn:
        argv = _ARGV.get()
        super().error(masked_text(message, *argv, *_option_values(argv), url_from_env()))


def _option_values(argv: Sequence[str]) -> list[str]:
    """The values of the ``--option=value`` arguments of ``argv`` (``--url=...``)."""
    return [a.partition("=")[2] for a in argv if a.startswith("--") and "=" in a]


def _common() -> argparse.ArgumentParser:
    # Global options are accepted before or after the command ("upgrade --url URL").
    common = _Parser(add_help=False)
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


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser: every command, its options and its ``--help`` text.

    Building it imports no database library. It is what ``completion`` turns into a
    shell script, and what a tool reading argparse parsers (documentation, other
    completion generators) can be given.

    Returns:
        A new parser; ``parse_args`` sets ``handler``, the function that runs the command.
    """
    common = _common()
    parser = _Parser(
        prog=PROG,
        **help_texts(
            """Manage the checkpoint tables, threads and store of
            langgraph-checkpoint-sqlalchemy: migrations, browsing, retention, moving data.
            Global options go before or after the command; each command's --help has
            examples.""",
            [
                "upgrade",
                "current --check",
                "threads list --url postgresql+psycopg://app@db/agents",
                "--yes prune --idle-for 30d",
                "export --all -o backup.jsonl",
            ],
            failed="""a check failed or something was not found: current --check not at
            head, a refused confirmation, a failed copy verification, an unknown thread,
            no database at the path, a server that cannot be reached, tables at another
            revision""",
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {__version__}", help="print the version"
    )
    parser.add_argument(
        "--url",
        default=url_from_env(),
        help="database URL or SQLite path (default: $LANGGRAPH_CHECKPOINT_URL, else "
        f"{DEFAULT_URL})",
    )
    parser.add_argument(
        "--schema",
        default=os.environ.get(SCHEMA_ENV),
        help=f"PostgreSQL schema of the tables (default: ${SCHEMA_ENV})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--yes", "-y", action="store_true", help="do not ask before destructive steps"
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="what to do (COMMAND --help)"
    )
    schema.add_commands(sub, common)
    threads.add_commands(sub, common)
    data.add_commands(sub, common)
    store.add_commands(sub, common)
    completion.add_commands(sub, parser)
    return parser


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
    argv = list(sys.argv[1:] if argv is None else argv)
    given = _ARGV.set(tuple(argv))
    try:
        args = build_parser().parse_args(argv)
    finally:
        _ARGV.reset(given)
    handler: Handler = args.handler
    # Every argument may be a URL, even where none is expected (``stamp URL``: a
    # revision that an error quotes): the secrets of all of them are masked.
    urls = [
        u
        for u in (args.url, getattr(args, "source", None), getattr(args, "target", None), *argv)
        if isinstance(u, str)
    ] + _option_values(argv)
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
        print(f"error: {one_line(message, urls)}", file=sys.stderr)
        return code
