"""The built wheel works outside the repository: migrations ship inside it.

Builds the wheel, installs it (non-editable) into a fresh venv, then, from an empty
directory, runs ``python -m langgraph.checkpoint.sqlalchemy upgrade --url sqlite:///x.db``
and a LangGraph graph persisted on that file; checks that the wheel's version is the
package's ``__version__``, and runs ``alembic`` with the ini file docs/migrations.md shows
(the scripts as a package resource).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

from langgraph.checkpoint.sqlalchemy import migrate

from ..migrations.test_alembic_ini import documented_ini

REPO = Path(__file__).resolve().parents[2]

VERSIONS = (
    "import importlib.metadata as m, langgraph.checkpoint.sqlalchemy as p; "
    "print(p.__version__, m.version('langgraph-checkpoint-sqlalchemy'))"
)


GRAPH = textwrap.dedent(
    """
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import START, StateGraph
    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

    class State(TypedDict):
        items: Annotated[list[str], operator.add]

    builder = StateGraph(State)
    builder.add_node("add", lambda s: {"items": ["step"]})
    builder.add_edge(START, "add")
    config = {"configurable": {"thread_id": "wheel"}}
    for _ in range(2):
        with SQLAlchemySaver.from_conn_string("sqlite:///x.db") as saver:
            saver.setup()
            out = builder.compile(checkpointer=saver).invoke({"items": ["in"]}, config)
    assert out["items"] == ["in", "step", "in", "step"], out
    print("ok", out["items"])
    """
)


def test_wheel_installs_and_migrates_outside_the_repo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(REPO)],
        check=True,
    )
    (wheel,) = dist.glob("*.whl")
    # The scripts once each: from migrations/, not a second time through the package's
    # link to it (a checkout), every file of the folder.
    names = zipfile.ZipFile(wheel).namelist()
    assert len(names) == len(set(names)), "a file is in the wheel twice"
    inside = "langgraph/checkpoint/sqlalchemy/migrations/"
    shipped = {n.removeprefix(inside) for n in names if n.startswith(inside)}
    assert shipped == {
        p.relative_to(REPO / "migrations").as_posix()
        for p in (REPO / "migrations").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(wheel), "langgraph>=1.2"], check=True
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    up = subprocess.run(
        [str(py), "-m", "langgraph.checkpoint.sqlalchemy", "upgrade", "--url", "sqlite:///x.db"],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
    )
    assert f"revision {migrate.head_revision()}" in up.stdout
    run = subprocess.run(
        [str(py), "-c", GRAPH], cwd=work, check=True, capture_output=True, text=True
    )
    assert run.stdout.startswith("ok"), run.stdout + run.stderr

    # One version: the wheel's file name, its metadata and the package's __version__.
    shown = subprocess.run([str(py), "-c", VERSIONS], check=True, capture_output=True, text=True)
    package_version, dist_version = shown.stdout.split()
    assert package_version == dist_version == wheel.name.split("-")[1]

    # The documented ini file: the installed scripts, the database its sqlalchemy.url names.
    (work / "lgsa-alembic.ini").write_text(
        documented_ini("sqlite:///%(here)s/ini.db"), encoding="utf-8"
    )
    alembic = [str(py), "-m", "alembic", "-c", "lgsa-alembic.ini"]
    subprocess.run([*alembic, "upgrade", "head"], cwd=work, check=True, capture_output=True)
    current = subprocess.run(
        [*alembic, "current"], cwd=work, check=True, capture_output=True, text=True
    )
    assert migrate.head_revision() in current.stdout
    assert (work / "ini.db").is_file()
