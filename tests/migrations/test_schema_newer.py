"""A database migrated by a newer version of the package: ``setup()``/``asetup()`` raise
SchemaOutOfDateError saying the package must be upgraded (not Alembic's raw "Can't locate
revision"), and the command line says the database is ahead."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, MetaData, String, Table, update

from langgraph.checkpoint.sqlalchemy import SchemaOutOfDateError, SQLAlchemySaver

from ..doors import Door

version_table = Table("lgsa_alembic_version", MetaData(), Column("version_num", String(32)))
FUTURE = "9999_future"


def stamp_future(saver: SQLAlchemySaver) -> None:
    """Record a revision this package does not ship, as a newer package would."""
    engine = saver.engine.execution_options(schema_translate_map={None: saver.schema})
    with engine.begin() as conn:
        conn.execute(update(version_table).values(version_num=FUTURE))


async def test_setup_on_a_newer_database_says_upgrade_the_package(door: Door) -> None:
    stamp_future(door.saver)
    with pytest.raises(SchemaOutOfDateError, match="newer version") as raised:
        await door.setup()
    assert FUTURE in str(raised.value)
    assert "Upgrade the package" in str(raised.value)
    # nothing changed: the database still holds the newer revision
    fresh = SQLAlchemySaver(door.saver.engine, door.saver.async_engine, schema=door.saver.schema)
    with pytest.raises(SchemaOutOfDateError, match="newer version"):
        await Door(fresh, door.mode).setup()
    with door.saver.engine.execution_options(
        schema_translate_map={None: door.saver.schema}
    ).connect() as conn:
        assert conn.execute(version_table.select()).scalar_one() == FUTURE
