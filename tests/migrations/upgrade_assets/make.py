"""Make the upgrade assets: databases written by the code of each earlier revision.

Run by hand from the repository root, never in CI (it reads git history and needs
PostgreSQL and MariaDB; see tests/provision.py for their URLs)::

    .venv/bin/python tests/migrations/upgrade_assets/make.py            # every revision
    .venv/bin/python tests/migrations/upgrade_assets/make.py 0004 0011  # some

For each revision ``r`` before head, the era's commit is the last commit of ``main``'s
first-parent history in which ``r`` was the newest file under ``migrations/versions/``
(:data:`ERAS`, found by :func:`eras` and pinned; where that commit's code cannot be
imported, the era's last commit that can, said in :data:`ERAS`). Its ``src/`` and
``migrations/`` are extracted from git (``git archive``: nothing is checked out in the
repository) to a temporary folder; a subprocess of this venv's Python, with that ``src/`` first on
``PYTHONPATH``, runs :mod:`workload` on a fresh database of each dialect (SQLite file,
PostgreSQL, MariaDB) through that commit's ``setup()``, reads everything back with that
code, and dumps every ``lgsa_`` table's rows. Each (revision, dialect) becomes
``assets/<revision>.<dialect>.json.gz`` (gzip: the rows hold a 17 kB value and the
reads repeat them; ``zcat`` shows the JSON): the revision the code's ``setup()`` reached, the
rows as typed JSON (bytes base64, JSON columns as their stored text), and what the code
read (:func:`workload.encode`). Data, never code: no pickle.

``tests/migrations/test_upgrade_assets.py`` builds a database at ``r`` with today's
revisions, inserts the rows, upgrades to head and compares what today's saver and store
read with what the era's code read.
"""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ASSETS = HERE / "assets"
#: Each earlier revision and the commit of its era (see :func:`eras`).
ERAS = {
    "0001_initial": "2cb5c4e",
    "0002_inline_values": "6ec7490",
    "0003_long_names": "96bfdb9",
    # c6fedc2, the era's last commit, cannot be imported (saver.py imports _loops.SHARED,
    # which that commit's _loops.py lacks): its parent, the era's last one that runs.
    "0004_mariadb_compressed_values": "e47ebae",
    "0005_lock_rows": "b20a87f",
    "0006_metadata_index": "1878c40",
    "0007_step_source_index": "bb60956",
    "0008_step_source_in_id_index": "b4e0506",
    "0009_store": "fa6d9cc",
    "0010_thread_index": "57fed50",
    "0011_store_vector_column": "254e841",
    "0012_store_namespace_index": "47063f2",
    "0013_store_expiry_partial_index": "dcd4289",
}
DIALECTS = ("sqlite", "postgresql", "mariadb")


def eras() -> dict[str, str]:
    """For each revision of today's history but head, the last first-parent commit of
    ``main`` whose newest revision it was: the parent of the last commit that made
    another revision the newest (``--eras`` prints them, to update :data:`ERAS`)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout

    commits = git(
        "log", "--first-parent", "--reverse", "--format=%h", "main", "--", "migrations/versions"
    ).split()
    era: dict[str, str] = {}
    previous = None
    for commit in commits:
        names = git("ls-tree", "--name-only", f"{commit}:migrations/versions").split()
        newest = max(n[:-3] for n in names if n.endswith(".py") and n[:4].isdigit())
        if previous is not None and newest != previous:
            era[previous] = git("rev-parse", "--short", f"{commit}^1").strip()
        previous = newest
    sys.path.insert(0, str(REPO / "src"))
    from langgraph.checkpoint.sqlalchemy import migrate

    return {r: era[r] for r in migrate._history()[:-1]}


# -- in the era's process ------------------------------------------------------------------


def _workload() -> Any:
    spec = importlib.util.spec_from_file_location("lgsa_upgrade_workload", HERE / "workload.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # typing.get_type_hints reads the module's globals
    spec.loader.exec_module(module)
    return module


def dump(url: str) -> dict[str, Any]:
    """Every ``lgsa_`` table's columns and rows (sorted), as typed JSON: binary columns
    base64, JSON columns their stored text, other values as they are."""
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    tables: dict[str, Any] = {}
    try:
        with engine.connect() as conn:
            for name in sorted(sa.inspect(conn).get_table_names()):
                if not name.startswith("lgsa_") or name == "lgsa_alembic_version":
                    continue
                table = sa.Table(name, sa.MetaData(), autoload_with=conn)
                kinds, columns = {}, []
                for c in table.columns:
                    if isinstance(c.type, sa.JSON):
                        kinds[c.name] = "json"
                        columns.append(
                            sa.cast(c, sa.Text)
                            if conn.dialect.name == "postgresql"
                            else sa.type_coerce(c, sa.Text)
                        )
                    elif isinstance(c.type, (sa.Float, sa.Numeric)):  # floats as stored
                        kinds[c.name] = "plain"
                        columns.append(sa.type_coerce(c, sa.Double()))
                    elif _python_type(c.type) is bytes:
                        kinds[c.name] = "bytes"
                        columns.append(c)
                    else:
                        kinds[c.name] = "plain"
                        columns.append(c)
                rows = []
                for row in conn.execute(sa.select(*columns)):
                    rows.append(
                        [
                            {"$bytes": base64.b64encode(bytes(v)).decode()}
                            if v is not None and kinds[c.name] == "bytes"
                            else ({"$float": repr(v)} if isinstance(v, float) else v)
                            for c, v in zip(table.columns, row, strict=True)
                        ]
                    )
                rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
                tables[name] = {"columns": [[c, kinds[c]] for c in kinds], "rows": rows}
            version = conn.execute(sa.text("SELECT version_num FROM lgsa_alembic_version")).scalar()
    finally:
        engine.dispose()
    return {"revision": version, "tables": tables}


def _python_type(type_: Any) -> Any:
    try:
        return type_.python_type
    except NotImplementedError:
        return None


def era_main(url: str, out: str) -> None:
    """Run the workload with the code on ``PYTHONPATH`` and write the asset to ``out``."""
    # Today's package is on sys.path too (an editable install): never import from it.
    today = str(REPO / "src")
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != today]
    import langgraph.checkpoint.sqlalchemy as package
    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

    assert os.environ["LGSA_ERA_SRC"] in package.__file__, package.__file__
    work = _workload()
    expected: dict[str, Any] = {}
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        written = work.write(saver)
        expected["saver"] = work.read_saver(saver, written)
    if importlib.util.find_spec("langgraph.store.sqlalchemy") is not None:
        from langgraph.store.sqlalchemy import SQLAlchemyStore

        assert os.environ["LGSA_ERA_SRC"] in sys.modules[SQLAlchemyStore.__module__].__file__

        with SQLAlchemyStore.from_conn_string(url, index=work.INDEX(), clock=work.clock) as store:
            store.setup()
            work.write_store(store)
            expected["store"] = work.read_store(store)
    with SQLAlchemySaver.from_conn_string(url) as saver:
        lock = getattr(saver, "lock_thread", None)
        if lock is not None:
            with lock("locked-thread"):  # the lease row (0005) is in the dump
                data = dump(url)
        else:
            data = dump(url)
    data.update(written=written, expected=expected)
    Path(out).write_text(
        json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8"
    )


# -- the driver ----------------------------------------------------------------------------


def make(revision: str, commit: str, tmp: Path) -> None:
    sys.path.insert(0, str(REPO))
    from tests.provision import create_database, drop_database, new_name

    folder = tmp / revision
    folder.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, "src", "migrations"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    archive_path = tmp / f"{revision}.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(folder, filter="data")
    ASSETS.mkdir(exist_ok=True)
    for dialect in DIALECTS:
        name = None
        if dialect == "sqlite":
            url = f"sqlite:///{folder / 'era.sqlite'}"
        else:
            backend = "postgres" if dialect == "postgresql" else "mariadb"
            name = new_name("lgsa_asset")
            url = create_database(backend, name)
        try:
            env = {
                **os.environ,
                "PYTHONPATH": str(folder / "src"),
                "LGSA_ERA_SRC": str(folder / "src"),
            }
            out = tmp / f"{revision}.{dialect}.json"
            done = subprocess.run(
                [sys.executable, str(HERE / "make.py"), "--era", url, str(out)],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(f"{revision} ({commit}) on {dialect}:\n{done.stderr[-4000:]}")
            asset = json.loads(out.read_text(encoding="utf-8"))
            if asset["revision"] != revision:
                raise SystemExit(f"{commit}'s setup() reached {asset['revision']}, not {revision}")
            asset["commit"] = commit
            text = json.dumps(asset, ensure_ascii=False, separators=(",", ":"))
            path = ASSETS / f"{revision}.{dialect}.json.gz"
            path.write_bytes(gzip.compress(text.encode("utf-8"), 9, mtime=0))
            print(f"{path.relative_to(REPO)}: {path.stat().st_size} bytes", flush=True)
        finally:
            if name is not None:
                drop_database("postgres" if dialect == "postgresql" else "mariadb", name)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--era"]:
        era_main(argv[1], argv[2])
        return
    if argv[:1] == ["--eras"]:
        print(json.dumps(eras(), indent=1))
        return
    chosen = [r for r in ERAS if not argv or any(r.startswith(a) for a in argv)]
    with tempfile.TemporaryDirectory() as tmp:
        for revision in chosen:
            make(revision, ERAS[revision], Path(tmp))


if __name__ == "__main__":
    main(sys.argv[1:])
