"""The workload of the upgrade assets, and the read-back both sides compare.

Run by ``make.py`` with the code of an earlier commit (the saver and store classes are
handed in: this module imports nothing of the package), and by
``tests/migrations/test_upgrade_assets.py`` with today's code on the rows that commit
wrote. :func:`write` exercises what each revision changed: small inline and large blob
values (0002), thread ids and namespaces over 255 characters and names that look like
digest keys (0003), values MariaDB compresses (0004), a lock row (0005, written by
``make.py`` while it holds the lock), metadata keys of the index (0006), steps and
sources (0007, 0008), a ``DeltaChannel`` graph, and, where the code has the store (0009
on), items with TTLs and vectors in several namespaces (0009-0013).

:func:`read_saver` and :func:`read_store` return what the code reads back, as typed JSON
(:func:`encode`): bytes as base64, tuples and dicts tagged, floats as ``repr``; never
pickle. Neither reads a clock: the store runs on :data:`CLOCK`, a fixed time, so TTLs
neither expire nor move between the two runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import operator
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Annotated, Any, TypedDict

from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph

__all__ = ["CLOCK", "INDEX", "decode", "encode", "read_saver", "read_store", "write"]

#: The store's clock in both runs.
CLOCK = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)
#: A value over the 16 kB that a checkpoint row holds inline (0002): a blob row.
BIG = "B" * 17_000
#: A thread id and a namespace over the 255 characters of a key column (0003).
LONG_THREAD = "t-" + "長" * 298
LONG_NS = "ns-" + "n" * 297
#: A name that starts with 0003's digest marker: re-keyed by 0003's upgrade.
MARKED = "lgsa:sha256:not-a-digest"


def clock() -> datetime:
    return CLOCK


class HashEmbeddings:
    """Deterministic 8-dimension embeddings from SHA-256 (LangChain's ``Embeddings``
    protocol: the store wraps what it is given)."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [(b - 127.5) / 127.5 for b in digest[:8]]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def index_config() -> dict[str, Any]:
    """The store's ``index`` (a new embeddings object each time)."""
    from langchain_core.embeddings import Embeddings

    class _Embeddings(HashEmbeddings, Embeddings):
        pass

    return {"dims": 8, "embed": _Embeddings(), "fields": ["text"]}


INDEX = index_config


# -- typed JSON ----------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """``value`` as JSON: bytes, tuples, dicts, floats, datetimes and objects with a
    ``_asdict``/``dict`` shape tagged, so that :func:`decode` and comparisons see types."""
    if isinstance(value, (str, bytes)) and len(value) > 1000:  # BIG: its digest
        data = value.encode() if isinstance(value, str) else value
        return {"$long " + type(value).__name__: hashlib.sha256(data).hexdigest()}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"$float": repr(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):  # in key order: a dict's order is no part of its value
        items = [[encode(k), encode(v)] for k, v in value.items()]
        return {"$dict": sorted(items, key=lambda kv: json.dumps(kv[0], sort_keys=True))}
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if hasattr(value, "_asdict"):  # CheckpointTuple
        return {"$" + type(value).__name__: encode(dict(value._asdict()))}
    if hasattr(value, "dict") and hasattr(value, "namespace"):  # Item, SearchItem
        fields = {
            "namespace": value.namespace,
            "key": value.key,
            "value": value.value,
            "created_at": value.created_at,
            "updated_at": value.updated_at,
        }
        score = getattr(value, "score", None)
        if score is not None:
            fields["score"] = round(float(score), 5)
        return {"$" + type(value).__name__: encode(fields)}
    raise TypeError(f"no typed JSON for {type(value).__name__}")


def decode(value: Any) -> Any:
    """The value :func:`encode` made (tagged objects come back as dicts)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    ((tag, inner),) = value.items()
    if tag == "$float":
        return float(inner)
    if tag == "$bytes":
        return base64.b64decode(inner)
    if tag == "$tuple":
        return tuple(decode(v) for v in inner)
    if tag == "$dict":
        return {decode(k): decode(v) for k, v in inner}
    if tag == "$datetime":
        return datetime.fromisoformat(inner)
    return {tag: decode(inner)}


# -- the saver -----------------------------------------------------------------------------


def _extend(state: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    return [*state, *(item for write in writes for item in write)]


class State(TypedDict):
    """``messages`` (a list, every value in each checkpoint) and ``items`` (a
    ``DeltaChannel``: writes, and a snapshot every second step)."""

    messages: Annotated[list[Any], operator.add]
    items: Annotated[list[Any], DeltaChannel(_extend, snapshot_frequency=2)]


def _first(state: State) -> dict[str, Any]:
    return {"messages": [f"a{len(state['messages'])}"], "items": [[len(state["items"])]]}


def _second(state: State) -> dict[str, Any]:
    return {"messages": ["b"], "items": [["b"]]}


def _graph(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("first", _first)
    builder.add_node("second", _second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(checkpointer=saver)


def _config(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _put(saver: Any, config: dict[str, Any], values: dict[str, Any], parent: Any, meta: Any) -> Any:
    checkpoint = empty_checkpoint()
    versions = {channel: f"{len(values)}.{i}" for i, channel in enumerate(values)}
    checkpoint["channel_values"] = dict(values)
    checkpoint["channel_versions"] = versions
    if parent is not None:
        config = {"configurable": {**config["configurable"], **parent["configurable"]}}
    return saver.put(config, checkpoint, meta, versions)


def write(saver: Any) -> list[list[str]]:
    """Write the saver's part; returns the ``[thread_id, checkpoint_ns]`` pairs written
    (the code of an early revision refuses the long names: those are left out)."""
    graph = _graph(saver)
    meta = {"user_id": "u1", "assistant_id": "asst", "graph_id": "g"}
    for _ in range(2):
        graph.invoke(
            {"messages": ["hi"], "items": [["in"]]},
            {"configurable": {"thread_id": "graph-1"}, "metadata": meta},
        )
    written = [["graph-1", ""]]
    for thread_id, ns in (
        ("values", ""),
        (MARKED, ""),
        ("线程-ü", MARKED),
        (LONG_THREAD, ""),
        ("long-ns", LONG_NS),
    ):
        values: dict[str, Any] = {
            "small": "s",
            "n": 42,
            "raw": b"\x00\xff",
            "nested": [1, ("x", 2.5)],
        }
        if thread_id == "values":
            values["big"] = BIG
        try:
            first = _put(
                saver,
                _config(thread_id, ns),
                values,
                None,
                {"source": "input", "step": -1, "user_id": "u2", "run_id": "r-1", "custom": [1]},
            )
        except Exception:  # a name this revision's code refuses (over 255)
            if len(thread_id) > 255 or len(ns) > 255:
                continue
            raise
        second = _put(
            saver,
            _config(thread_id, ns),
            {"small": "s2"},
            first,
            {"source": "loop", "step": 0, "user_id": "u1", "parents": {}, "score": 1.5},
        )
        saver.put_writes(
            second,
            [("small", "w1"), ("__error__", "boom"), ("__interrupt__", [{"value": "ask"}])],
            "task-1",
            "first",
        )
        saver.put_writes(second, [("__resume__", "yes"), ("other", {"k": b"v"})], "task-2")
        written.append([thread_id, ns])
    return written


def read_saver(saver: Any, written: list[list[str]]) -> dict[str, Any]:
    """What the saver reads back: each thread's latest tuple and listing, an older
    checkpoint by id, the listings across threads and by metadata filters, the
    ``DeltaChannel`` history of the graph's latest checkpoint."""
    out: dict[str, Any] = {}
    for thread_id, ns in written:
        config = _config(thread_id, ns)
        listing = list(saver.list(config))
        out[f"latest {thread_id[:40]} {ns[:40]}"] = encode(saver.get_tuple(config))
        out[f"list {thread_id[:40]} {ns[:40]}"] = encode(listing)
        oldest = saver.get_tuple(listing[-1].config) if listing else None
        out[f"by id {thread_id[:40]} {ns[:40]}"] = encode(oldest)
    out["list all"] = encode(
        [
            (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])
            for c in (t.config["configurable"] for t in saver.list(None))
        ]
    )
    for name, filter_ in (
        ("user_id", {"user_id": "u1"}),
        ("graph_id", {"graph_id": "g"}),
        ("step and source", {"source": "loop", "step": 1}),
        ("step", {"step": 0}),
        ("custom", {"custom": [1]}),
    ):
        found = saver.list(None, filter=filter_)
        out[f"filter {name}"] = encode(
            sorted(t.config["configurable"]["checkpoint_id"] for t in found)
        )
    history = saver.get_delta_channel_history(config=_config("graph-1"), channels=["items"])
    out["delta history"] = encode({k: dict(v) for k, v in history.items()})
    return out


# -- the store -----------------------------------------------------------------------------


def write_store(store: Any) -> None:
    store.put(("docs", "u1"), "k1", {"text": "hello world", "n": 1})
    store.put(("docs", "u1"), "k2", {"text": "goodbye", "n": 2}, ttl=60)
    store.put(("docs", "u2"), "k1", {"text": "hello there", "n": 1, "tags": ["a"]})
    store.put(("prefs",), "theme", {"color": "blue"}, index=False)
    store.put(("prefs", "long-" + "x" * 200), "k", {"v": None}, ttl=5)
    store.put(("gone",), "k", {"v": 1})
    store.delete(("gone",), "k")


def read_store(store: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ns, key in (
        (("docs", "u1"), "k1"),
        (("docs", "u1"), "k2"),
        (("docs", "u2"), "k1"),
        (("prefs",), "theme"),
        (("prefs", "long-" + "x" * 200), "k"),
        (("gone",), "k"),
    ):
        out[f"get {ns} {key}"] = encode(store.get(ns, key))
    out["search docs"] = encode(store.search(("docs",)))
    out["search query"] = encode(store.search(("docs",), query="hello world", limit=2))
    out["search filter"] = encode(store.search((), filter={"n": 1}))
    out["namespaces"] = encode(store.list_namespaces())
    out["namespaces docs"] = encode(store.list_namespaces(prefix=("docs",)))
    return out
