"""The declared SQLAlchemy range ends at the newest minor tested, and CI tries the next.

- ``pyproject.toml`` bounds SQLAlchemy above by a minor release (``<X.Y``), never by a
  major one: the next minor may change a private name the hot path relies on
  (``dialects/_sqlalchemy_private.py``);
- docs/index.md names the same bound;
- ``.ci/run`` calls ``.ci/newest`` after the lowest-versions stage, which installs the
  project with its test extras, then the newest SQLAlchemy the index serves
  (pre-releases included), and runs the engine tests.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]


def _commands(path: Path) -> list[str]:
    """The lines of a shell script that run something: no comments, no blank lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def _sqlalchemy() -> Requirement:
    reqs = importlib.metadata.requires("langgraph-checkpoint-sqlalchemy") or []
    return next(
        r for r in map(Requirement, reqs) if r.name.lower() == "sqlalchemy" and r.marker is None
    )


def test_sqlalchemy_is_bounded_by_a_minor_release() -> None:
    specs = {s.operator: s.version for s in _sqlalchemy().specifier}
    assert set(specs) == {">=", "<"}, specs
    upper = Version(specs["<"])
    assert len(upper.release) == 2 and upper.minor >= 1, (
        f"the upper bound {upper}: a minor release (<X.Y), the newest minor tested plus one"
    )
    assert Version(specs[">="]) < upper


def test_the_docs_name_the_declared_bound() -> None:
    upper = next(s.version for s in _sqlalchemy().specifier if s.operator == "<")
    docs = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert f"SQLAlchemy's upper bound, `<{upper}`," in docs
    development = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    assert f"(`<{upper}`:" in development


def test_ci_runs_the_newest_sqlalchemy_stage_after_the_lowest_versions() -> None:
    commands = _commands(REPO / ".ci" / "run")
    assert "bash .ci/newest" in commands
    assert commands.index("bash .ci/newest") > commands.index("bash .ci/lowest")


def test_the_newest_stage_installs_the_newest_sqlalchemy_after_the_project() -> None:
    script = _commands(REPO / ".ci" / "newest")
    project = script.index('.venv-newest/bin/python -m pip install -q -e ".[test]"')
    newest = script.index(
        '.venv-newest/bin/python -m pip install -q --pre --upgrade "sqlalchemy[asyncio]"'
    )
    tests = next(i for i, line in enumerate(script) if "-m pytest" in line)
    assert project < newest < tests
    assert script[tests].split("-m pytest", 1)[1].split("||")[0].strip().endswith("tests/engine")
