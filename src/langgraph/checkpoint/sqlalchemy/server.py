"""A checkpointer factory for LangGraph server (``langgraph.json``).

```json
{"checkpointer": {"path": "langgraph.checkpoint.sqlalchemy.server:checkpointer"}}
```

The server enters :func:`checkpointer` once at start and uses the saver it yields for
every run; the engines are disposed when the server stops.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.sqlalchemy._codec.strict import strict_setting
from langgraph.checkpoint.sqlalchemy._engine.defaults import setup_from_env
from langgraph.checkpoint.sqlalchemy._engine.engines import url_from_env
from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver

__all__ = ["checkpointer"]


@asynccontextmanager
async def checkpointer() -> AsyncIterator[SQLAlchemySaver]:
    """Yield a :class:`SQLAlchemySaver` configured from the environment.

    Environment:
        LANGGRAPH_CHECKPOINT_URL: Database URL (default ``sqlite:///checkpoints.sqlite``).
        LANGGRAPH_CHECKPOINT_SCHEMA: PostgreSQL schema of the tables (default: search path).
        LANGGRAPH_CHECKPOINT_SETUP: ``0``/``false``/``no``/``off`` to skip running the
            migrations at start (when a deploy step runs ``upgrade``); by default (or
            ``1``/``true``/``yes``/``on``) :meth:`~SQLAlchemySaver.asetup` runs, which is
            idempotent and safe from several replicas at once. Any other value is an
            error.
        LANGGRAPH_CHECKPOINT_STRICT: The saver's ``strict`` mode, ON by default here (a
            server's database is shared, so a forged row must not run code):
            ``0``/``false``/``no``/``off`` for LangGraph's permissive default. Unset, an
            explicit ``LANGGRAPH_STRICT_MSGPACK`` decides; any other value is an error.
            Graphs compiled with ``LANGGRAPH_STRICT_MSGPACK=true`` pass their state
            types to the saver (``with_allowlist``); an object outside the allowlist is
            never rebuilt and reads back as its stored fields, as LangGraph's
            serializer returns it (``strict_decode`` stays off); see docs/security.md.

    Yields:
        The saver; its engines are disposed on exit.

    Raises:
        ValueError: ``LANGGRAPH_CHECKPOINT_SETUP`` or ``LANGGRAPH_CHECKPOINT_STRICT`` is
            neither a yes nor a no; nothing was opened.
        SchemaOutOfDateError: On first use, when setup was skipped and the tables are not
            at the revision this version needs.
    """
    setup = setup_from_env()
    strict = strict_setting(None, default=True)
    url = url_from_env()
    schema = os.environ.get("LANGGRAPH_CHECKPOINT_SCHEMA") or None
    async with SQLAlchemySaver.from_conn_string(url, schema=schema, strict=strict) as saver:
        if setup:
            await saver.asetup()
        yield saver
