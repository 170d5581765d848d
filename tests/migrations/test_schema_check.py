"""A saver on a database whose tables are missing or at another revision raises
SchemaOutOfDateError naming the command to run, before any raw SQL error."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import Column, MetaData, String, Table, update

from langgraph.checkpoint.sqlalchemy import SchemaOutOfDateError, SQLAlchemySaver

from ..doors import Door
from ..provision import new_saver_args

version_table = Table("lgsa_alembic_version", MetaData(), Column("version_num", String(32)))
CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


@pytest.fixture
async def bare_door(backend: str, mode: str, request: Any, tmp_path: Any) -> Any:
    """A saver on an empty database, setup() not called."""
    saver = SQLAlchemySaver.from_conn_string(**new_saver_args(backend, request, tmp_path))
    yield Door(saver, mode)
    await saver.aclose()


async def test_missing_tables_name_the_command(bare_door: Door) -> None:
    with pytest.raises(SchemaOutOfDateError, match=r"setup\(\) once on the saver or the store"):
        await bare_door.get_tuple(CONFIG)
    with pytest.raises(SchemaOutOfDateError, match="upgrade --url"):
        await bare_door.put(CONFIG, empty_checkpoint(), {}, {})
    await bare_door.setup()
    await bare_door.put(CONFIG, empty_checkpoint(), {}, {})
    assert await bare_door.get_tuple(CONFIG) is not None


async def test_revision_from_a_newer_library(bare_door: Door) -> None:
    saver = bare_door.saver
    await bare_door.setup()
    stamp = saver.engine.execution_options(schema_translate_map={None: saver.schema})
    with stamp.begin() as conn:
        conn.execute(update(version_table).values(version_num="9999_future"))
    fresh = SQLAlchemySaver(saver.engine, saver.async_engine, schema=saver.schema)
    with pytest.raises(SchemaOutOfDateError, match="newer"):
        await Door(fresh, bare_door.mode).get_tuple(CONFIG)
