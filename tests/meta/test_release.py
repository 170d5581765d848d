"""Release hygiene: one version, named by the changelog.

``__version__`` is the line the build reads (``[tool.hatch.version]``), so the installed
distribution's version must be the same string; CHANGELOG.md must have a section for it.
The built wheel is checked too (test_wheel.py).
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import langgraph.checkpoint.sqlalchemy as package

REPO = Path(__file__).resolve().parents[2]


def test_version_is_the_distributions() -> None:
    assert package.__version__ == importlib.metadata.version("langgraph-checkpoint-sqlalchemy")


def test_changelog_names_the_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, flags=re.MULTILINE)
    assert package.__version__ in headings, headings
