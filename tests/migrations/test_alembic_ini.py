"""The ``alembic`` tool on an ini file of the user's: which database our ``env.py`` migrates,
and the ini files the documentation shows.

Order (docs/migrations.md): a connection handed by ``setup()`` or the command line; ``-x
url=...``; the ini file's ``sqlalchemy.url`` (unless empty or ``alembic init``'s
placeholder); ``LANGGRAPH_CHECKPOINT_URL``; ``sqlite:///checkpoints.sqlite`` in the
working directory. Every test runs the real ``alembic`` command in a subprocess, in a
working directory of its own, and checks that the default file was not created there.

The ini file of docs/migrations.md (read from the page) runs on the install the tests run
on, an editable one (``pip install -e .``: the package's ``migrations`` is a link to the
repository's folder); ``tests/meta/test_wheel.py`` runs it on a built wheel; the
repository's own ``alembic.ini`` runs at the root of the checkout.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import migrate
from langgraph.checkpoint.sqlalchemy._engine.engines import configure_engine

HEAD = migrate.head_revision()


def _ini(folder: Path, url: str | None) -> Path:
    """A minimal ini file of the user's in ``folder``: our scripts, ``sqlalchemy.url``
    when ``url`` is not None, no logging sections."""
    lines = ["[alembic]", f"script_location = {migrate.script_location()}"]
    if url is not None:
        lines.append(f"sqlalchemy.url = {url}")
    path = folder / "my.ini"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _alembic(ini: Path, *args: str, cwd: Path, env_url: str | None = None) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANGGRAPH_CHECKPOINT_")}
    if env_url is not None:
        env["LANGGRAPH_CHECKPOINT_URL"] = env_url
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "-c", str(ini), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _revision(path: Path) -> str | None:
    """The revision of the SQLite file at ``path`` (None: none of our tables)."""
    assert path.exists(), f"{path} was not created"
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return migrate.current_revision(conn)
    finally:
        engine.dispose()


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    """The working directory of the ``alembic`` command: where the default
    ``checkpoints.sqlite`` would appear."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    return folder


def test_ini_url_is_migrated(tmp_path: Path, cwd: Path) -> None:
    ini = _ini(tmp_path, f"sqlite:///{tmp_path / 'ini.sqlite'}")
    _alembic(ini, "upgrade", "head", cwd=cwd)
    assert _revision(tmp_path / "ini.sqlite") == HEAD
    assert not (cwd / "checkpoints.sqlite").exists()
    assert HEAD in _alembic(ini, "current", cwd=cwd).stdout

    _alembic(ini, "downgrade", "base", cwd=cwd)
    assert _revision(tmp_path / "ini.sqlite") is None
    assert not (cwd / "checkpoints.sqlite").exists()


def test_ini_url_relative_to_the_ini_file(tmp_path: Path, cwd: Path) -> None:
    # Alembic's %(here)s: the folder of the ini file, wherever the command runs.
    ini = _ini(tmp_path, "sqlite:///%(here)s/here.sqlite")
    _alembic(ini, "upgrade", "head", cwd=cwd)
    assert _revision(tmp_path / "here.sqlite") == HEAD
    assert not (cwd / "checkpoints.sqlite").exists()


def test_ini_url_comes_before_the_environment(tmp_path: Path, cwd: Path) -> None:
    ini = _ini(tmp_path, f"sqlite:///{tmp_path / 'ini.sqlite'}")
    _alembic(ini, "upgrade", "head", cwd=cwd, env_url=f"sqlite:///{tmp_path / 'env.sqlite'}")
    assert _revision(tmp_path / "ini.sqlite") == HEAD
    assert not (tmp_path / "env.sqlite").exists()
    assert not (cwd / "checkpoints.sqlite").exists()


def test_x_url_comes_before_the_ini(tmp_path: Path, cwd: Path) -> None:
    ini = _ini(tmp_path, f"sqlite:///{tmp_path / 'ini.sqlite'}")
    x_url = f"url=sqlite:///{tmp_path / 'x.sqlite'}"
    _alembic(ini, "-x", x_url, "upgrade", "head", cwd=cwd)
    assert _revision(tmp_path / "x.sqlite") == HEAD
    assert not (tmp_path / "ini.sqlite").exists()
    assert not (cwd / "checkpoints.sqlite").exists()


@pytest.mark.parametrize(
    "ini_url",
    [None, "", "driver://user:pass@localhost/dbname"],
    ids=["unset", "empty", "alembic-init-placeholder"],
)
def test_no_ini_url_leaves_the_environment(tmp_path: Path, cwd: Path, ini_url: str | None) -> None:
    ini = _ini(tmp_path, ini_url)
    _alembic(ini, "upgrade", "head", cwd=cwd, env_url=f"sqlite:///{tmp_path / 'env.sqlite'}")
    assert _revision(tmp_path / "env.sqlite") == HEAD
    assert not (cwd / "checkpoints.sqlite").exists()


def test_without_any_url_the_default_file_in_the_working_directory(
    tmp_path: Path, cwd: Path
) -> None:
    ini = _ini(tmp_path, "driver://user:pass@localhost/dbname")
    _alembic(ini, "upgrade", "head", cwd=cwd)
    assert _revision(cwd / "checkpoints.sqlite") == HEAD


# -- the ini file docs/migrations.md shows, on every kind of install ----------------------

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "migrations.md"


def documented_ini(url: str) -> str:
    """docs/migrations.md's ``lgsa-alembic.ini`` as the page shows it, its
    ``sqlalchemy.url`` set to ``url`` (also used by ``tests/meta/test_wheel.py``)."""
    text = DOCS.read_text(encoding="utf-8")
    (block,) = [b.split("```", 1)[0] for b in text.split("```ini\n")[1:] if "lgsa-alembic" in b]
    ini, count = re.subn(
        r"^sqlalchemy\.url = .*$", lambda _: f"sqlalchemy.url = {url}", block, flags=re.M
    )
    assert count == 1, block
    return ini


def _editable() -> bool:
    """Whether this package is an editable install (``pip install -e .``)."""
    direct = importlib.metadata.distribution("langgraph-checkpoint-sqlalchemy").read_text(
        "direct_url.json"
    )
    return bool(direct and json.loads(direct).get("dir_info", {}).get("editable"))


def test_the_documented_ini_on_this_install(tmp_path: Path, cwd: Path) -> None:
    """The ini file of docs/migrations.md (``script_location =
    langgraph.checkpoint.sqlalchemy:migrations``) run by ``alembic`` on the install the
    tests run on: the editable one docs/development.md prescribes, where the package's
    ``migrations`` is the repository's folder through a link (tests/meta/test_wheel.py
    runs it on a wheel)."""
    ini = tmp_path / "lgsa-alembic.ini"
    ini.write_text(documented_ini("sqlite:///%(here)s/doc.sqlite"), encoding="utf-8")
    _alembic(ini, "upgrade", "head", cwd=cwd)
    assert _revision(tmp_path / "doc.sqlite") == HEAD
    assert HEAD in _alembic(ini, "current", cwd=cwd).stdout
    scripts = resources.files("langgraph.checkpoint.sqlalchemy") / "migrations"
    assert Path(str(scripts)).resolve() == Path(migrate.script_location()).resolve()
    if _editable():  # one source of truth: the repository's migrations/, not a copy
        assert Path(str(scripts)).resolve() == REPO / "migrations"


def test_the_repository_alembic_ini(tmp_path: Path) -> None:
    """``alembic upgrade head`` at the root of a checkout, with its own alembic.ini (the
    URL from ``LANGGRAPH_CHECKPOINT_URL``)."""
    database = tmp_path / "repo.sqlite"
    ini = REPO / "alembic.ini"
    before = set(REPO.iterdir())
    _alembic(ini, "upgrade", "head", cwd=REPO, env_url=f"sqlite:///{database}")
    assert _revision(database) == HEAD
    current = _alembic(ini, "current", cwd=REPO, env_url=f"sqlite:///{database}")
    assert HEAD in current.stdout
    assert set(REPO.iterdir()) == before  # nothing made in the checkout


# -- the user's own Alembic environment: the hooks docs/migrations.md shows ---------------


def _documented_hooks() -> dict[str, Any]:
    """``include_name`` and ``include_object`` as docs/migrations.md shows them."""
    text = DOCS.read_text(encoding="utf-8")
    (block,) = [
        b.split("```", 1)[0] for b in text.split("```python\n")[1:] if "def include_name" in b
    ]
    hooks: dict[str, Any] = {}
    exec(compile(block, str(DOCS), "exec"), hooks)
    return {"include_name": hooks["include_name"], "include_object": hooks["include_object"]}


@pytest.mark.parametrize("hook", ["include_name", "include_object", None])
def test_autogenerate_skips_our_tables(tmp_path: Path, hook: str | None) -> None:
    app = MetaData()  # the application's own model: one table, not yet created
    Table("app_items", app, Column("id", Integer, primary_key=True), Column("name", String(50)))
    engine = create_engine(f"sqlite:///{tmp_path / 'app.sqlite'}", poolclass=NullPool)
    configure_engine(engine)
    try:
        with engine.begin() as conn:
            migrate.upgrade(conn)  # our tables, at head
        opts = {hook: _documented_hooks()[hook]} if hook else {}
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn, opts=opts), app)
    finally:
        engine.dispose()
    added = [d[1].name for d in diffs if d[0] == "add_table"]
    ours = [d for d in diffs if d[0] != "add_table"]
    assert added == ["app_items"]  # the application's tables are compared as before
    if hook is None:  # without a hook, autogenerate would drop every table of ours
        dropped = {d[1].name for d in ours if d[0] == "remove_table"}
        assert {"lgsa_checkpoints", "lgsa_store_items", "lgsa_alembic_version"} <= dropped
    else:
        assert ours == []
