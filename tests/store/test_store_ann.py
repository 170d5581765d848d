"""Vector search through pgvector's HNSW index, on the project's pgvector server.

What the store promises where PostgreSQL has the ``vector`` extension: ``setup()`` gives
the vectors table its native column and builds the index config's HNSW index; searches
use it with the filter, the namespace prefix and the expiry in the same statement and
agree with the exact scores; the index finds at least 95% of the exact top 10 on
clustered data; a store made before the column gains it (filled) on upgrade; a copy from
``PostgresStore`` reuses its pgvector vectors; an index an interrupted build left
invalid is built again; an index built with other HNSW parameters serves until
``setup()`` has built the config's, then goes. Without the server these tests skip (fail under
``LGSA_REQUIRE_CLUSTERS``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp, SearchOp
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import migrate
from langgraph.store.sqlalchemy import SQLAlchemyStore
from langgraph.store.sqlalchemy.vectors import pack, vector_scores

from ..conftest import HashEmbeddings

WORDS = [
    "cat",
    "dog",
    "bird",
    "fish",
    "tree",
    "rock",
    "river",
    "cloud",
    "sun",
    "moon",
    "star",
    "lake",
    "hill",
    "road",
]


def _text(i: int) -> str:
    return " ".join(random.Random(i).choices(WORDS, k=4))


@pytest.fixture
def pg(pgvector_url: str) -> Iterator[str]:
    """A fresh schema on the pgvector server's test database; the URL as given."""
    engine = create_engine(pgvector_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    yield pgvector_url


def _sql(url: str, stmt: str, **params: Any) -> list[Any]:
    engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            result = conn.execute(text(stmt), params)
            return list(result.all()) if result.returns_rows else []
    finally:
        engine.dispose()


def _fill(store: SQLAlchemyStore, n: int) -> None:
    ops = [
        PutOp(("docs", f"u{i % 7}"), f"k{i}", {"text": _text(i), "n": i, "kind": f"k{i % 3}"})
        for i in range(n)
    ]
    for start in range(0, n, 500):
        store.batch(ops[start : start + 500])


def _search(store: SQLAlchemyStore, prefix: tuple[str, ...], **kwargs: Any) -> list[Any]:
    return store.search(prefix, query="cat river", limit=8, **kwargs)


@pytest.mark.parametrize(
    ("distance", "vector_type"),
    [("cosine", "vector"), ("l2", "vector"), ("inner_product", "vector"), ("cosine", "halfvec")],
)
def test_search_uses_the_hnsw_index_and_scores_as_the_exact_search(
    pg: str, distance: str, vector_type: str
) -> None:
    embed = HashEmbeddings(16)
    index: Any = {"dims": 16, "embed": embed, "fields": ["text"], "distance_type": distance}
    index["ann_index_config"] = {"vector_type": vector_type}
    with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        store.setup()
        assert store.ann == "hnsw"
        _fill(store, 400)
        query = "river moon sun star"
        found = store.search(("docs",), query=query, limit=10)
    defs = _sql(pg, "SELECT indexdef FROM pg_indexes WHERE tablename = 'lgsa_store_vectors'")
    ops = {"cosine": "cosine_ops", "l2": "l2_ops", "inner_product": "ip_ops"}
    opclass = f"{vector_type}_{ops[distance]}"
    assert any("USING hnsw" in d[0] and opclass in d[0] for d in defs), defs
    # the exact scores of every item, computed apart
    q = HashEmbeddings(16)._one(query)
    blobs = {f"k{i}": pack(HashEmbeddings(16)._one(_text(i)), 16) for i in range(400)}
    exact = dict(zip(blobs, vector_scores(q, list(blobs.values()), distance), strict=True))  # type: ignore[arg-type]
    best = sorted(exact.values(), reverse=True)
    assert len(found) == 10
    tol = 1e-4 if vector_type == "vector" else 2e-3  # halfvec's index keeps float16
    for item in found:
        assert item.score == pytest.approx(exact[item.key], abs=tol)
    assert found[0].score == pytest.approx(best[0], abs=tol)
    scores = [item.score for item in found]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]


def test_filters_prefix_and_paging_apply_in_the_same_statement(pg: str) -> None:
    index: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    flat: Any = {**index, "ann_index_config": {"kind": "flat"}}
    with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        store.setup()
        _fill(store, 600)
        cases: list[dict[str, Any]] = [
            {"prefix": ("docs",)},
            {"prefix": ("docs", "u3")},
            {"prefix": ("docs",), "filter": {"kind": "k1"}},
            {"prefix": ("docs",), "filter": {"n": {"$gte": 300, "$lt": 450}}},
            {"prefix": ("docs", "u2"), "filter": {"n": {"$ne": 9}}, "offset": 3},
        ]
        ann = [_search(store, **c) for c in cases]
    with SQLAlchemyStore.from_conn_string(pg, index=flat) as exact_store:
        assert exact_store.ann is None
        exact = [_search(exact_store, **c) for c in cases]
    for case, got, want in zip(cases, ann, exact, strict=True):
        flt = case.get("filter")
        for item in got:
            assert item.namespace[: len(case["prefix"])] == case["prefix"]
            if flt and "kind" in flt:
                assert item.value["kind"] == flt["kind"]
            if flt and "n" in flt and "$gte" in flt["n"]:
                assert 300 <= item.value["n"] < 450
        # HNSW is approximate: the same scores, in the same order, as the exact scan
        # (ties may swap keys); 600 items are few enough to find all of them.
        assert [round(i.score or 0, 4) for i in got] == [round(i.score or 0, 4) for i in want]


#: pgvector's own build and search parameters (``PostgresStore``'s): ``ef_construction``
#: 64, ``ef_search`` 40. A walk through this data's 50 tight clusters can then settle in
#: the wrong cluster (60 builds: 2 of 1,800 queries' first hits came from another
#: cluster); the store's defaults (128 and 40) found every true nearest ten on 12 builds.
PGVECTOR_DEFAULTS = {"ef_construction": 64, "ef_search": 40}


@pytest.mark.parametrize("ann", [None, PGVECTOR_DEFAULTS], ids=["default", "pgvector_defaults"])
def test_recall_at_10_against_exact_on_10000_clustered_vectors(
    pg: str, ann: dict[str, int] | None
) -> None:
    dims, n = 32, 10_000
    rng = random.Random(7)
    centres = [[rng.gauss(0, 1) for _ in range(dims)] for _ in range(50)]
    table: dict[str, list[float]] = {}

    def vector(text_: str) -> list[float]:
        if text_ not in table:
            r = random.Random(text_)
            c = centres[r.randrange(50)]
            table[text_] = [v + 0.35 * r.gauss(0, 1) for v in c]
        return table[text_]

    def embed(texts: list[str]) -> list[list[float]]:
        return [vector(t) for t in texts]

    index: Any = {"dims": dims, "embed": embed, "fields": ["t"]}
    if ann is not None:
        index["ann_index_config"] = ann
    with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        store.setup()
        ops = [PutOp(("m", f"u{i % 100}"), f"k{i}", {"t": f"text {i}"}) for i in range(n)]
        for start in range(0, n, 1000):
            store.batch(ops[start : start + 1000])
        blobs = [pack(vector(f"text {i}"), dims) for i in range(n)]
        hits = 0
        queries = [f"query {j}" for j in range(30)]
        for query in queries:
            scores = vector_scores(vector(query), blobs)
            want = {f"k{i}" for i in sorted(range(n), key=lambda i: -scores[i])[:10]}
            found = store.search(("m",), query=query, limit=10)
            hits += len(want & {item.key for item in found})
            if ann is None:
                assert found[0].key in want, (query, found[0].key, found[0].score)
    recall = hits / (10 * len(queries))
    # One query lost to a wrong cluster costs 10 of 300: 0.967.
    assert recall >= (0.99 if ann is None else 0.95), recall


def test_upgrade_adds_and_fills_the_vector_column_of_an_existing_store(pg: str) -> None:
    engine = create_engine(pg, poolclass=NullPool)
    with engine.begin() as conn:
        migrate.upgrade(conn, "0010_thread_index")
    embed = HashEmbeddings(16)
    with engine.begin() as conn:  # a store of the revision before: packed embeddings only
        for i in range(1500):
            conn.execute(
                text(
                    "INSERT INTO lgsa_store_items VALUES "
                    "(:ns, :k, CAST(:v AS JSONB), 1, 1, NULL, NULL)"
                ),
                {"ns": "docs\x01u", "k": f"k{i}", "v": f'{{"text": "{_text(i)}"}}'},
            )
            conn.execute(
                text("INSERT INTO lgsa_store_vectors VALUES (:ns, :k, 'text', :e)"),
                {"ns": "docs\x01u", "k": f"k{i}", "e": pack(embed._one(_text(i)), 16)},
            )
    engine.dispose()
    index: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        store.setup()
        assert store.ann == "hnsw"
        found = store.search(("docs",), query=_text(1234), limit=3)
    assert found[0].score == pytest.approx(1.0, abs=1e-5)
    assert _sql(pg, "SELECT count(*), count(vec) FROM lgsa_store_vectors")[0] == (1500, 1500)
    # the downgrade drops the column (and its indexes); the upgrade adds it again
    engine = create_engine(pg, poolclass=NullPool)
    with engine.begin() as conn:
        migrate.downgrade(conn, "0010_thread_index")
    cols = _sql(
        pg,
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'lgsa_store_vectors'",
    )
    assert "vec" not in {c[0] for c in cols}
    with engine.begin() as conn:
        migrate.upgrade(conn)
    engine.dispose()
    assert _sql(pg, "SELECT count(vec) FROM lgsa_store_vectors")[0][0] == 1500


def test_setup_fills_rows_written_without_the_column_and_rebuilds_an_invalid_index(
    pg: str,
) -> None:
    index: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        store.setup()
        _fill(store, 50)
        name = _sql(pg, "SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%hnsw%'")[0][0]
        # what a process older than the column writes, and what a killed concurrent
        # build leaves: an index marked invalid
        _sql(pg, "UPDATE lgsa_store_vectors SET vec = NULL WHERE key IN ('k1', 'k2')")
        _sql(
            pg,
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = CAST(:n AS regclass)",
            n=name,
        )
    with SQLAlchemyStore.from_conn_string(pg, index=index) as again:
        assert again.ann is None or again.ann == "hnsw"
        again.setup()
        assert again.ann == "hnsw"
    assert _sql(pg, "SELECT count(*) FROM lgsa_store_vectors WHERE vec IS NULL")[0][0] == 0
    valid = _sql(
        pg, "SELECT indisvalid FROM pg_index WHERE indexrelid = CAST(:n AS regclass)", n=name
    )
    assert valid == [(True,)]


def test_changed_build_parameters_replace_the_index_which_serves_until_then(
    pg: str, caplog: pytest.LogCaptureFixture
) -> None:
    embed = HashEmbeddings(16)
    old: Any = {"dims": 16, "embed": embed, "fields": ["text"]}
    old["ann_index_config"] = {"ef_construction": 32}
    with SQLAlchemyStore.from_conn_string(pg, index=old) as store:
        store.setup()
        _fill(store, 300)
        before = _search(store, ("docs",))
    hnsw = "SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%hnsw%' ORDER BY 1"
    assert [r[0] for r in _sql(pg, hnsw)] == ["ix_lgsa_store_vec_cos_16_m16_ef32"]
    new: Any = {"dims": 16, "embed": embed, "fields": ["text"]}  # the defaults
    with SQLAlchemyStore.from_conn_string(pg, index=new) as store:
        # before setup(): the old index serves the new config's searches
        assert _search(store, ("docs",)) == before
        assert store.ann == "hnsw"
        with caplog.at_level("WARNING", logger="langgraph.store.sqlalchemy"):
            store.setup()
        assert store.ann == "hnsw"
        after = _search(store, ("docs",))
    assert [r[0] for r in _sql(pg, hnsw)] == ["ix_lgsa_store_vec_cos_16_m16_ef128"]
    assert [(i.key, round(i.score or 0, 4)) for i in after] == [
        (i.key, round(i.score or 0, 4)) for i in before
    ]
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "to replace ix_lgsa_store_vec_cos_16_m16_ef32" in logged, logged
    assert "dropping the HNSW index ix_lgsa_store_vec_cos_16_m16_ef32" in logged, logged


def test_an_interrupted_replacement_leaves_the_old_index_serving(pg: str) -> None:
    embed = HashEmbeddings(16)
    old: Any = {"dims": 16, "embed": embed, "fields": ["text"]}
    old["ann_index_config"] = {"ef_construction": 32}
    new: Any = {"dims": 16, "embed": embed, "fields": ["text"]}
    with SQLAlchemyStore.from_conn_string(pg, index=old) as store:
        store.setup()
        _fill(store, 100)
    # what a killed CREATE INDEX CONCURRENTLY of the new index leaves beside the old one
    _sql(
        pg,
        "CREATE INDEX ix_lgsa_store_vec_cos_16_m16_ef128 ON lgsa_store_vectors USING hnsw "
        "((vec::vector(16)) vector_cosine_ops) WITH (m = 16, ef_construction = 128) "
        "WHERE vector_dims(vec) = 16",
    )
    _sql(
        pg,
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = "
        "'ix_lgsa_store_vec_cos_16_m16_ef128'::regclass",
    )
    with SQLAlchemyStore.from_conn_string(pg, index=new) as store:
        assert len(_search(store, ("docs",))) == 8
        assert store.ann == "hnsw"  # the valid old index, not the invalid new one
        store.setup()  # the invalid one built again, then the old one dropped
        assert store.ann == "hnsw"
    hnsw = "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    found = [tuple(r) for r in _sql(pg, hnsw) if r[0].startswith("ix_lgsa_store_vec_cos")]
    assert found == [("ix_lgsa_store_vec_cos_16_m16_ef128", True)]


async def test_async_search_uses_the_same_index(pg: str) -> None:
    index: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    async with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        await store.asetup()
        assert store.ann == "hnsw"
        await store.abatch([PutOp(("docs",), f"k{i}", {"text": _text(i)}) for i in range(100)])
        found = await store.asearch(("docs",), query=_text(42), limit=3)
    assert found[0].key == "k42" or found[0].score == pytest.approx(1.0, abs=1e-5)


def test_copy_from_postgres_store_reuses_its_pgvector_vectors(pg: str) -> None:
    from langgraph.store.postgres import PostgresStore

    from langgraph.store.sqlalchemy.official import open_store_source
    from langgraph.store.sqlalchemy.transfer import copy_store

    embed = HashEmbeddings(16)
    ours: Any = {"dims": 16, "embed": embed, "fields": ["text"]}
    store = SQLAlchemyStore.from_conn_string(pg, index=ours)
    store.setup()  # the extension, in public
    _sql(pg, "CREATE SCHEMA official")
    conninfo = make_url(pg).set(drivername="postgresql").render_as_string(False)
    theirs: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    path = "?options=-csearch_path%3Dofficial,public"
    with PostgresStore.from_conn_string(conninfo + path, index=theirs) as official:
        official.setup()
        for i in range(60):
            official.put(("docs", f"u{i % 3}"), f"k{i}", {"text": _text(i)})
    with store:
        with open_store_source(pg, kind="postgres", schema="official") as source:
            report = copy_store(source, store)
        assert report.copied == 60 and report.vectors_reused == 60
        assert embed.calls == []  # nothing embedded again: pgvector's vectors reused
        found = store.search(("docs",), query=_text(5), limit=1)
        assert embed.calls == [_text(5)]  # the query only
    assert found[0].score == pytest.approx(1.0, abs=1e-5)
    assert _sql(pg, "SELECT count(vec) FROM public.lgsa_store_vectors")[0][0] == 60


def test_a_lone_search_is_one_statement_that_sets_the_index_options_itself(pg: str) -> None:
    """No transaction and no other round trip: the HNSW options are set inside the
    search statement, for it alone, and do not stay on the pooled connection."""
    from sqlalchemy import event

    index: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    index["ann_index_config"] = {"ef_search": 77}
    engine = create_engine(pg)
    with SQLAlchemyStore(engine, index=index) as store:
        store.setup()
        _fill(store, 1200)  # over the prefix's exact-scan bound
        store.search(("docs",), query="cat", limit=5)  # probes the prefix once
        seen: list[tuple[str, Any, Any]] = []

        def statement(conn: Any, cursor: Any, stmt: str, params: Any, *rest: Any) -> None:
            seen.append((stmt, params, conn.get_execution_options().get("isolation_level")))

        event.listen(engine, "before_cursor_execute", statement)
        found = store.search(("docs",), query="river moon", limit=5)
        assert len(found) == 5
        assert len(seen) == 1, seen
        sql, params, isolation = seen[0]
        assert "set_config" in sql and "77" in sql
        assert "hnsw.ef_search" in params.values()
        assert isolation == "AUTOCOMMIT"  # no BEGIN, no ROLLBACK
        with engine.connect() as conn:
            assert conn.execute(text("SHOW hnsw.ef_search")).scalar() == "40"
    engine.dispose()


def test_a_lone_search_takes_the_short_door(pg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone vector search runs on a pooled connection without a ``Connection`` object,
    as a lone ``get`` does, and finds what the full door finds."""
    from langgraph.checkpoint.sqlalchemy._engine.lane import Lane

    index: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        store.setup()
        _fill(store, 300)
        store.search(("docs",), query="cat", limit=5)  # probes the prefix once
        real, runs = Lane.run, []

        def counting(self: Lane, *args: Any) -> Any:
            runs.append(args[2].__name__)
            return real(self, *args)

        monkeypatch.setattr(Lane, "run", counting)
        found = store.search(("docs",), query="river moon", limit=5)
        assert runs == ["run_alone"]
        monkeypatch.undo()
        full = store.batch(
            [SearchOp(("docs",), query="river moon", limit=5), GetOp(("docs",), "nothing")]
        )[0]
        assert [(it.key, it.score) for it in found] == [(it.key, it.score) for it in full]


def test_the_generic_plan_of_a_prefix_search_walks_the_index(pg: str) -> None:
    """psycopg prepares a statement run five times, and PostgreSQL then plans it once
    for any bounds: that plan must still walk the HNSW index under a large prefix, not
    sort the prefix's every vector."""
    import re

    from langgraph.checkpoint.sqlalchemy.dialects import query_builder
    from langgraph.store.sqlalchemy import _nearest
    from langgraph.store.sqlalchemy._shapes import Native

    index: Any = {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]}
    with SQLAlchemyStore.from_conn_string(pg, index=index) as store:
        store.setup()
        _fill(store, 3000)
        store.search(("docs",), query="cat", limit=5)
        native = store._native  # type: ignore[attr-defined]
    assert isinstance(native, Native) and native.index is not None
    _sql(pg, "ANALYZE lgsa_store_vectors")  # as autovacuum soon would
    _sql(pg, "ANALYZE lgsa_store_items")
    engine = create_engine(pg, poolclass=NullPool)
    stmt = _nearest._statement(query_builder("postgresql"), native, True, True, [])
    sql = str(stmt.compile(dialect=engine.dialect))
    names: dict[str, int] = {}
    sql = re.sub(r"%\((\w+)\)s", lambda m: f"${names.setdefault(m[1], len(names) + 1)}", sql)
    plan = "\n".join(row[0] for row in _sql(pg, "EXPLAIN (GENERIC_PLAN) " + sql))
    engine.dispose()
    assert f"Index Scan using {native.index}" in plan, plan
    assert "Sort" not in plan, plan
