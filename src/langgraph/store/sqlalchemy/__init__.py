"""LangGraph's long-term memory store on SQLAlchemy: SQLite, PostgreSQL, MySQL/MariaDB.

```python
from langgraph.store.sqlalchemy import SQLAlchemyStore

with SQLAlchemyStore.from_conn_string("sqlite:///checkpoints.sqlite") as store:
    store.setup()
    graph = builder.compile(checkpointer=saver, store=store)
```

See :class:`SQLAlchemyStore` and docs/store.md.
"""

from __future__ import annotations

from langgraph.checkpoint.sqlalchemy.store import SQLAlchemyStore, StoredItem, StoreStats

__all__ = ["SQLAlchemyStore", "StoreStats", "StoredItem"]
