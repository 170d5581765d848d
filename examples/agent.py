"""A durable LangGraph tool-calling agent whose checkpoints and memories live in a SQL
database.

Run ``python examples/agent.py``. The script starts copies of itself as separate
processes, so everything a later step "remembers" must have come from the database:

(a) conversation memory across processes, (b) human approval of a sensitive tool
call with ``interrupt()`` / ``Command(resume=...)``, (c) time travel: fork a thread
from an earlier checkpoint, (d) what the saver stores, (e) long-term memory across
threads: the agent writes what it learns about the user to a ``SQLAlchemyStore`` in
the same database, and a new thread finds it with ``search``.

The chat model is a deterministic fake: no network, no API key. Set
``LANGGRAPH_CHECKPOINT_URL`` to any SQLAlchemy URL (default: a SQLite file in the
current directory). Exits non-zero if an expected result is not seen.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command, interrupt

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.store.sqlalchemy import SQLAlchemyStore

DB_URL = os.environ.get(
    "LANGGRAPH_CHECKPOINT_URL", f"sqlite:///{Path.cwd() / 'checkpoints.sqlite'}"
)


def open_saver(url: str) -> SQLAlchemySaver:
    """Return the checkpoint saver for ``url``; use it as ``with open_saver(url) as saver``."""
    return SQLAlchemySaver.from_conn_string(url)


def open_store(url: str) -> SQLAlchemyStore:
    """Return the long-term memory store for ``url`` (the saver's database: it shares the
    saver's engines); use it as ``with open_store(url) as store``."""
    return SQLAlchemyStore.from_conn_string(url)


@dataclass
class UserContext:
    """Who the agent talks to (``graph.invoke(..., context=UserContext("ada-1"))``):
    memories are kept per user, across all of the user's threads."""

    user_id: str


def memories_of(user_id: str) -> tuple[str, ...]:
    """The store namespace of a user's memories."""
    return ("memories", user_id)


# --- tools --------------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """Return today's weather for a city."""
    reports = {"Paris": "sunny, 22 °C", "Tokyo": "rainy, 17 °C"}
    return f"{city}: {reports.get(city, 'cloudy, 15 °C')}"


@tool
def book_table(restaurant: str, time: str) -> str:
    """Book a restaurant table. Sensitive: pauses the graph until a human approves."""
    decision = interrupt({"action": "book_table", "restaurant": restaurant, "time": time})
    if not decision.get("approved"):
        return f"Booking at {restaurant} was declined by the user."
    return f"Booked a table at {restaurant} for {time} (confirmation BK-{time.replace(':', '')})."


# --- a deterministic chat model -----------------------------------------------------


class ScriptedChatModel(BaseChatModel):
    """A fake chat model whose reply is decided from the conversation, like a real one."""

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """The tools' names are hard-wired in ``_reply``, so binding is a no-op."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):  # a tool answered: summarise its result
            return AIMessage(content=f"Here you go: {last.content}")
        text = str(last.content)
        call_id = f"call_{len(messages)}"
        if match := re.search(r"weather in ([A-Z][a-z]+)", text):
            args: dict[str, str] = {"city": match[1]}
            return AIMessage(content="", tool_calls=[_call("get_weather", args, call_id)])
        if match := re.search(r"book a table at (.+) at (\d{1,2}:\d{2})", text, re.IGNORECASE):
            args = {"restaurant": match[1], "time": match[2]}
            return AIMessage(content="", tool_calls=[_call("book_table", args, call_id)])
        if "what is my name" in text.lower():  # answer from *earlier* messages in the state
            for message in messages:
                if isinstance(message, HumanMessage) and (
                    found := re.search(r"my name is (\w+)", str(message.content), re.IGNORECASE)
                ):
                    return AIMessage(content=f"Your name is {found[1]}.")
            for message in messages:  # else from the long-term memories the agent was given
                if isinstance(message, SystemMessage) and (
                    found := re.search(r"The user's name is (\w+)", str(message.content))
                ):
                    return AIMessage(content=f"Your name is {found[1]}, I remember you.")
            return AIMessage(content="I don't know your name.")
        return AIMessage(content="I can check the weather or book a table.")


def _call(name: str, args: dict[str, str], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


Graph = CompiledStateGraph[Any, UserContext, Any, Any]


def build_graph(saver: BaseCheckpointSaver[Any], store: BaseStore) -> Graph:
    """agent -> (tools -> agent)* -> END, checkpointed by ``saver`` after every step; the
    agent keeps what it learns about the user in ``store`` (``runtime.store``)."""
    tools = [get_weather, book_table]
    model = ScriptedChatModel().bind_tools(tools)

    def agent(state: MessagesState, runtime: Runtime[UserContext]) -> dict[str, list[BaseMessage]]:
        messages = state["messages"]
        if runtime.context is None or runtime.store is None:  # e.g. a time-travel replay
            return {"messages": [model.invoke(messages)]}
        namespace = memories_of(runtime.context.user_id)
        last = messages[-1]
        if isinstance(last, HumanMessage) and (
            found := re.search(r"my name is (\w+)", str(last.content), re.IGNORECASE)
        ):  # something worth remembering beyond this thread: write it to the store
            fact = {"kind": "profile", "text": f"The user's name is {found[1]}."}
            runtime.store.put(namespace, "name", fact)
        known = runtime.store.search(namespace, filter={"kind": "profile"}, limit=5)
        notes = [SystemMessage(" ".join(item.value["text"] for item in known))] if known else []
        return {"messages": [model.invoke([*notes, *messages])]}

    builder = StateGraph(MessagesState, context_schema=UserContext)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=saver, store=store)


# --- helpers ------------------------------------------------------------------------


def thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def show(messages: list[BaseMessage], indent: str = "    ") -> None:
    """Print a conversation one message per line."""
    for m in messages:
        calls = ", ".join(f"{c['name']}({c['args']})" for c in getattr(m, "tool_calls", []))
        print(f"{indent}{m.type:>5}: {m.content or '-> ' + calls}")


def expect(condition: bool, failure: str) -> None:
    """Stop with a non-zero exit code when an expected result is not seen."""
    if not condition:
        sys.exit(f"FAILED: {failure}")


def last_text(graph: Graph, config: RunnableConfig) -> str:
    return str(graph.get_state(config).values["messages"][-1].content)


# --- the steps, each run in its own process -----------------------------------------


def turn_1(graph: Graph, saver: BaseCheckpointSaver[Any], chat: str, user: str) -> None:
    question = "My name is Ada. What's the weather in Paris?"
    graph.invoke({"messages": [HumanMessage(question)]}, thread(chat), context=UserContext(user))
    show(graph.get_state(thread(chat)).values["messages"])
    expect("Paris" in last_text(graph, thread(chat)), "turn 1 did not report the weather")


def turn_2(graph: Graph, saver: BaseCheckpointSaver[Any], chat: str, user: str) -> None:
    question = {"messages": [HumanMessage("What is my name?")]}
    graph.invoke(question, thread(chat), context=UserContext(user))
    show(graph.get_state(thread(chat)).values["messages"])
    expect(last_text(graph, thread(chat)) == "Your name is Ada.", "turn 2 forgot turn 1")


def book(graph: Graph, saver: BaseCheckpointSaver[Any], booking: str) -> None:
    request = "Please book a table at Chez Marie at 19:30."
    graph.invoke({"messages": [HumanMessage(request)]}, thread(booking))
    state = graph.get_state(thread(booking))
    expect(state.next == ("tools",) and bool(state.interrupts), "booking did not pause")
    print(f"    paused before {state.next}, waiting for approval of {state.interrupts[0].value}")


def approve(graph: Graph, saver: BaseCheckpointSaver[Any], booking: str) -> None:
    pending = graph.get_state(thread(booking)).interrupts
    expect(bool(pending), "no pending approval found in the database")
    print(f"    a human approves {pending[0].value}")
    graph.invoke(Command(resume={"approved": True}), thread(booking))
    show(graph.get_state(thread(booking)).values["messages"])
    expect("BK-1930" in last_text(graph, thread(booking)), "the approved booking did not run")


def time_travel(graph: Graph, saver: BaseCheckpointSaver[Any], chat: str) -> None:
    original = graph.get_state(thread(chat))  # its config pins the current checkpoint_id
    history = list(graph.get_state_history(thread(chat)))  # newest first
    for s in history:
        meta = s.metadata or {}
        print(f"    step {meta.get('step')!s:>2} {meta.get('source')!s:<6} next={s.next}")
    # Fork from the first model call and ask about Tokyo instead of Paris. Keeping the
    # message id makes the add_messages reducer *replace* the message, not append it.
    target = next(s for s in reversed(history) if s.next == ("agent",))
    question = target.values["messages"][0]
    changed = HumanMessage("My name is Ada. What's the weather in Tokyo?", id=question.id)
    fork_config = graph.update_state(target.config, {"messages": [changed]})
    graph.invoke(None, fork_config)  # continue the fork from there: model, tool, model
    before = original.values["messages"]
    after = graph.get_state(original.config).values["messages"]  # re-read the old branch
    fork = graph.get_state(thread(chat)).values["messages"]  # the thread head is the fork
    print(f"    original branch (checkpoint {original.config['configurable']['checkpoint_id']}):")
    show(after, "      ")
    print(f"    forked branch (from {target.config['configurable']['checkpoint_id']}):")
    show(fork, "      ")
    expect([m.content for m in after] == [m.content for m in before], "original branch changed")
    expect("Tokyo" in str(fork[-1].content), "the fork did not continue with the new question")
    expect("Paris" in str(after[3].content), "the original branch lost its answer")


def show_storage(graph: Graph, saver: BaseCheckpointSaver[Any], *thread_ids: str) -> None:
    for thread_id in thread_ids:
        checkpoints = list(saver.list(thread(thread_id)))  # newest first
        newest = saver.get_tuple(thread(thread_id))
        if newest is None or not checkpoints:
            sys.exit(f"FAILED: nothing stored for {thread_id}")
        expect(checkpoints[0].config == newest.config, "list() is not newest first")
        sources = Counter(str(c.metadata.get("source")) for c in checkpoints)
        print(f"    thread {thread_id}: {len(checkpoints)} checkpoints {dict(sources)}")
        print(
            f"      newest {newest.config['configurable']['checkpoint_id']}: "
            f"source={newest.metadata.get('source')}, step={newest.metadata.get('step')}"
        )


def recall(graph: Graph, saver: BaseCheckpointSaver[Any], new_chat: str, user: str) -> None:
    """A new thread of the same user: no message of turn 1 is in its state, but the
    memory the agent wrote to the store then is found by ``search``."""
    assert graph.store is not None
    namespace = memories_of(user)
    found = graph.store.search(namespace, filter={"kind": "profile"})
    print(f"    store.search({namespace}, filter={{'kind': 'profile'}}):")
    for item in found:
        print(f"      {item.key}: {item.value} (updated {item.updated_at:%H:%M:%S})")
    expect(
        [item.value["text"] for item in found] == ["The user's name is Ada."],
        "the memory written in turn 1 is not in the store",
    )
    question = {"messages": [HumanMessage("What is my name?")]}
    graph.invoke(question, thread(new_chat), context=UserContext(user))
    messages = graph.get_state(thread(new_chat)).values["messages"]
    show(messages)
    expect(len(messages) == 2, "the new thread was not new")
    expect(
        messages[-1].content == "Your name is Ada, I remember you.",
        "the new thread did not recall the name from the store",
    )


STEPS: dict[str, Callable[..., None]] = {
    "turn-1": turn_1,
    "turn-2": turn_2,
    "book": book,
    "approve": approve,
    "time-travel": time_travel,
    "show-storage": show_storage,
    "recall": recall,
}


def run_step(step: str, *args: str) -> None:
    """Run one step in a fresh Python process (the child only shares the database)."""
    print(f"  $ agent.py {step} {' '.join(args)}", flush=True)
    if subprocess.run([sys.executable, __file__, step, *args], check=False).returncode != 0:
        sys.exit(f"FAILED: step {step!r} exited with an error")


def main() -> None:
    if len(sys.argv) > 1:  # a child process: run one step against the database
        with open_saver(DB_URL) as saver, open_store(DB_URL) as store:
            saver.setup()  # idempotent: creates or migrates the tables
            store.setup()  # the same migrations (one history): a no-op after the saver's
            STEPS[sys.argv[1]](build_graph(saver, store), saver, *sys.argv[2:])
        return
    run = uuid.uuid4().hex[:8]  # fresh ids: re-running never depends on old data
    chat, booking, user = f"chat-{run}", f"booking-{run}", f"ada-{run}"
    print("Checkpoint database:", re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", DB_URL))
    print("\n(a) conversation memory across processes")
    run_step("turn-1", chat, user)
    run_step("turn-2", chat, user)
    print("\n(b) human approval")
    run_step("book", booking)
    run_step("approve", booking)
    print("\n(c) time travel")
    run_step("time-travel", chat)
    print("\n(d) what is stored")
    run_step("show-storage", chat, booking)
    print("\n(e) long-term memory across threads (the store)")
    run_step("recall", f"chat-2-{run}", user)
    print("\nAll checks passed.")


if __name__ == "__main__":
    main()
