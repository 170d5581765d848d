"""Fresh, empty databases for the tests: the one place that creates and drops them.

Every backend the suite runs on is named here (``sqlite-file``, ``sqlite-memory``,
``postgres``, ``mariadb``), with the servers' admin URLs. :func:`fresh_database` hands
out the URL of a database of its own (a new SQLite file, a new PostgreSQL or MariaDB
database) and drops it afterwards; :func:`new_saver_args` gives a saver a fresh store
inside the run's shared databases (a new schema). The fixtures in ``conftest.py`` use
both.

MariaDB: ``LGSA_TEST_MARIADB_URL`` (default
``mysql+pymysql://root@127.0.0.1:3306/test?charset=utf8mb4``).

PostgreSQL: ``LGSA_TEST_POSTGRES_URL`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``) names a server and a database
to connect to for creating databases. Set ``LGSA_TEST_BACKENDS`` to a comma list (e.g.
``sqlite-file,postgres``) to run a subset.

A database of another dialect family (or another server of a known one):
``LGSA_TEST_EXTRA_URL`` (for example ``cockroachdb+psycopg://root@127.0.0.1:26257/lgsa``)
adds the backend ``extra`` to :data:`DIALECT_BACKENDS`, the backends of the dialect suite
(``tests/dialects``). Each test gets a schema of its own in that database (its
``CREATE SCHEMA``: the saver's ``schema=``), dropped after the test. Unset, there is no
``extra`` backend and nothing of it is collected.

The PostgreSQL-with-pgvector server of ``.ci/clusters/pgvector.sh``:
``LGSA_PGVECTOR_URL`` (written by ``.ci/clusters/up``; unset, there is no ``pgvector``
server and its tests skip). Its databases are made like those on ``postgres``: the
backend name ``pgvector`` in :func:`fresh_database`. It is no backend of the parametrised
suite and ``LGSA_TEST_BACKENDS`` does not name it.

``LGSA_TEST_DB_PREFIX`` (default empty): prepended to the name of every database the
tests create and drop on a server (letters, digits and ``_``), for a shared server whose
databases must carry a prefix (``ci_`` makes ``ci_lgsa_test_...``).

The suite changes no global setting of a server: what it needs of one (MySQL/MariaDB's
``max_allowed_packet`` for large values) it reads and adapts to.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool
from sqlalchemy.schema import DropSchema

ALL_BACKENDS = ("sqlite-file", "sqlite-memory", "postgres", "mariadb")
BACKENDS = tuple(
    b for b in os.environ.get("LGSA_TEST_BACKENDS", ",".join(ALL_BACKENDS)).split(",") if b
)
POSTGRES_ADMIN_URL = os.environ.get(
    "LGSA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
MARIADB_ADMIN_URL = os.environ.get(
    "LGSA_TEST_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test?charset=utf8mb4"
)
#: A database of another dialect family, run by the dialect suite (``LGSA_TEST_EXTRA_URL``).
EXTRA_URL = os.environ.get("LGSA_TEST_EXTRA_URL", "")
#: The backends of the dialect suite (``tests/dialects``): :data:`BACKENDS`, and ``extra``
#: when :data:`EXTRA_URL` is set.
DIALECT_BACKENDS = BACKENDS + (("extra",) if EXTRA_URL else ())
#: The PostgreSQL-with-pgvector server (``LGSA_PGVECTOR_URL``), empty when it is not up.
PGVECTOR_URL = os.environ.get("LGSA_PGVECTOR_URL", "")
#: The admin URL of each database server, by backend name (``pgvector`` when it is up).
ADMIN_URLS = {"postgres": POSTGRES_ADMIN_URL, "mariadb": MARIADB_ADMIN_URL}
if PGVECTOR_URL:
    ADMIN_URLS["pgvector"] = PGVECTOR_URL
#: Prepended to every database name the tests create on a server (``LGSA_TEST_DB_PREFIX``).
DB_PREFIX = os.environ.get("LGSA_TEST_DB_PREFIX", "")
if not re.fullmatch(r"[A-Za-z0-9_]{0,20}", DB_PREFIX):
    raise ValueError(
        f"LGSA_TEST_DB_PREFIX={DB_PREFIX!r}: use at most 20 letters, digits and underscores"
    )


def new_name(prefix: str = "lgsa_test") -> str:
    """A database or schema name nobody else uses: :data:`DB_PREFIX`, ``prefix`` and 12
    random hex digits."""
    return f"{DB_PREFIX}{prefix}_{uuid.uuid4().hex[:12]}"


def database_name(name: str) -> str:
    """The name of a server database the tests create: ``name`` after
    :data:`DB_PREFIX` (unchanged when it already starts with it)."""
    return name if name.startswith(DB_PREFIX) else f"{DB_PREFIX}{name}"


def _admin_execute(backend: str, statement: str) -> None:
    """Run one statement on ``backend``'s server, outside any transaction."""
    admin = create_engine(ADMIN_URLS[backend], isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(statement))
    finally:
        admin.dispose()


def _quoted(backend: str, name: str) -> str:
    return f"`{name}`" if backend == "mariadb" else f'"{name}"'


def create_database(backend: str, name: str) -> str:
    """Create database ``name`` on the ``postgres``, ``pgvector`` or ``mariadb`` server.

    Returns:
        Its URL: the server's admin URL with the database replaced (query kept).
    """
    _admin_execute(backend, f"CREATE DATABASE {_quoted(backend, name)}")
    url = make_url(ADMIN_URLS[backend]).set(database=name)
    return url.render_as_string(hide_password=False)


def drop_database(backend: str, name: str) -> None:
    """Drop database ``name`` on the ``postgres``, ``pgvector`` or ``mariadb`` server if it
    exists (on PostgreSQL even while connections to it are open)."""
    force = "" if backend == "mariadb" else " WITH (FORCE)"
    _admin_execute(backend, f"DROP DATABASE IF EXISTS {_quoted(backend, name)}{force}")


@contextmanager
def fresh_database(
    backend: str,
    tmp_path: Path | None = None,
    *,
    prefix: str = "lgsa_test",
    filename: str = "db.sqlite",
    name: str | None = None,
) -> Iterator[str]:
    """The URL of a new, empty database of its own on ``backend``, dropped on exit.

    Args:
        backend: ``sqlite-file`` (a file ``filename`` in ``tmp_path``, not created),
            ``sqlite-memory`` (``:memory:``), ``postgres``, ``pgvector`` or ``mariadb`` (a
            new database on the server, named ``name`` or a fresh name starting with
            ``prefix``).
        tmp_path: The folder for a SQLite file.
        prefix: The start of a server database's generated name.
        filename: The SQLite file's name.
        name: The server database's exact name.

    Raises:
        ValueError: an unknown backend, or ``pgvector`` while ``LGSA_PGVECTOR_URL`` is unset.
    """
    if backend == "sqlite-file":
        assert tmp_path is not None, "a SQLite file needs a folder"
        yield f"sqlite:///{tmp_path / filename}"
        return
    if backend == "sqlite-memory":
        yield ":memory:"
        return
    if backend not in ADMIN_URLS:
        raise ValueError(backend)
    if backend in ALL_BACKENDS and backend not in BACKENDS:
        pytest.skip(f"{backend} not in LGSA_TEST_BACKENDS")
    name = database_name(name) if name else new_name(prefix)
    url = create_database(backend, name)
    try:
        yield url
    finally:
        drop_database(backend, name)


def drop_schema(url: str, name: str) -> None:
    """Drop schema ``name`` of the database at ``url`` with everything in it, if it exists
    (``DROP SCHEMA ... CASCADE``; MySQL and MariaDB, whose schemas are databases and take
    no ``CASCADE``, without it)."""
    engine = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            cascade = engine.dialect.name not in ("mysql", "mariadb")
            conn.execute(DropSchema(name, cascade=cascade, if_exists=True))
    finally:
        engine.dispose()


def new_saver_args(backend: str, request: pytest.FixtureRequest, tmp_path: Any) -> dict[str, Any]:
    """``from_conn_string`` arguments for a fresh, empty store on ``backend``: a new
    SQLite file or in-memory database, a new schema in the run's PostgreSQL database
    (fixture ``postgres_url``), a new MariaDB database as the saver's ``schema``, or a
    new schema in the database at :data:`EXTRA_URL` (``extra``; the last two dropped
    after the test)."""
    if backend == "sqlite-file":
        return {"conn_string": f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"}
    if backend == "sqlite-memory":
        return {"conn_string": ":memory:"}
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        return {"conn_string": url, "schema": f"t_{uuid.uuid4().hex[:12]}"}
    if backend == "mariadb":
        url = request.getfixturevalue("mariadb_url")
        name = new_name()
        request.addfinalizer(lambda: drop_database("mariadb", name))
        return {"conn_string": url, "schema": name}
    if backend == "extra":
        if not EXTRA_URL:
            pytest.skip("LGSA_TEST_EXTRA_URL is not set")
        name = new_name("lgsa_x")
        request.addfinalizer(lambda: drop_schema(EXTRA_URL, name))
        return {"conn_string": EXTRA_URL, "schema": name}
    raise ValueError(backend)
