"""What the workloads store: realistic checkpoints built as LangGraph builds them."""

from __future__ import annotations

import base64
import random
import uuid
from datetime import datetime, timezone
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base.id import uuid6

_WORDS = [
    "the", "model", "answer", "user", "question", "tool", "result", "data", "table", "time",
    "order", "flight", "hotel", "price", "date", "city", "please", "check", "thanks", "found",
    "about", "which", "would", "could", "there", "their", "first", "after", "other", "again",
    "and", "for", "with", "from", "this", "that", "have", "will", "your", "more",
]  # fmt: skip


def written_version() -> int:
    """The checkpoint format version (``"v"``) LangGraph's loop writes, read from a
    checkpoint a one-node graph writes (``langgraph.checkpoint.base.LATEST_VERSION`` is
    older: 2, where the loop writes 4). The official savers read a version below 4 with
    an extra query for its pending sends: the workloads store what a graph stores."""
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    class State(TypedDict):
        x: int

    graph = StateGraph(State)
    graph.add_node("n", lambda state: {"x": state["x"] + 1})
    graph.add_edge(START, "n")
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "version"}}
    graph.compile(checkpointer=saver).invoke({"x": 1}, config)
    found = saver.get_tuple(config)
    assert found is not None
    return int(found.checkpoint["v"])


#: The ``"v"`` of the checkpoints the workloads store (:func:`written_version`).
CHECKPOINT_VERSION = written_version()

SCALARS = ("step", "user", "flag", "score")
REALISTIC = ("messages", *SCALARS)


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size].capitalize()


def _messages() -> list[Any]:
    rng = random.Random(20)
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(
            content=_text(rng, 200), id=str(uuid.UUID(int=rng.getrandbits(128)))
        )
        for i in range(20)
    ]


#: 20 chat messages of 200 characters, alternating human and AI.
MESSAGES = _messages()
#: A 1 MB string no database can compress (base64 of random bytes).
BIG = base64.b64encode(random.Random(1).randbytes(750_000)).decode()[:1_000_000]


def values(step: int, *, big: bool = False) -> dict[str, Any]:
    """Channel values of a realistic checkpoint: messages plus 4 scalar channels."""
    result: dict[str, Any] = {
        "messages": MESSAGES,
        "step": step,
        "user": "user-4242",
        "flag": step % 2 == 0,
        "score": step / 7,
    }
    if big:
        result["big"] = BIG
    return result


def write_batch(i: int) -> list[tuple[str, Any]]:
    """Two pending writes of a task, as a chat node leaves them: a message and a scalar."""
    return [("messages", MESSAGES[i % 20]), ("step", i)]


class History:
    """Successive checkpoints of one thread, each the child of the previous, as LangGraph
    puts them: full channel values, versions from the saver's own ``get_next_version``,
    ``new_versions`` holding only the channels in ``changes`` (every channel at step 0).

    Args:
        saver: The saver whose ``get_next_version`` makes the versions.
        thread_id: The thread.
        big: Add the 1 MB channel ``big``.
        changes: Channels updated at every step after the first (default: every channel).
        metadata: Extra metadata keys of every checkpoint (e.g. ``{"user_id": ...}``).
    """

    def __init__(
        self,
        saver: Any,
        thread_id: str,
        *,
        big: bool = False,
        changes: tuple[str, ...] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.saver = saver
        self.big = big
        self.changes = changes
        self.extra = dict(metadata or {})
        self.config: dict[str, Any] = {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": ""}
        }
        self.versions: dict[str, Any] = {}
        self.step = 0
        self.ids: list[str] = []

    def next(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
        """``(config, checkpoint, metadata, new_versions)`` of the next checkpoint."""
        vals = values(self.step, big=self.big)
        changed = list(vals) if self.step == 0 or self.changes is None else list(self.changes)
        seen = dict(self.versions)
        new_versions = {}
        for channel in changed:
            version = self.saver.get_next_version(self.versions.get(channel), None)
            self.versions[channel] = new_versions[channel] = version
        checkpoint = {
            "v": CHECKPOINT_VERSION,
            "id": str(uuid6(clock_seq=self.step)),
            "ts": datetime.now(timezone.utc).isoformat(),
            "channel_values": vals,
            "channel_versions": dict(self.versions),
            "versions_seen": {"__input__": {}, "agent": seen},
            "updated_channels": changed,
        }
        metadata = {"source": "loop", "step": self.step, "parents": {}, **self.extra}
        return self.config, checkpoint, metadata, new_versions

    def _advance(self, config: dict[str, Any]) -> None:
        self.config = config
        self.ids.append(config["configurable"]["checkpoint_id"])
        self.step += 1

    def put(self) -> None:
        self._advance(self.saver.put(*self.next()))

    async def aput(self) -> None:
        self._advance(await self.saver.aput(*self.next()))
