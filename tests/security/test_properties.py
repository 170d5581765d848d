"""Property-based hostile input (hypothesis), on every backend through both doors.

Where ``test_hostile.py`` tries hand-picked inputs, these draw them: thread ids and
namespaces, channel values and writes, metadata and metadata filters made of any text
(NUL, lone surrogates, emoji, right-to-left marks, combining characters, long strings).
Each property states what the saver promises for *any* such input:

* ids and namespaces round-trip exactly, or raise ``CheckpointConfigError`` (the
  documented rule: not empty, no NUL, valid Unicode, at most 255 characters) with
  nothing stored, and a thread never shows another thread's rows;
* channel values and pending writes come back exactly as the serializer round-trips
  them;
* metadata comes back exactly, NUL-stripped (``canonical_json``), or is refused with
  ``CheckpointMetadataError`` with nothing stored;
* ``list(None, filter={key: value})`` returns exactly the checkpoints of a Python model
  of the stored metadata, or ``CheckpointMetadataError`` for a filter that is not JSON.

One saver (one empty store) per test and backend; every example adds rows to it under
thread ids of its own (or the drawn ids themselves, tracked by a model), so examples
never need a fresh database. Profiles: ``lgsa`` (default, quick) and ``lgsa-thorough``;
choose with ``LGSA_HYPOTHESIS_PROFILE``.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langgraph.checkpoint.sqlalchemy import CheckpointConfigError, CheckpointMetadataError
from langgraph.checkpoint.sqlalchemy.schema import (
    CHECKPOINT_NS_MAX_LENGTH,
    NAME_KEY_LENGTH,
    THREAD_ID_MAX_LENGTH,
)

from ..doors import Door
from .test_hostile import cfg, ids, json_eq, make_checkpoint, threads

settings.register_profile(
    "lgsa",
    max_examples=30,
    deadline=None,
    # One saver per test serves every example (fresh thread ids, not fresh databases).
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile("lgsa-thorough", settings.get_profile("lgsa"), max_examples=400)
SETTINGS = settings.get_profile(os.environ.get("LGSA_HYPOTHESIS_PROFILE", "lgsa"))

# -- strategies --------------------------------------------------------------------------

ODD_CHARS = st.one_of(
    st.characters(codec=None, exclude_categories=()),  # any code point, surrogates too
    st.sampled_from(
        [
            "\x00",
            "\ud800",
            "\udfff",
            "🧵",
            "\u200d",  # zero-width joiner
            "\u202e",  # right-to-left override
            "\u200f",  # right-to-left mark
            "א",
            "ع",
            "\u0301",  # combining acute accent
            "\u0131",  # dotless i (its upper() is "I")
            "ß",
            " ",
            "\t",
            "\n",
            "'",
            '"',
            "\\",
            "%",
            "_",
            "-",
            "$",
            ".",
            "T",
            "t",
        ]
    ),
)
#: Any text: short odd text, plain text, or long text around the width of the key
#: columns (longer names are keyed by a digest) and around the limits.
ODD_TEXT = st.one_of(
    st.text(ODD_CHARS, max_size=12),
    st.text(max_size=12),
    st.text(ODD_CHARS, min_size=NAME_KEY_LENGTH - 5, max_size=NAME_KEY_LENGTH + 5),
    st.text(ODD_CHARS, min_size=THREAD_ID_MAX_LENGTH - 2, max_size=THREAD_ID_MAX_LENGTH + 2),
    st.text(
        ODD_CHARS, min_size=CHECKPOINT_NS_MAX_LENGTH - 2, max_size=CHECKPOINT_NS_MAX_LENGTH + 2
    ),
)
SHORT_ODD_TEXT = st.text(ODD_CHARS, max_size=12)

_MARKERS = itertools.count()


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def id_ok(text: str, limit: int, *, required: bool = True) -> bool:
    """The documented rule for ids and namespaces (``CheckpointConfigError`` otherwise)."""
    if text == "":
        return not required
    return "\x00" not in text and not has_surrogate(text) and len(text) <= limit


def marker() -> str:
    return f"m{next(_MARKERS)}-{uuid.uuid4().hex[:8]}"


async def put(door: Door, config: Any, metadata: Any, values: dict[str, Any]) -> Any:
    cp, versions = make_checkpoint(values)
    return await door.put(config, cp, metadata, versions)


@pytest.fixture
def model() -> dict[Any, Any]:
    """State kept across the examples of one test (its saver keeps its rows too)."""
    return {}


# -- thread ids and namespaces -----------------------------------------------------------


@SETTINGS
@given(base=ODD_TEXT, ns=st.one_of(st.just(""), ODD_TEXT))
async def test_thread_ids_and_namespaces_round_trip_or_are_refused(
    door: Door, model: dict[Any, Any], base: str, ns: str
) -> None:
    """Any text as thread id and namespace: stored and read back verbatim, or refused
    with CheckpointConfigError before anything is stored. Ids that differ by case or by
    spaces are different threads; no listing shows another thread's rows."""
    # model: {(thread_id, ns): [(checkpoint_id, marker), ... newest first]}
    variants = list(dict.fromkeys([base, base.upper(), base.lower(), base + " ", " " + base]))
    for tid in variants:
        expect_ok = id_ok(tid, THREAD_ID_MAX_LENGTH) and id_ok(
            ns, CHECKPOINT_NS_MAX_LENGTH, required=False
        )
        mark = marker()
        before = sum(len(v) for v in model.values())
        try:
            config = await put(door, cfg(tid, ns=ns), {"mark": mark}, {"v": mark})
        except CheckpointConfigError:
            assert not expect_ok, f"refused a valid id {tid!r:.60} / ns {ns!r:.60}"
            with pytest.raises(CheckpointConfigError):
                await door.get_tuple(cfg(tid, ns=ns))
            with pytest.raises(CheckpointConfigError):
                await door.list(cfg(tid, ns=ns))
            assert len(await door.list(None)) == before, "a refused put stored something"
            continue
        assert expect_ok, f"stored an invalid id {tid!r:.60} / ns {ns!r:.60}"
        assert config["configurable"]["thread_id"] == tid
        assert config["configurable"]["checkpoint_ns"] == ns
        await door.put_writes(config, [("w", mark)], "task")
        model.setdefault((tid, ns), []).insert(0, (config["configurable"]["checkpoint_id"], mark))

    for tid in variants:
        if (tid, ns) not in model:
            continue
        latest_id, mark = model[(tid, ns)][0]
        got = await door.get_tuple(cfg(tid, ns=ns))
        assert got is not None
        assert got.config == {
            "configurable": {"thread_id": tid, "checkpoint_ns": ns, "checkpoint_id": latest_id}
        }
        assert got.checkpoint["channel_values"] == {"v": mark}
        assert got.metadata == {"mark": mark}
        assert got.pending_writes == [("task", "w", mark)]
        listed = await door.list(cfg(tid, ns=ns))
        assert ids(listed) == [i for i, _ in model[(tid, ns)]]
        assert threads(listed) == {tid}
        assert {t.config["configurable"]["checkpoint_ns"] for t in listed} == {ns}
        # Every namespace of the thread, and nothing of any other thread.
        whole = await door.list({"configurable": {"thread_id": tid}})
        assert threads(whole) == {tid}
        assert sorted(ids(whole)) == sorted(
            i for (t, _), rows in model.items() if t == tid for i, _ in rows
        )
    everything = await door.list(None)
    assert sorted(
        (
            t.config["configurable"]["thread_id"],
            t.config["configurable"]["checkpoint_ns"],
            t.config["configurable"]["checkpoint_id"],
        )
        for t in everything
    ) == sorted((t, n, i) for (t, n), rows in model.items() for i, _ in rows)


# -- channel values and pending writes ---------------------------------------------------

VALUE_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False),
    ODD_TEXT,
    st.binary(max_size=32),
)
VALUES = st.recursive(
    VALUE_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(SHORT_ODD_TEXT, inner, max_size=4)
    ),
    max_leaves=10,
)
#: A value over the 16 KiB inline limit, to reach the blobs table.
BIG_VALUES = st.builds(lambda s: (s or "x") * (17_000 // max(len(s), 1) + 1), SHORT_ODD_TEXT)


def serde_round_trip(serde: Any, value: Any) -> tuple[bool, Any]:
    """``(True, what the serializer gives back)`` or ``(False, exception type)``."""
    try:
        return True, serde.loads_typed(serde.dumps_typed(value))
    except Exception as e:
        return False, type(e)


@SETTINGS
@given(
    channels=st.dictionaries(
        st.one_of(st.just("v"), SHORT_ODD_TEXT), st.one_of(VALUES, BIG_VALUES), max_size=4
    ),
    writes=st.lists(st.tuples(st.one_of(st.just("w"), SHORT_ODD_TEXT), VALUES), max_size=4),
    task=st.one_of(st.just("task"), SHORT_ODD_TEXT),
)
async def test_channel_values_and_writes_round_trip_as_the_serializer_does(
    door: Door, channels: dict[str, Any], writes: list[tuple[str, Any]], task: str
) -> None:
    """Values with odd strings come back exactly as the serializer round-trips them
    (msgpack bytes; JsonPlusSerializer turns a lone surrogate in a string value into
    "?"). A value the serializer refuses, or a channel name or task id the database
    cannot hold, raises before anything of the call is stored."""
    serde = door.saver.serde
    tid = f"values-{uuid.uuid4().hex}"
    expected: dict[str, Any] = {}
    encodable = True
    names_ok = True
    for ch, value in channels.items():
        ok, back = serde_round_trip(serde, value)
        encodable &= ok
        expected[ch] = back
        names_ok &= "\x00" not in ch and not has_surrogate(ch)
    try:
        config = await put(door, cfg(tid), {}, channels)
    except CheckpointConfigError:
        assert not names_ok, f"refused valid channel names {list(channels)!r:.100}"
        assert await door.list(cfg(tid)) == []
        return
    except Exception as e:
        assert not encodable, f"put raised {type(e).__name__}: {e}"[:300]
        assert await door.list(cfg(tid)) == []
        return
    assert encodable, "stored a value the serializer cannot encode"
    assert names_ok, f"stored channel names {list(channels)!r:.100}"
    got = await door.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == expected

    w_expected = []
    w_encodable = all(serde_round_trip(serde, v)[0] for _, v in writes)
    w_names_ok = all("\x00" not in ch and not has_surrogate(ch) for ch, _ in writes)
    task_ok = id_ok(task, 64)
    for ch, value in writes:
        w_expected.append((task, ch, serde_round_trip(serde, value)[1]))
    try:
        await door.put_writes(config, writes, task)
    except CheckpointConfigError:
        assert not (task_ok and w_names_ok), f"refused task {task!r} / channels {writes!r:.100}"
        got = await door.get_tuple(config)
        assert got is not None and got.pending_writes == []
        return
    except Exception as e:
        assert not w_encodable, f"put_writes raised {type(e).__name__}: {e}"[:300]
        got = await door.get_tuple(config)
        assert got is not None and got.pending_writes == []
        return
    assert w_encodable and task_ok and w_names_ok
    got = await door.get_tuple(config)
    assert got is not None
    assert got.pending_writes == w_expected
    assert got.checkpoint["channel_values"] == expected


# -- metadata ----------------------------------------------------------------------------

JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    ODD_TEXT,
)
NOT_JSON_LEAVES = st.one_of(
    st.integers(min_value=2**63),
    st.integers(max_value=-(2**63) - 1),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.frozensets(st.integers(), max_size=2),
    st.sets(st.integers(), max_size=2),
    st.binary(max_size=4),
    st.builds(object),
)
METADATA_KEYS = st.one_of(
    SHORT_ODD_TEXT, st.sampled_from(["source", "step", "run_id", "writes", "parents"])
)


def metadata_values(leaves: Any) -> Any:
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(SHORT_ODD_TEXT, inner, max_size=3),
        ),
        max_leaves=8,
    )


JSON_VALUES = metadata_values(JSON_LEAVES)
ANY_VALUES = metadata_values(st.one_of(JSON_LEAVES, NOT_JSON_LEAVES))


class NotJson(Exception):
    pass


def sanitised(value: Any) -> Any:
    """The documented rule (``canonical_json``): NUL removed from strings and keys;
    ints within int64, finite floats, valid Unicode; tuples become lists. Raises NotJson."""

    def text(s: str) -> str:
        s = s.replace("\x00", "")
        if has_surrogate(s):
            raise NotJson(s)
        return s

    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise NotJson(k)
            out[text(k)] = sanitised(v)
        return out
    if isinstance(value, (list, tuple)):
        return [sanitised(v) for v in value]
    if isinstance(value, str):
        return text(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise NotJson(value)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJson(value)
        return value
    raise NotJson(value)


def stored_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """What a put stores: LangGraph drops ``writes`` (before sanitising), then the rule."""
    md = dict(metadata)
    md.pop("writes", None)
    return sanitised(md)  # type: ignore[no-any-return]


def same_json(expected: Any, got: Any, *, jsonb: bool) -> bool:
    """Exact equality, types included; ``jsonb``: a float may come back as the JSON
    number its text denotes (PostgreSQL JSONB stores numbers as ``numeric``: 1e20 reads
    back as the int 100000000000000000000)."""
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and expected.keys() == got.keys()
            and all(same_json(expected[k], got[k], jsonb=jsonb) for k in expected)
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(expected) == len(got)
            and all(same_json(a, b, jsonb=jsonb) for a, b in zip(expected, got, strict=True))
        )
    if jsonb and isinstance(expected, float) and type(got) in (int, float):
        return Decimal(json.dumps(expected)) == Decimal(json.dumps(got))
    return type(expected) is type(got) and expected == got


@SETTINGS
@given(metadata=st.dictionaries(METADATA_KEYS, ANY_VALUES, max_size=4))
async def test_metadata_round_trips_sanitised_or_is_refused(
    door: Door, backend: str, metadata: dict[str, Any]
) -> None:
    """Any metadata: read back exactly (NUL removed from strings and keys), or refused
    with CheckpointMetadataError (sets, bytes, objects, NaN, infinities, ints beyond 64
    bits, lone surrogates, non-string keys) with nothing stored."""
    tid = f"md-{uuid.uuid4().hex}"
    try:
        expected: dict[str, Any] | None = stored_metadata(metadata)
    except NotJson:
        expected = None
    cp, versions = make_checkpoint({"x": 1})
    try:
        config = await door.put(cfg(tid), cp, metadata, versions)
    except CheckpointMetadataError:
        assert expected is None, f"refused JSON metadata {metadata!r:.200}"
        assert await door.get_tuple(cfg(tid)) is None
        assert await door.list(cfg(tid)) == []
        return
    assert expected is not None, f"stored metadata that is not JSON: {metadata!r:.200}"
    got = await door.get_tuple(config)
    assert got is not None
    assert same_json(expected, got.metadata, jsonb=backend == "postgres"), (
        f"{expected!r:.200} came back as {got.metadata!r:.200}"
    )
    (listed,) = await door.list(cfg(tid))
    assert listed.metadata == got.metadata


# -- metadata filters --------------------------------------------------------------------

POOL_KEYS = ["k", "K", "k ", "-k", "k\x00", "", "source", "step", "é", "e\u0301", "🔑", "a.b", "'"]
POOL_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    1.0,
    -1,
    0.5,
    2**63 - 1,
    -(2**63),
    "",
    "1",
    "v",
    "v\x00",
    "loop",
    "x" * 70,
    "é",
    [],
    [1],
    [1.0],
    [True],
    {},
    {"a": 1},
    {"a": 1.0},
    {"a": [1, {"b": None}]},
]
#: Floats below 2**52 in magnitude: their JSON text and their binary value are the same
#: number wherever an int could equal them, so every database agrees on equality.
TAME_JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(min_value=-(2.0**52), max_value=2.0**52, allow_nan=False),
    SHORT_ODD_TEXT,
)
FILTER_KEYS = st.one_of(st.sampled_from(POOL_KEYS), SHORT_ODD_TEXT)
FILTER_VALUES = st.one_of(
    st.sampled_from(POOL_VALUES), metadata_values(TAME_JSON_LEAVES), NOT_JSON_LEAVES
)
STORED_METADATA = st.dictionaries(
    st.sampled_from(POOL_KEYS),
    st.one_of(st.sampled_from(POOL_VALUES), metadata_values(TAME_JSON_LEAVES)),
    max_size=4,
)


@SETTINGS
@given(
    stored=st.lists(STORED_METADATA, min_size=1, max_size=4),
    key=FILTER_KEYS,
    value=FILTER_VALUES,
)
async def test_filter_matches_the_model_of_stored_metadata(
    door: Door,
    backend: str,
    model: dict[Any, Any],
    stored: list[dict[str, Any]],
    key: str,
    value: Any,
) -> None:
    """``list(None, filter={key: value})``: exactly the checkpoints (of every thread)
    whose stored metadata has ``key`` equal to ``value`` as JSON, or
    CheckpointMetadataError for a filter that is not JSON (and, on MySQL/MariaDB, for a
    key starting with "-", documented). Never any other error."""
    # model: {checkpoint_id: stored metadata} of every checkpoint of this test's store.
    tid = f"filter-{uuid.uuid4().hex}"
    for metadata in stored:
        try:
            expected = stored_metadata(metadata)
        except NotJson:  # a lone surrogate drawn into the metadata
            with pytest.raises(CheckpointMetadataError):
                await put(door, cfg(tid), metadata, {})
            continue
        config = await put(door, cfg(tid), metadata, {})
        model[config["configurable"]["checkpoint_id"]] = expected
    try:
        s_key, s_value = sanitised(key), sanitised(value)
    except NotJson:
        s_key = None
    refused = s_key is None or (backend == "mariadb" and s_key.startswith("-"))
    try:
        hits = await door.list(None, filter={key: value})
    except CheckpointMetadataError:
        assert refused, f"refused the JSON filter {{{key!r}: {value!r:.100}}}"
        return
    assert not refused, f"accepted the filter {{{key!r}: {value!r:.100}}}"
    expected = sorted(i for i, md in model.items() if s_key in md and json_eq(md[s_key], s_value))
    assert sorted(ids(hits)) == expected, f"filter {{{key!r}: {value!r:.100}}}"
    for hit in hits:
        stored_md = model[hit.config["configurable"]["checkpoint_id"]]
        assert same_json(stored_md, hit.metadata, jsonb=backend == "postgres")
