"""A real LangGraph graph with long-term memory: compiled with ``store=`` a
``SQLAlchemyStore`` and ``checkpointer=`` a ``SQLAlchemySaver`` on the same database, on
every backend, invoked through the sync or the async door. Thread 1 writes memories,
thread 2 (another conversation of the same user) finds them."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..conftest import HashEmbeddings
from ..doors import Door
from ..graphs import thread


class State(TypedDict, total=False):
    user: str
    remember: str
    query: str
    found: Annotated[list[str], operator.add]
    count: int


def build(mode: str, store: SQLAlchemyStore, checkpointer: Any) -> Any:
    """``START -> write -> recall -> count -> END``; the nodes use ``runtime.store`` (write,
    recall) and ``get_store()`` (count), sync or async as ``mode``."""

    def namespace(state: State) -> tuple[str, ...]:
        return ("memories", state["user"])

    if mode == "async":

        async def write(state: State, runtime: Runtime[None]) -> dict[str, Any]:
            if text := state.get("remember"):
                assert runtime.store is not None
                key = f"m{len(await runtime.store.asearch(namespace(state), limit=100))}"
                await runtime.store.aput(namespace(state), key, {"text": text})
            return {}

        async def recall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
            if not state.get("query"):
                return {}
            assert runtime.store is not None
            items = await runtime.store.asearch(namespace(state), query=state["query"], limit=2)
            return {"found": [i.value["text"] for i in items]}

        async def count(state: State) -> dict[str, Any]:
            namespaces = await get_store().alist_namespaces(prefix=("memories",))
            return {"count": len(namespaces)}

        nodes: list[Any] = [write, recall, count]
    else:

        def write_sync(state: State, runtime: Runtime[None]) -> dict[str, Any]:
            if text := state.get("remember"):
                assert runtime.store is not None
                key = f"m{len(runtime.store.search(namespace(state), limit=100))}"
                runtime.store.put(namespace(state), key, {"text": text})
            return {}

        def recall_sync(state: State, runtime: Runtime[None]) -> dict[str, Any]:
            if not state.get("query"):
                return {}
            assert runtime.store is not None
            items = runtime.store.search(namespace(state), query=state["query"], limit=2)
            return {"found": [i.value["text"] for i in items]}

        def count_sync(state: State) -> dict[str, Any]:
            return {"count": len(get_store().list_namespaces(prefix=("memories",)))}

        nodes = [write_sync, recall_sync, count_sync]
    builder = StateGraph(State)
    names = ["write", "recall", "count"]
    for name, node in zip(names, nodes, strict=True):
        builder.add_node(name, node)
    for before, after in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(before, after)
    return builder.compile(checkpointer=checkpointer, store=store)


async def test_memories_cross_threads(saver_factory: Any, mode: str) -> None:
    saver = saver_factory()
    store = SQLAlchemyStore(
        saver.engine,
        saver.async_engine,
        schema=saver.schema,
        index={"dims": 16, "embed": HashEmbeddings(16), "fields": ["text"]},
    )
    store.setup()
    try:
        door = Door(saver, mode)
        graph = build(mode, store, saver)
        await door.invoke(graph, {"user": "ada", "remember": "pizza pasta"}, thread("t1"))
        await door.invoke(graph, {"user": "ada", "remember": "rain sunny cold"}, thread("t1"))
        await door.invoke(graph, {"user": "bob", "remember": "dog"}, thread("t3"))

        out = await door.invoke(graph, {"user": "ada", "query": "pizza"}, thread("t2"))
        assert out["found"] == ["pizza pasta", "rain sunny cold"]
        assert out["count"] == 2  # ("memories", "ada") and ("memories", "bob")
        out = await door.invoke(graph, {"user": "ada", "query": "cold rain"}, thread("t2"))
        t2_found = ["pizza pasta", "rain sunny cold", "rain sunny cold", "pizza pasta"]
        assert out["found"] == t2_found  # the second search appended to the first
        out = await door.invoke(graph, {"user": "bob", "query": "pizza"}, thread("t4"))
        assert out["found"] == ["dog"]

        # the checkpoints of both threads are in the same database
        assert (await door.get_state(graph, thread("t2"))).values["found"] == t2_found
        assert (await door.get_state(graph, thread("t1"))).values["remember"] == "rain sunny cold"
        history = await door.get_state_history(graph, thread("t1"))
        assert len(history) >= 2
        # the memories are the store's, seen by a plain read
        items = store.search(("memories", "ada"), limit=10)
        assert sorted(i.value["text"] for i in items) == ["pizza pasta", "rain sunny cold"]
        assert sorted(i.key for i in items) == ["m0", "m1"]
    finally:
        await store.aclose()


async def test_store_and_saver_from_conn_string(
    backend: str, request: Any, tmp_path: Any, mode: str
) -> None:
    """Saver and store each made by ``from_conn_string`` on one URL (they share one engine
    pair), tables set up by both, a graph through both."""
    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

    from ..provision import new_saver_args

    args = new_saver_args(backend, request, tmp_path)
    saver = SQLAlchemySaver.from_conn_string(**args)
    url = args.pop("conn_string")
    store = SQLAlchemyStore.from_conn_string(url, **args)
    try:
        saver.setup()
        store.setup()
        door = Door(saver, mode)
        graph = build(mode, store, saver)
        await door.invoke(graph, {"user": "u", "remember": "dog"}, thread("a"))
        out = await door.invoke(graph, {"user": "u", "query": "dog"}, thread("b"))
        assert out["found"] == ["dog"] and out["count"] == 1
        assert (await door.get_state(graph, thread("a"))).values["remember"] == "dog"
    finally:
        await store.aclose()
        await saver.aclose()
