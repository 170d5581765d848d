"""``store copy`` from crafted official stores, through the command line: a ``SqliteStore``
file and a ``PostgresStore`` database (a fresh PostgreSQL database) written by the
official packages, then given rows no official store writes, copied into a SQLite file,
PostgreSQL and MariaDB.

Each crafted row is one ``REJECTED`` line and the copy goes on: a time that is out of
range in UTC (``0001-01-01T00:00:00+01:00``), an expiry of ``'infinity'``, a TTL of
1e308 (it used to be copied, then every read that refreshed it overflowed), and values
larger than the copy's cap, which are rejected unread (a generated column of 25 MB a row
used to take gigabytes). Pages hold a bounded amount of values.
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from langgraph.checkpoint.sqlalchemy import cli
from langgraph.store.sqlalchemy import SQLAlchemyStore, StoredItem, transfer

from ..provision import BACKENDS, fresh_database
from ..transfer.test_store_transfer import official_postgres

TARGETS = [b for b in ("sqlite-file", "postgres", "mariadb") if b in BACKENDS]
BIG = 25_000_000  # bytes of each generated value


def _official_sqlite(path: Path) -> sqlite3.Connection:
    """A SqliteStore file set up and filled by the official package: ``ok/k0..k4``."""
    from langgraph.store.sqlite import SqliteStore

    with SqliteStore.from_conn_string(str(path)) as store:
        store.setup()
        for i in range(5):
            store.put(("ok",), f"k{i}", {"v": i}, ttl=60)
    return sqlite3.connect(path, isolation_level=None)


@pytest.fixture
def sqlite_source(tmp_path: Path) -> str:
    """A SqliteStore file with a time out of range in UTC, a TTL of 1e308, and a
    ``value`` made a generated column: 25 MB for the rows of ``big``, small otherwise."""
    path = tmp_path / "official.sqlite"
    conn = _official_sqlite(path)
    conn.execute("UPDATE store SET created_at = '0001-01-01T00:00:00+01:00' WHERE key = 'k1'")
    conn.execute("UPDATE store SET ttl_minutes = 1e308 WHERE key = 'k2'")
    # The same table with ``value`` computed from ``n`` (SqliteStore reads it all alike).
    conn.executescript(
        f"""
        CREATE TABLE crafted (prefix TEXT NOT NULL, key TEXT NOT NULL, n INTEGER,
            value TEXT GENERATED ALWAYS AS (CASE WHEN n IS NULL THEN plain ELSE
                '{{"x":"' || hex(zeroblob({BIG // 2} * n)) || '"}}' END) VIRTUAL,
            plain TEXT, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
            updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, expires_at TIMESTAMP,
            ttl_minutes REAL, PRIMARY KEY (prefix, key));
        INSERT INTO crafted (prefix, key, plain, created_at, updated_at, expires_at,
            ttl_minutes)
            SELECT prefix, key, value, created_at, updated_at, expires_at, ttl_minutes
            FROM store;
        INSERT INTO crafted (prefix, key, n) VALUES ('big', 'a', 1), ('big', 'b', 1),
            ('big', 'c', 1);
        DROP TABLE store;
        ALTER TABLE crafted RENAME TO store;
        """
    )
    conn.close()
    return str(path)


def _craft_postgres(store: Any) -> None:
    for i in range(5):
        store.put(("ok",), f"k{i}", {"v": i}, ttl=60)
    store.conn.execute("UPDATE store SET expires_at = 'infinity' WHERE key = 'k1'")
    store.conn.execute("UPDATE store SET ttl_minutes = 2147483647 WHERE key = 'k2'")


@pytest.fixture
def postgres_source() -> Iterator[str]:
    """A PostgresStore database (fresh) with an expiry of 'infinity', and the largest TTL
    its ``INT`` column holds (2**31 - 1 minutes: kept)."""
    with official_postgres("lgsa_crafted", _craft_postgres) as url:
        yield url


def _copy(
    capsys: pytest.CaptureFixture[str], source: str, target: str, *options: str
) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = cli.main(["store", "copy", "--from", source, "--url", target, *options])
    out, err = capsys.readouterr()
    assert err == ""
    return code, out.splitlines()


def _reads_after_copy(target: str, keys: list[str]) -> None:
    """Every copied item reads back, its TTL refreshed (what the huge TTL broke)."""
    with SQLAlchemyStore.from_conn_string(target) as store:
        for key in keys:
            item = store.get(("ok",), key)  # refresh_ttl: expires_at = now + ttl * 60
            assert item is not None and item.value == {"v": int(key[1:])}, key
        assert len(store.search(("ok",), limit=10)) == len(keys)


_CAP = 16 * 1024 * 1024
_BIG = f"the value is {BIG + 8:,} bytes, above the copy's cap of {_CAP:,} (--max-value-mb)"
#: What ``store copy`` prints for each crafted source: its first line's start, the
#: REJECTED lines, and the keys under ``("ok",)`` copied.
CRAFTED = {
    "sqlite": (
        "read 8 item(s) from the sqlite store: copied 3 ",
        [
            f"REJECTED big/a: {_BIG}",
            f"REJECTED big/b: {_BIG}",
            f"REJECTED big/c: {_BIG}",
            "REJECTED ok/k1: created_at: '0001-01-01T00:00:00+01:00' is out of range in UTC",
            "REJECTED ok/k2: ttl_minutes 1e+308 is above the store's 4,000,000,000",
        ],
        ["k0", "k3", "k4"],
    ),
    "postgres": (
        "read 5 item(s) from the postgres store: copied 4 ",
        ["REJECTED ok/k1: expires_at: infinity is not a time this store keeps"],
        ["k0", "k2", "k3", "k4"],
    ),
}


@pytest.mark.parametrize("backend", TARGETS)
@pytest.mark.parametrize("kind", sorted(CRAFTED))
def test_crafted_rows_are_rejected_and_the_copy_goes_on(
    kind: str,
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each crafted row is one REJECTED line, the other items are copied, verified and
    read back with their TTL refreshed, exit 0. SqliteStore: a time out of range in UTC
    (it stopped the copy with a traceback), a TTL of 1e308 (copied, then every refreshing
    read overflowed) and three 25 MB values, never read into this process (their size is
    taken in SQL). PostgresStore: an expiry of 'infinity' (the driver's error stopped the
    copy, blaming the target); its largest TTL, 2**31 - 1 minutes, is copied."""
    source = str(request.getfixturevalue(f"{kind}_source"))
    first, rejected, kept = CRAFTED[kind]
    with fresh_database(backend, tmp_path, prefix="lgsa_crafted") as target:
        tracemalloc.start()
        try:
            code, out = _copy(capsys, source, target)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert code == 0, out
        assert out[0].startswith(first) and out[0].endswith(f", {len(rejected)} rejected")
        assert out[1:] == [
            *rejected,
            f"verified: all {len(kept)} item(s) of the source are in the target",
        ]
        assert peak < BIG, f"{peak:,} bytes allocated at the peak"
        _reads_after_copy(target, kept)


def test_a_value_under_a_raised_cap_is_copied(
    sqlite_source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-value-mb`` raises the cap: the 25 MB values are copied, a page at a time
    (one value a page once 32 MiB of values are read)."""
    target = f"sqlite:///{tmp_path / 'ours.sqlite'}"
    code, out = _copy(capsys, sqlite_source, target, "--max-value-mb", "32")
    assert code == 0, out
    assert out[0].startswith("read 8 item(s) from the sqlite store: copied 6 ")
    with SQLAlchemyStore.from_conn_string(target) as store:
        item = store.get(("big",), "b")
        assert item is not None and len(item.value["x"]) == BIG


def test_pages_hold_a_bounded_amount_of_values(tmp_path: Path) -> None:
    """Ten 1 MB values, a page budget of 2.5 MB: pages of two rows (three would pass
    it), every row read once, in order."""
    path = tmp_path / "official.sqlite"
    conn = _official_sqlite(path)
    conn.execute("DELETE FROM store")
    for i in range(10):
        value = '{"x": "' + "y" * 1_000_000 + '"}'
        conn.execute("INSERT INTO store (prefix, key, value) VALUES ('p', ?, ?)", (f"k{i}", value))
    conn.close()
    with transfer.open_store_source(str(path)) as source:
        pages = list(source.pages(500, page_bytes=2_500_000))
    assert [len(p) for p in pages] == [2] * 5
    assert [r.key for p in pages for r in p] == [f"k{i}" for i in range(10)]
    assert all(r.item is not None for p in pages for r in p)


def test_load_items_refuses_a_ttl_above_the_cap(tmp_path: Path) -> None:
    """``load_items`` (the copy's writer) refuses a TTL above ``MAX_TTL_MINUTES`` with a
    ValueError naming the cap, and writes nothing of the batch."""
    when = datetime.now(timezone.utc)
    with SQLAlchemyStore.from_conn_string(f"sqlite:///{tmp_path / 't.sqlite'}") as store:
        store.setup()
        items = [
            StoredItem(("a",), "ok", {"v": 1}, when, when, None, 10.0),
            StoredItem(("a",), "huge", {"v": 2}, when, when, None, 1e308),
        ]
        with pytest.raises(ValueError, match="at most 4,000,000,000"):
            store.load_items(items)
        assert store.stats().items == 0


def test_out_of_range_times_are_refused_as_data() -> None:
    """Time columns are read as data: out-of-range and infinite times are a row's
    ValueError, never an OverflowError."""
    from langgraph.store.sqlalchemy.official import _epoch_time, _time

    for raw in ("0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"):
        with pytest.raises(ValueError, match="out of range"):
            _time(raw)
    for bad in (float("inf"), float("-inf"), float("nan"), 1e300, -1e300, "now"):
        with pytest.raises(ValueError):
            _epoch_time(bad)
    assert _epoch_time(0) == datetime(1970, 1, 1, tzinfo=timezone.utc)
    from decimal import Decimal

    exact = _epoch_time(Decimal("1767225600.123456"))
    assert exact == datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=timezone.utc)


def test_the_copy_refuses_a_cap_below_one_byte(
    sqlite_source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``max_value_bytes`` below 1 is a ValueError; ``--max-value-mb 0`` a usage error."""
    with (
        pytest.raises(ValueError, match="max_value_bytes"),
        transfer.open_store_source(sqlite_source) as source,
        SQLAlchemyStore.from_conn_string(":memory:") as target,
    ):
        transfer.copy_store(source, target, max_value_bytes=0)
    argv = ["store", "copy", "--from", sqlite_source, "--url", ":memory:", "--max-value-mb", "0"]
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
