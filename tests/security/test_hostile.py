"""Hostile input: metadata filters and thread ids built to break naive SQL.

Every test runs on every backend through the sync and the async door. A hostile filter
must give the right answer (the checkpoints whose metadata has exactly that key and
value, in the thread asked for) or a ``CheckpointMetadataError``; a hostile config must
round-trip verbatim or raise ``CheckpointConfigError``. Never an SQL error, never rows
of another thread, and after every error everything stored before is still readable.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConfigError,
    CheckpointMetadataError,
    SQLAlchemySaver,
)
from langgraph.checkpoint.sqlalchemy.schema import THREAD_ID_MAX_LENGTH

from ..doors import Door

# -- helpers -----------------------------------------------------------------------------

_VERSIONS = itertools.count(1)


def cfg(thread_id: Any, checkpoint_id: str | None = None, ns: str = "") -> RunnableConfig:
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def make_checkpoint(values: dict[str, Any] | None = None) -> tuple[Checkpoint, dict[str, str]]:
    cp = empty_checkpoint()
    values = values or {}
    # Versions are unique per store: blobs are keyed by (thread, ns, channel, version).
    versions = {ch: f"{next(_VERSIONS):032}.{0.5:016}" for ch in values}
    cp["channel_values"] = dict(values)
    cp["channel_versions"] = dict(versions)
    return cp, versions


async def put(
    door: Door,
    thread_id: Any,
    metadata: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    parent: RunnableConfig | None = None,
) -> RunnableConfig:
    cp, versions = make_checkpoint(values)
    return await door.put(parent or cfg(thread_id), cp, metadata or {}, versions)


def ids(tuples: list[Any]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


def threads(tuples: list[Any]) -> set[str]:
    return {t.config["configurable"]["thread_id"] for t in tuples}


def describe(e: BaseException) -> str:
    return f"{type(e).__module__}.{type(e).__name__}: {str(e)[:160]}"


@dataclass
class Seed:
    """Checkpoints stored before the hostile input; each must survive every error."""

    stored: list[tuple[RunnableConfig, dict[str, Any], dict[str, Any]]] = field(
        default_factory=list
    )

    async def check(self, door: Door) -> None:
        for config, metadata, values in self.stored:
            got = await door.get_tuple(config)
            assert got is not None, f"seeded checkpoint {config} is gone"
            assert got.config == config
            assert got.metadata == metadata
            assert got.checkpoint["channel_values"] == values
            assert got.pending_writes == [("seed-task", "out", values)]
        listed = await door.list(None, filter={"seed": True})
        assert sorted(ids(listed)) == sorted(
            c["configurable"]["checkpoint_id"] for c, _, _ in self.stored
        )


async def seed(door: Door) -> Seed:
    s = Seed()
    parent: RunnableConfig | None = None
    for thread, n in (("seed-a", 1), ("seed-a", 2), ("seed-b", 3)):
        values = {"n": n, "text": f"seed {n}"}
        metadata = {"seed": True, "n": n, "source": "loop", "step": n}
        config = await put(
            door, thread, metadata, values, parent if parent and thread == "seed-a" else None
        )
        await door.put_writes(config, [("out", values)], "seed-task")
        s.stored.append((config, metadata, values))
        parent = config
    return s


async def expect_config_error(seed_: Seed, door: Door, what: str, coro: Any) -> None:
    try:
        await coro
    except CheckpointConfigError:
        pass
    else:
        pytest.fail(f"{what}: no CheckpointConfigError")
    await seed_.check(door)


# -- metadata filter keys ----------------------------------------------------------------

HOSTILE_KEYS = [
    "it's",
    "''",
    'say "hi"',
    '"',
    "a)b",
    ") OR 1=1 --",
    "x') OR ('1'='1",
    "--",
    "/* comment */",
    ";",
    "'; DROP TABLE lgsa_checkpoints; --",
    "$",
    "$.a",
    "a.b",
    ".",
    "[0]",
    "a[0]",
    "*",
    "$[*]",
    "$.*",
    "\\",
    "a\\b",
    '\\"',
    "\\'",
    "%",
    "_",
    "?",
    ":p",
    "%(p)s",
    "{}",
    "->",
    "->>",
    "@>",
    "k" * 10_000,
    "ключ",
    "键",
    "🔑",
    "👩\u200d👩\u200d👧",
    "e\u0301",
    "é",
    "Key",
    "key",
    "",
    " ",
    "\t\n",
    "null",
    "NULL",
]


async def test_filter_with_hostile_keys(door: Door) -> None:
    seed_ = await seed(door)
    assert len(set(HOSTILE_KEYS)) == len(HOSTILE_KEYS)

    # Decoys: values reachable through a path-like reading of some keys.
    decoys = [
        await put(door, "victim", {"a": {"b": "v"}}),
        await put(door, "victim", {"a": ["v"]}),
        await put(door, "victim", {"$": {"a": "v"}, "0": "v"}),
    ]
    by_key: dict[str, str] = {}
    refused: set[str] = set()
    problems: list[str] = []
    for key in HOSTILE_KEYS:
        try:
            stored = await put(door, "victim", {key: "v"})
        except CheckpointMetadataError:
            continue
        except Exception as e:
            problems.append(f"put {key[:40]!r}: {describe(e)}")
            await seed_.check(door)
            continue
        by_key[key] = stored["configurable"]["checkpoint_id"]
    other = await put(door, "other", dict.fromkeys(by_key, "v"))
    other_id = other["configurable"]["checkpoint_id"]

    for key, expected in by_key.items():
        label = repr(key[:40])
        try:
            hits = await door.list(cfg("victim"), filter={key: "v"})
            if ids(hits) != [expected]:
                problems.append(f"{label} in victim: {ids(hits)} != [{expected}]")
            elif hits[0].metadata != {key: "v"}:
                problems.append(f"{label}: metadata came back as {hits[0].metadata!r:.80}")
            if threads(hits) - {"victim"}:
                problems.append(f"{label}: rows of another thread {threads(hits)}")
            miss = await door.list(cfg("victim"), filter={key: "not v"})
            if miss:
                problems.append(f"{label} with another value matched {ids(miss)}")
            everywhere = await door.list(None, filter={key: "v"})
            if sorted(ids(everywhere)) != sorted([expected, other_id]):
                problems.append(f"{label} everywhere: {ids(everywhere)}")
            only_other = await door.list(cfg("other"), filter={key: "v"})
            if ids(only_other) != [other_id]:
                problems.append(f"{label} in other: {ids(only_other)}")
        except CheckpointMetadataError:
            refused.add(key)
        except Exception as e:
            problems.append(f"list {label}: {describe(e)}")
            await seed_.check(door)
    # All keys at once (those the backend filters on) match only the checkpoint that has
    # all of them.
    both = await door.list(None, filter={k: "v" for k in by_key if k not in refused})
    assert ids(both) == [other_id]
    # The decoys are matched by their own keys only.
    assert ids(await door.list(cfg("victim"), filter={"a": {"b": "v"}})) == [
        decoys[0]["configurable"]["checkpoint_id"]
    ]
    assert problems == []
    await seed_.check(door)


# -- metadata filter values --------------------------------------------------------------

JSON_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    1.0,
    -1,
    1.5,
    0.1,
    -0.0,
    1e300,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    "",
    "1",
    "true",
    "null",
    "0",
    "it's",
    'say "hi"',
    "\\",
    "'; DROP TABLE lgsa_checkpoints; --",
    "ключ 🔑",
    "k" * 5000,
    [],
    [1, 2],
    [2, 1],
    ["1"],
    [None],
    [True, False],
    {},
    {"a": 1},
    {"a": 1, "b": [True, None]},
    {"a": {"b": {"c": "d"}}},
    {"it's": 'say "hi"', "": ""},
    [{"a": []}, {}],
]


def json_eq(a: Any, b: Any) -> bool:
    """JSON equality: bools are not numbers, numbers compare by value, containers deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_eq(a[k], b[k]) for k in a)
    return False


async def test_filter_with_json_values_of_every_type(door: Door) -> None:
    seed_ = await seed(door)
    stored: list[tuple[str, Any]] = []
    for value in JSON_VALUES:
        config = await put(door, "victim", {"k": value})
        stored.append((config["configurable"]["checkpoint_id"], value))
        await put(door, "other", {"k": value})
    no_key = await put(door, "victim", {"other": None})
    other_key = await put(door, "victim", {"K": "1", "k ": "1"})
    problems: list[str] = []
    for value in JSON_VALUES:
        expected = sorted((i for i, v in stored if json_eq(v, value)), reverse=True)
        try:
            got = ids(await door.list(cfg("victim"), filter={"k": value}))
        except Exception as e:
            problems.append(f"{value!r:.60}: {describe(e)}")
            await seed_.check(door)
            continue
        if got != expected:
            problems.append(f"{value!r:.60}: got {got}, expected {expected}")
        for bad in (no_key, other_key):
            if bad["configurable"]["checkpoint_id"] in got:
                problems.append(f"{value!r:.60} matched a checkpoint without key 'k'")
    assert problems == []
    # The value filter combines with the thread: the other thread has the same values.
    everywhere = await door.list(None, filter={"k": "it's"})
    assert threads(everywhere) == {"victim", "other"} and len(everywhere) == 2
    await seed_.check(door)


async def test_filter_nested_numbers_compare_as_json(door: Door) -> None:
    """``1`` matches ``1.0`` at the top level; the same must hold inside a list or dict
    (one semantics on every dialect)."""
    await put(door, "t", {"n": {"x": 1.0}, "m": [1.0, 2]})
    assert len(await door.list(cfg("t"), filter={"n": {"x": 1.0}})) == 1
    assert len(await door.list(cfg("t"), filter={"n": {"x": 1}})) == 1
    assert len(await door.list(cfg("t"), filter={"m": [1, 2.0]})) == 1


@pytest.mark.parametrize("value", [2**64, -(2**64) - 1, 10**30], ids=["2^64", "-2^64-1", "1e30"])
async def test_filter_with_integers_beyond_64_bits(door: Door, value: int) -> None:
    seed_ = await seed(door)
    try:
        config = await put(door, "t", {"big": value})
    except CheckpointMetadataError:
        await seed_.check(door)
        return
    try:
        got = await door.list(cfg("t"), filter={"big": value})
    except CheckpointMetadataError:
        pass
    else:
        assert ids(got) == [config["configurable"]["checkpoint_id"]]
        assert got[0].metadata["big"] == value
    with contextlib.suppress(CheckpointMetadataError):
        assert await door.list(cfg("t"), filter={"big": value + 1}) == []
    await seed_.check(door)


def strip_nul(value: Any) -> Any:
    """``value`` with NUL removed from every string, keys included."""
    if isinstance(value, dict):
        return {k.replace("\x00", ""): strip_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_nul(v) for v in value]
    if isinstance(value, str):
        return value.replace("\x00", "")
    return value


@pytest.mark.parametrize(
    "metadata",
    [
        {"k\x00": "v"},
        {"\x00": "v"},
        {"k": {"x": "a\x00b"}},
        {"k": ["a\x00"]},
        {"k": {"x\x00": 1}},
        {"k": "a\x00b"},
        {"k": "\x00"},
    ],
    ids=["key", "nul-key", "nested-value", "list-item", "nested-key", "value", "nul-value"],
)
async def test_nul_characters_in_metadata_and_filters(door: Door, metadata: dict[str, Any]) -> None:
    """NUL in metadata (PostgreSQL JSON cannot hold \\u0000): a CheckpointMetadataError,
    or stored verbatim, or stripped from every string; never an SQL error. Whatever the
    rule, a filter of the same value finds the checkpoint, and agrees with the rule about
    the NUL-free twin."""
    seed_ = await seed(door)
    twin = strip_nul(metadata)
    twin_id = (await put(door, "t", twin))["configurable"]["checkpoint_id"]
    try:
        config = await put(door, "t", metadata)
    except CheckpointMetadataError:
        await seed_.check(door)
        try:
            hits = await door.list(cfg("t"), filter=metadata)
        except CheckpointMetadataError:
            return
        assert ids(hits) in ([], [twin_id])
        return
    stored_id = config["configurable"]["checkpoint_id"]
    got = await door.get_tuple(config)
    assert got is not None
    assert got.metadata in (metadata, twin), "metadata neither verbatim nor NUL-stripped"
    verbatim = got.metadata == metadata
    try:
        hits = await door.list(cfg("t"), filter=metadata)
    except CheckpointMetadataError:
        pass
    else:
        expected = [stored_id] if verbatim else [stored_id, twin_id]
        assert ids(hits) == expected
    twin_hits = await door.list(cfg("t"), filter=twin)
    assert ids(twin_hits) == ([twin_id] if verbatim else [stored_id, twin_id])
    await seed_.check(door)


@pytest.mark.parametrize(
    "metadata",
    [{"\ud800": 1}, {"k": "\udfff"}, {"k": {"\ud800x": 1}}, {"k": ["a\udc00"]}],
    ids=["key", "value", "nested-key", "list-item"],
)
async def test_lone_surrogates_in_metadata(door: Door, metadata: dict[str, Any]) -> None:
    """Strings that are not Unicode (lone surrogates) in metadata: stored and found by
    the same filter, or CheckpointMetadataError; never an SQL or codec error."""
    seed_ = await seed(door)
    try:
        config = await put(door, "t", metadata)
    except CheckpointMetadataError:
        await seed_.check(door)
        return
    got = await door.get_tuple(config)
    assert got is not None and got.metadata == metadata
    try:
        hits = await door.list(cfg("t"), filter=metadata)
    except CheckpointMetadataError:
        pass
    else:
        assert ids(hits) == [config["configurable"]["checkpoint_id"]]
    await seed_.check(door)


@pytest.mark.parametrize(
    "filter_",
    [{"\ud800": 1}, {"k": "\udfff"}, {"k": {"\ud800x": 1}}],
    ids=["key", "value", "nested-key"],
)
async def test_filter_with_lone_surrogates(door: Door, filter_: dict[str, Any]) -> None:
    """A filter that is not Unicode (lone surrogates), nothing stored like it: [] or
    CheckpointMetadataError; never an SQL or codec error."""
    seed_ = await seed(door)
    await put(door, "t", {"k": "v"})
    with contextlib.suppress(CheckpointMetadataError):
        assert await door.list(cfg("t"), filter=filter_) == []
    await seed_.check(door)


BAD_FILTERS: list[Any] = [
    ["k", "v"],
    "k=v",
    {1: "v"},
    {None: "v"},
    {("a",): "v"},
    {"k": object()},
    {"k": float("nan")},
    {"k": math.inf},
    {"k": -math.inf},
    {"k": {1, 2}},
    {"k": b"bytes"},
    {"k": {"nested": object()}},
    {"k": {1: "non-string nested key"}},
    {"k": [float("nan")]},
]


async def test_filter_that_is_not_json_raises_metadata_error(door: Door) -> None:
    seed_ = await seed(door)
    for bad in BAD_FILTERS:
        for config in (cfg("seed-a"), None):
            with pytest.raises(CheckpointMetadataError):
                await door.list(config, filter=bad)
            await seed_.check(door)


async def test_metadata_that_is_not_json_raises_metadata_error(door: Door) -> None:
    seed_ = await seed(door)
    for bad in (
        {"k": object()},
        {"k": float("nan")},
        {"k": {"x": math.inf}},
        {"k": {1: "x"}},
        {"k": b"x"},
    ):
        cp, versions = make_checkpoint({"x": 1})
        with pytest.raises(CheckpointMetadataError):
            await door.put(cfg("seed-a"), cp, bad, versions)
        await seed_.check(door)
        assert await door.get_tuple(cfg("seed-a", cp["id"])) is None


# -- thread ids --------------------------------------------------------------------------

BAD_THREAD_IDS: list[Any] = [
    {"a": 1},
    {},
    ["t"],
    [],
    None,
    True,
    False,
    1.5,
    b"bytes",
    object(),
]


async def test_thread_id_of_a_wrong_type_raises_config_error(door: Door) -> None:
    seed_ = await seed(door)
    for thread_id in BAD_THREAD_IDS:
        cp, versions = make_checkpoint({"x": 1})
        tid = f"thread_id={thread_id!r:.30}"
        await expect_config_error(seed_, door, f"get_tuple {tid}", door.get_tuple(cfg(thread_id)))
        await expect_config_error(
            seed_, door, f"get_tuple+id {tid}", door.get_tuple(cfg(thread_id, cp["id"]))
        )
        await expect_config_error(
            seed_, door, f"put {tid}", door.put(cfg(thread_id), cp, {}, versions)
        )
        await expect_config_error(
            seed_,
            door,
            f"put_writes {tid}",
            door.put_writes(cfg(thread_id, cp["id"]), [("x", 1)], "t1"),
        )
        await expect_config_error(seed_, door, f"list {tid}", door.list(cfg(thread_id)))
        await expect_config_error(
            seed_, door, f"delete_thread {tid}", door.delete_thread(thread_id)
        )
    # Nothing was written anywhere.
    assert len(await door.list(None)) == len(seed_.stored)


HOSTILE_THREAD_IDS = [
    "it's",
    "''",
    'he said "hi"',
    "'; DROP TABLE lgsa_checkpoints; --",
    '"; DROP TABLE lgsa_checkpoints; --',
    "x' OR '1'='1",
    'x" OR "1"="1',
    "%",
    "_",
    "*",
    "\\",
    "a\\'b",
    "$1",
    "?",
    "🧵 thread",
    "ключ",
    "T1",
    "t1",
    "t1 ",
    " t1",
    "t\u0131",
    "t" * 255,
]


async def test_hostile_thread_ids_round_trip_verbatim(door: Door) -> None:
    seed_ = await seed(door)
    stored: dict[str, RunnableConfig] = {}
    for thread_id in HOSTILE_THREAD_IDS:
        config = await put(door, thread_id, {"owner": thread_id}, {"owner": thread_id})
        assert config["configurable"]["thread_id"] == thread_id
        await door.put_writes(config, [("w", thread_id)], "task")
        stored[thread_id] = config
    for thread_id, config in stored.items():
        for ask in (cfg(thread_id), config):
            got = await door.get_tuple(ask)
            assert got is not None, thread_id
            assert got.config == config
            assert got.config["configurable"]["thread_id"] == thread_id
            assert got.checkpoint["channel_values"] == {"owner": thread_id}
            assert got.metadata["owner"] == thread_id
            assert got.pending_writes == [("task", "w", thread_id)]
        listed = await door.list(cfg(thread_id))
        assert ids(listed) == [config["configurable"]["checkpoint_id"]], thread_id
        assert threads(listed) == {thread_id}
    everything = await door.list(None)
    assert threads(everything) == set(HOSTILE_THREAD_IDS) | {"seed-a", "seed-b"}
    assert len(everything) == len(HOSTILE_THREAD_IDS) + len(seed_.stored)

    # Deleting the "DROP TABLE" thread deletes that thread only.
    await door.delete_thread("'; DROP TABLE lgsa_checkpoints; --")
    assert await door.get_tuple(cfg("'; DROP TABLE lgsa_checkpoints; --")) is None
    remaining = await door.list(None)
    assert threads(remaining) == (set(HOSTILE_THREAD_IDS) | {"seed-a", "seed-b"}) - {
        "'; DROP TABLE lgsa_checkpoints; --"
    }
    await seed_.check(door)


async def test_thread_ids_differing_in_case_or_spaces_are_different_threads(door: Door) -> None:
    names = ["T1", "t1", "t1 ", " t1"]
    for name in names:
        await put(door, name, {"name": name}, {"name": name})
    for name in names:
        got = await door.get_tuple(cfg(name))
        assert got is not None
        assert got.checkpoint["channel_values"] == {"name": name}
        listed = await door.list(cfg(name))
        assert len(listed) == 1 and threads(listed) == {name}
    await door.delete_thread("T1")
    assert await door.get_tuple(cfg("T1")) is None
    assert await door.get_tuple(cfg("t1")) is not None


async def test_thread_id_length_limit(door: Door) -> None:
    seed_ = await seed(door)
    ok = "x" * THREAD_ID_MAX_LENGTH
    await put(door, ok, {"len": THREAD_ID_MAX_LENGTH})
    assert await door.get_tuple(cfg(ok)) is not None
    cp, versions = make_checkpoint()
    too_long = cfg("x" * (THREAD_ID_MAX_LENGTH + 1))
    await expect_config_error(seed_, door, "put", door.put(too_long, cp, {}, versions))
    await expect_config_error(seed_, door, "get", door.get_tuple(cfg("y" * 10_000)))


async def test_thread_id_with_nul_character(door: Door) -> None:
    """Stored verbatim, or CheckpointConfigError: never an SQL error."""
    seed_ = await seed(door)
    thread_id = "a\x00b"
    try:
        config = await put(door, thread_id, {"x": 1}, {"x": 1})
    except CheckpointConfigError:
        await seed_.check(door)
        with pytest.raises(CheckpointConfigError):
            await door.get_tuple(cfg(thread_id))
        return
    got = await door.get_tuple(cfg(thread_id))
    assert got is not None and got.config == config
    assert await door.get_tuple(cfg("a")) is None
    assert await door.get_tuple(cfg("ab")) is None
    await seed_.check(door)


async def test_thread_id_with_lone_surrogate(door: Door) -> None:
    """Not Unicode: CheckpointConfigError (or stored verbatim), never a codec error."""
    seed_ = await seed(door)
    thread_id = "a\ud800"
    try:
        config = await put(door, thread_id, {"x": 1})
    except CheckpointConfigError:
        await seed_.check(door)
        with pytest.raises(CheckpointConfigError):
            await door.get_tuple(cfg(thread_id))
        return
    got = await door.get_tuple(cfg(thread_id))
    assert got is not None and got.config == config


MISSING_THREAD_CONFIGS: list[Any] = [
    {},
    {"configurable": {}},
    {"configurable": None},
    {"configurable": {"checkpoint_ns": ""}},
    {"configurable": {"checkpoint_id": "1f0"}},
    {"configurable": {"thread_id": ""}},
    {"configurable": {"thread_id": None}},
    {"configurable": {"thread-id": "t"}},
    {"configurable": {"Thread_id": "t"}},
    {"thread_id": "t"},
    {"configurable": "thread_id=t"},
    {"configurable": ["thread_id", "t"]},
]


async def test_config_without_thread_id_raises_config_error(door: Door) -> None:
    seed_ = await seed(door)
    for config in MISSING_THREAD_CONFIGS:
        cp, versions = make_checkpoint({"x": 1})
        with_id = (
            {**config, "configurable": {**config["configurable"], "checkpoint_id": cp["id"]}}
            if isinstance(config.get("configurable"), dict)
            else config
        )
        await expect_config_error(seed_, door, f"get_tuple {config}", door.get_tuple(config))
        await expect_config_error(seed_, door, f"put {config}", door.put(config, cp, {}, versions))
        await expect_config_error(
            seed_, door, f"put_writes {with_id}", door.put_writes(with_id, [("x", 1)], "task")
        )
        await expect_config_error(seed_, door, f"list {config}", door.list(config))
    # Nothing was written anywhere.
    assert len(await door.list(None)) == len(seed_.stored)


async def test_config_that_is_not_a_dict_raises_config_error(door: Door) -> None:
    seed_ = await seed(door)
    cp, versions = make_checkpoint()
    for config in (None, "thread", ["thread"], 42):
        await expect_config_error(seed_, door, "get_tuple", door.get_tuple(config))
        await expect_config_error(seed_, door, "put", door.put(config, cp, {}, versions))
        await expect_config_error(
            seed_, door, "put_writes", door.put_writes(config, [("x", 1)], "task")
        )
    # list(None) is legal (every thread); other non-dicts are not.
    for config in ("thread", ["thread"], 42):
        await expect_config_error(seed_, door, "list", door.list(config))


async def test_bad_namespace_and_checkpoint_id_types_raise_config_error(door: Door) -> None:
    seed_ = await seed(door)
    cp, versions = make_checkpoint()
    for bad in ({"a": 1}, ["x"], 1.5, True):
        config = {"configurable": {"thread_id": "seed-a", "checkpoint_ns": bad}}
        await expect_config_error(seed_, door, "get ns", door.get_tuple(config))
        await expect_config_error(seed_, door, "put ns", door.put(config, cp, {}, versions))
        config = {"configurable": {"thread_id": "seed-a", "checkpoint_id": bad}}
        await expect_config_error(seed_, door, "get id", door.get_tuple(config))
        await expect_config_error(seed_, door, "list id", door.list(config))


@pytest.mark.parametrize(
    "channel", ["a\x00b", "\x00", "a\ud800"], ids=["nul", "only-nul", "surrogate"]
)
async def test_channel_name_with_nul_or_lone_surrogate_raises_config_error(
    door: Door, channel: str
) -> None:
    """PostgreSQL cannot hold NUL in text or JSONB keys, no driver encodes a lone
    surrogate: CheckpointConfigError on every dialect, nothing stored (was a driver
    error on some dialects and stored on others)."""
    seed_ = await seed(door)
    cp, versions = make_checkpoint({channel: 1, "ok": 2})
    with pytest.raises(CheckpointConfigError):
        await door.put(cfg("t"), cp, {}, versions)
    assert await door.list(cfg("t")) == []
    config = await put(door, "t", {}, {"ok": 2})
    with pytest.raises(CheckpointConfigError):
        await door.put_writes(config, [("ok", 1), (channel, 1)], "task")
    got = await door.get_tuple(config)
    assert got is not None and got.pending_writes == []
    await seed_.check(door)


@pytest.mark.parametrize("huge", [2**63, 10**20])
def test_counts_beyond_64_bits_are_a_value_error_not_an_overflow(
    saver: SQLAlchemySaver, huge: int
) -> None:
    """``list_threads(limit=10**20)`` used to reach the driver (raw ``OverflowError`` or
    ``DataError``); a count must fit the databases' 64-bit LIMIT/OFFSET."""
    with pytest.raises(ValueError, match=r"limit must be None or an int from 0 to 2\*\*63"):
        saver.list_threads(limit=huge)
    with pytest.raises(ValueError, match="offset must be an int from 0"):
        saver.list_threads(offset=huge)
    with pytest.raises(ValueError, match="limit must be None or an int"):
        list(saver.list(None, limit=huge))
    assert saver.list_threads(limit=2**63 - 1) == []  # the largest count works
    assert list(saver.list(None, limit=2**63 - 1)) == []
