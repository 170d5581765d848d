"""``setup()`` on an empty database builds the head schema in one step (``migrations/head.py``:
Alembic's "create_all, then stamp"): the result must equal replaying every revision.

On each backend, one database is built by replaying the scripts (``alembic upgrade head``
through :func:`.migrate.upgrade`) and one by :func:`.migrate.to_head` (``setup()``'s
path), then compared: the tables, their columns (types, nullability, defaults), primary
keys, indexes, unique constraints, foreign keys, check constraints and table options as
SQLAlchemy reflects them, Alembic's ``compare_metadata`` of one against the other's
reflected metadata, each dialect's own catalog (SQLite's ``PRAGMA`` listings and
``WITHOUT ROWID``, PostgreSQL's index definitions, functions and triggers, MariaDB's
``SHOW CREATE TABLE``), and the rows of the version table, ``lgsa_metadata_keys`` and
``lgsa_locks``.

MySQL/MariaDB replay the revisions in ``setup()`` too (``head.DIALECTS``): there the first
test checks that ``setup()``'s path still ends where ``alembic upgrade head`` does, and
the second that the one-step path is not taken.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, Engine, MetaData, create_engine, inspect, select, text
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, migrate
from langgraph.checkpoint.sqlalchemy._engine.engines import configure_engine, resolve_urls
from langgraph.checkpoint.sqlalchemy.dialects import WRITE_OPTION
from langgraph.checkpoint.sqlalchemy.schema import VERSION_TABLE

from ..provision import BACKENDS, fresh_database

KINDS = [k for k in ("sqlite-file", "postgres", "mariadb") if k in BACKENDS]
#: The backends of the equality test; ``postgres-public``: PostgreSQL without a schema
#: named (the tables in ``public``), where ``head.py`` reuses its compiled statements.
EQUALITY_KINDS = KINDS + (["postgres-public"] if "postgres" in KINDS else [])
DATA_TABLES = (VERSION_TABLE, "lgsa_metadata_keys", "lgsa_locks")


def _engine(url: str) -> Engine:
    engine = create_engine(resolve_urls(url).sync, poolclass=NullPool)
    configure_engine(engine)
    return engine


@contextmanager
def _two_databases(kind: str, tmp_path: Path) -> Iterator[tuple[Engine, Engine, str | None]]:
    """Two fresh, empty databases of ``kind`` (engines), and the schema to use in both."""
    backend = kind.removesuffix("-public")
    with ExitStack() as stack:
        engines = []
        for name in ("replayed", "one_step"):
            url = stack.enter_context(
                fresh_database(backend, tmp_path, prefix="lgsa_one", filename=f"{name}.sqlite")
            )
            engine = _engine(url)
            stack.callback(engine.dispose)
            engines.append(engine)
        schema = f"s_{uuid.uuid4().hex[:10]}" if kind == "postgres" else None
        yield engines[0], engines[1], schema


def _replay(engine: Engine, schema: str | None) -> None:
    with engine.execution_options(**{WRITE_OPTION: True}).begin() as conn:
        migrate.upgrade(conn, "head", schema=schema)


def _one_step(engine: Engine, schema: str | None) -> None:
    writer = engine.execution_options(**{WRITE_OPTION: True})
    migrate.to_head(engine.connect, writer.begin, schema)


def _index(found: Any) -> Any:
    """A reflected index with its options as text (a partial index's ``WHERE`` is
    reflected as a clause object, which compares by identity)."""
    options = {k: str(v) for k, v in found.get("dialect_options", {}).items()}
    return {**found, "dialect_options": options}


def _describe(conn: Connection, schema: str | None) -> dict[str, Any]:
    """Everything reflection and the dialect's catalog tell about our tables."""
    insp = inspect(conn)
    out: dict[str, Any] = {}
    for table in sorted(insp.get_table_names(schema=schema)):
        columns = [
            {
                "name": c["name"],
                "type": str(c["type"].compile(dialect=conn.dialect)),
                "nullable": c["nullable"],
                "default": c.get("default"),
                "autoincrement": c.get("autoincrement"),
                "comment": c.get("comment"),
            }
            for c in insp.get_columns(table, schema=schema)
        ]
        out[table] = {
            "columns": columns,
            "pk": insp.get_pk_constraint(table, schema=schema),
            "indexes": sorted(
                (_index(i) for i in insp.get_indexes(table, schema=schema)),
                key=lambda i: str(i["name"]),
            ),
            "unique": sorted(
                insp.get_unique_constraints(table, schema=schema), key=lambda u: str(u["name"])
            ),
            "foreign_keys": insp.get_foreign_keys(table, schema=schema),
            "checks": insp.get_check_constraints(table, schema=schema),
            "options": _table_options(conn, table, schema),
            "comment": (
                insp.get_table_comment(table, schema=schema)
                if conn.dialect.supports_comments
                else None
            ),
        }
    out["_catalog"] = _catalog(conn, schema, sorted(k for k in out if not k.startswith("_")))
    out["_rows"] = {
        name: sorted(tuple(r) for r in conn.execute(select(_reflected(conn, name, schema))))
        for name in DATA_TABLES
        if name in out
    }
    return out


def _table_options(conn: Connection, table: str, schema: str | None) -> dict[str, Any]:
    """The table's options (SQLite: ``WITHOUT ROWID``). SQLAlchemy reflects SQLite's from
    2.0.54 on; before, the dialect raises ``NotImplementedError`` and the table's
    ``CREATE`` statement tells the same."""
    try:
        return dict(inspect(conn).get_table_options(table, schema=schema))
    except NotImplementedError:
        sql = conn.execute(
            text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :name"),
            {"name": table},
        ).scalar_one()
        return {"sqlite_with_rowid": False} if "WITHOUT ROWID" in sql.upper() else {}


def _reflected(conn: Connection, name: str, schema: str | None) -> Any:
    from sqlalchemy import Table

    return Table(name, MetaData(), autoload_with=conn, schema=schema)


def _catalog(conn: Connection, schema: str | None, tables: list[str]) -> dict[str, Any]:
    """The dialect's own description of the tables, beyond what reflection reports."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        return {
            "objects": sorted(
                tuple(r)
                for r in conn.execute(
                    text(
                        "SELECT type, name, tbl_name FROM sqlite_master "
                        "WHERE name NOT LIKE 'sqlite_%'"
                    )
                )
            ),
            "tables": sorted(
                tuple(r)
                for r in conn.execute(
                    text("SELECT name, type, ncol, wr, strict FROM pragma_table_list")
                )
                if not str(r[0]).startswith("sqlite_")
            ),
            "columns": {
                t: [
                    tuple(r) for r in conn.execute(text(f"SELECT * FROM pragma_table_xinfo('{t}')"))
                ]
                for t in tables
            },
            "indexes": {
                t: sorted(
                    (
                        r.name if r.origin != "pk" else "(pk)",
                        r.unique,
                        r.origin,
                        r.partial,
                        tuple(
                            tuple(x)
                            for x in conn.execute(
                                text(
                                    "SELECT seqno, cid, name, desc, coll, key "
                                    f"FROM pragma_index_xinfo('{r.name}')"
                                )
                            )
                        ),
                    )
                    for r in conn.execute(text(f"SELECT * FROM pragma_index_list('{t}')"))
                )
                for t in tables
            },
            "triggers": sorted(
                tuple(r)
                for r in conn.execute(
                    text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
                )
            ),
        }
    if dialect == "postgresql":
        params = {"s": schema or "public"}
        return {
            "indexdefs": sorted(
                tuple(r)
                for r in conn.execute(
                    text(
                        "SELECT tablename, indexname, indexdef FROM pg_indexes "
                        "WHERE schemaname = :s"
                    ),
                    params,
                )
            ),
            "columns": sorted(
                tuple(r)
                for r in conn.execute(
                    text(
                        "SELECT table_name, ordinal_position, column_name, data_type, "
                        "character_maximum_length, is_nullable, column_default, collation_name "
                        "FROM information_schema.columns WHERE table_schema = :s"
                    ),
                    params,
                )
            ),
            "constraints": sorted(
                tuple(r)
                for r in conn.execute(
                    text(
                        "SELECT c.conrelid::regclass::text, c.conname, c.contype, "
                        "pg_get_constraintdef(c.oid) FROM pg_constraint c "
                        "JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = :s"
                    ),
                    params,
                )
            ),
            "functions": sorted(
                tuple(r)
                for r in conn.execute(
                    text(
                        "SELECT p.proname, pg_get_function_identity_arguments(p.oid) "
                        "FROM pg_proc p "
                        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :s"
                    ),
                    params,
                )
            ),
            "triggers": sorted(
                tuple(r)
                for r in conn.execute(
                    text(
                        "SELECT t.tgrelid::regclass::text, t.tgname FROM pg_trigger t "
                        "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n "
                        "ON n.oid = c.relnamespace WHERE n.nspname = :s AND NOT t.tgisinternal"
                    ),
                    params,
                )
            ),
            "relations": sorted(
                tuple(r)
                for r in conn.execute(
                    text(
                        "SELECT c.relname, c.relkind, c.relpersistence, c.reloptions::text "
                        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = :s"
                    ),
                    params,
                )
            ),
        }
    # MySQL/MariaDB: the server's own DDL of each table (without its AUTO_INCREMENT state).
    return {
        "create": {t: conn.execute(text(f"SHOW CREATE TABLE `{t}`")).one()[1] for t in tables},
        "triggers": sorted(tuple(r) for r in conn.execute(text("SHOW TRIGGERS"))),
    }


@pytest.mark.parametrize("kind", EQUALITY_KINDS)
def test_one_step_equals_replaying_every_revision(kind: str, tmp_path: Path) -> None:
    with _two_databases(kind, tmp_path) as (replayed, one_step, schema):
        _replay(replayed, schema)
        _one_step(one_step, schema)
        if schema is None and kind != "mariadb":
            # A second empty database: head.py's statements compiled by the first.
            (tmp_path / "again").mkdir()
            with _two_databases(kind, tmp_path / "again") as (_, again, _):
                _one_step(again, schema)
                with again.connect() as b, replayed.connect() as a:
                    assert _describe(b, schema) == _describe(a, schema)
        with replayed.connect() as a, one_step.connect() as b:
            want, got = _describe(a, schema), _describe(b, schema)
            assert got.keys() == want.keys()
            for key in want:
                assert got[key] == want[key], key
            assert want["_rows"][VERSION_TABLE] == [(migrate.head_revision(),)]
            # Alembic's own comparison: the one-step database against the replayed one's
            # reflected metadata (types, nullability, defaults, indexes, constraints).
            reference = MetaData()
            reference.reflect(a, schema=schema)
            ctx = MigrationContext.configure(
                b,
                opts={
                    "compare_type": True,
                    "compare_server_default": True,
                    "include_schemas": schema is not None,
                    "version_table": "__none__",
                },
            )
            assert compare_metadata(ctx, reference) == []


@pytest.mark.parametrize("kind", KINDS)
def test_one_step_only_on_an_empty_database(kind: str, tmp_path: Path) -> None:
    """A database with any table of ours is migrated by Alembic, not rebuilt; SQLite and
    PostgreSQL take the one-step path (the MySQL family replays the scripts)."""
    head = migrate._head_module()
    with _two_databases(kind, tmp_path) as (empty, older, schema):
        writer = empty.execution_options(**{WRITE_OPTION: True})
        with writer.begin() as conn:
            created = head.create(conn, schema, migrate.head_revision())
        assert created == (empty.dialect.name in head.DIALECTS)
        if not created:
            _replay(empty, schema)
        with writer.begin() as conn:
            assert not head.create(conn, schema, migrate.head_revision())  # at head now
        with older.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            migrate.upgrade(conn, "0005_lock_rows", schema=schema)
        with older.execution_options(**{WRITE_OPTION: True}).begin() as conn:
            assert not head.create(conn, schema, migrate.head_revision())
        _one_step(older, schema)  # setup()'s path: Alembic migrates 0005 to head
        with older.connect() as conn:
            assert migrate.current_revision(conn, schema=schema) == migrate.head_revision()


def test_setup_on_an_empty_sqlite_file_does_not_load_alembic(tmp_path: Path) -> None:
    """``setup()`` of an empty SQLite file creates the head schema without Alembic, in a
    fresh process."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'e.sqlite'}"
    code = (
        "import sys\n"
        "from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver\n"
        f"s = SQLAlchemySaver.from_conn_string({url!r})\n"
        "s.setup(); s.setup(); s.close()\n"
        "print(sorted(m for m in sys.modules if m == 'alembic' or m.startswith('alembic.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        with saver.engine.connect() as conn:
            assert migrate.current_revision(conn) == migrate.head_revision()
