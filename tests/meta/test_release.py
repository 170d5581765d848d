"""Release hygiene: one version, named by the changelog.

``__version__`` is the line the build reads (``[tool.hatch.version]``), so the installed
distribution's version must be the same string; CHANGELOG.md must have a section for it.
The built wheel is checked too (test_wheel.py).
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import langgraph.checkpoint.sqlalchemy as package

REPO = Path(__file__).resolve().parents[2]


def test_version_is_the_distributions() -> None:
    assert package.__version__ == importlib.metadata.version("langgraph-checkpoint-sqlalchemy")


def test_changelog_names_the_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, flags=re.MULTILINE)
    assert package.__version__ in headings, headings


# -- the declared lower bounds are tested ------------------------------------------------


def _commands(path: Path) -> list[str]:
    """The lines of a shell script that run something: no comments, no blank lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_ci_runs_the_lowest_versions_stage_after_the_main_tests() -> None:
    commands = _commands(REPO / ".ci" / "run")
    assert "bash .ci/lowest" in commands
    assert commands.index("bash .ci/lowest") > commands.index(".venv/bin/python -m pytest")


def test_lowest_versions_stage_installs_the_declared_floors_and_runs_the_graph_tests() -> None:
    script = "\n".join(_commands(REPO / ".ci" / "lowest"))
    install = next(line for line in script.splitlines() if line.startswith('"$uv" pip install'))
    assert "--resolution lowest-direct" in install
    assert '-e ".[test]"' in install
    assert "LGSA_TEST_BACKENDS=sqlite-file,sqlite-memory" in script
    for tests in ("test_conformance.py", "test_graphs.py", "test_delta_graphs.py"):
        assert f"tests/end_to_end/{tests}" in script


def test_documented_lowest_versions_are_the_declared_floors() -> None:
    """The table of lowest versions in docs/index.md says what pyproject.toml declares."""
    floors: dict[str, Version] = {}
    for line in importlib.metadata.requires("langgraph-checkpoint-sqlalchemy") or []:
        req = Requirement(line)
        for spec in req.specifier:
            if spec.operator == ">=":
                floors.setdefault(canonicalize_name(req.name), Version(spec.version))
    docs = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    section = docs.split("### Lowest versions", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| ([A-Za-z][\w.-]*)[^|]* \| (\d[\w.]*) \|", section, flags=re.MULTILINE)
    documented = {canonicalize_name(name): Version(version) for name, version in rows}
    assert documented, section
    assert {name: floors.get(name) for name in documented} == documented
    runtime = {
        canonicalize_name(Requirement(line).name)
        for line in importlib.metadata.requires("langgraph-checkpoint-sqlalchemy") or []
        if Requirement(line).marker is None
    }
    assert runtime <= documented.keys()
