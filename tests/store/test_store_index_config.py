"""The index and TTL configs the official stores take work here as there, on every
backend, sync and async: ``SqliteStore``'s ``text_fields`` names the fields to embed as
``fields`` does (a single path too), ``store.embeddings`` is the ``Embeddings`` the
config makes (None without one), and ``ttl["omit_expired"]`` is accepted (True or False:
an expired item is never read either way). A config these rules refuse (and HNSW
parameters outside pgvector's bounds) fails at construction, before any engine is made.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langgraph.checkpoint.sqlalchemy.dialects import AnnParams
from langgraph.store.sqlalchemy import SQLAlchemyStore
from langgraph.store.sqlalchemy.vectors import ann_params

from ..conftest import Clock, HashEmbeddings, StoreDoor


@pytest.mark.parametrize("name", ["fields", "text_fields"])
@pytest.mark.parametrize("paths", [["title"], "title"])
async def test_text_fields_names_the_fields_to_embed(
    store_factory: Any, mode: str, name: str, paths: Any
) -> None:
    embeddings = HashEmbeddings(16)
    door = StoreDoor(store_factory(index={"dims": 16, "embed": embeddings, name: paths}), mode)
    await door.put(("docs",), "k", {"title": "alpha beta", "body": "gamma delta"})
    assert embeddings.calls == ["alpha beta"]  # the title only, not the whole value
    found = await door.search(("docs",), query="alpha beta")
    assert [(i.key, round(i.score, 5)) for i in found] == [("k", 1.0)]


async def test_fields_and_text_fields_may_agree(store_factory: Any, mode: str) -> None:
    embeddings = HashEmbeddings(16)
    index = {"dims": 16, "embed": embeddings, "fields": ["a"], "text_fields": ["a"]}
    door = StoreDoor(store_factory(index=index), mode)
    await door.put(("docs",), "k", {"a": "x", "b": "y"})
    assert embeddings.calls == ["x"]


@pytest.mark.parametrize(
    "index",
    [
        {"fields": ["a"], "text_fields": ["b"]},
        {"text_fields": [""]},
        {"text_fields": 5},
        {"fields": ["a", 1]},
    ],
)
def test_bad_field_paths_are_refused_before_any_engine(index: dict[str, Any]) -> None:
    config: Any = {"dims": 4, "embed": HashEmbeddings(4), **index}
    with pytest.raises(ValueError, match="fields"):
        SQLAlchemyStore.from_conn_string("postgresql://nobody@127.0.0.1:1/none", index=config)


@pytest.mark.parametrize(
    ("ann", "match"),
    [
        ({"m": 1}, "m must be an integer from 2 to 100"),
        ({"m": 101}, "m must be an integer from 2 to 100"),
        ({"ef_construction": 1001}, "ef_construction must be an integer from 4 to 1000"),
        ({"ef_search": 0}, "ef_search must be an integer from 1 to 1000"),
        ({"ef_search": True}, "ef_search must be an integer"),
        ({"m": 16, "ef_construction": 31}, "at least twice m"),
        ({"m": 48, "ef_construction": 95}, "at least twice m"),
    ],
)
def test_hnsw_parameters_outside_pgvectors_bounds_are_refused_before_any_engine(
    ann: dict[str, Any], match: str
) -> None:
    config: Any = {"dims": 4, "embed": HashEmbeddings(4), "ann_index_config": ann}
    with pytest.raises(ValueError, match=match):
        SQLAlchemyStore.from_conn_string("postgresql://nobody@127.0.0.1:1/none", index=config)


def test_a_larger_m_alone_raises_the_default_ef_construction_to_twice_it() -> None:
    assert ann_params({"m": 80}).ef_construction == 160
    assert ann_params({"m": 8}).ef_construction == AnnParams().ef_construction


async def test_embeddings_is_the_index_configs(store_factory: Any) -> None:
    embeddings = HashEmbeddings(8)
    assert store_factory(index={"dims": 8, "embed": embeddings}).embeddings is embeddings
    assert store_factory().embeddings is None

    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(len(t))] * 2 for t in texts]

    wrapped = store_factory(index={"dims": 2, "embed": embed}).embeddings
    assert isinstance(wrapped, Embeddings)
    assert wrapped.embed_documents(["abc"]) == [[3.0, 3.0]]


@pytest.mark.parametrize("omit", [True, False, None])
async def test_omit_expired_is_accepted_and_expired_items_stay_hidden(
    store_factory: Any, mode: str, clock: Clock, omit: bool | None
) -> None:
    ttl: dict[str, Any] = {"default_ttl": 1}
    if omit is not None:
        ttl["omit_expired"] = omit
    store = store_factory(ttl=ttl, clock=clock)
    assert store.ttl_config == ttl
    door = StoreDoor(store, mode)
    await door.put(("a",), "gone", {"v": 1})
    await door.put(("a",), "kept", {"v": 2}, ttl=None)
    clock.advance(minutes=2)  # "gone" expired, not swept
    assert await door.get(("a",), "gone", refresh_ttl=False) is None
    assert [i.key for i in await door.search(("a",), refresh_ttl=False)] == ["kept"]
    await door.delete(("a",), "kept")
    assert await door.list_namespaces() == []


@pytest.mark.parametrize("omit", ["yes", 1, 0.0])
def test_an_omit_expired_that_is_not_a_bool_is_refused(omit: Any) -> None:
    with pytest.raises(ValueError, match="omit_expired"):
        SQLAlchemyStore.from_conn_string(
            "postgresql://nobody@127.0.0.1:1/none", ttl={"omit_expired": omit}
        )
