"""``python -m langgraph.checkpoint.sqlalchemy.cli``: the same as
``python -m langgraph.checkpoint.sqlalchemy`` (see :mod:`langgraph.checkpoint.sqlalchemy.cli`)."""

from __future__ import annotations

from langgraph.checkpoint.sqlalchemy.cli import main

raise SystemExit(main())
