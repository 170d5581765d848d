"""LangGraph checkpoint saver for every SQL database SQLAlchemy speaks.

```python
from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

with SQLAlchemySaver.from_conn_string("sqlite:///checkpoints.sqlite") as saver:
    saver.setup()
    graph = builder.compile(checkpointer=saver)
```
"""

from __future__ import annotations

from . import errors
from ._maintenance import ThreadInfo
from .errors import *  # noqa: F403  (every typed error: errors.__all__)
from .saver import SQLAlchemySaver

__all__ = ["SQLAlchemySaver", "ThreadInfo"]
__all__ += errors.__all__
