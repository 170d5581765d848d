"""Alembic environment of langgraph-checkpoint-sqlalchemy.

Called from Python (``saver.setup()``, the command line), it runs on the connection it is
handed. From the ``alembic`` tool, the URL is the first of: ``-x url=...``; the ini file's
``sqlalchemy.url`` (unless empty or ``alembic init``'s placeholder
``driver://user:pass@localhost/dbname``); ``LANGGRAPH_CHECKPOINT_URL``;
``sqlite:///checkpoints.sqlite``.
PostgreSQL schema: ``-x schema=...``, else ``LANGGRAPH_CHECKPOINT_SCHEMA``.
The version table is ``lgsa_alembic_version``: an application's own ``alembic_version``
is never touched.

Run by the ``alembic`` tool, a URL it cannot read or connect to, and a ``sqlalchemy.url``
the ini parser cannot read (``%40`` for ``%%40``), stop with Alembic's one-line
``FAILED:`` message: no password, and no traceback that would quote one.
"""

from __future__ import annotations

import configparser
import os
from logging.config import fileConfig

from alembic import context
from alembic.util import CommandError
from sqlalchemy import URL, Connection, MetaData, Table, create_engine, inspect
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy._codec.display import masked_text, shown_url
from langgraph.checkpoint.sqlalchemy._engine.engines import (
    configure_engine,
    resolve_urls,
    url_from_env,
)
from langgraph.checkpoint.sqlalchemy.dialects import WRITE_OPTION, query_builder
from langgraph.checkpoint.sqlalchemy.errors import DatabaseURLError
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
    placeholder.

    Raises:
        CommandError: The value holds a ``%`` the ini parser cannot read (``%40`` in a
            password): configparser's own error would quote the rest of the value.
    """
    try:
        value: str | None = (config.get_main_option("sqlalchemy.url") or "").strip()
    except configparser.InterpolationError:
        value = None
    if value is None:  # raised here, not in the except block: its words are not kept
        raise CommandError(
            f"the sqlalchemy.url of {config.config_file_name} holds a '%' the ini file's "
            "parser cannot read (the value is not shown: it may hold a password). In an "
            "ini file a '%' starts a %(name)s reference: write each '%' of the URL as "
            "'%%' (a password's %40 as %%40), or give the URL with -x url=... or "
            "LANGGRAPH_CHECKPOINT_URL instead."
        )
    if not value or value.partition("://")[0].lower() == _PLACEHOLDER_SCHEME:
        return None
    return value


def _url() -> str:
    # The URL offline_sql() hands over, then -x url=..., then the ini file, then the
    # environment (LANGGRAPH_CHECKPOINT_URL), then the default SQLite file.
    return config.attributes.get("url") or x_args.get("url") or _ini_url() or url_from_env()


def _engine_url(url: str) -> URL:
    """The sync engine URL of ``url``.

    Raises:
        CommandError: A URL this library cannot read; the message shows it as
            :func:`.display.shown_url` does (no password, nothing of a connection
            string libpq would refuse) and keeps no traceback that would quote it.
    """
    try:
        return resolve_urls(url).sync
    except (ValueError, ArgumentError) as e:  # DatabaseURLError is a ValueError
        why = masked_text(str(e), url)
    raise CommandError(f"bad database URL {shown_url(url)!r}: {why}")


def _connect(engine_url: URL, url: str) -> Connection:
    """A connection (with the write option: ``BEGIN IMMEDIATE`` on SQLite) to the
    database migrated from the ``alembic`` tool.

    Raises:
        CommandError: It cannot connect: the driver's words, the secrets of ``url``
            masked, with no traceback.
    """
    engine = create_engine(engine_url, poolclass=NullPool)
    configure_engine(engine)
    try:
        return engine.execution_options(**{WRITE_OPTION: True}).connect()
    except (DBAPIError, DatabaseURLError) as e:
        orig = getattr(e, "orig", None) or e
        why = " ".join(masked_text(f"{type(orig).__name__}: {orig}", url, engine_url).split())
    engine.dispose()
    raise CommandError(f"cannot connect to the database at {shown_url(engine_url)}: {why}")


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
        url=_engine_url(_url()),
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
        url = _url()
        conn = _connect(_engine_url(url), url)
        try:
            with conn, conn.begin():
                _run(conn)
        finally:
            conn.engine.dispose()
