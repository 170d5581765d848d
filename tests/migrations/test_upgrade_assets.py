"""Databases written by the code of every earlier revision, upgraded to head and read back.

Optuna's upgrade assets: ``upgrade_assets/make.py`` (run by hand) ran a fixed workload
(``upgrade_assets/workload.py``) with the code of the last commit of each revision
``0001`` to head-1, on SQLite, PostgreSQL and MariaDB, and kept every ``lgsa_`` row it
wrote and what that code read back (``upgrade_assets/assets/<revision>.<dialect>.json.gz``,
typed JSON). Here, on each backend: a fresh database is built at that revision with
today's revisions, the rows are inserted (reflected tables, SQLAlchemy Core), the database
is upgraded to head, and today's ``SQLAlchemySaver`` (``get_tuple``, ``list`` with and
without filters, pending writes with special channels, ``get_delta_channel_history``) and,
from ``0009_store`` on, ``SQLAlchemyStore`` (``get``, ``search``, ``list_namespaces``)
must read what the code of that revision read.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, migrate
from langgraph.checkpoint.sqlalchemy._engine.engines import configure_engine, resolve_urls
from langgraph.checkpoint.sqlalchemy.dialects import WRITE_OPTION
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..provision import fresh_database
from .upgrade_assets import workload

ASSETS = sorted((Path(__file__).parent / "upgrade_assets" / "assets").glob("*.json.gz"))
#: The backend that replays an asset of each dialect.
BACKEND = {"sqlite": "sqlite-file", "postgresql": "postgres", "mariadb": "mariadb"}


def _load(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))  # type: ignore[no-any-return]


def test_an_asset_for_every_earlier_revision_and_dialect() -> None:
    history = migrate._history()
    names = {p.name for p in ASSETS}
    want = {f"{r}.{d}.json.gz" for r in history[:-1] for d in BACKEND}
    assert names == want, sorted(want ^ names)


def _value(value: Any) -> Any:
    """A dumped value: bytes and floats are tagged (typed JSON)."""
    if isinstance(value, dict) and "$bytes" in value:
        return base64.b64decode(value["$bytes"])
    if isinstance(value, dict) and "$float" in value:
        return float(value["$float"])
    return value


def _insert(conn: sa.Connection, tables: dict[str, Any]) -> None:
    """The asset's rows, in place of any, into today's tables of its revision (the
    upgrade to it lists 0006's default keys already): reflected, columns checked, JSON
    columns bound as their stored text (cast to JSONB on PostgreSQL)."""
    for name, data in tables.items():
        table = sa.Table(name, sa.MetaData(), autoload_with=conn)
        columns = [c for c, _ in data["columns"]]
        assert columns == [c.name for c in table.columns], name
        conn.execute(table.delete())
        if not data["rows"]:
            continue
        values: dict[str, Any] = {}
        for column, kind in data["columns"]:
            if kind != "json":
                values[column] = sa.bindparam(column, type_=table.c[column].type)
            elif conn.dialect.name == "postgresql":
                values[column] = sa.cast(sa.bindparam(column, type_=sa.Text), JSONB)
            else:
                values[column] = sa.bindparam(column, type_=sa.Text)
        rows = [{c: _value(v) for c, v in zip(columns, row, strict=True)} for row in data["rows"]]
        conn.execute(table.insert().values(values), rows)


def _engine(url: str) -> sa.Engine:
    engine = sa.create_engine(resolve_urls(url).sync, poolclass=NullPool)
    configure_engine(engine)
    return engine


@pytest.mark.parametrize("path", ASSETS, ids=lambda p: p.name.removesuffix(".json.gz"))
def test_upgrade_from_an_earlier_revision(path: Path, tmp_path: Path) -> None:
    asset = _load(path)
    revision, dialect = path.name.split(".")[:2]
    assert asset["revision"] == revision
    with fresh_database(BACKEND[dialect], tmp_path, prefix="lgsa_up", filename="up.sqlite") as url:
        engine = _engine(url)
        writer = engine.execution_options(**{WRITE_OPTION: True})
        try:
            with writer.begin() as conn:
                migrate.upgrade(conn, revision)
            with writer.begin() as conn:
                _insert(conn, asset["tables"])
            with writer.begin() as conn:
                migrate.upgrade(conn, "head")
        finally:
            engine.dispose()
        expected = asset["expected"]
        with SQLAlchemySaver.from_conn_string(url) as saver:
            got = workload.read_saver(saver, asset["written"])
        assert got.keys() == expected["saver"].keys()
        for key in got:
            assert got[key] == expected["saver"][key], key
        if "store" in expected:
            index = workload.INDEX()
            with SQLAlchemyStore.from_conn_string(url, index=index, clock=workload.clock) as store:
                got = workload.read_store(store)
            for key in got:
                assert got[key] == expected["store"][key], key
