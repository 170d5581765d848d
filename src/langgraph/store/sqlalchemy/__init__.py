"""LangGraph's long-term memory store on SQLAlchemy: SQLite, PostgreSQL, MySQL/MariaDB.

```python
from langgraph.store.sqlalchemy import SQLAlchemyStore

with SQLAlchemyStore.from_conn_string("sqlite:///checkpoints.sqlite") as store:
    store.setup()
    graph = builder.compile(checkpointer=saver, store=store)
```

See :class:`SQLAlchemyStore` and docs/store.md.

The package holds the store's implementation too. Its layers, each importing only those
below it: :mod:`.store` (the class: its methods and lifecycle) over the private modules
that read, write and load items, over the shapes they share (:mod:`.namespaces`,
:mod:`.filters`, :mod:`.vectors`, :mod:`.tables`, :mod:`.config`). Below the store lie
the saver's own layers, which it reuses: engines and runners, dialects, codec, schema
and errors (docs/development.md, "Where code goes"). :mod:`.official` and
:mod:`.transfer` copy from the official stores.
"""

from __future__ import annotations

from langgraph.store.sqlalchemy._shapes import StoreStats
from langgraph.store.sqlalchemy.store import SQLAlchemyStore, StoredItem

__all__ = ["SQLAlchemyStore", "StoreStats", "StoredItem"]
