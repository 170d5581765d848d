"""The head schema in one step, for a database that holds none of our tables yet.

Alembic's "create_all, then stamp" pattern (its cookbook: building an up-to-date
database from scratch), without loading Alembic: ``setup()`` on an empty database
creates the tables, indexes and rows of the newest revision from
:data:`langgraph.checkpoint.sqlalchemy.schema.metadata` (the checkpoint tables and the
store's, which :mod:`langgraph.store.sqlalchemy.tables` adds to it) and records that
revision in the version table, instead of replaying every script under ``versions/``.
``tests/migrations/test_one_step.py`` checks, on every backend, that the result equals
replaying every script.

SQLite and PostgreSQL only (:data:`DIALECTS`): their DDL is transactional, so the whole
schema and its stamp commit together. MySQL/MariaDB replay the scripts: their DDL
commits statement by statement, their migration lock is a lease row in a table of
ours, and MariaDB's compressed columns (revision 0004) are DDL of their own.

Loaded by :func:`langgraph.checkpoint.sqlalchemy.migrate.to_head` from this folder (it
ships beside ``env.py``); not a revision (Alembic reads ``versions/`` only).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    create_mock_engine,
    inspect,
)

import langgraph.store.sqlalchemy.tables  # noqa: F401  (adds the store's tables to metadata)
from langgraph.checkpoint.sqlalchemy._codec.metakeys import DEFAULT_KEYS
from langgraph.checkpoint.sqlalchemy.dialects import query_builder
from langgraph.checkpoint.sqlalchemy.schema import VERSION_TABLE, metadata, metadata_keys

__all__ = ["DIALECTS", "create"]

#: The dialects whose empty databases get the head schema in one step.
DIALECTS = frozenset({"sqlite", "postgresql"})

#: The ``CREATE TABLE``/``CREATE INDEX`` statements of the head schema, compiled from
#: :data:`metadata` once a process by dialect (class and server version): compiling them
#: is most of ``create``'s CPU time.
_DDL: dict[tuple[Any, ...], list[str]] = {}


def create(connection: Connection, schema: str | None, revision: str) -> bool:
    """Create the head schema and stamp ``revision``, if the database has none of our
    tables (nor a version table); else do nothing.

    Runs in ``connection``'s transaction, under the dialect's migration lock (the same
    lock as ``env.py``'s), so that of two processes setting up one empty database, one
    creates the schema and the other then finds it.

    Args:
        connection: A connection in the write transaction of the migration.
        schema: The PostgreSQL schema of the tables (None: the default).
        revision: The head revision of the scripts, recorded in the version table.

    Returns:
        True when the schema was created; False when the database already holds tables
        of ours (the caller replays the scripts) or its dialect is not in
        :data:`DIALECTS`.
    """
    if connection.dialect.name not in DIALECTS:
        return False
    qb = query_builder(connection.dialect.name)
    with qb.migration_lock(connection):
        qb.ensure_schema(connection, schema)
        ours = {*(t.name for t in metadata.sorted_tables), VERSION_TABLE}
        if ours & set(inspect(connection).get_table_names(schema=schema)):
            return False
        conn = connection.execution_options(schema_translate_map={None: schema})
        _create_tables(conn, schema)
        if qb.metadata_index_rows:
            # Revision 0006 lists the default keys once it has indexed the stored
            # checkpoints (none here); PostgreSQL keeps no index rows.
            conn.execute(metadata_keys.insert(), [{"key": k} for k in DEFAULT_KEYS])
        version = Table(
            VERSION_TABLE,
            MetaData(),
            Column("version_num", String(32), nullable=False),
            PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
            schema=schema,
        )
        version.create(connection)
        connection.execute(version.insert().values(version_num=revision))
    return True


def _create_tables(connection: Connection, schema: str | None) -> None:
    """``metadata.create_all`` (every table, then its indexes, ``ddl_if`` honoured), its
    statements compiled once a process and dialect (:data:`_DDL`) where no schema is
    named; a named schema is compiled each time."""
    if schema is not None:
        metadata.create_all(connection, checkfirst=False)
        return
    dialect = connection.dialect
    key = (type(dialect), dialect.server_version_info)
    ddl = _DDL.get(key)
    if ddl is None:
        compiled: list[str] = []

        def collect(statement: Any, *multiparams: Any, **params: Any) -> None:
            compiled.append(str(statement.compile(dialect=dialect)))

        metadata.create_all(create_mock_engine(connection.engine.url, collect), checkfirst=False)
        ddl = _DDL.setdefault(key, compiled)
    for statement in ddl:
        connection.exec_driver_sql(statement)
