"""Moving in: an official ``SqliteStore`` file and an official
``PostgresStore`` database copied into our store on a SQLite file, PostgreSQL and
MariaDB (:mod:`langgraph.store.sqlalchemy.transfer`, ``store copy``).

The sources are written by the official packages themselves. ``SqliteStore.setup()``
with an index config loads the ``sqlite-vec`` extension, which this Python's ``sqlite3``
cannot load (no ``enable_load_extension``): the file is set up without one, its vector
table is created by the package's own ``VECTOR_MIGRATIONS`` statements, and a second
``SqliteStore`` with the index config writes the items and their embeddings (a put
needs no extension). PostgreSQL has no pgvector here, so ``PostgresStore`` is used
without an index config; its vectors are read as pgvector's text form, which the last
test imitates with a text column.

Checked: every item, value, times and TTL; rows that are not items reported and
skipped; a second run writes nothing; a copy stopped after one page resumes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from langgraph.checkpoint.sqlalchemy import cli
from langgraph.checkpoint.sqlalchemy.errors import UnknownSourceError
from langgraph.store.sqlalchemy import SQLAlchemyStore, transfer
from langgraph.store.sqlalchemy.tables import items as our_items

from ..provision import BACKENDS, fresh_database

TARGETS = [b for b in ("sqlite-file", "postgres", "mariadb") if b in BACKENDS]
DIMS = 8
#: Items the sources hold: 23 alive (some with a TTL), plus one expired and one bad row.
ALIVE = 23


def fake_embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: 8 numbers from the text's SHA-256."""
    return [[b / 255 for b in hashlib.sha256(t.encode()).digest()[:DIMS]] for t in texts]


class Counting:
    """``fake_embed`` of ``dims`` numbers that counts the texts it embedded."""

    def __init__(self, dims: int = DIMS) -> None:
        self.dims = dims
        self.calls = 0

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        return [[b / 255 for b in hashlib.sha256(t.encode()).digest()[: self.dims]] for t in texts]


def fill(store: Any) -> None:
    """The items of every source, through the official store's own ``put``."""
    for i in range(20):
        ns = ("users", f"u{i % 3}", "memories")
        store.put(ns, f"k{i:02d}", {"text": f"memory {i}", "n": i, "tags": ["a", i]}, ttl=60 + i)
    store.put(("docs",), "plain", {"text": "no ttl", "nested": {"x": [1.5, None, True]}})
    store.put(("docs", "ünïcode"), "ключ", {"text": "日本語", "emoji": "🙂"})
    store.put(("docs",), "empty", {})


@pytest.fixture
def sqlite_source(tmp_path: Path) -> str:
    """An official SqliteStore file with embeddings, TTLs, an expired item and a bad row."""
    from langgraph.store.sqlite import SqliteStore
    from langgraph.store.sqlite.base import VECTOR_MIGRATIONS

    path = str(tmp_path / "official.sqlite")
    with SqliteStore.from_conn_string(path) as base:
        base.setup()
        for statement in VECTOR_MIGRATIONS:  # what setup() runs after loading sqlite-vec
            base.conn.executescript(statement)
        index = {"dims": DIMS, "embed": fake_embed, "text_fields": ["text"]}
        store = SqliteStore(base.conn, index=index)  # type: ignore[arg-type]
        store.is_setup = True
        fill(store)
        base.conn.execute(
            "INSERT INTO store (prefix, key, value, expires_at, ttl_minutes) "
            "VALUES ('old', 'gone', '{}', '2001-01-01 00:00:00', 5)"
        )
        base.conn.execute("INSERT INTO store (prefix, key, value) VALUES ('bad', 'row', 'nan')")
    return path


@contextmanager
def official_postgres(prefix: str, write: Callable[[Any], None]) -> Iterator[str]:
    """The URL of a fresh PostgreSQL database set up by the official ``PostgresStore``,
    which ``write(store)`` fills (``store.conn`` runs SQL); dropped on exit."""
    if "postgres" not in BACKENDS:
        pytest.skip("no PostgreSQL")
    from langgraph.store.postgres import PostgresStore

    with fresh_database("postgres", prefix=prefix) as url:
        libpq = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        with PostgresStore.from_conn_string(libpq) as store:
            store.setup()
            write(store)
        yield url


def _fill_postgres(store: Any) -> None:
    fill(store)
    store.conn.execute(
        "INSERT INTO store (prefix, key, value, expires_at, ttl_minutes) "
        "VALUES ('old', 'gone', '{}', now() - interval '1 day', 5)"
    )
    store.conn.execute("INSERT INTO store (prefix, key, value) VALUES ('bad', 'row', '[1]')")


@pytest.fixture
def postgres_source() -> Iterator[str]:
    """An official PostgresStore database (no pgvector: no index config)."""
    with official_postgres("lgsa_pgstore", _fill_postgres) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def source(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_source"))


@pytest.fixture
def targets(tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """Call it with a backend for the URL of a new, empty database (dropped after)."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        n = iter(range(100))
        yield lambda backend: stack.enter_context(
            fresh_database(backend, tmp_path, prefix="lgsa_storetr", filename=f"t{next(n)}.db")
        )


# -- what the source holds, read independently -----------------------------------------------


def _utc(raw: Any) -> float | None:
    if raw is None:
        return None
    when = raw if isinstance(raw, datetime) else datetime.fromisoformat(str(raw))
    when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def expected(url: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    """The alive, valid source items: (stored namespace, key) -> (value, created,
    updated, expires, ttl), read with the source's own driver."""
    if url.startswith("postgresql"):
        engine = create_engine(url)
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT prefix, key, value::text, created_at, updated_at, expires_at, "
                    "ttl_minutes FROM store"
                )
            ).all()
        engine.dispose()
    else:
        with sqlite3.connect(url) as conn:
            rows = conn.execute(
                "SELECT prefix, key, value, created_at, updated_at, expires_at, ttl_minutes "
                "FROM store"
            ).fetchall()
    now = datetime.now(timezone.utc).timestamp()
    out = {}
    for prefix, key, value, created, updated, expires, ttl in rows:
        try:
            parsed = json.loads(value)
        except ValueError:
            continue
        if not isinstance(parsed, dict) or (expires is not None and (_utc(expires) or 0) < now):
            continue
        ns = "\x01".join(prefix.split("."))
        ttl = None if ttl is None else float(ttl)
        out[(ns, key)] = (parsed, _utc(created), _utc(updated), _utc(expires), ttl)
    assert len(out) == ALIVE
    return out


def held(store: SQLAlchemyStore) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Every row of our items table, expired included."""
    c = our_items.c
    options = {"schema_translate_map": {None: store.schema}} if store.schema else {}
    with store.engine.connect().execution_options(**options) as conn:
        rows = conn.execute(
            select(
                c.namespace, c.key, c.value, c.created_at, c.updated_at, c.expires_at, c.ttl_minutes
            )
        ).all()
    return {(r[0], r[1]): tuple(r[2:]) for r in rows}


def open_target(url: str, **kwargs: Any) -> SQLAlchemyStore:
    store = SQLAlchemyStore.from_conn_string(url, **kwargs)
    store.setup()
    return store


def copy(source: str, target: SQLAlchemyStore, **kwargs: Any) -> transfer.StoreCopyReport:
    with transfer.open_store_source(source) as src:
        return transfer.copy_store(src, target, batch_size=10, **kwargs)


# -- the copy ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", TARGETS)
def test_copy_keeps_every_item_its_times_and_ttl_and_a_rerun_changes_nothing(
    source: str, backend: str, targets: Callable[[str], str]
) -> None:
    want = expected(source)
    with open_target(targets(backend)) as target:
        report = copy(source, target)
        assert (report.read, report.copied, report.unchanged) == (ALIVE + 2, ALIVE, 0)
        assert (report.expired, report.rejected_count, report.verified, report.differ) == (
            1,
            1,
            ALIVE,
            0,
        )
        assert [(r.namespace, r.key) for r in report.rejected] == [("bad", "row")]
        got = held(target)
        assert got == want
        ttls = [v[4] for v in got.values() if v[4] is not None]
        assert len(ttls) == 20 and all(v[3] is not None for v in got.values() if v[4])
        # Through the store's API: the same items, times as aware datetimes.
        item = target.get(("users", "u1", "memories"), "k01", refresh_ttl=False)
        assert item is not None and item.value == {"text": "memory 1", "n": 1, "tags": ["a", 1]}
        assert item.created_at.timestamp() == want[("users\x01u1\x01memories", "k01")][1]
        assert target.get(("docs", "ünïcode"), "ключ") is not None
        assert target.get(("old",), "gone") is None and target.stats().items == ALIVE
        assert target.list_namespaces() == [
            ("docs",),
            ("docs", "ünïcode"),
            ("users", "u0", "memories"),
            ("users", "u1", "memories"),
            ("users", "u2", "memories"),
        ]
        again = copy(source, target)
        assert (again.copied, again.unchanged, again.verified, again.differ) == (0, ALIVE, ALIVE, 0)
        assert held(target) == got


@pytest.mark.parametrize("backend", TARGETS)
def test_an_interrupted_copy_resumes(
    source: str, backend: str, targets: Callable[[str], str]
) -> None:
    class Stop(Exception):
        pass

    def stop(done: int) -> None:
        raise Stop(done)

    with open_target(targets(backend)) as target:
        with pytest.raises(Stop):
            copy(source, target, progress=stop)  # stopped after the first page of 10
        first = held(target)
        assert 0 < len(first) <= 10
        report = copy(source, target)
        assert (report.unchanged, report.copied) == (len(first), ALIVE - len(first))
        assert report.verified == ALIVE and report.differ == 0
        assert held(target) == expected(source)


def test_a_source_item_changed_since_is_copied_again(sqlite_source: str, tmp_path: Path) -> None:
    with open_target(f"sqlite:///{tmp_path / 't.db'}") as target:
        copy(sqlite_source, target)
        with sqlite3.connect(sqlite_source) as conn:  # a refreshed TTL, nothing else
            conn.execute("UPDATE store SET expires_at = '2999-01-01 00:00:00' WHERE key = 'k05'")
        report = copy(sqlite_source, target)
        assert (report.copied, report.unchanged) == (1, ALIVE - 1)
        row = held(target)[("users\x01u2\x01memories", "k05")]
        assert row[3] == datetime(2999, 1, 1, tzinfo=timezone.utc).timestamp()


# -- embeddings ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", TARGETS)
def test_sqlite_vectors_are_reused_when_the_dims_match(
    sqlite_source: str, backend: str, targets: Callable[[str], str]
) -> None:
    embed = Counting()
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    with open_target(targets(backend), index=index) as target:
        report = copy(sqlite_source, target)
        assert report.vectors_reused == ALIVE - 1  # "empty" has no text: no vector
        assert embed.calls == 0  # none recomputed
        assert target.stats().vectors == ALIVE - 1
        hits = target.search(("users",), query="memory 7", limit=1)
        assert hits[0].key == "k07" and hits[0].score == pytest.approx(1.0, abs=1e-6)
        assert embed.calls == 1  # the query only


def test_vectors_of_another_size_are_recomputed(sqlite_source: str, tmp_path: Path) -> None:
    embed = Counting(dims=4)
    index = {"dims": 4, "embed": embed, "fields": ["text"]}
    with open_target(f"sqlite:///{tmp_path / 't.db'}", index=index) as target:
        report = copy(sqlite_source, target)
        assert report.vectors_reused == 0 and embed.calls == ALIVE - 1
        assert target.stats().vectors == ALIVE - 1
        again = copy(sqlite_source, target)  # nothing written: nothing embedded again
        assert again.copied == 0 and embed.calls == ALIVE - 1


def test_postgres_vector_text_is_reused(postgres_source: str, tmp_path: Path) -> None:
    """PostgresStore's ``store_vectors`` read through pgvector's text form ``[1,2,...]``
    (pgvector is not installed here: a text column holds what ``vector::text`` gives)."""
    engine = create_engine(postgres_source)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE store_vectors (prefix text, key text, field_name text, "
                "embedding text, PRIMARY KEY (prefix, key, field_name))"
            )
        )
        conn.execute(
            text("INSERT INTO store_vectors VALUES ('docs', 'plain', 'text', :v)"),
            {"v": json.dumps(fake_embed(["no ttl"])[0])},
        )
    engine.dispose()
    embed = Counting()
    index = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    with open_target(f"sqlite:///{tmp_path / 't.db'}", index=index) as target:
        report = copy(postgres_source, target)
        assert report.vectors_reused == 1 and embed.calls == ALIVE - 2  # all but plain, empty
        hit = target.search(("docs",), query="no ttl", limit=1)[0]
        assert hit.key == "plain" and hit.score == pytest.approx(1.0, abs=1e-6)


# -- untrusted rows ------------------------------------------------------------------------


def test_rows_that_are_not_items_are_reported_and_skipped(tmp_path: Path) -> None:
    from langgraph.store.sqlite import SqliteStore

    path = str(tmp_path / "odd.sqlite")
    with SqliteStore.from_conn_string(path) as store:
        store.setup()
        store.put(("ok",), "k", {"v": 1})
        bad = [
            ("a..b", "k", "{}"),  # empty label
            ("ok", "nan", '{"x": NaN}'),
            ("ok", "list", "[1, 2]"),
            ("ok", "deep", "[" * 100_000 + "]" * 100_000),
            ("ok", "big", '{"x": 123456789012345678901234567890}'),
            ("ok", "pickle", "cos\nsystem\n(S'echo hi'\ntR."),
            ("ok", "time", "{}"),
            ("ok", "ttl", "{}"),
        ]
        for prefix, key, value in bad:
            store.conn.execute(
                "INSERT INTO store (prefix, key, value) VALUES (?, ?, ?)", (prefix, key, value)
            )
        store.conn.execute("UPDATE store SET created_at = 'yesterday' WHERE key = 'time'")
        store.conn.execute("UPDATE store SET ttl_minutes = -5 WHERE key = 'ttl'")
        store.conn.execute(
            "INSERT INTO store (prefix, key, value) VALUES ('ok', 'blob', ?)",
            (json.dumps({"b": 1}).encode(),),
        )
    with open_target(f"sqlite:///{tmp_path / 't.db'}") as target:
        report = copy(path, target)
        assert report.copied == 2 and report.rejected_count == len(bad)
        assert sorted(r.key for r in report.rejected) == sorted(k for _, k, _ in bad)
        assert target.get(("ok",), "blob").value == {"b": 1}  # type: ignore[union-attr]


# -- the command line --------------------------------------------------------------------


def test_store_copy_command(
    sqlite_source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(tmp_path / "ours.sqlite")
    code = cli.main(["store", "copy", "--from", sqlite_source, "--url", target])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines() == [
        f"read {ALIVE + 2} item(s) from the sqlite store: copied {ALIVE} (0 with their "
        "embeddings), 0 already there, 1 expired (not copied), 1 rejected",
        "REJECTED bad/row: the value is not JSON: Expecting value: line 1 column 1 (char 0)",
        f"verified: all {ALIVE} item(s) of the source are in the target",
    ]
    code = cli.main(["store", "copy", "--from", sqlite_source, "--to", target, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["copied"] == 0 and report["unchanged"] == ALIVE
    code = cli.main(["store", "copy", "--from", target, "--url", str(tmp_path / "x.db")])
    assert code == 2 and "no table 'store'" in capsys.readouterr().err
    code = cli.main(
        ["store", "copy", "--from", sqlite_source, "--url", target, "--index", '{"dims": 8}']
    )
    assert code == 2 and capsys.readouterr().err.startswith("error: --index")


def test_an_item_the_target_already_has_takes_the_source_times(
    sqlite_source: str, tmp_path: Path
) -> None:
    with open_target(f"sqlite:///{tmp_path / 't.db'}") as target:
        target.put(("docs",), "plain", {"written": "by the application"})
        report = copy(sqlite_source, target)
        assert report.differ == 0
        assert held(target) == expected(sqlite_source)


def test_the_progress_callback_counts_rows(sqlite_source: str) -> None:
    """The rows read so far after each page, up to ``count()`` (the total of the CLI's
    bar: tests/cli/test_cli_progress.py shows it on a terminal)."""
    seen: list[int] = []
    with transfer.open_store_source(sqlite_source) as src:
        total = src.count()
        with open_target(":memory:") as target:
            transfer.copy_store(src, target, batch_size=10, progress=seen.append)
    assert total == ALIVE + 2 and seen == [10, 20, ALIVE + 2]


def test_a_postgres_store_in_a_schema(postgres_source: str, tmp_path: Path) -> None:
    engine = create_engine(postgres_source)
    with engine.begin() as conn:
        conn.execute(text("CREATE SCHEMA official"))
        conn.execute(text("ALTER TABLE store SET SCHEMA official"))
    engine.dispose()
    with open_target(f"sqlite:///{tmp_path / 't.db'}") as target:
        with (
            pytest.raises(UnknownSourceError, match="no table 'store'"),
            transfer.open_store_source(postgres_source),
        ):
            pass
        with transfer.open_store_source(postgres_source, schema="official") as src:
            report = transfer.copy_store(src, target)
        assert (report.copied, report.verified, report.differ) == (ALIVE, ALIVE, 0)


def test_a_rerun_with_an_index_embeds_what_a_copy_without_one_left_out(
    sqlite_source: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    with open_target(url) as target:
        assert copy(sqlite_source, target).copied == ALIVE
        assert target.stats().vectors == 0
    embed = Counting(dims=4)
    with open_target(url, index={"dims": 4, "embed": embed, "fields": ["text"]}) as target:
        report = copy(sqlite_source, target)
        # every item with a text is written again, with vectors; "empty" has no text
        assert (report.copied, report.unchanged, report.differ) == (ALIVE - 1, 1, 0)
        assert embed.calls == ALIVE - 1 and target.stats().vectors == ALIVE - 1
        assert held(target) == expected(sqlite_source)
        assert copy(sqlite_source, target).copied == 0 and embed.calls == ALIVE - 1


@pytest.mark.parametrize(
    ("raw", "vector"),
    [
        (struct.pack("<3f", 1.0, -2.5, 0.0), [1.0, -2.5, 0.0]),  # sqlite-vec's blob
        ("[1,-2.5,0]", [1.0, -2.5, 0.0]),  # pgvector's text
        (struct.pack("<2f", 1.0, float("nan")), None),
        (struct.pack("<2f", 1.0, float("inf")), None),
        (b"\x00\x00\x80", None),  # not whole float32 values
        (b"", None),
        ("[1, true]", None),
        ('[1, "2"]', None),
        ("[1, NaN]", None),
        ("[]", None),
        ("{1:0.5}/3", None),  # pgvector's sparsevec: recomputed
        ("[" * 100_000, None),
        (12, None),
        (None, None),
    ],
)
def test_source_vectors_are_read_as_data(raw: Any, vector: list[float] | None) -> None:
    from langgraph.store.sqlalchemy.official import _vector

    assert _vector(raw) == vector


def test_an_item_the_target_store_refuses_is_reported_and_the_rest_copied(
    sqlite_source: str, tmp_path: Path
) -> None:
    def embed(texts: list[str]) -> list[list[float]]:  # a wrong size for one text
        return [[1.0] * (3 if t == "memory 4" else 4) for t in texts]

    index = {"dims": 4, "embed": embed, "fields": ["text"]}
    with open_target(f"sqlite:///{tmp_path / 't.db'}", index=index) as target:
        report = copy(sqlite_source, target)
        assert report.copied == ALIVE - 1 and report.rejected_count == 2
        refused = [r for r in report.rejected if r.key == "k04"]
        assert len(refused) == 1 and "dims=4" in refused[0].reason
        assert (report.verified, report.differ, report.differing) == (
            ALIVE - 1,
            1,
            ["users.u1.memories/k04"],
        )
