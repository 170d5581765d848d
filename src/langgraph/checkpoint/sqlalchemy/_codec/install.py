"""What to install, as the package's messages say it.

Every hint names the command for the package index and the one for a checkout of the
repository: before the package is published, or for a change of one's own, the first
fails and the second is the one that works.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "install_hint"]

#: The distribution's name on the package index.
DISTRIBUTION = "langgraph-checkpoint-sqlalchemy"


def install_hint(extra: str | None = None) -> str:
    """The commands that install the package with ``extra`` (None: the package alone).

    Args:
        extra: An optional-dependency group of the package (``"postgres"``, ``"mysql"``).

    Returns:
        For example ``the extra "postgres": pip install
        "langgraph-checkpoint-sqlalchemy[postgres]" (from a checkout of the repository:
        pip install -e ".[postgres]")``.
    """
    if extra is None:
        return f'pip install "{DISTRIBUTION}" (from a checkout of the repository: pip install -e .)'
    return (
        f'the extra "{extra}": pip install "{DISTRIBUTION}[{extra}]" '
        f'(from a checkout of the repository: pip install -e ".[{extra}]")'
    )
