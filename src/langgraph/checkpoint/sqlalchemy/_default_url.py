"""The one default database URL of the package and the environment variable that
overrides it: the saver's server factory, the CLI and Alembic's ``env.py`` read them
from here (through :mod:`._engines`, which re-exports them).

A module of its own, with no import beyond the standard library, so that the command
line can build its parser (``--help``) without SQLAlchemy.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_URL", "URL_ENV", "url_from_env"]

#: The database used when neither an argument nor :data:`URL_ENV` names one: an embedded
#: SQLite file in the working directory.
DEFAULT_URL = "sqlite:///checkpoints.sqlite"

#: The environment variable that names the database URL.
URL_ENV = "LANGGRAPH_CHECKPOINT_URL"


def url_from_env() -> str:
    """The database URL from the environment.

    Returns:
        ``$LANGGRAPH_CHECKPOINT_URL`` when it is set and not empty, else
        :data:`DEFAULT_URL`.
    """
    return os.environ.get(URL_ENV) or DEFAULT_URL
