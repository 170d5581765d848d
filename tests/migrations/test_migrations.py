"""Alembic migrations of the checkpoint tables, on a SQLite file and on PostgreSQL.

Every test gets a store of its own: a new SQLite file in ``tmp_path``, or a new PostgreSQL
database created for the test (and dropped after it) with a fresh schema name in it. The
``target`` fixture hands out the URL and the schema (None on SQLite).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError as AlembicCommandError
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    inspect,
    select,
    text,
)
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import DowngradeRefusedError, SQLAlchemySaver, cli, migrate
from langgraph.checkpoint.sqlalchemy import schema as lgsa_schema
from langgraph.checkpoint.sqlalchemy._engine.engines import configure_engine, resolve_urls
from langgraph.checkpoint.sqlalchemy.dialects import WRITE_OPTION, query_builder
from langgraph.checkpoint.sqlalchemy.schema import VERSION_TABLE

from ..provision import BACKENDS, fresh_database

REPO_ROOT = Path(__file__).resolve().parents[2]
OUR_TABLES = {
    "lgsa_checkpoints",
    "lgsa_checkpoint_blobs",
    "lgsa_checkpoint_writes",
    "lgsa_locks",
    "lgsa_metadata_index",
    "lgsa_metadata_keys",
    "lgsa_store_items",
    "lgsa_store_vectors",
}
OFFICIAL_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "writes")
HEAD = migrate.head_revision()
TARGET_KINDS = [k for k in ("sqlite-file", "postgres", "mariadb") if k in BACKENDS]


# -- fixtures and helpers ----------------------------------------------------------------


@dataclass
class Target:
    """A fresh, empty database: its URL, and the schema to put our tables in."""

    kind: str
    url: str
    schema: str | None

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgres"

    def engine(self) -> Engine:
        engine = create_engine(resolve_urls(self.url).sync, poolclass=NullPool)
        configure_engine(engine)
        return engine

    @contextmanager
    def connect(self, *, begin: bool = False, **options: Any) -> Iterator[Connection]:
        """A connection through a new :meth:`engine` (in a transaction if ``begin``, with
        the execution ``options``); the engine is disposed of afterwards."""
        engine = self.engine()
        bound = engine.execution_options(**options)
        try:
            with bound.begin() if begin else bound.connect() as conn:
                yield conn
        finally:
            engine.dispose()


@pytest.fixture
def fresh_pg_url(fresh_databases: Callable[..., str]) -> str:
    """URL of a new, empty PostgreSQL database, dropped after the test."""
    if "postgres" not in BACKENDS:
        pytest.skip("postgres backend not selected (LGSA_TEST_BACKENDS)")
    return fresh_databases("postgres", prefix="lgsa_mig")


@pytest.fixture(params=TARGET_KINDS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """A fresh database: SQLite file, or a new PostgreSQL database plus a schema name."""
    kind = request.param
    with fresh_database(kind, tmp_path, prefix="lgsa_mig", filename="migrations.sqlite") as url:
        yield Target(kind, url, f"s_{uuid.uuid4().hex[:10]}" if kind == "postgres" else None)


def _migrate(target: Target, direction: str, revision: str, *, schema: Any = "target") -> None:
    """Run ``migrate.upgrade``/``downgrade`` in one write transaction, as the CLI does."""
    schema = target.schema if schema == "target" else schema
    with target.connect(begin=True, **{WRITE_OPTION: True}) as conn:
        if direction == "up":
            migrate.upgrade(conn, revision, schema=schema)
        else:
            migrate.downgrade(conn, revision, schema=schema)


def _tables(target: Target, schema: Any = "target") -> set[str]:
    schema = target.schema if schema == "target" else schema
    with target.connect() as conn:
        insp = inspect(conn)
        if schema is not None and not insp.has_schema(schema):
            return set()
        return set(insp.get_table_names(schema=schema))


def _version_rows(target: Target, schema: Any = "target") -> list[str]:
    schema = target.schema if schema == "target" else schema
    with target.connect() as conn:
        table = Table(VERSION_TABLE, MetaData(), autoload_with=conn, schema=schema)
        return [r[0] for r in conn.execute(select(table.c.version_num))]


def _current(target: Target, schema: Any = "target") -> str | None:
    schema = target.schema if schema == "target" else schema
    with target.connect() as conn:
        return migrate.current_revision(conn, schema=schema)


def _env() -> dict[str, str]:
    """The environment for subprocesses, without our configuration variables."""
    env = dict(os.environ)
    for name in ("LANGGRAPH_CHECKPOINT_URL", "LANGGRAPH_CHECKPOINT_SCHEMA"):
        env.pop(name, None)
    return env


def _run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        args, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=120
    )


def _cli(
    command: list[str], target: Target, *, order: str = "documented", schema: bool = True
) -> list[str]:
    """``python -m langgraph.checkpoint.sqlalchemy ...`` with ``--url``/``--schema`` placed
    after the subcommand (the documented form) or before it."""
    options = ["--url", target.url]
    if schema and target.schema:
        options += ["--schema", target.schema]
    prog = [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy"]
    if order == "documented":
        return [*prog, *command, *options]
    return [*prog, *options, *command]


def _alembic(*args: str) -> list[str]:
    return [sys.executable, "-m", "alembic", *args]


def _checkpoint_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


# -- the script directory ----------------------------------------------------------------


def test_exactly_one_head() -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config())
    heads = script.get_heads()
    assert len(heads) == 1, heads
    assert heads[0] == HEAD
    # One linear history from head down to base, no branch points or merges.
    revisions = list(script.walk_revisions("base", "heads"))
    assert revisions, "no migration scripts found"
    assert revisions[-1].down_revision is None
    for rev in revisions:
        assert not rev.is_merge_point, rev.revision
        assert not rev.is_branch_point, rev.revision


def test_cheap_history_is_alembics() -> None:
    """head_revision() and known_revisions() come from the scripts' revision lines, read
    without Alembic: the same history, in the same order, as Alembic's."""
    script = ScriptDirectory.from_config(migrate.alembic_config())
    alembic_history = tuple(rev.revision for rev in script.walk_revisions("base", "heads"))
    assert migrate._history() == alembic_history[::-1]
    assert migrate.head_revision() == script.get_current_head()
    assert migrate.known_revisions() == {rev.revision for rev in script.walk_revisions()}


def test_scripts_must_match_cheap_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """Migrating refuses scripts whose history Alembic reads otherwise than the cheap
    reading (a script whose revision lines it misses), before any SQL."""
    monkeypatch.setattr(migrate, "_history", lambda: ("0001_initial",))
    migrate._scripts.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="revision and down_revision lines"):
            migrate.offline_sql("sqlite:///unused.db", "upgrade", "head")
    finally:
        migrate._scripts.cache_clear()


def test_script_location_is_repo_migrations() -> None:
    assert Path(migrate.script_location()).resolve() in {
        (REPO_ROOT / "migrations").resolve(),
        (Path(migrate.__file__).resolve().parent / "migrations"),
    }
    assert (REPO_ROOT / "alembic.ini").is_file()


# -- upgrade / downgrade round trip ------------------------------------------------------


async def test_upgrade_downgrade_upgrade(target: Target) -> None:
    assert _current(target) is None

    _migrate(target, "up", "head")
    assert OUR_TABLES | {VERSION_TABLE} <= _tables(target)
    assert _version_rows(target) == [HEAD]
    assert _current(target) == HEAD

    _migrate(target, "down", "base")
    left = _tables(target)
    assert not (OUR_TABLES | {VERSION_TABLE}) & left, left
    assert _current(target) is None

    _migrate(target, "up", "head")
    assert OUR_TABLES | {VERSION_TABLE} <= _tables(target)
    assert _version_rows(target) == [HEAD]

    # The re-created tables work.
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        cp = empty_checkpoint()
        await saver.aput(_checkpoint_config("t"), cp, {"step": 1}, {})
        got = await saver.aget_tuple(_checkpoint_config("t"))
        assert got is not None and got.checkpoint["id"] == cp["id"]
    finally:
        await saver.aclose()


def test_current_revision_agrees_with_alembic(target: Target) -> None:
    """migrate.current_revision reads the version table without Alembic: it answers as
    Alembic's MigrationContext does with no tables and at each revision, and refuses a
    table with two revisions as Alembic does."""

    def alembic_revision() -> str | None:
        with target.connect() as conn:
            opts = {"version_table": VERSION_TABLE, "version_table_schema": target.schema}
            return MigrationContext.configure(conn, opts=opts).get_current_revision()

    assert _current(target) is None
    assert alembic_revision() is None
    for revision in ("0001_initial", HEAD):
        _migrate(target, "up", revision)
        assert _current(target) == alembic_revision() == revision
    version = Table(
        VERSION_TABLE, MetaData(), Column("version_num", String(32)), schema=target.schema
    )
    with target.connect(begin=True) as conn:
        conn.execute(version.insert(), {"version_num": "0001_initial"})
    for read in (lambda: _current(target), alembic_revision):
        with pytest.raises(AlembicCommandError, match="more than one head"):
            read()


async def test_upgrade_is_idempotent(target: Target) -> None:
    _migrate(target, "up", "head")
    _migrate(target, "up", "head")
    assert _version_rows(target) == [HEAD]
    _migrate(target, "down", "base")
    _migrate(target, "down", "base")
    assert not OUR_TABLES & _tables(target)
    assert _current(target) is None


# -- 0003_long_names keeps the rows of 0002 -------------------------------------------------

#: A 0002 thread id that starts with the digest marker: 0003 re-keys it.
MARKED = lgsa_schema.NAME_KEY_MARKER + "a thread named like a digest key"


def _rows_0002(target: Target) -> dict[str, sa.TableClause]:
    """Raw tables of revision 0002 (no name-to-key mapping)."""
    key = lgsa_schema.KeyText

    def names() -> list[Any]:
        return [sa.column("thread_id", key(255)), sa.column("checkpoint_ns", key(255))]

    return {
        "checkpoints": sa.table(
            "lgsa_checkpoints",
            *names(),
            sa.column("checkpoint_id", key(64)),
            sa.column("parent_checkpoint_id", key(64)),
            sa.column("type", String(64)),
            sa.column("checkpoint", lgsa_schema.BINARY),
            sa.column("metadata", lgsa_schema.JSON_DOCUMENT),
            sa.column("value_versions", lgsa_schema.JSON_DOCUMENT),
            schema=target.schema,
        ),
        "blobs": sa.table(
            "lgsa_checkpoint_blobs",
            *names(),
            sa.column("channel", key(150)),
            sa.column("version", key(64)),
            sa.column("type", String(64)),
            sa.column("blob", lgsa_schema.BINARY),
            schema=target.schema,
        ),
        "writes": sa.table(
            "lgsa_checkpoint_writes",
            *names(),
            sa.column("checkpoint_id", key(64)),
            sa.column("task_id", key(64)),
            sa.column("idx", Integer),
            sa.column("task_path", sa.Text),
            sa.column("channel", sa.Text),
            sa.column("type", String(64)),
            sa.column("blob", lgsa_schema.BINARY),
            schema=target.schema,
        ),
    }


def _insert_0002_thread(conn: Any, target: Target, thread_id: str, ns: str) -> str:
    """One checkpoint with a value in the blobs table and a pending write, as a 0002
    saver stored them."""
    serde = JsonPlusSerializer()
    cp = empty_checkpoint()
    cp["channel_versions"] = {"v": "1"}
    t = _rows_0002(target)
    type_, data = serde.dumps_typed(cp)
    conn.execute(
        t["checkpoints"].insert(),
        {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": cp["id"],
            "parent_checkpoint_id": None,
            "type": type_,
            "checkpoint": data,
            "metadata": {"owner": thread_id},
            "value_versions": {"v": "1"},
        },
    )
    type_, data = serde.dumps_typed(f"value of {thread_id}")
    conn.execute(
        t["blobs"].insert(),
        {"thread_id": thread_id, "checkpoint_ns": ns, "channel": "v", "version": "1"}
        | {"type": type_, "blob": data},
    )
    type_, data = serde.dumps_typed(f"write of {thread_id}")
    conn.execute(
        t["writes"].insert(),
        {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cp["id"]}
        | {"task_id": "task", "idx": 0, "task_path": "", "channel": "w"}
        | {"type": type_, "blob": data},
    )
    return cp["id"]


def _raw_keys(target: Target) -> dict[str, set[tuple[str, str]]]:
    with target.connect() as conn:
        return {
            name: {
                (str(r[0]), str(r[1]))
                for r in conn.execute(select(t.c.thread_id, t.c.checkpoint_ns))
            }
            for name, t in _rows_0002(target).items()
        }


async def test_0003_keeps_0002_rows_and_rekeys_names_like_digest_keys(target: Target) -> None:
    _migrate(target, "up", "0002_inline_values")
    with target.connect(begin=True) as conn:
        ids = {
            (thread_id, ns): _insert_0002_thread(conn, target, thread_id, ns)
            for thread_id, ns in (("plain", ""), ("😀" * 255, "子"), (MARKED, MARKED))
        }

    def check(saver: SQLAlchemySaver) -> None:
        for (thread_id, ns), checkpoint_id in ids.items():
            got = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
            assert got is not None, thread_id
            assert got.config["configurable"] == {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
            }
            assert got.checkpoint["channel_values"] == {"v": f"value of {thread_id}"}
            assert got.pending_writes == [("task", "w", f"write of {thread_id}")]
        assert {t.thread_id for t in saver.list_threads(limit=None)} == {t for t, _ in ids}

    _migrate(target, "up", "head")
    marked_key = lgsa_schema.name_key(MARKED)
    assert marked_key != MARKED
    for keys in _raw_keys(target).values():
        assert keys == {("plain", ""), ("😀" * 255, "子"), (marked_key, marked_key)}
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        check(saver)
        # Down to 0002 (no long name stored): the marked name is moved back.
        saver.close()
        _migrate(target, "down", "0002_inline_values")
        for keys in _raw_keys(target).values():
            assert keys == {(t, ns) for t, ns in ids}
        _migrate(target, "up", "head")
        saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
        check(saver)
        # A name longer than 0002 holds: the downgrade refuses and changes nothing.
        long_name = "線" * 256
        saver.put(_checkpoint_config(long_name), empty_checkpoint(), {}, {})
        with pytest.raises(DowngradeRefusedError, match="cannot downgrade below 0003_long_names"):
            _migrate(target, "down", "0002_inline_values")
        # Asked before any step runs (MySQL/MariaDB commit each DDL statement: a refusal
        # midway used to leave the database at 0004): every dialect stays at head.
        assert _current(target) == HEAD
        with pytest.raises(DowngradeRefusedError, match="cannot downgrade below 0003_long_names"):
            _migrate(target, "down", "base")
        assert _current(target) == HEAD
        # A relative target counts from the database's revision, as Alembic does: from
        # 0005, -4 crosses 0003 (it was checked from head, and 0005 ran before 0003 refused).
        _migrate(target, "down", "0005_lock_rows")
        with pytest.raises(DowngradeRefusedError, match="cannot downgrade below 0003_long_names"):
            _migrate(target, "down", "-4")
        assert _current(target) == "0005_lock_rows"
        _migrate(target, "down", "-1")  # one step from where it is, as before
        assert _current(target) == "0004_mariadb_compressed_values"
        # Targets Alembic refuses stay its one-line CommandError, not a traceback.
        for bad in ("bogus_rev", "+1", HEAD):
            with pytest.raises(AlembicCommandError):
                _migrate(target, "down", bad)
        _migrate(target, "up", "head")
        assert _current(target) == HEAD
        check_long = saver.get_tuple(_checkpoint_config(long_name))
        assert check_long is not None
        assert check_long.config["configurable"]["thread_id"] == long_name
    finally:
        saver.close()


# -- the Core model is what the migrations build -----------------------------------------


async def test_core_model_matches_migrated_database(target: Target) -> None:
    _migrate(target, "up", "head")
    with target.connect() as conn:
        opts: dict[str, Any] = {
            "version_table": VERSION_TABLE,
            "version_table_schema": target.schema,
            "compare_type": True,
            "compare_server_default": True,
        }
        md = lgsa_schema.metadata
        if target.schema is not None:
            md = MetaData()
            for table in lgsa_schema.metadata.tables.values():
                table.to_metadata(md, schema=target.schema)
            wanted_schema = target.schema

            def include_name(name: str | None, type_: str, parents: Any) -> bool:
                if type_ == "schema":
                    return name == wanted_schema
                return not (type_ == "table" and name == VERSION_TABLE)

            opts["include_schemas"] = True
        else:

            def include_name(name: str | None, type_: str, parents: Any) -> bool:
                return not (type_ == "table" and name == VERSION_TABLE)

        opts["include_name"] = include_name

        def include_object(obj: Any, name: Any, type_: str, reflected: bool, other: Any) -> bool:
            # An index of one dialect (``ddl_if``: PostgreSQL's GIN index) elsewhere.
            only = getattr(obj, "_ddl_if", None)
            return only is None or only.dialect in (None, conn.dialect.name)

        opts["include_object"] = include_object
        ctx = MigrationContext.configure(conn, opts=opts)
        diff = compare_metadata(ctx, md)
        if conn.dialect.name in ("mysql", "mariadb"):
            diff = _without_compressed_nullable(conn, diff)
    assert diff == []


def _without_compressed_nullable(conn: Connection, diff: list[Any]) -> list[Any]:
    """``diff`` less the "nullable" of MariaDB's COMPRESSED NOT NULL columns (0004),
    checked here in ``information_schema`` instead: SQLAlchemy's MySQL reflection does
    not parse ``NOT NULL`` after the ``/*M!100301 COMPRESSED*/`` that SHOW CREATE TABLE
    prints, and reports such a column nullable."""
    kept = []
    for entry in diff:
        ops = entry if isinstance(entry, list) else [entry]
        rest = []
        for op_ in ops:
            if op_[0] == "modify_nullable" and op_[5] is True and op_[6] is False:
                nullable, compressed = conn.execute(
                    text(
                        "SELECT is_nullable, column_type FROM information_schema.columns "
                        "WHERE table_schema = DATABASE() AND table_name = :t AND column_name = :c"
                    ),
                    {"t": op_[2], "c": op_[3]},
                ).one()
                if nullable == "NO" and "compressed" in str(compressed).lower():
                    continue
            rest.append(op_)
        if rest:
            kept.append(rest if isinstance(entry, list) else rest[0])
    return kept


# -- living beside the official savers and an application's own Alembic ------------------


def _official_metadata(schema: str | None) -> MetaData:
    md = MetaData(schema=schema)
    for name, key, key_type in (
        ("checkpoints", "checkpoint_id", String(100)),
        ("checkpoint_blobs", "channel", String(100)),
        ("checkpoint_writes", "idx", Integer),
        ("writes", "idx", Integer),
    ):
        Table(
            name,
            md,
            Column("thread_id", String(100), primary_key=True),
            Column(key, key_type, primary_key=True),
            Column("data", String(100)),
        )
    Table("alembic_version", md, Column("version_num", String(32), primary_key=True))
    return md


def _snapshot_foreign(target: Target, md: MetaData) -> dict[str, list[tuple[Any, ...]]]:
    with target.connect() as conn:
        return {
            name: sorted(tuple(r) for r in conn.execute(select(table)))
            for name, table in ((t.name, t) for t in md.sorted_tables)
        }


async def test_coexists_with_official_tables_and_app_alembic(target: Target) -> None:
    md = _official_metadata(target.schema)
    with target.connect(begin=True) as conn:
        if target.schema:
            conn.execute(text(f'CREATE SCHEMA "{target.schema}"'))
        md.create_all(conn)
        tables = md.tables
        prefix = f"{target.schema}." if target.schema else ""
        conn.execute(tables[f"{prefix}alembic_version"].insert(), {"version_num": "app_rev_1"})
        for name in OFFICIAL_TABLES:
            table = tables[f"{prefix}{name}"]
            row = {c.name: (1 if isinstance(c.type, Integer) else f"{name}-v") for c in table.c}
            conn.execute(table.insert(), row)
    before = _snapshot_foreign(target, md)
    assert before["alembic_version"] == [("app_rev_1",)]

    def app_revision() -> str | None:
        with target.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"version_table_schema": target.schema})
            return ctx.get_current_revision()

    _migrate(target, "up", "head")
    names = _tables(target)
    assert set(OFFICIAL_TABLES) | {"alembic_version"} <= names
    assert OUR_TABLES | {VERSION_TABLE} <= names
    assert _snapshot_foreign(target, md) == before
    assert _version_rows(target) == [HEAD]
    assert app_revision() == "app_rev_1"

    # Our saver works next to them and does not write into them.
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        await saver.aput(_checkpoint_config("t"), empty_checkpoint(), {}, {})
        assert await saver.aget_tuple(_checkpoint_config("t")) is not None
    finally:
        await saver.aclose()
    assert _snapshot_foreign(target, md) == before

    _migrate(target, "down", "base")
    names = _tables(target)
    assert set(OFFICIAL_TABLES) | {"alembic_version"} <= names
    assert not OUR_TABLES & names
    assert _current(target) is None
    assert _snapshot_foreign(target, md) == before
    assert app_revision() == "app_rev_1"


# -- setup() / asetup() ------------------------------------------------------------------


async def test_setup_twice_is_a_noop(target: Target) -> None:
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        saver.setup()
        tables = _tables(target)
        assert OUR_TABLES | {VERSION_TABLE} <= tables
        stored = saver.put(_checkpoint_config("t"), empty_checkpoint(), {"step": 3}, {})
        saver.setup()
        assert _tables(target) == tables
        assert _version_rows(target) == [HEAD]
        got = saver.get_tuple(stored)
        assert got is not None and got.metadata["step"] == 3
    finally:
        saver.close()


async def test_asetup(target: Target) -> None:
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        await saver.asetup()
        assert OUR_TABLES | {VERSION_TABLE} <= _tables(target)
        assert _version_rows(target) == [HEAD]
        stored = await saver.aput(_checkpoint_config("t"), empty_checkpoint(), {"step": 1}, {})
        await saver.asetup()
        assert _version_rows(target) == [HEAD]
        got = await saver.aget_tuple(stored)
        assert got is not None and got.metadata["step"] == 1
        # The sync door sees what the async setup created.
        assert saver.get_tuple(stored) is not None
    finally:
        await saver.aclose()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_setup_on_a_pool_of_one(target: Target, mode: str) -> None:
    """setup() and asetup() run with a pool of one connection (pool_size=1,
    max_overflow=0, common behind a pooler) on every backend: the migration lock never
    waits for a second connection from the application's pool (MySQL/MariaDB's lease
    row has a connection of its own)."""
    saver = SQLAlchemySaver.from_conn_string(
        target.url, schema=target.schema, pool_size=1, max_overflow=0, pool_timeout=2
    )
    try:
        if mode == "async":
            await saver.asetup()
        else:
            saver.setup()
        assert _version_rows(target) == [HEAD]
        stored = saver.put(_checkpoint_config("t"), empty_checkpoint(), {"step": 1}, {})
        assert saver.get_tuple(stored) is not None
    finally:
        await saver.aclose()


# -- the command line --------------------------------------------------------------------


@pytest.mark.parametrize("order", ["documented", "options-first"])
def test_cli_upgrade_then_current_check(target: Target, order: str, tmp_path: Path) -> None:
    up = _run(_cli(["upgrade"], target, order=order), cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    assert OUR_TABLES | {VERSION_TABLE} <= _tables(target)
    assert _version_rows(target) == [HEAD]

    check = _run(_cli(["current", "--check"], target, order=order), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert HEAD in check.stdout
    if order != "documented":
        return

    refused = _run(_cli(["downgrade", "base"], target, order=order), cwd=tmp_path)
    assert refused.returncode == 1  # no terminal to confirm on, no --yes: nothing dropped
    assert "--yes" in refused.stderr
    assert _tables(target) >= OUR_TABLES
    down = _run(_cli(["downgrade", "base", "--yes"], target, order=order), cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert not OUR_TABLES & _tables(target)
    behind = _run(_cli(["current", "--check"], target, order=order), cwd=tmp_path)
    assert behind.returncode == 1, behind.stderr


def test_cli_current_check_on_empty_database(target: Target, tmp_path: Path) -> None:
    if target.kind == "sqlite-file":
        # an empty database file (a path with no file is "no database", see test_cli_errors)
        Path(target.url[len("sqlite:///") :]).touch()
    result = _run(_cli(["current", "--check"], target), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "none" in result.stdout
    # Checking does not migrate.
    assert not (OUR_TABLES | {VERSION_TABLE}) & _tables(target)
    plain = _run(_cli(["current"], target), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr


BAD_USAGE = [
    [],
    ["--url", "URL"],
    ["--url", "URL", "frobnicate"],
    ["--url", "URL", "downgrade"],
    ["--url", "URL", "upgrade", "head", "extra"],
    ["--url", "URL", "current", "--bogus"],
    ["--no-such-option", "current"],
    ["current", "--url"],
]


@pytest.mark.parametrize("argv", BAD_USAGE, ids=lambda a: " ".join(a) or "nothing")
def test_cli_bad_usage_returns_2_in_process(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'usage.sqlite'}"
    with pytest.raises(SystemExit) as exc:
        cli.main([url if a == "URL" else a for a in argv])
    assert exc.value.code == 2
    assert "usage" in capsys.readouterr().err.lower()
    assert not (tmp_path / "usage.sqlite").exists()


def test_cli_bad_usage_exits_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'usage.sqlite'}"
    prog = [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy"]
    cases = [["--url", url], ["frobnicate", "--url", url], ["--no-such-option", "current"]]
    procs = [
        subprocess.Popen(
            [*prog, *argv],
            cwd=tmp_path,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in cases
    ]
    results = [
        (argv, p.wait(timeout=120), *p.communicate()) for argv, p in zip(cases, procs, strict=True)
    ]
    for argv, rc, out, err in results:
        assert rc == 2, (argv, out, err)
        assert "usage" in err.lower(), (argv, err)
    assert not (tmp_path / "usage.sqlite").exists()
    assert not (tmp_path / "checkpoints.sqlite").exists()


# -- alembic's own command line from the repository root ---------------------------------


def _default_db_mtime() -> int | None:
    """mtime of the default SQLite file in the repo root (the example may have made it)."""
    path = REPO_ROOT / "checkpoints.sqlite"
    return path.stat().st_mtime_ns if path.exists() else None


def test_alembic_cli_with_x_url(target: Target) -> None:
    before = _default_db_mtime()
    up = _run(_alembic("-x", f"url={target.url}", "upgrade", "head"), cwd=REPO_ROOT)
    assert up.returncode == 0, up.stderr
    # No schema given: the database's default schema.
    assert OUR_TABLES | {VERSION_TABLE} <= _tables(target, schema=None)
    assert _version_rows(target, schema=None) == [HEAD]

    down = _run(_alembic("-x", f"url={target.url}", "downgrade", "base"), cwd=REPO_ROOT)
    assert down.returncode == 0, down.stderr
    assert not OUR_TABLES & _tables(target, schema=None)
    assert _current(target, schema=None) is None
    # The URL given was used: the default database was neither created nor touched.
    assert _default_db_mtime() == before


def test_alembic_cli_with_env_url(target: Target) -> None:
    before = _default_db_mtime()
    env = {**_env(), "LANGGRAPH_CHECKPOINT_URL": target.url}
    up = _run(_alembic("upgrade", "head"), cwd=REPO_ROOT, env=env)
    assert up.returncode == 0, up.stderr
    assert OUR_TABLES | {VERSION_TABLE} <= _tables(target, schema=None)
    assert _version_rows(target, schema=None) == [HEAD]

    down = _run(_alembic("downgrade", "base"), cwd=REPO_ROOT, env=env)
    assert down.returncode == 0, down.stderr
    assert not OUR_TABLES & _tables(target, schema=None)
    assert _current(target, schema=None) is None
    # The URL given was used: the default database was neither created nor touched.
    assert _default_db_mtime() == before


def test_alembic_cli_with_x_schema(fresh_pg_url: str) -> None:
    target = Target("postgres", fresh_pg_url, "xschema")
    args = ["-x", f"url={fresh_pg_url}", "-x", "schema=xschema"]
    up = _run(_alembic(*args, "upgrade", "head"), cwd=REPO_ROOT)
    assert up.returncode == 0, up.stderr
    assert _tables(target) == OUR_TABLES | {VERSION_TABLE}
    assert _version_rows(target) == [HEAD]
    assert _tables(target, schema="public") == set()

    down = _run(_alembic(*args, "downgrade", "base"), cwd=REPO_ROOT)
    assert down.returncode == 0, down.stderr
    assert not OUR_TABLES & _tables(target)
    assert _current(target) is None
    assert _tables(target, schema="public") == set()


# -- concurrent migrations ---------------------------------------------------------------

_RACER = """
import os, sys, time
from langgraph.checkpoint.sqlalchemy.cli import main
ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.002)
sys.exit(main(sys.argv[3:]))
"""


def _race_upgrades(target: Target, tmp_path: Path, workers: int = 4) -> None:
    """Start ``workers`` CLI upgrades, wait until all have imported, release them at once."""
    run = tmp_path / f"race-{uuid.uuid4().hex[:8]}"
    run.mkdir()
    go = run / "go"
    argv = ["upgrade", "--url", target.url]
    if target.schema:
        argv += ["--schema", target.schema]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(run / f"ready-{i}"), str(go), *argv],
            cwd=run,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(workers)
    ]
    try:
        deadline = time.monotonic() + 60
        while len(list(run.glob("ready-*"))) < workers and time.monotonic() < deadline:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.01)
        go.touch()
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for rc, _out, err in results:
        assert rc == 0, err


def test_concurrent_upgrades_on_empty_database(target: Target, tmp_path: Path) -> None:
    """Four processes upgrade one empty database at once (default schema)."""
    target = Target(target.kind, target.url, None)
    _race_upgrades(target, tmp_path)
    assert OUR_TABLES | {VERSION_TABLE} <= _tables(target)
    assert _version_rows(target) == [HEAD]
    assert _current(target) == HEAD


def test_concurrent_upgrades_into_new_postgres_schema(fresh_pg_url: str, tmp_path: Path) -> None:
    """Four processes create the same schema and migrate it at once."""
    target = Target("postgres", fresh_pg_url, "raced")
    _race_upgrades(target, tmp_path)
    assert _tables(target) == OUR_TABLES | {VERSION_TABLE}
    assert _version_rows(target) == [HEAD]
    assert _tables(target, schema="public") == set()


# -- the PostgreSQL schema= option of the saver ------------------------------------------


async def test_saver_schema_option_on_postgres(fresh_pg_url: str) -> None:
    s1 = SQLAlchemySaver.from_conn_string(fresh_pg_url, schema="s1")
    s2 = SQLAlchemySaver.from_conn_string(fresh_pg_url, schema="s2")
    pg = Target("postgres", fresh_pg_url, None)
    try:
        s1.setup()
        assert _tables(pg, schema="s1") == OUR_TABLES | {VERSION_TABLE}
        assert _version_rows(pg, schema="s1") == [HEAD]
        assert _tables(pg, schema="public") == set()
        assert _tables(pg, schema="s2") == set()

        await s2.asetup()
        assert _tables(pg, schema="s2") == OUR_TABLES | {VERSION_TABLE}
        assert _tables(pg, schema="public") == set()

        cp1 = empty_checkpoint()
        cp1["channel_values"] = {"who": "s1"}
        cp1["channel_versions"] = {"who": s1.get_next_version(None, None)}
        stored1 = s1.put(
            _checkpoint_config("shared"), cp1, {"schema": "s1"}, cp1["channel_versions"]
        )
        s1.put(_checkpoint_config("only-s1"), empty_checkpoint(), {}, {})

        cp2 = empty_checkpoint()
        cp2["channel_values"] = {"who": "s2"}
        cp2["channel_versions"] = {"who": s2.get_next_version(None, None)}
        stored2 = await s2.aput(
            _checkpoint_config("shared"), cp2, {"schema": "s2"}, cp2["channel_versions"]
        )

        got1 = s1.get_tuple(_checkpoint_config("shared"))
        got2 = await s2.aget_tuple(_checkpoint_config("shared"))
        assert got1 is not None and got2 is not None
        assert got1.config == stored1 and got2.config == stored2
        assert got1.checkpoint["channel_values"] == {"who": "s1"}
        assert got2.checkpoint["channel_values"] == {"who": "s2"}
        assert got1.metadata["schema"] == "s1" and got2.metadata["schema"] == "s2"

        assert s2.get_tuple(_checkpoint_config("only-s1")) is None
        assert await s2.aget_tuple(_checkpoint_config("only-s1")) is None
        assert {t.config["configurable"]["thread_id"] for t in s1.list(None)} == {
            "shared",
            "only-s1",
        }
        assert [t.config["configurable"]["thread_id"] async for t in s2.alist(None)] == ["shared"]

        s2.delete_thread("shared")
        assert s2.get_tuple(_checkpoint_config("shared")) is None
        assert s1.get_tuple(_checkpoint_config("shared")) is not None

        # Nothing ever landed in public.
        assert _tables(pg, schema="public") == set()
    finally:
        await s1.aclose()
        await s2.aclose()


async def test_0006_indexes_stored_metadata(target: Target) -> None:
    """Checkpoints stored before 0006 are found through the metadata index after it."""
    _migrate(target, "up", "0005_lock_rows")
    c = lgsa_schema.checkpoints
    rows = [
        {
            "thread_id": f"t{i}",
            "checkpoint_ns": "",
            "checkpoint_id": f"1f000000-0000-6000-8000-{i:012}",
            "type": "msgpack",
            "checkpoint": b"\x80",
            "metadata": {"user_id": f"u{i % 2}", "graph_id": 7, "other": "x"},
            "value_versions": {},
        }
        for i in range(5)
    ]
    translate = {None: target.schema} if target.schema else None
    with target.connect(begin=True, schema_translate_map=translate) as conn:
        conn.execute(sa.insert(c), rows)
    _migrate(target, "up", "head")
    with target.connect(schema_translate_map=translate) as conn:
        mi = lgsa_schema.metadata_index
        indexed = conn.execute(sa.select(mi.c.key, sa.func.count()).group_by(mi.c.key)).all()
        keys = {str(k) for (k,) in conn.execute(sa.select(lgsa_schema.metadata_keys.c.key))}
    qb = query_builder(sa.make_url(target.url).get_backend_name())
    if qb.metadata_index_rows:
        assert dict(indexed) == {"user_id": 5, "graph_id": 5}
        assert keys == {"thread_id", "user_id", "assistant_id", "graph_id"}
    else:  # PostgreSQL: the GIN index
        assert indexed == [] and keys == set()
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        found = saver.list(None, filter={"user_id": "u1"})
        assert sorted(t.config["configurable"]["thread_id"] for t in found) == ["t1", "t3"]
        assert len(list(saver.list(None, filter={"graph_id": 7.0}))) == 5
    finally:
        saver.close()


def test_0002_downgrade_moves_inline_values_to_the_blobs_table(target: Target) -> None:
    """Below 0002 the inline values live in the blobs table: nothing is lost, and a
    database upgraded again reads them there. On MariaDB the move bound text channel
    names and versions to VARBINARY key columns and failed (TypeError) before the
    revision typed its columns as 0001 made them."""
    _migrate(target, "up", "head")
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"small": "s", "子": [1, 2], "big": "x" * 40_000}
        checkpoint["channel_versions"] = {"small": "1.1", "子": "2.1", "big": "3.1"}
        config = saver.put(_checkpoint_config("t"), checkpoint, {}, checkpoint["channel_versions"])
        want = saver.get_tuple(config)
        assert want is not None
    finally:
        saver.close()
    with target.connect() as conn:
        blob_rows = len(conn.execute(select(_reflected_blobs(conn, target).c.channel)).all())
    assert blob_rows == 1  # the big value; the small ones are inline
    _migrate(target, "down", "0001_initial")
    with target.connect() as conn:
        blobs = _reflected_blobs(conn, target)
        channels = {
            bytes(c) if isinstance(c, bytes) else c.encode()
            for (c,) in conn.execute(select(blobs.c.channel))
        }
    assert channels == {b"small", "子".encode(), b"big"}
    _migrate(target, "up", "head")
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        got = saver.get_tuple(config)
    finally:
        saver.close()
    assert got is not None
    assert got.checkpoint["channel_values"] == want.checkpoint["channel_values"]


def _reflected_blobs(conn: Connection, target: Target) -> Table:
    return Table("lgsa_checkpoint_blobs", MetaData(), autoload_with=conn, schema=target.schema)


def test_0014_downgrade_stores_pieces_whole(target: Target) -> None:
    """Below 0014 every blob row is a whole value: the downgrade rebuilds each piece in
    place, so the earlier revision's readers (which know no pieces) read every version
    as it was stored, and a database upgraded again reads them too."""
    _migrate(target, "up", "head")
    serde = JsonPlusSerializer()
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    config = _checkpoint_config("t")
    wanted: dict[str, list[str]] = {}
    try:
        checkpoint = empty_checkpoint()
        for n in range(1, 60):  # a list grown at each put: stored as pieces
            version = saver.get_next_version(checkpoint["channel_versions"].get("log"), None)
            checkpoint = create_checkpoint(checkpoint, None, n)
            checkpoint["channel_values"] = {"log": [f"{i} " + "x" * 400 for i in range(n)]}
            checkpoint["channel_versions"] = {"log": version}
            config = saver.put(config, checkpoint, {}, {"log": version})
            wanted[version] = checkpoint["channel_values"]["log"]
        assert saver.get_tuple(config) is not None
    finally:
        saver.close()
    with target.connect() as conn:
        blobs = _reflected_blobs(conn, target)
        pieces = select(sa.func.count()).where(blobs.c.base_version.is_not(None))
        assert conn.execute(pieces).scalar()
    _migrate(target, "down", "0013_store_expiry_partial_index")
    with target.connect() as conn:
        blobs = _reflected_blobs(conn, target)
        assert "base_version" not in blobs.c
        stored = {
            (bytes(v).decode() if isinstance(v, bytes) else v): serde.loads_typed((t, bytes(b)))
            for v, t, b in conn.execute(select(blobs.c.version, blobs.c.type, blobs.c.blob))
        }
    assert stored == {v: wanted[v] for v in stored} and len(stored) >= 15  # 1-40: inline
    _migrate(target, "up", "head")
    saver = SQLAlchemySaver.from_conn_string(target.url, schema=target.schema)
    try:
        got = saver.get_tuple(config)
    finally:
        saver.close()
    assert got is not None and got.checkpoint["channel_values"]["log"] == wanted[version]
