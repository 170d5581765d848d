"""``config_metadata``: keep ``config["metadata"]`` out of stored metadata.

LangGraph's ``get_checkpoint_metadata`` copies every key of ``config["metadata"]`` and
every scalar of ``config["configurable"]`` (a user's e-mail, an account id) into each
checkpoint's metadata, which is stored in clear even under ``EncryptedSerializer``.
``config_metadata=False`` stores only the metadata LangGraph passes to ``put``; a list
of keys copies those alone (``["run_id"]`` keeps ``delete_for_runs`` working). The
default is LangGraph's behaviour. Every backend, sync and async, and through a graph.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from ..doors import Door
from ..graphs import chain

EMAIL = "someone@example.com"


def user_config(thread_id: str = "t") -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread_id, "checkpoint_ns": "", "user_id": "u-42"},
        "metadata": {"email": EMAIL, "run_id": "run-1"},
    }


@pytest.mark.parametrize(
    ("option", "stored"),
    [
        (True, {"source": "loop", "step": 1, "email": EMAIL, "run_id": "run-1", "user_id": "u-42"}),
        (False, {"source": "loop", "step": 1}),
        (["run_id"], {"source": "loop", "step": 1, "run_id": "run-1"}),
    ],
    ids=["default", "false", "run_id"],
)
async def test_put_stores_the_chosen_config_metadata(
    saver_factory: Any, mode: str, option: Any, stored: dict[str, Any]
) -> None:
    door = Door(saver_factory(config_metadata=option), mode)
    config = await door.put(user_config(), empty_checkpoint(), {"source": "loop", "step": 1}, {})
    got = await door.get_tuple(config)
    assert got is not None and got.metadata == stored
    found = await door.list(None, filter={"email": EMAIL})
    assert len(found) == (1 if "email" in stored else 0)
    # delete_for_runs finds checkpoints by the run_id LangGraph copies from the config.
    await door.delete_for_runs(["run-1"])
    assert (await door.get_tuple(config) is None) == ("run_id" in stored)


async def test_a_graph_stores_no_config_metadata(saver_factory: Any, mode: str) -> None:
    door = Door(saver_factory(config_metadata=False), mode)

    class State(TypedDict):
        items: Annotated[list[str], operator.add]

    def step(state: State) -> dict[str, Any]:
        return {"items": ["done"]}

    graph = chain(State, step, checkpointer=door.saver)
    config = user_config("g")
    await door.invoke(graph, {"items": []}, config)
    history = await door.list({"configurable": {"thread_id": "g"}})
    assert len(history) >= 2
    for t in history:
        assert EMAIL not in str(t.metadata) and "u-42" not in str(t.metadata), t.metadata
        assert t.metadata["source"] in ("input", "loop")


@pytest.mark.parametrize("bad", ["run_id", 1, None, [1]])
def test_config_metadata_refuses_other_values(bad: Any) -> None:
    with pytest.raises(ValueError, match="config_metadata"):
        SQLAlchemySaver.from_conn_string(":memory:", config_metadata=bad)
