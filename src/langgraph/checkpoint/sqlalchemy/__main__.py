"""``python -m langgraph.checkpoint.sqlalchemy``: see :mod:`.cli`."""

from __future__ import annotations

from langgraph.checkpoint.sqlalchemy.cli import main

raise SystemExit(main())
