"""The one default database URL of the package and the environment variable that
overrides it: the saver's server factory, the CLI and Alembic's ``env.py`` read them
from here (through :mod:`._engine.engines`, which re-exports them); and
``LANGGRAPH_CHECKPOINT_SETUP``, which the saver's and the store's server factories read.

A module of its own, with no import beyond the standard library, so that the command
line can build its parser (``--help``) without SQLAlchemy.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_URL", "URL_ENV", "setup_from_env", "url_from_env"]

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


_NO = {"0", "false", "no", "off"}
_YES = {"1", "true", "yes", "on"}


def setup_from_env() -> bool:
    """``LANGGRAPH_CHECKPOINT_SETUP``, parsed strictly: yes (the default) runs the
    migrations when a server factory starts, no skips them; anything else is an error
    (``disable`` used to mean "yes" and migrate).

    Raises:
        ValueError: Neither a yes (1/true/yes/on) nor a no (0/false/no/off).
    """
    value = os.environ.get("LANGGRAPH_CHECKPOINT_SETUP", "1").strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise ValueError(
        f"LANGGRAPH_CHECKPOINT_SETUP={value!r} is not understood: use 1/true/yes/on to run "
        "the migrations at start (the default) or 0/false/no/off to skip them"
    )
