"""The long-thread benchmark's graphs (:mod:`.long_thread`): real LangGraph graphs, no
model, no network, the same messages at every run.

- ``chat``: state ``messages: Annotated[list, add_messages]``, one node answering each
  user message with an ``AIMessage`` of :data:`MESSAGE_CHARS` characters; a turn is one
  ``invoke({"messages": [HumanMessage(400 characters)]})``.
- ``agent``: a tool-calling agent; the model node answers a user message with an
  ``AIMessage`` calling the ``lookup`` tool, LangGraph's prebuilt ``ToolNode`` runs it
  (a ``ToolMessage`` of :data:`TOOL_CHARS` characters), the model node answers it in
  :data:`MESSAGE_CHARS` characters; a turn is one ``invoke`` of one user message (three
  supersteps).

Each has a ``delta`` variant: the same graph with its state rewritten with LangGraph's
``DeltaChannel`` over ``add_messages`` (``snapshot_frequency`` at its default), the
upstream answer to long threads.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

__all__ = [
    "MESSAGE_CHARS",
    "TOOL_CHARS",
    "WORKLOADS",
    "build",
    "text",
    "turn_input",
]

MESSAGE_CHARS = 400
TOOL_CHARS = 4096
#: Workload name -> (graph kind, DeltaChannel state).
WORKLOADS: dict[str, tuple[str, bool]] = {
    "chat": ("chat", False),
    "chat_delta": ("chat", True),
    "agent": ("agent", False),
    "agent_delta": ("agent", True),
}
_WORDS = [
    "thread",
    "checkpoint",
    "message",
    "answer",
    "table",
    "value",
    "version",
    "channel",
    "step",
    "graph",
    "node",
    "tool",
    "state",
    "write",
    "read",
    "bytes",
    "turn",
    "user",
    "model",
    "list",
    "saver",
    "store",
    "order",
    "fresh",
    "long",
    "short",
]


def text(seed: str, chars: int) -> str:
    """``chars`` characters of words, the same for the same ``seed`` (no network, no model:
    a turn's messages are a function of its number)."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


def add_messages_batch(state: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """``add_messages`` as a ``DeltaChannel`` reducer: the batch of writes folded in order
    (batching-invariant, as ``DeltaChannel`` requires, since ``add_messages`` is a fold)."""
    value: Any = list(state)
    for write in writes:
        value = add_messages(value, write)
    return list(value)


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class DeltaChatState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(add_messages_batch)]


def _turn(state: Any) -> int:
    return sum(isinstance(m, HumanMessage) for m in state["messages"])


def _answer(state: Any) -> dict[str, Any]:
    """The chat's one node: an answer of :data:`MESSAGE_CHARS` characters."""
    n = _turn(state)
    return {"messages": [AIMessage(text(f"answer-{n}", MESSAGE_CHARS), id=f"ai-{n}")]}


@tool
def lookup(query: str) -> str:
    """Look ``query`` up: :data:`TOOL_CHARS` characters of result."""
    return text(f"tool-{query}", TOOL_CHARS)


def _model(state: Any) -> dict[str, Any]:
    """The agent's model: a tool call for a user message, an answer for a tool result."""
    n = _turn(state)
    if isinstance(state["messages"][-1], HumanMessage):
        call = {"name": "lookup", "args": {"query": f"q{n}"}, "id": f"call-{n}"}
        return {"messages": [AIMessage("", tool_calls=[call], id=f"ai-call-{n}")]}
    return {"messages": [AIMessage(text(f"answer-{n}", MESSAGE_CHARS), id=f"ai-{n}")]}


def build(workload: str, checkpointer: Any) -> Any:
    """The compiled graph of ``workload`` (a key of :data:`WORKLOADS`)."""
    kind, delta = WORKLOADS[workload]
    schema: Any = DeltaChatState if delta else ChatState
    graph = StateGraph(schema)
    if kind == "chat":
        graph.add_node("answer", _answer)
        graph.add_edge(START, "answer")
        graph.add_edge("answer", END)
    else:
        graph.add_node("model", _model)
        graph.add_node("tools", ToolNode([lookup]))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
        graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer)


def turn_input(turn: int) -> dict[str, Any]:
    """The input of turn ``turn`` (from 1): one user message of :data:`MESSAGE_CHARS`."""
    return {"messages": [HumanMessage(text(f"user-{turn}", MESSAGE_CHARS), id=f"user-{turn}")]}
