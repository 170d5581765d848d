"""LangGraph checkpoint saver for every SQL database SQLAlchemy speaks.

```python
from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

with SQLAlchemySaver.from_conn_string("sqlite:///checkpoints.sqlite") as saver:
    saver.setup()
    graph = builder.compile(checkpointer=saver)
```

:class:`SQLAlchemySaver` and :class:`ThreadInfo` are imported on first use (PEP 562): the
package itself imports only its typed errors, so that ``python -m
langgraph.checkpoint.sqlalchemy --help`` does not pay for SQLAlchemy, Alembic and
LangGraph (see :mod:`.cli`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.sqlalchemy import errors
from langgraph.checkpoint.sqlalchemy.errors import *  # noqa: F403  (every typed error: errors.__all__)

if TYPE_CHECKING:
    from langgraph.checkpoint.sqlalchemy._codec.threadinfo import ThreadInfo
    from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver

__all__ = ["SQLAlchemySaver", "ThreadInfo"]
__all__ += errors.__all__

#: The distribution's version: the build reads it from this line (``[tool.hatch.version]``
#: in pyproject.toml), so ``importlib.metadata.version("langgraph-checkpoint-sqlalchemy")``
#: is this string, with no import of ``importlib.metadata`` here.
__version__ = "0.1.0"

#: Public name -> the module that defines it, imported when the name is first read.
_LAZY = {"SQLAlchemySaver": ".saver", "ThreadInfo": "._codec.threadinfo"}


if not TYPE_CHECKING:  # type checkers see the imports above; a typo stays an error

    def __getattr__(name: str) -> Any:
        """``SQLAlchemySaver`` and ``ThreadInfo``, imported on first access (PEP 562).

        Raises:
            AttributeError: ``name`` is not a public name of the package (nor a
                submodule already imported).
        """
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value  # later reads skip this function
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
