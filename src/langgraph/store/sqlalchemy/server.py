"""A store factory for LangGraph server (``langgraph.json``).

```json
{"store": {"path": "langgraph.store.sqlalchemy.server:store"}}
```

With semantic search and TTL, in the same section (the server passes it to this factory
as ``$LANGGRAPH_STORE``):

```json
{
  "store": {
    "path": "langgraph.store.sqlalchemy.server:store",
    "index": {"dims": 1536, "embed": "openai:text-embedding-3-small", "fields": ["$"]},
    "ttl": {"default_ttl": 10080, "refresh_on_read": true, "sweep_interval_minutes": 60}
  }
}
```

The server enters :func:`store` once at start and uses the store it yields for every
run; on exit the TTL sweeper stops and the engines are disposed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.sqlalchemy._engine.defaults import setup_from_env
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls, url_from_env
from langgraph.store.sqlalchemy import SQLAlchemyStore
from langgraph.store.sqlalchemy.config import indexed_fields_from_env, store_config_from_env

__all__ = ["store"]


@asynccontextmanager
async def store() -> AsyncIterator[SQLAlchemyStore]:
    """Yield a set-up :class:`SQLAlchemyStore` configured from the environment.

    Environment:
        LANGGRAPH_STORE_URL: Database URL of the store; when unset or empty,
            ``LANGGRAPH_CHECKPOINT_URL`` (default ``sqlite:///checkpoints.sqlite``): the
            store's tables live beside the checkpoints by default.
        LANGGRAPH_STORE_SCHEMA: PostgreSQL schema of the tables; when unset,
            ``LANGGRAPH_CHECKPOINT_SCHEMA`` (default: the search path).
        LANGGRAPH_CHECKPOINT_SETUP: ``0``/``false``/``no``/``off`` to skip running the
            migrations at start; by default (or ``1``/``true``/``yes``/``on``)
            :meth:`~SQLAlchemyStore.asetup` runs (idempotent, safe from several
            replicas at once). Any other value is an error.
        LANGGRAPH_STORE: JSON of ``langgraph.json``'s ``store`` section, set by the
            server: its ``index`` (``dims``, ``embed`` as a model name, ``fields``) and
            ``ttl`` (``default_ttl``, ``refresh_on_read``, ``sweep_interval_minutes``).
            It is trusted as ``langgraph.json`` is: an ``embed`` of the form
            ``path/to/file.py:function`` imports and runs that file, after the URL and
            every other key have been checked.
            With ``sweep_interval_minutes``, an asyncio task deletes expired items at
            that interval while the server runs.

    Yields:
        The store; its sweeper is stopped and its engines disposed on exit.

    Raises:
        ValueError: ``LANGGRAPH_CHECKPOINT_SETUP`` is neither a yes nor a no, or
            ``LANGGRAPH_STORE`` is not JSON of the right shape; nothing was opened or
            imported.
        DatabaseURLError: The URL cannot be used; nothing was opened or imported.
        SchemaOutOfDateError: On first use, when setup was skipped and the tables are not
            at the revision this version needs.
    """
    setup = setup_from_env()
    url = os.environ.get("LANGGRAPH_STORE_URL") or url_from_env()
    resolve_urls(url)  # a bad URL is refused before an embedding file is imported
    schema = (
        os.environ.get("LANGGRAPH_STORE_SCHEMA")
        or os.environ.get("LANGGRAPH_CHECKPOINT_SCHEMA")
        or None
    )
    indexed = indexed_fields_from_env()
    index, ttl = store_config_from_env()  # imports an ``embed`` file last, if any
    async with SQLAlchemyStore.from_conn_string(
        url, schema=schema, index=index, ttl=ttl, indexed_fields=indexed
    ) as s:
        if setup:
            await s.asetup()
        sweeping = bool(ttl and ttl.get("sweep_interval_minutes"))
        if sweeping:
            await s.astart_ttl_sweeper()
        try:
            yield s
        finally:
            if sweeping:
                await s.astop_ttl_sweeper()
