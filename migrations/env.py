"""Alembic environment of langgraph-checkpoint-sqlalchemy.

Called from Python (``saver.setup()``, the command line), it runs on the connection it is
handed. From the ``alembic`` tool, the URL is the first of: ``-x url=...``; the ini file's
``sqlalchemy.url`` (unless empty or ``alembic init``'s placeholder
``driver://user:pass@localhost/dbname``); ``LANGGRAPH_CHECKPOINT_URL``;
``sqlite:///checkpoints.sqlite``.
PostgreSQL schema: ``-x schema=...``, else ``LANGGRAPH_CHECKPOINT_SCHEMA``.
The version table is ``lgsa_alembic_version``: an application's own ``alembic_version``
is never touched.
"""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection, MetaData, Table, create_engine, inspect
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy._engine.engines import (
    configure_engine,
    resolve_urls,
    url_from_env,
)
from langgraph.checkpoint.sqlalchemy.dialects import WRITE_OPTION, query_builder
from langgraph.checkpoint.sqlalchemy.schema import VERSION_TABLE, metadata

config = context.config
x_args = context.get_x_argument(as_dictionary=True)
schema = (
    config.attributes.get("schema")
    or x_args.get("schema")
    or os.environ.get("LANGGRAPH_CHECKPOINT_SCHEMA")
    or None
)


#: The scheme of ``alembic init``'s ``sqlalchemy.url = driver://user:pass@localhost/dbname``:
#: an ini file copied from the template names no database (no SQLAlchemy dialect is
#: called ``driver``), so it does not hide ``LANGGRAPH_CHECKPOINT_URL``.
_PLACEHOLDER_SCHEME = "driver"


def _ini_url() -> str | None:
    """The ini file's ``sqlalchemy.url``, or None: unset, empty, or the template's
    placeholder."""
    value = (config.get_main_option("sqlalchemy.url") or "").strip()
    if not value or value.partition("://")[0].lower() == _PLACEHOLDER_SCHEME:
        return None
    return value


def _url() -> str:
    # The URL offline_sql() hands over, then -x url=..., then the ini file, then the
    # environment (LANGGRAPH_CHECKPOINT_URL), then the default SQLite file.
    return config.attributes.get("url") or x_args.get("url") or _ini_url() or url_from_env()


def _run(connection: Connection) -> None:
    qb = query_builder(connection.dialect.name)
    with qb.migration_lock(connection):
        qb.ensure_schema(connection, schema)
        qb.ensure_version_table(connection, VERSION_TABLE, schema)
        context.configure(
            connection=connection,
            target_metadata=metadata,
            version_table=VERSION_TABLE,
            version_table_schema=schema,
            transactional_ddl=qb.transactional_ddl,
        )
        with context.begin_transaction():
            context.run_migrations()
            _drop_version_table_at_base(connection)


def _drop_version_table_at_base(connection: Connection) -> None:
    # Alembic keeps its version table after "downgrade base"; ours goes too, so that a
    # database downgraded to base holds no table of this library.
    migration = context.get_context()
    if migration.get_current_revision() is None and inspect(connection).has_table(
        VERSION_TABLE, schema=schema
    ):
        Table(VERSION_TABLE, MetaData(), schema=schema).drop(connection)


if context.is_offline_mode():
    context.configure(
        url=resolve_urls(_url()).sync,
        literal_binds=True,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        version_table_schema=schema,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
    else:
        if config.config_file_name is not None and config.file_config.has_section("formatters"):
            # Logging set-up only when the ini file has one (a minimal [alembic] ini works).
            fileConfig(config.config_file_name, disable_existing_loggers=False)
        engine = create_engine(resolve_urls(_url()).sync, poolclass=NullPool)
        configure_engine(engine)
        try:
            with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
                _run(conn)
        finally:
            engine.dispose()
