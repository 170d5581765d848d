"""The PostgreSQL-with-pgvector server for the store's vector search tests.

``.ci/clusters/pgvector.sh`` runs it (PostgreSQL 18 with pgvector on 127.0.0.1:5440);
``.ci/clusters/up`` starts it with the other clusters and writes ``LGSA_PGVECTOR_URL`` into
its env file. Without that variable the tests that need the server skip, or fail when
``LGSA_REQUIRE_CLUSTERS`` is set (as in CI), like the cluster tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ..provision import PGVECTOR_URL, fresh_database, new_name

__all__ = ["pgvector_url"]

#: Why the pgvector tests do not run (skip, or failure under ``LGSA_REQUIRE_CLUSTERS``).
NO_PGVECTOR = (
    "LGSA_PGVECTOR_URL is not set: start it with .ci/clusters/up pgvector and source its env"
)


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """URL of a database of this test run (of this xdist worker) on the pgvector server,
    dropped at the end. The database starts without the ``vector`` extension: whoever
    needs it runs ``CREATE EXTENSION`` (the URL's user ``postgres`` is a superuser)."""
    if not PGVECTOR_URL:
        if os.environ.get("LGSA_REQUIRE_CLUSTERS"):
            pytest.fail(NO_PGVECTOR)
        pytest.skip(NO_PGVECTOR)
    with fresh_database("pgvector", name=new_name(f"lgsa_pgv_{os.getpid()}")) as url:
        yield url
