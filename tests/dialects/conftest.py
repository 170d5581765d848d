"""The dialect suite's backends: every backend of the run, and ``extra`` when
``LGSA_TEST_EXTRA_URL`` names a database of another dialect family.

The ``backend`` fixture of the root ``conftest.py`` is narrowed here to
:data:`tests.provision.DIALECT_BACKENDS`, so every fixture built on it (``saver``,
``door``, ``store``, ``store_door``, ...) runs the bodies of this folder on the extra
database too, each test in a schema of its own. A module that checks what only the
built-in families do (their ``EXPLAIN`` output) sets ``BUILT_IN_FAMILIES_ONLY = True``:
its tests skip an extra database of another family.
"""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from ..provision import DIALECT_BACKENDS, EXTRA_URL

#: The dialect names of the families this package ships (a URL's scheme before ``+``).
BUILT_IN_FAMILIES = ("sqlite", "postgresql", "mysql", "mariadb")


@pytest.fixture(params=DIALECT_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Name of the database backend of this test: one of the run's, or ``extra``."""
    name = str(request.param)
    if (
        name == "extra"
        and getattr(request.module, "BUILT_IN_FAMILIES_ONLY", False)
        and make_url(EXTRA_URL).get_backend_name() not in BUILT_IN_FAMILIES
    ):
        pytest.skip("checks a built-in dialect family only")
    return name
