"""What the command line imports before it does its work: ``--help``, ``--version``
and a usage error need the standard library only (no shtab either: only ``completion``
imports it); ``threads list`` and a saver that only reads and
writes checkpoints never load Alembic (nor ``rich``, the progress bar of ``copy``);
``threads list`` needs no saver, so it loads neither LangGraph nor LangChain (nor
SQLAlchemy's asyncio extension and ORM): SQLAlchemy's core and the package's SQL only.

Read from ``python -X importtime`` in a new interpreter, so that nothing this test
process already imported hides a module. No timing is asserted: which modules load is
what decides the start-up time, and it does not vary with the machine's load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from ..provision import BACKENDS, fresh_database

#: Heavy modules that only the commands using them may import.
DATABASE = ("sqlalchemy", "sqlalchemy.dialects.postgresql", "sqlalchemy.dialects.mysql")
LANGGRAPH = ("langchain_core", "langgraph.checkpoint.base", "pydantic", "ormsgpack")
MIGRATIONS = ("alembic",)
PROGRESS = ("rich",)
#: The generator of shell completion scripts (the ``completion`` command alone).
COMPLETION = ("shtab",)
SAVER = ("langgraph.checkpoint.sqlalchemy.saver", "langgraph.checkpoint.sqlalchemy.transfer")
#: What a saver needs and ``threads list`` does not (it runs the saver's plan on the sync door).
SAVER_ONLY = (
    "langchain_core",
    "langgraph.checkpoint.base",
    "langgraph.checkpoint.serde",
    "langgraph.checkpoint.sqlalchemy._codec.rows",
    "langgraph.checkpoint.sqlalchemy._engine.runner",
    "langgraph.checkpoint.sqlalchemy._plans.methods",
    "sqlalchemy.ext.asyncio",
    "sqlalchemy.orm",
)


def imported(*argv: str, env: dict[str, str] | None = None) -> tuple[set[str], str]:
    """The modules ``python -X importtime *argv`` imports, and its stdout.

    Raises:
        AssertionError: The process failed (its stderr is shown).
    """
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        env=env or _env(),
        timeout=120,
    )
    lines = done.stderr.splitlines()
    modules = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    errors = [line for line in lines if not line.startswith("import time:")]
    assert done.returncode in (0, 2), "\n".join(errors)
    return modules, done.stdout


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LANGGRAPH_CHECKPOINT_URL", None)
    return env


def cli(*args: str) -> list[str]:
    return ["-m", "langgraph.checkpoint.sqlalchemy", *args]


def loaded(modules: set[str], heavy: tuple[str, ...]) -> list[str]:
    """The ``heavy`` modules (or submodules of them) found in ``modules``."""
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


@pytest.mark.parametrize(
    "argv",
    [
        cli("--help"),
        cli("--version"),
        cli("threads", "list", "--help"),
        cli("copy", "--help"),
        cli("threads", "list", "--limit", "-1"),  # a usage error: exit 2 from argparse
        ["-c", "import langgraph.checkpoint.sqlalchemy"],
    ],
    ids=["help", "version", "threads-list-help", "copy-help", "usage-error", "import-package"],
)
def test_parser_and_package_import_no_database_library(argv: list[str]) -> None:
    modules, _ = imported(*argv)
    assert "langgraph.checkpoint.sqlalchemy" in modules
    heavy = DATABASE + LANGGRAPH + MIGRATIONS + PROGRESS + SAVER + COMPLETION
    assert loaded(modules, heavy) == []


def test_help_lists_every_command() -> None:
    _, out = imported(*cli("--help"))
    for command in ("upgrade", "current", "threads", "prune", "stats", "copy", "export"):
        assert command in out
    _, copy_help = imported(*cli("copy", "--help"))
    assert "{auto,sqlalchemy,sqlite,postgres}" in copy_help


@pytest.mark.parametrize("backend", [b for b in ("sqlite-file", "postgres") if b in BACKENDS])
def test_threads_list_and_a_saver_load_no_alembic(backend: str, tmp_path: Path) -> None:
    with fresh_database(backend, tmp_path, prefix="lgsa_start", filename="s.sqlite") as url:
        with SQLAlchemySaver.from_conn_string(url) as saver:
            saver.setup()
            config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            saver.put(config, empty_checkpoint(), {}, {})
        modules, out = imported(*cli("threads", "list", "--url", url))
        assert out.split()[:1] == ["THREAD"] and "\nt " in out
        assert loaded(modules, MIGRATIONS + PROGRESS) == []
        # An application's process: setup() on tables at head, then reads and writes.
        script = (
            "import sys; from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver\n"
            "with SQLAlchemySaver.from_conn_string(sys.argv[1]) as s:\n"
            "    s.setup(); print(len(list(s.list(None))))\n"
        )
        modules, out = imported("-c", script, url)
        assert out.strip() == "1"
        assert loaded(modules, MIGRATIONS + PROGRESS) == []


@pytest.mark.parametrize(
    "args",
    [(), ("--json", "--limit", "1", "--after", "t"), ("--idle-for", "1s", "--offset", "1")],
    ids=["plain", "json-after", "idle-offset"],
)
def test_threads_list_on_sqlite_loads_no_langgraph(args: tuple[str, ...], tmp_path: Path) -> None:
    """``threads list`` reads through the saver's door without the saver: none of
    LangChain, LangGraph's checkpoint base and serializers, Alembic (nor the saver's async
    door, SQLAlchemy's asyncio extension and ORM) is imported, whatever its options."""
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        for thread in ("t", "u"):
            config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            saver.put(config, empty_checkpoint(), {}, {})
    modules, out = imported(*cli("threads", "list", "--url", url, *args))
    assert out.strip(), "threads list printed nothing"
    if not args:
        assert out.split()[:1] == ["THREAD"] and "\nt " in out and "\nu " in out
    assert "langgraph.checkpoint.sqlalchemy._ops.browse" in modules  # it did list
    assert loaded(modules, SAVER_ONLY + SAVER + MIGRATIONS + PROGRESS) == []
