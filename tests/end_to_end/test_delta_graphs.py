"""Real graphs with ``DeltaChannel`` state, run long, pruned, copied and resumed.

A ``DeltaChannel`` (``langgraph.channels.delta``) stores only each step's writes and,
every ``snapshot_frequency`` updates, a full snapshot; LangGraph rebuilds its value from
``get_delta_channel_history``. These tests check, on every backend and door, that

* a 300-step run gives the state the same graph gives with a plain ``operator.add``
  channel, at every checkpoint of its history, while storing much less;
* ``prune(keep_latest)`` keeps what a DeltaChannel thread needs to resume (ancestors back
  to the nearest snapshot, pending writes of finished parallel tasks), in the root and in
  a subgraph namespace, so that a new process resumes it correctly;
* a ``copy_thread`` copy goes on by itself in a new process, the source untouched.

"A new process" is a second saver on the same database (``saver_factory(shared=True)``)
with the graph compiled again: nothing but the database carries the state.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from sqlalchemy import func, select
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, writes

from ..doors import Door, restarted
from ..graphs import chain, extend

SNAPSHOT_FREQUENCY = 5
RECURSION_LIMIT = 10_000

# -- helpers -----------------------------------------------------------------------------


def thread(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": RECURSION_LIMIT}


def _engine(saver: Any) -> Any:
    if saver.schema:
        return saver.engine.execution_options(schema_translate_map={None: saver.schema})
    return saver.engine


def stored_bytes(
    saver: Any, thread_id: str, tables: Sequence[Any] = (blobs, writes, checkpoints)
) -> int:
    """Bytes of serialised values stored for a thread: ``blob`` columns of the tables,
    and the values stored in checkpoint rows (``inline_values``)."""
    total = 0
    with _engine(saver).connect() as conn:
        for table in tables:
            column = table.c.inline_values if table is checkpoints else table.c.blob
            total += conn.execute(
                select(func.coalesce(func.sum(func.length(column)), 0)).where(
                    table.c.thread_id == thread_id
                )
            ).scalar_one()
    return int(total)


def count_checkpoints(saver: Any, thread_id: str, ns: str | None = None) -> int:
    stmt = select(func.count()).select_from(checkpoints).where(checkpoints.c.thread_id == thread_id)
    if ns is not None:
        stmt = stmt.where(checkpoints.c.checkpoint_ns == ns)
    with _engine(saver).connect() as conn:
        return int(conn.execute(stmt).scalar_one())


def namespaces(saver: Any, thread_id: str) -> set[str]:
    with _engine(saver).connect() as conn:
        return set(
            conn.execute(
                select(checkpoints.c.checkpoint_ns)
                .where(checkpoints.c.thread_id == thread_id)
                .distinct()
            ).scalars()
        )


# -- a loop graph: one item appended per step, up to a target ----------------------------


def item(n: int) -> str:
    return f"item {n:05d} " + "x" * 40


class PlainLoopState(TypedDict):
    items: Annotated[list, operator.add]
    target: int


class DeltaLoopState(TypedDict):
    items: Annotated[list, DeltaChannel(extend, snapshot_frequency=SNAPSHOT_FREQUENCY)]
    target: int


class NoSnapshotLoopState(TypedDict):
    """A DeltaChannel that takes no snapshot within these runs: writes only."""

    items: Annotated[list, DeltaChannel(extend, snapshot_frequency=1000)]
    target: int


def loop_graph(saver: Any, schema: Any = DeltaLoopState) -> Any:
    """``step`` appends one item per superstep until ``items`` has ``target`` items."""

    def step(state: dict[str, Any]) -> dict[str, Any]:
        return {"items": [item(len(state["items"]))]}

    def route(state: dict[str, Any]) -> str:
        return "step" if len(state["items"]) < state["target"] else END

    builder = StateGraph(schema)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", route, ["step", END])
    return builder.compile(checkpointer=saver)


async def run_to(door: Door, graph: Any, thread_id: str, target: int) -> dict[str, Any]:
    result = await door.invoke(graph, {"target": target}, thread(thread_id))
    assert result["items"] == [item(n) for n in range(target)]
    return result  # type: ignore[no-any-return]


async def test_300_steps_match_a_plain_channel_and_store_linearly(door: Door) -> None:
    saver = door.saver
    graphs = {
        "plain": loop_graph(saver, PlainLoopState),
        "delta": loop_graph(saver, DeltaLoopState),  # snapshot every 5 updates
        "delta-no-snapshot": loop_graph(saver, NoSnapshotLoopState),
    }
    sizes: dict[str, list[int]] = {name: [] for name in graphs}
    write_sizes: dict[str, list[int]] = {name: [] for name in graphs}
    finals: dict[str, Any] = {}
    for target in (100, 200, 300):
        for name, graph in graphs.items():
            finals[name] = await run_to(door, graph, name, target)
            sizes[name].append(stored_bytes(saver, name))
            write_sizes[name].append(stored_bytes(saver, name, [writes]))
    print(f"\nstored bytes at 100/200/300 steps ({door.mode}): {sizes}; writes only: {write_sizes}")

    # same final state as with a plain operator.add channel
    assert finals["delta"] == finals["plain"] == finals["delta-no-snapshot"]
    assert len(finals["delta"]["items"]) == 300

    # the plain channel stores the whole list at every step: quadratic (~9x for 3x steps)
    plain = sizes["plain"]
    assert plain[2] > 7 * plain[0]
    # without snapshots the delta graph stores one write per step: linear (3x for 3x steps)
    linear = sizes["delta-no-snapshot"]
    assert linear[2] < 3.3 * linear[0]
    assert linear[1] < 2.2 * linear[0]
    assert linear[2] * 50 < plain[2]
    # with a snapshot every 5 updates the writes still grow linearly; the snapshots are
    # full copies (1/5 of the plain channel's values), so the total is several times
    # smaller than the plain channel's
    delta = sizes["delta"]
    assert write_sizes["delta"][2] < 3.3 * write_sizes["delta"][0]
    assert delta[2] * 4 < plain[2]
    assert delta[0] * 4 < plain[0]

    # a new process reads every checkpoint of the history as the plain graph has it
    door2 = Door(door.saver, door.mode)
    history_delta = await door2.get_state_history(graphs["delta"], thread("delta"))
    history_plain = await door2.get_state_history(graphs["plain"], thread("plain"))
    assert len(history_delta) == len(history_plain) > 300
    assert [s.values for s in history_delta] == [s.values for s in history_plain]
    assert [s.next for s in history_delta] == [s.next for s in history_plain]


async def test_pruned_delta_thread_resumes_in_a_new_process(
    door: Door, saver_factory: Any, mode: str
) -> None:
    graph = loop_graph(door.saver)
    # 303 steps: the newest checkpoint is 3 updates past its last snapshot
    for target in (100, 200, 303):
        await run_to(door, graph, "t", target)
    await run_to(door, graph, "other", 20)
    other_before = await door.get_state_history(graph, thread("other"))
    assert count_checkpoints(door.saver, "t") > 300
    size_before = stored_bytes(door.saver, "t")
    latest = await door.get_tuple(thread("t"))
    assert latest is not None
    assert "items" not in latest.checkpoint["channel_values"]
    updates_since_snapshot = latest.metadata["counters_since_delta_snapshot"]["items"][0]
    assert 0 < updates_since_snapshot < SNAPSHOT_FREQUENCY

    await door.prune(["t"], strategy="keep_latest")

    # the newest checkpoint and its ancestors back to the nearest snapshot, no more
    kept = count_checkpoints(door.saver, "t")
    assert kept == updates_since_snapshot + 1 <= SNAPSHOT_FREQUENCY
    assert stored_bytes(door.saver, "t") * 20 < size_before

    door2 = restarted(saver_factory, mode)
    graph2 = loop_graph(door2.saver)
    state = await door2.get_state(graph2, thread("t"))
    assert state.values["items"] == [item(n) for n in range(303)]
    assert state.next == ()
    # every kept checkpoint still reads back whole
    history = await door2.get_state_history(graph2, thread("t"))
    assert len(history) == kept
    for s in history:
        n = len(s.values["items"])
        assert s.values["items"] == [item(i) for i in range(n)]
    # and the thread goes on: one more step, then many more
    await run_to(door2, graph2, "t", 304)
    await run_to(door2, graph2, "t", 320)
    await door2.prune(["t"], strategy="keep_latest")
    await run_to(door, graph, "t", 330)
    # the other thread was not touched
    assert await door.get_state_history(graph, thread("other")) == other_before


async def test_pruned_exit_durability_and_forked_threads_resume(
    door: Door, saver_factory: Any, mode: str
) -> None:
    """Two other shapes of a DeltaChannel chain: ``durability="exit"`` (one checkpoint
    per run, the steps' writes anchored on the previous run's checkpoint) and a
    time-travel fork (the newest checkpoint's parent chain leaves the old branch)."""
    exit_graph = loop_graph(door.saver, NoSnapshotLoopState)
    for target in (30, 60, 90):
        result = await door.invoke(
            exit_graph, {"target": target}, thread("exit"), durability="exit"
        )
        assert result["items"] == [item(n) for n in range(target)]

    graph = loop_graph(door.saver)
    await run_to(door, graph, "fork", 23)
    history = await door.get_state_history(graph, thread("fork"))
    [old] = [s for s in history if len(s.values.get("items", [])) == 12]
    forked = await door.update_state(graph, old.config, {"items": ["forked"]})
    result = await door.invoke(graph, None, {**forked, "recursion_limit": RECURSION_LIMIT})
    fork_items = [*(item(n) for n in range(12)), "forked", *(item(n) for n in range(13, 23))]
    assert result["items"] == fork_items

    await door.prune(["exit", "fork"], strategy="keep_latest")

    door2 = restarted(saver_factory, mode)
    exit_graph2 = loop_graph(door2.saver, NoSnapshotLoopState)
    state = await door2.get_state(exit_graph2, thread("exit"))
    assert state.values["items"] == [item(n) for n in range(90)]
    result = await door2.invoke(exit_graph2, {"target": 95}, thread("exit"), durability="exit")
    assert result["items"] == [item(n) for n in range(95)]

    graph2 = loop_graph(door2.saver)
    state = await door2.get_state(graph2, thread("fork"))
    assert state.values["items"] == fork_items
    result = await door2.invoke(graph2, {"target": 30}, thread("fork"))
    assert result["items"] == [*fork_items, *(item(n) for n in range(23, 30))]


# -- an agent whose tools run in parallel, one of them waiting for approval --------------

TOOLS = ("search", "calc", "approve")
TOOL_CALLS: Counter[str] = Counter()


class AgentState(TypedDict):
    messages: Annotated[list, DeltaChannel(extend, snapshot_frequency=SNAPSHOT_FREQUENCY)]


def agent_graph(saver: Any) -> Any:
    """``agent`` asks for three tools at once (``Send``); ``approve`` interrupts."""

    def agent(state: AgentState) -> dict[str, Any]:
        last = state["messages"][-1]
        if last.startswith("user: "):
            return {"messages": [f"agent: calling tools for {last[6:]}"]}
        return {"messages": [f"agent: answer from {len(state['messages'])} messages"]}

    def call_tools(state: AgentState) -> Any:
        last = state["messages"][-1]
        if last.startswith("agent: calling tools for "):
            query = last.removeprefix("agent: calling tools for ")
            return [Send("tool", {"name": name, "query": query}) for name in TOOLS]
        return END

    def tool(arg: dict[str, str]) -> dict[str, Any]:
        TOOL_CALLS[arg["name"]] += 1
        if arg["name"] == "approve":
            answer = interrupt(f"approve {arg['query']}?")
            return {"messages": [f"tool approve({arg['query']}): {answer}"]}
        return {"messages": [f"tool {arg['name']}({arg['query']}): done"]}

    builder = StateGraph(AgentState)
    builder.add_node("agent", agent)
    builder.add_node("tool", tool)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", call_tools, ["tool", END])
    builder.add_edge("tool", "agent")
    return builder.compile(checkpointer=saver)


def turn(query: str, answer: str, before: int) -> list[str]:
    """The messages one turn adds to a conversation of ``before`` messages."""
    return [
        f"user: {query}",
        f"agent: calling tools for {query}",
        f"tool search({query}): done",
        f"tool calc({query}): done",
        f"tool approve({query}): {answer}",
        f"agent: answer from {before + 5} messages",
    ]


async def start_turn(door: Door, graph: Any, thread_id: str, query: str) -> None:
    result = await door.invoke(graph, {"messages": [f"user: {query}"]}, thread(thread_id))
    assert [i.value for i in result["__interrupt__"]] == [f"approve {query}?"]


async def finish_turn(door: Door, graph: Any, thread_id: str, answer: str) -> list[str]:
    result = await door.invoke(graph, Command(resume=answer), thread(thread_id))
    assert "__interrupt__" not in result
    return result["messages"]  # type: ignore[no-any-return]


async def test_prune_keeps_finished_parallel_tools_for_the_resume(
    door: Door, saver_factory: Any, mode: str
) -> None:
    # the same conversation on an in-memory saver, for reference
    reference = agent_graph(InMemorySaver())
    reference_door = Door(None, mode)
    for query, answer in (("q1", "yes"), ("q2", "yes"), ("q3", "no")):
        await start_turn(reference_door, reference, "ref", query)
        expected = await finish_turn(reference_door, reference, "ref", answer)
    assert expected == [
        *turn("q1", "yes", 0),
        *turn("q2", "yes", 6),
        *turn("q3", "no", 12),
    ]

    TOOL_CALLS.clear()
    graph = agent_graph(door.saver)
    for query in ("q1", "q2"):
        await start_turn(door, graph, "t", query)
        await finish_turn(door, graph, "t", "yes")
    await start_turn(door, graph, "t", "q3")
    # search and calc finished (their writes are pending on the latest checkpoint);
    # approve ran up to its interrupt
    assert TOOL_CALLS == {"search": 3, "calc": 3, "approve": 5}
    latest = await door.get_tuple(thread("t"))
    assert latest is not None
    pending = [(channel, value) for _task, channel, value in latest.pending_writes or []]
    assert ("messages", ["tool search(q3): done"]) in pending
    assert ("messages", ["tool calc(q3): done"]) in pending
    assert any(channel == "__interrupt__" for channel, _ in pending)
    before = count_checkpoints(door.saver, "t")

    await door.prune(["t"], strategy="keep_latest")
    assert count_checkpoints(door.saver, "t") <= SNAPSHOT_FREQUENCY + 1 < before

    TOOL_CALLS.clear()
    door2 = restarted(saver_factory, mode)
    graph2 = agent_graph(door2.saver)
    state = await door2.get_state(graph2, thread("t"))
    assert state.next == ("tool",)
    # get_state shows the finished tools' writes applied
    assert state.values["messages"] == expected[:16]
    assert [i.value for t in state.tasks for i in t.interrupts] == ["approve q3?"]

    messages = await finish_turn(door2, graph2, "t", "no")
    assert messages == expected
    assert TOOL_CALLS == {"approve": 1}  # the finished tools are not run again
    state = await door2.get_state(graph2, thread("t"))
    assert state.values["messages"] == expected
    assert state.next == ()

    # the conversation goes on
    await start_turn(door2, graph2, "t", "q4")
    messages = await finish_turn(door2, graph2, "t", "ok")
    assert messages == [*expected, *turn("q4", "ok", 18)]
    assert TOOL_CALLS == {"search": 1, "calc": 1, "approve": 3}


# -- a subgraph whose DeltaChannel is interrupted mid-way ----------------------------------


class InnerState(TypedDict):
    notes: Annotated[list, DeltaChannel(extend, snapshot_frequency=SNAPSHOT_FREQUENCY)]
    answer: str


class OuterState(TypedDict):
    log: Annotated[list, DeltaChannel(extend, snapshot_frequency=SNAPSHOT_FREQUENCY)]
    answer: str


INNER_STEPS = 13


def nested_graph(saver: Any) -> Any:
    """``outer`` logs, then runs ``inner``: 13 steps of notes, then an interrupt."""

    def note(state: InnerState) -> dict[str, Any]:
        return {"notes": [f"note {len(state['notes'])}"]}

    def more(state: InnerState) -> str:
        return "note" if len(state["notes"]) < INNER_STEPS else "ask"

    def ask(state: InnerState) -> dict[str, Any]:
        answer = interrupt(f"{len(state['notes'])} notes: go on?")
        return {"answer": f"{answer} after {state['notes'][-1]}", "notes": ["asked"]}

    inner = StateGraph(InnerState)
    inner.add_node("note", note)
    inner.add_node("ask", ask)
    inner.add_edge(START, "note")
    inner.add_conditional_edges("note", more, ["note", "ask"])
    inner.add_edge("ask", END)
    inner_graph = inner.compile()

    def begin(state: OuterState) -> dict[str, Any]:
        return {"log": [f"begin {len(state['log'])}"]}

    def child(state: OuterState) -> dict[str, Any]:
        out = inner_graph.invoke({"notes": []})
        return {"answer": out["answer"], "log": [f"child {len(out['notes'])} notes"]}

    return chain(OuterState, begin, child, checkpointer=saver)


async def test_pruned_subgraph_namespace_resumes_its_delta_channel(
    door: Door, saver_factory: Any, mode: str
) -> None:
    graph = nested_graph(door.saver)
    config = thread("nested")
    for i in range(3):
        await door.invoke(graph, {"log": [f"turn {i}"]}, config)
        if i < 2:
            await door.invoke(graph, Command(resume="yes"), config)
    child_ns = [ns for ns in namespaces(door.saver, "nested") if ns]
    assert child_ns
    latest_child = max(child_ns, key=lambda ns: count_checkpoints(door.saver, "nested", ns))
    before = count_checkpoints(door.saver, "nested", latest_child)
    assert before > INNER_STEPS

    await door.prune(["nested"], strategy="keep_latest")
    assert count_checkpoints(door.saver, "nested", "") <= SNAPSHOT_FREQUENCY + 1
    for ns in child_ns:
        assert count_checkpoints(door.saver, "nested", ns) <= SNAPSHOT_FREQUENCY + 1

    door2 = restarted(saver_factory, mode)
    graph2 = nested_graph(door2.saver)
    state = await door2.get_state(graph2, config, subgraphs=True)
    assert state.next == ("child",)
    [task] = state.tasks
    assert [i.value for i in task.interrupts] == [f"{INNER_STEPS} notes: go on?"]
    assert task.state is not None and not isinstance(task.state, dict)
    assert task.state.values["notes"] == [f"note {n}" for n in range(INNER_STEPS)]

    done = await door2.invoke(graph2, Command(resume="fine"), config)
    assert "__interrupt__" not in done
    assert done["answer"] == f"fine after note {INNER_STEPS - 1}"
    log = []
    for i in range(3):
        log += [f"turn {i}", f"begin {len(log) + 1}", f"child {INNER_STEPS + 1} notes"]
    assert done["log"] == log


# -- copy_thread, then the copy goes on in a new process ---------------------------------


async def test_copied_delta_thread_goes_on_and_source_is_unchanged(
    door: Door, saver_factory: Any, mode: str
) -> None:
    graph = loop_graph(door.saver)
    await run_to(door, graph, "src", 120)
    source_history = await door.get_state_history(graph, thread("src"))

    await door.copy_thread("src", "dst")

    door2 = restarted(saver_factory, mode)
    graph2 = loop_graph(door2.saver)
    copied = await door2.get_state_history(graph2, thread("dst"))
    assert [s.values for s in copied] == [s.values for s in source_history]
    assert [s.config["configurable"]["checkpoint_id"] for s in copied] == [
        s.config["configurable"]["checkpoint_id"] for s in source_history
    ]
    await run_to(door2, graph2, "dst", 150)
    assert await door.get_state_history(graph, thread("src")) == source_history
    # both go on independently
    await run_to(door, graph, "src", 125)
    await run_to(door2, graph2, "dst", 160)
    state = await door2.get_state(graph2, thread("src"))
    assert len(state.values["items"]) == 125


async def test_copied_interrupted_agent_resumes_on_its_own(
    door: Door, saver_factory: Any, mode: str
) -> None:
    graph = agent_graph(door.saver)
    await start_turn(door, graph, "src", "q1")
    await finish_turn(door, graph, "src", "yes")
    await start_turn(door, graph, "src", "q2")
    source_history = await door.get_state_history(graph, thread("src"))

    await door.copy_thread("src", "dst")

    TOOL_CALLS.clear()
    door2 = restarted(saver_factory, mode)
    graph2 = agent_graph(door2.saver)
    copy_messages = await finish_turn(door2, graph2, "dst", "copy says yes")
    assert copy_messages == [*turn("q1", "yes", 0), *turn("q2", "copy says yes", 6)]
    assert TOOL_CALLS == {"approve": 1}

    # the source still waits for its answer, history unchanged
    assert await door.get_state_history(graph, thread("src")) == source_history
    state = await door.get_state(graph, thread("src"))
    assert state.next == ("tool",)
    assert [i.value for t in state.tasks for i in t.interrupts] == ["approve q2?"]
    source_messages = await finish_turn(door, graph, "src", "source says no")
    assert source_messages == [*turn("q1", "yes", 0), *turn("q2", "source says no", 6)]
    assert TOOL_CALLS == {"approve": 2}
