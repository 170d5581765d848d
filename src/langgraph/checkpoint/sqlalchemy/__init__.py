"""LangGraph checkpoint saver for every SQL database SQLAlchemy speaks.

```python
from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

with SQLAlchemySaver.from_conn_string("sqlite:///checkpoints.sqlite") as saver:
    saver.setup()
    graph = builder.compile(checkpointer=saver)
```
"""

from __future__ import annotations

from ._maintenance import ThreadInfo
from .dialects import UnsupportedDialectError, ValueTooLargeError
from .errors import (
    CheckpointConfigError,
    CheckpointConflictError,
    CheckpointConnectionError,
    CheckpointDecodeError,
    CheckpointHistoryError,
    CheckpointMetadataError,
    DatabaseURLError,
    DowngradeRefusedError,
    DriverNotInstalledError,
    SchemaOutOfDateError,
    ThreadLockTimeout,
    ThreadNotEmptyError,
    UnsupportedDriverError,
)
from .saver import SQLAlchemySaver

__all__ = [
    "CheckpointConfigError",
    "CheckpointConflictError",
    "CheckpointConnectionError",
    "CheckpointDecodeError",
    "CheckpointHistoryError",
    "CheckpointMetadataError",
    "DatabaseURLError",
    "DowngradeRefusedError",
    "DriverNotInstalledError",
    "SQLAlchemySaver",
    "SchemaOutOfDateError",
    "ThreadInfo",
    "ThreadLockTimeout",
    "ThreadNotEmptyError",
    "UnsupportedDialectError",
    "UnsupportedDriverError",
    "ValueTooLargeError",
]
