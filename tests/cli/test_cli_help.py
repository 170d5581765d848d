"""Every command's ``--help`` says what it does, shows how to run it, names the
environment variables it reads and its exit codes; every argument says what it is; the
examples are command lines the parser accepts; ``--version`` names the package's version.

The parsers are read from the CLI's own parser tree (:func:`parsers`), so a new command
or argument is checked here without a change to this file.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

import pytest

from langgraph.checkpoint.sqlalchemy import __version__
from langgraph.checkpoint.sqlalchemy.cli import build_parser

PROG = "langgraph-checkpoint-sqlalchemy"
#: Commands that read no database URL: they name no ``LANGGRAPH_CHECKPOINT_URL``.
NO_URL_ENV = {"copy", "completion"}


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the CLI, the top one (``""``), groups and commands, by path."""
    found: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}".strip())

    walk(build_parser(), "")
    return found


PARSERS = parsers()
IDS = [path or "(top)" for path, _ in PARSERS]


def section(epilog: str, title: str) -> list[str]:
    """The lines of the epilog's section ``title:``, up to the next blank line."""
    lines = epilog.splitlines()
    assert f"{title}:" in lines, f"no {title!r} section"
    body = lines[lines.index(f"{title}:") + 1 :]
    return body[: body.index("")] if "" in body else body


def examples(parser: argparse.ArgumentParser) -> list[list[str]]:
    """The example command lines of a parser's help, as arguments (after the program's
    name; a shell redirection, pipe or comment ends one)."""
    found = []
    for line in section(parser.epilog or "", "examples"):
        words = shlex.split(line, comments=True)
        assert words[0] == PROG, line
        ends = [i for i, w in enumerate(words) if w in (">", "<", "|", "||", "&&")]
        found.append(words[1 : ends[0] if ends else None])
    return found


def test_the_whole_tree_is_walked() -> None:
    paths = {path for path, _ in PARSERS}
    assert {"", "threads", "threads show", "store", "store copy", "export", "completion"} <= paths
    assert len(paths) >= 22


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=IDS)
def test_every_parser_has_a_description_examples_environment_and_exit_codes(
    path: str, parser: argparse.ArgumentParser
) -> None:
    assert parser.description and len(parser.description.split()) >= 5, path
    epilog = parser.epilog or ""
    assert examples(parser), f"{path}: no example"
    variables = " ".join(section(epilog, "environment"))
    if path.split(" ")[-1] not in NO_URL_ENV:
        assert "LANGGRAPH_CHECKPOINT_URL" in variables, path
    codes = [line.split()[0] for line in section(epilog, "exit codes") if line[2:3].isdigit()]
    assert codes[0] == "0" and "2" in codes, (path, codes)
    assert all(len(line) <= 100 for line in epilog.splitlines()), path
    # shown as written: the formatter keeps the tables' layout
    assert epilog in parser.format_help()


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=IDS)
def test_every_argument_has_help_text(path: str, parser: argparse.ArgumentParser) -> None:
    bare = [
        action.option_strings[0] if action.option_strings else action.dest
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
        and (not action.help or action.help == argparse.SUPPRESS)
    ]
    assert not bare, f"{path or '(top)'}: no help text for {bare}"


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=IDS)
def test_every_example_is_a_command_line_the_parser_accepts(
    path: str, parser: argparse.ArgumentParser
) -> None:
    for argv in examples(parser):
        args = build_parser().parse_args(argv)  # a usage error exits 2: the test fails
        assert callable(args.handler), argv
        assert " ".join(argv).startswith(path) or path == "" or argv[0].startswith("-"), argv


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_CHECKPOINT_URL"}
    return subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("argv", [["store", "copy"], ["threads", "show"], ["reindex-metadata"]])
def test_help_of_a_command_shows_its_examples_environment_and_exit_codes(
    argv: list[str],
) -> None:
    done = run(*argv, "--help")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"examples:\n  {PROG} {' '.join(argv)}" in out
    assert "environment:\n  LANGGRAPH_CHECKPOINT_URL " in out
    assert "exit codes:\n  0    done\n  1    " in out
    assert "\n  141  stdout was closed early" in out


def test_version_prints_the_package_version() -> None:
    done = run("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{PROG} {__version__}\n", "")
