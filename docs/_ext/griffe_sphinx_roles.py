"""Griffe extension for the docs build: render Sphinx roles in docstrings as code.

The docstrings under ``src/`` are Google style but cross-reference with Sphinx roles
(``:meth:`close```, ``:mod:`._inline```, ``:data:`~.schema.VERSION_TABLE```), which
Markdown would print as ``:meth:close``. This turns each role into a code span of its
target (``~`` keeps the last component, a leading ``.`` is dropped), without linking:
several targets are private modules that the reference does not render.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:mod|class|meth|func|data|attr|exc|obj|const):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2).lstrip(".")
    if short:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def strip_roles(text: str) -> str:
    """``text`` with every Sphinx role replaced by a code span of its target."""
    return _ROLE.sub(_code, text)


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring as it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = strip_roles(obj.docstring.value)
