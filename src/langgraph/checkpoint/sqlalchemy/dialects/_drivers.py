"""What a family's drivers take and need beyond their ``connect`` signatures (a mixin of
the :class:`~.base.QueryBuilder`).

The saver gives each of its two engines the connection arguments its own driver takes
(``_engine.arguments``): a driver's ``connect`` signature says most of it; this mixin
says the rest, per driver, where the signature cannot: the arguments SQLAlchemy's
adapter of the driver takes itself (asyncpg's ``prepared_statement_cache_size``), and
where the keywords a ``connect(**kwargs)`` passes on end up (psycopg's go to libpq). And
it adjusts the execution options of an access to what an engine of one driver needs
(:meth:`DriverArguments.engine_options`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from sqlalchemy import Engine

__all__ = ["DriverArguments"]


class DriverArguments:
    """Defaults: no adapter arguments, keywords passed on unknown (taken), execution
    options as the family's."""

    #: Connection arguments SQLAlchemy's adapter of a driver takes itself before it calls
    #: the driver's ``connect`` (besides ``async_creator_fn``, every async adapter's),
    #: by driver. They may be given in the URL's query string or in ``connect_args``.
    adapter_arguments: ClassVar[Mapping[str, frozenset[str]]] = {}

    @classmethod
    def passes_on(cls, driver: str, name: str) -> bool | None:
        """Whether ``driver``'s ``connect``, which takes other keywords than its named
        parameters (``**kwargs``) or has no signature Python can read, takes ``name``.

        Args:
            driver: The driver's name in SQLAlchemy URLs (``psycopg``).
            name: A connection argument that is not a named parameter of its ``connect``.

        Returns:
            True or False where the family knows; None where it does not (the argument
            is then given to the driver, whose own error tells).
        """
        return None

    @classmethod
    def engine_options(cls, engine: Engine, options: Mapping[str, Any]) -> Mapping[str, Any]:
        """The execution options of one access of the saver for ``engine``: the family's
        options (the one-statement accesses' AUTOCOMMIT, the schema map) as the engine's
        driver and settings need them. Default: ``options`` as they are.

        Args:
            engine: The engine (the ``sync_engine`` of an async one).
            options: The access's execution options.

        Returns:
            The options to use on ``engine``.
        """
        return options
