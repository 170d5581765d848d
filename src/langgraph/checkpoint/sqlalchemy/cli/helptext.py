"""The ``--help`` text every command shares: its description, examples, the environment
variables it reads and its exit codes, laid out by one helper (:func:`help_texts`) so
that no command words them on its own.

A command passes what is its own (what it does, how it is run, what exit code 1 means
for it); the environment table and the other exit codes are this module's. Importing it
costs the standard library only (``--help`` loads no database library).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.sqlalchemy._engine.defaults import DEFAULT_URL, URL_ENV

__all__ = [
    "DATABASE_ENV",
    "FILE_COMPLETION",
    "NOT_FOUND",
    "NO_DATABASE",
    "PROG",
    "SCHEMA_ENV",
    "URL_ENV_HELP",
    "HelpFormatter",
    "help_texts",
]

#: The program's name, as installed (``python -m langgraph.checkpoint.sqlalchemy`` too).
PROG = "langgraph-checkpoint-sqlalchemy"

#: The environment variable of the schema, read when ``--schema`` is not given.
SCHEMA_ENV = "LANGGRAPH_CHECKPOINT_SCHEMA"

#: ``(variable, what it gives)`` of the database URL.
URL_ENV_HELP = (URL_ENV, f"the database when --url is not given (else {DEFAULT_URL})")
#: The variables every command on ``--url`` reads.
DATABASE_ENV: tuple[tuple[str, str], ...] = (
    URL_ENV_HELP,
    (SCHEMA_ENV, "the PostgreSQL schema of the tables when --schema is not given"),
)

#: What exit code 1 means for a command on the database: it was not there as needed.
NO_DATABASE = (
    "not found: no database at the SQLite path, a server that cannot be reached, tables "
    "at another revision than this package's"
)
#: What exit code 1 means for most commands: that, or a thread named that has no checkpoint.
NOT_FOUND = f"{NO_DATABASE}, an unknown thread"

#: How shells complete a file name (shtab's ``FILE``, written out so that building the
#: parser does not import shtab): set as an argument's ``complete`` attribute.
FILE_COMPLETION = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}

_WIDTH = 79


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter that keeps the description and epilog as :func:`help_texts`
    laid them out (paragraphs, tables of variables and exit codes)."""


def _wrapped(text: str) -> str:
    """Each paragraph of ``text`` (separated by blank lines) filled to the help's width."""
    return "\n\n".join(
        textwrap.fill(
            " ".join(p.split()),
            _WIDTH,
            break_on_hyphens=False,
        )
        for p in text.strip().split("\n\n")
    )


def _table(title: str, rows: Sequence[tuple[str, str]]) -> str:
    width = max(len(name) for name, _ in rows) + 2
    lines = [f"{title}:"]
    for name, text in rows:
        first = f"  {name.ljust(width)}"
        lines.append(
            textwrap.fill(
                " ".join(text.split()),
                _WIDTH,
                initial_indent=first,
                subsequent_indent=" " * len(first),
                break_on_hyphens=False,
            )
        )
    return "\n".join(lines)


def help_texts(
    about: str,
    examples: Sequence[str],
    *,
    env: Sequence[tuple[str, str]] = DATABASE_ENV,
    failed: str | None = NOT_FOUND,
    interrupted: str = "interrupted (Ctrl-C)",
) -> dict[str, Any]:
    """The keyword arguments of a command's parser that make its ``--help``: the
    description (``about``, filled) and an epilog of examples, environment variables and
    exit codes.

    Args:
        about: What the command does, in sentences; blank lines separate paragraphs.
        examples: Command lines after the program's name (at least one).
        env: ``(variable, what it gives)`` for each environment variable the command
            reads; empty: none.
        failed: What exit code 1 means for the command; None: it never exits 1.
        interrupted: What exit code 130 means for the command.

    Returns:
        ``description``, ``epilog`` and ``formatter_class`` for ``add_parser`` or
        ``ArgumentParser``.

    Raises:
        ValueError: No example.
    """
    if not examples:
        raise ValueError("a command's help needs at least one example")
    shown = "\n".join(f"  {PROG} {example}" for example in examples)
    codes = [("0", "done")]
    codes += [("1", failed)] if failed else []
    codes += [
        ("2", "usage: a bad argument, option value, URL or file; a missing driver"),
        ("130", interrupted),
        ("141", "stdout was closed early (... | head)"),
    ]
    variables = list(env) or [("(none)", "this command reads no environment variable")]
    epilog = "\n\n".join(
        [f"examples:\n{shown}", _table("environment", variables), _table("exit codes", codes)]
    )
    return {"description": _wrapped(about), "epilog": epilog, "formatter_class": HelpFormatter}
