"""Graph builders shared by the tests: the one place that wires LangGraph graphs.

Most test graphs are a chain of nodes, ``START -> a -> b -> ... -> END``: :func:`chain`
builds one from the node functions (or named subgraphs) and compiles it with a
checkpointer. :func:`echo_graph` is the one-node chat graph that answers each message,
with its state schema (plain list or ``DeltaChannel``) and answer as parameters.
Graphs with branches, loops or ``Send`` stay in their test files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.graph import END, START, StateGraph

#: A node of :func:`chain`: a function (the node is named after it) or a
#: ``(name, action)`` pair, the action a function or a compiled subgraph.
Step = Callable[..., Any] | tuple[str, Any]


def thread(thread_id: str) -> dict[str, Any]:
    """The config of the latest checkpoint of a thread (root namespace)."""
    return {"configurable": {"thread_id": thread_id}}


def extend(state: list, writes: Sequence[list]) -> list:  # type: ignore[type-arg]
    """DeltaChannel reducer: the batch of writes (each a list) appended in order."""
    return [*state, *(item for write in writes for item in write)]


def chain(schema: Any, *steps: Step, checkpointer: Any = None) -> Any:
    """``START -> steps[0] -> ... -> steps[-1] -> END`` over state ``schema``, compiled.

    Args:
        schema: The state schema (a ``TypedDict``).
        *steps: The nodes in order: functions, named after themselves, or
            ``(name, action)`` pairs.
        checkpointer: Compiled in; None for a subgraph (it inherits its parent's).

    Returns:
        The compiled graph.
    """
    builder = StateGraph(schema)
    names = []
    for step in steps:
        name, action = step if isinstance(step, tuple) else (step.__name__, step)
        builder.add_node(name, action)
        names.append(name)
    for before, after in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(before, after)
    return builder.compile(checkpointer=checkpointer)


def echo_graph(checkpointer: Any, schema: Any, answer: str) -> Any:
    """One node, ``reply``, that adds to ``messages`` the ``answer`` to the last one.

    ``answer`` is a format string over ``last`` (the last message) and ``seen`` (how
    many messages the state holds).
    """

    def reply(state: Any) -> dict[str, Any]:
        messages = state["messages"]
        return {"messages": [answer.format(last=messages[-1], seen=len(messages))]}

    return chain(schema, reply, checkpointer=checkpointer)
