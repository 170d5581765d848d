"""End to end: real LangGraph graphs compiled with the saver, on every backend and door.

The graphs are deterministic (no network, no LLM). Each test runs them through
``graph.invoke`` or ``graph.ainvoke`` (the ``door``), and where it says "a new process"
it builds a second saver on the same database (``saver_factory(shared=True)``) and
compiles the graph again, so that nothing but the database carries the state.
"""

from __future__ import annotations

import operator
import threading
from collections import Counter
from typing import Annotated, Any

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from ..doors import Door, restarted
from ..graphs import chain, echo_graph, extend, thread
from ..waiting import until

# -- multi-turn conversation -------------------------------------------------------------


class ChatState(TypedDict):
    messages: Annotated[list, operator.add]


CHAT = (ChatState, "echo {last} (seen {seen})")  # echo_graph's state schema and answer


async def test_multi_turn_conversation_survives_a_restart(
    door: Door, saver_factory: Any, mode: str
) -> None:
    config = thread("chat")
    graph = echo_graph(door.saver, *CHAT)
    first = await door.invoke(graph, {"messages": ["hello"]}, config)
    assert first["messages"] == ["hello", "echo hello (seen 1)"]
    second = await door.invoke(graph, {"messages": ["again"]}, config)
    assert second["messages"] == ["hello", "echo hello (seen 1)", "again", "echo again (seen 3)"]

    # another thread is independent
    other = await door.invoke(graph, {"messages": ["hi"]}, thread("other"))
    assert other["messages"] == ["hi", "echo hi (seen 1)"]

    door2 = restarted(saver_factory, mode)
    graph2 = echo_graph(door2.saver, *CHAT)
    state = await door2.get_state(graph2, config)
    assert state.values["messages"] == second["messages"]
    assert state.next == ()
    third = await door2.invoke(graph2, {"messages": ["third"]}, config)
    assert third["messages"] == [*second["messages"], "third", "echo third (seen 5)"]

    # both processes see the same history: three checkpoints per turn (input, the
    # scheduled node, its result), steps counting on across turns
    history = await door.get_state_history(graph, config)
    history2 = await door2.get_state_history(graph2, config)
    assert [s.config for s in history] == [s.config for s in history2]
    assert [s.metadata["step"] for s in history] == list(range(7, -2, -1))
    assert history[0].values["messages"] == third["messages"]
    assert history[-1].values == {"messages": []}


# -- interrupt and resume ----------------------------------------------------------------


class ApprovalState(TypedDict):
    log: Annotated[list, operator.add]
    approved: str


def approval_graph(door: Door, calls: Counter[str]) -> Any:
    def prepare(state: ApprovalState) -> dict[str, Any]:
        calls["prepare"] += 1
        return {"log": ["prepared"]}

    def ask(state: ApprovalState) -> dict[str, Any]:
        calls["ask"] += 1
        answer = interrupt("approve?")
        return {"approved": answer, "log": [f"answer {answer}"]}

    def finish(state: ApprovalState) -> dict[str, Any]:
        calls["finish"] += 1
        return {"log": [f"finished with {state['approved']}"]}

    return chain(ApprovalState, prepare, ask, finish, checkpointer=door.saver)


async def test_interrupt_then_resume_in_a_new_process(
    door: Door, saver_factory: Any, mode: str
) -> None:
    config = thread("approval")
    calls: Counter[str] = Counter()
    graph = approval_graph(door, calls)
    result = await door.invoke(graph, {"log": ["start"]}, config)
    assert "__interrupt__" in result
    assert [i.value for i in result["__interrupt__"]] == ["approve?"]
    assert result["log"] == ["start", "prepared"]

    state = await door.get_state(graph, config)
    assert state.next == ("ask",)
    assert [i.value for t in state.tasks for i in t.interrupts] == ["approve?"]
    assert [i.value for i in state.interrupts] == ["approve?"]

    door2 = restarted(saver_factory, mode)
    calls2: Counter[str] = Counter()
    graph2 = approval_graph(door2, calls2)
    state2 = await door2.get_state(graph2, config)
    assert state2.next == ("ask",)
    assert [i.value for i in state2.interrupts] == ["approve?"]

    done = await door2.invoke(graph2, Command(resume="yes"), config)
    assert "__interrupt__" not in done
    assert done["approved"] == "yes"
    assert done["log"] == ["start", "prepared", "answer yes", "finished with yes"]
    assert calls2 == {"ask": 1, "finish": 1}  # "prepare" is not run again
    assert calls == {"prepare": 1, "ask": 1}

    final = await door.get_state(graph, config)
    assert final.next == ()
    assert final.values == done


def multi_question_graph(door: Door) -> Any:
    def interview(state: ApprovalState) -> dict[str, Any]:
        answers = [interrupt(f"question {i}") for i in range(3)]
        return {"log": answers}

    return chain(ApprovalState, interview, checkpointer=door.saver)


async def test_several_interrupts_in_one_node_each_resumed_by_a_new_process(
    door: Door, saver_factory: Any, mode: str
) -> None:
    config = thread("interview")
    result = await door.invoke(multi_question_graph(door), {"log": []}, config)
    assert [i.value for i in result["__interrupt__"]] == ["question 0"]
    for i, answer in enumerate(["a", "b"]):
        d = restarted(saver_factory, mode)
        result = await d.invoke(multi_question_graph(d), Command(resume=answer), config)
        assert [x.value for x in result["__interrupt__"]] == [f"question {i + 1}"]
    d = restarted(saver_factory, mode)
    result = await d.invoke(multi_question_graph(d), Command(resume="c"), config)
    assert "__interrupt__" not in result
    assert result["log"] == ["a", "b", "c"]


# -- time travel: fork from an earlier checkpoint ----------------------------------------


class TrailState(TypedDict):
    trail: Annotated[list, operator.add]


def trail_graph(door: Door, calls: Counter[str] | None = None) -> Any:
    def step(name: str) -> Any:
        def node(state: TrailState) -> dict[str, Any]:
            if calls is not None:
                calls[name] += 1
            return {"trail": [name]}

        return node

    return chain(TrailState, *((name, step(name)) for name in "abc"), checkpointer=door.saver)


async def test_time_travel_fork(door: Door) -> None:
    config = thread("travel")
    calls: Counter[str] = Counter()
    graph = trail_graph(door, calls)
    original = await door.invoke(graph, {"trail": ["start"]}, config)
    assert original["trail"] == ["start", "a", "b", "c"]
    original_head = await door.get_state(graph, config)

    history = await door.get_state_history(graph, config)
    [after_a] = [s for s in history if s.next == ("b",)]
    assert after_a.values["trail"] == ["start", "a"]

    fork_config = await door.update_state(graph, after_a.config, {"trail": ["edited"]})
    assert (
        fork_config["configurable"]["checkpoint_id"]
        != after_a.config["configurable"]["checkpoint_id"]
    )
    fork_state = await door.get_state(graph, fork_config)
    assert fork_state.values["trail"] == ["start", "a", "edited"]
    assert fork_state.next == ("b",)
    assert fork_state.parent_config == after_a.config

    calls.clear()
    forked = await door.invoke(graph, None, fork_config)
    assert forked["trail"] == ["start", "a", "edited", "b", "c"]
    assert calls == {"b": 1, "c": 1}

    # the original branch's head is unchanged; the thread's latest is the fork's head
    again = await door.get_state(graph, original_head.config)
    assert again.values == original_head.values == {"trail": ["start", "a", "b", "c"]}
    latest = await door.get_state(graph, config)
    assert latest.values["trail"] == ["start", "a", "edited", "b", "c"]

    # both branches are in the history, and both descend from the fork point
    history = await door.get_state_history(graph, config)
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    assert len(by_id) == len(history)

    def ancestors(state: Any) -> list[str]:
        chain = []
        while state.parent_config is not None:
            state = by_id[state.parent_config["configurable"]["checkpoint_id"]]
            chain.append(state.config["configurable"]["checkpoint_id"])
        return chain

    fork_point = after_a.config["configurable"]["checkpoint_id"]
    original_id = original_head.config["configurable"]["checkpoint_id"]
    latest_id = latest.config["configurable"]["checkpoint_id"]
    assert original_id in by_id and latest_id in by_id
    assert fork_point in ancestors(by_id[original_id])
    assert fork_point in ancestors(by_id[latest_id])
    assert original_id not in ancestors(by_id[latest_id])
    assert by_id[original_id].values["trail"] == ["start", "a", "b", "c"]
    assert history[0].config["configurable"]["checkpoint_id"] == latest_id

    # history through the saver's filter / limit / before
    updates = await door.get_state_history(graph, config, filter={"source": "update"})
    assert [s.config["configurable"]["checkpoint_id"] for s in updates] == [
        fork_config["configurable"]["checkpoint_id"]
    ]
    assert [s.config for s in await door.get_state_history(graph, config, limit=2)] == [
        s.config for s in history[:2]
    ]
    older = await door.get_state_history(graph, config, before=after_a.config)
    assert [s.config for s in older] == [
        s.config for s in history if s.config["configurable"]["checkpoint_id"] < fork_point
    ]
    assert len(older) == 2  # the input checkpoint and the one before "a" ran


async def test_update_state_with_hand_written_config(door: Door) -> None:
    # No checkpoint_ns key: the official SqliteSaver raises KeyError('checkpoint_ns').
    config = thread("manual")
    graph = trail_graph(door)
    await door.invoke(graph, {"trail": ["start"]}, config)
    history = await door.get_state_history(graph, config)
    [after_b] = [s for s in history if s.next == ("c",)]
    checkpoint_id = after_b.config["configurable"]["checkpoint_id"]

    hand_written = {"configurable": {"thread_id": "manual", "checkpoint_id": checkpoint_id}}
    state = await door.get_state(graph, hand_written)
    assert state.values["trail"] == ["start", "a", "b"]

    new_config = await door.update_state(graph, hand_written, {"trail": ["manual"]})
    assert new_config["configurable"]["thread_id"] == "manual"
    assert new_config["configurable"]["checkpoint_ns"] == ""
    updated = await door.get_state(graph, new_config)
    assert updated.values["trail"] == ["start", "a", "b", "manual"]
    assert updated.parent_config is not None
    assert updated.parent_config["configurable"]["checkpoint_id"] == checkpoint_id
    done = await door.invoke(graph, None, new_config)
    assert done["trail"] == ["start", "a", "b", "manual", "c"]

    # and with a thread id only (the latest checkpoint)
    await door.update_state(graph, {"configurable": {"thread_id": "manual"}}, {"trail": ["end"]})
    latest = await door.get_state(graph, thread("manual"))
    assert latest.values["trail"] == ["start", "a", "b", "manual", "c", "end"]


# -- subgraphs ---------------------------------------------------------------------------


class ParentState(TypedDict):
    log: Annotated[list, operator.add]
    result: str


class ChildState(TypedDict):
    result: str


def parent_graph(door: Door, calls: Counter[str]) -> Any:
    def s1(state: ChildState) -> dict[str, Any]:
        calls["s1"] += 1
        return {"result": "s1"}

    def s_ask(state: ChildState) -> dict[str, Any]:
        calls["s_ask"] += 1
        answer = interrupt("sub approve?")
        return {"result": f"{state['result']}+{answer}"}

    def s2(state: ChildState) -> dict[str, Any]:
        calls["s2"] += 1
        return {"result": state["result"] + "+s2"}

    subgraph = chain(ChildState, s1, s_ask, s2)  # inherits the parent's checkpointer

    def p1(state: ParentState) -> dict[str, Any]:
        calls["p1"] += 1
        return {"log": ["p1"]}

    def p2(state: ParentState) -> dict[str, Any]:
        calls["p2"] += 1
        return {"log": [f"p2 saw {state['result']}"]}

    return chain(ParentState, p1, ("child", subgraph), p2, checkpointer=door.saver)


async def test_subgraph_interrupt_and_resume(door: Door, saver_factory: Any, mode: str) -> None:
    config = thread("nested")
    calls: Counter[str] = Counter()
    graph = parent_graph(door, calls)
    result = await door.invoke(graph, {"log": [], "result": ""}, config)
    assert [i.value for i in result["__interrupt__"]] == ["sub approve?"]
    assert calls == {"p1": 1, "s1": 1, "s_ask": 1}

    # the subgraph's checkpoints live under a non-empty namespace of the same thread
    tuples = await door.list(thread("nested"))
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in tuples}
    child_namespaces = {ns for ns in namespaces if ns}
    assert "" in namespaces
    assert child_namespaces
    assert all(ns.startswith("child:") for ns in child_namespaces)
    root_only = await door.list({"configurable": {"thread_id": "nested", "checkpoint_ns": ""}})
    assert {t.config["configurable"]["checkpoint_ns"] for t in root_only} == {""}
    [child_ns] = child_namespaces
    child_tuple = await door.get_tuple(
        {"configurable": {"thread_id": "nested", "checkpoint_ns": child_ns}}
    )
    assert child_tuple is not None
    assert child_tuple.checkpoint["channel_values"]["result"] == "s1"

    state = await door.get_state(graph, config, subgraphs=True)
    assert state.next == ("child",)
    [task] = state.tasks
    assert task.name == "child"
    sub_state = task.state
    assert sub_state is not None and not isinstance(sub_state, dict)
    assert sub_state.next == ("s_ask",)
    assert sub_state.values == {"result": "s1"}
    assert sub_state.config["configurable"]["checkpoint_ns"] == child_ns
    assert [i.value for i in sub_state.tasks[0].interrupts] == ["sub approve?"]

    door2 = restarted(saver_factory, mode)
    calls2: Counter[str] = Counter()
    graph2 = parent_graph(door2, calls2)
    state2 = await door2.get_state(graph2, config, subgraphs=True)
    assert state2.tasks[0].state.next == ("s_ask",)

    done = await door2.invoke(graph2, Command(resume="ok"), config)
    assert "__interrupt__" not in done
    assert done["result"] == "s1+ok+s2"
    assert done["log"] == ["p1", "p2 saw s1+ok+s2"]
    assert calls2 == {"s_ask": 1, "s2": 1, "p2": 1}  # p1 and s1 are not run again


# -- parallel branches with Send ---------------------------------------------------------


class MapState(TypedDict):
    items: list
    results: Annotated[list, operator.add]


def map_reduce_graph(door: Door, worker: Any) -> Any:
    def fan_out(state: MapState) -> list[Send]:
        return [Send("worker", {"item": item}) for item in state["items"]]

    def summarize(state: MapState) -> dict[str, Any]:
        return {"results": [f"total {sum(r for r in state['results'] if isinstance(r, int))}"]}

    builder = StateGraph(MapState)
    builder.add_node("worker", worker)
    builder.add_node("summarize", summarize)
    builder.add_conditional_edges(START, fan_out, ["worker"])
    builder.add_edge("worker", "summarize")
    builder.add_edge("summarize", END)
    return builder.compile(checkpointer=door.saver)


async def test_map_reduce_with_send(door: Door) -> None:
    def worker(arg: dict[str, Any]) -> dict[str, Any]:
        return {"results": [arg["item"] * 10]}

    graph = map_reduce_graph(door, worker)
    n = 7
    result = await door.invoke(graph, {"items": list(range(n)), "results": []}, thread("map"))
    assert sorted(r for r in result["results"] if isinstance(r, int)) == [i * 10 for i in range(n)]
    assert result["results"][-1] == f"total {sum(i * 10 for i in range(n))}"
    state = await door.get_state(graph, thread("map"))
    assert state.values == result
    assert state.next == ()


async def test_failing_parallel_branch_keeps_siblings_writes(
    door: Door, saver_factory: Any, mode: str
) -> None:
    items = [0, 1, 2, 3]
    flaky = 2
    calls: Counter[int] = Counter()
    lock = threading.Lock()
    config = thread("flaky")

    def siblings_stored() -> bool:
        stored = door.saver.get_tuple(config)
        written = [ch for _, ch, _ in stored.pending_writes] if stored is not None else []
        return written.count("results") == len(items) - 1

    def worker(arg: dict[str, Any]) -> dict[str, Any]:
        item = arg["item"]
        with lock:
            calls[item] += 1
            first_attempt = calls[item] == 1
        if item == flaky and first_attempt:
            # fail only once the siblings' writes are stored (a failure cancels what runs)
            until(siblings_stored, "the other branches' writes to be stored")
            raise RuntimeError("flaky branch failed")
        return {"results": [item * 10]}

    graph = map_reduce_graph(door, worker)
    try:
        await door.invoke(graph, {"items": items, "results": []}, config)
    except RuntimeError as e:
        assert "flaky branch failed" in str(e)
    else:
        raise AssertionError("the flaky branch should have raised")
    assert calls == {0: 1, 1: 1, 2: 1, 3: 1}

    stored = await door.get_tuple(config)
    assert stored is not None
    assert stored.pending_writes
    results = sorted(v[0] for _, ch, v in stored.pending_writes if ch == "results")
    assert results == [0, 10, 30]
    assert [ch for _, ch, _ in stored.pending_writes].count("__error__") == 1

    # resume in a new process: only the failed branch runs again
    door2 = restarted(saver_factory, mode)
    graph2 = map_reduce_graph(door2, worker)
    state = await door2.get_state(graph2, config)
    assert state.next == ("worker",)  # the succeeded branches are done
    done = await door2.invoke(graph2, None, config)
    assert calls == {0: 1, 1: 1, 2: 2, 3: 1}
    assert sorted(r for r in done["results"] if isinstance(r, int)) == [0, 10, 20, 30]
    assert done["results"][-1] == "total 60"


# -- DeltaChannel: values rebuilt from stored writes -------------------------------------


class DeltaState(TypedDict):
    messages: Annotated[list, DeltaChannel(extend, snapshot_frequency=3)]


DELTA = (DeltaState, "echo {last} ({seen})")


async def test_delta_channel_is_rebuilt_in_a_new_process(
    door: Door, saver_factory: Any, mode: str
) -> None:
    config = thread("delta")
    graph = echo_graph(door.saver, *DELTA)
    expected: list[str] = []
    snapshots = []
    for turn in range(5):
        result = await door.invoke(graph, {"messages": [f"m{turn}"]}, config)
        expected += [f"m{turn}", f"echo m{turn} ({len(expected) + 1})"]
        assert result["messages"] == expected
        snapshots.append((await door.get_state(graph, config)).config)

    door2 = restarted(saver_factory, mode)
    graph2 = echo_graph(door2.saver, *DELTA)
    state = await door2.get_state(graph2, config)
    assert state.values["messages"] == expected
    # an older checkpoint is rebuilt as it was
    old = await door2.get_state(graph2, snapshots[1])
    assert old.values["messages"] == expected[:4]
    # and the thread goes on from the new process
    result = await door2.invoke(graph2, {"messages": ["m5"]}, config)
    assert result["messages"] == [*expected, "m5", f"echo m5 ({len(expected) + 1})"]
    history = await door2.get_state_history(graph2, config)
    assert [len(s.values.get("messages", [])) for s in history][:3] == [12, 11, 10]
