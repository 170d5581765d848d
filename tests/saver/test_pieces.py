"""Pieces rebuild exactly the bytes ``serde.dumps_typed`` returned, and only bytes decide.

Checked against LangGraph's own serializer (``JsonPlusSerializer``) with real messages:
a list extended at its end is a piece; one with an item removed, replaced, changed in
place or reordered, a shorter list, another container kind or another type is not; a
chain of pieces rebuilds every version byte for byte; and rows that disagree (a missing
base, another type, a recorded size that does not match) are a ``PieceError``, never
other bytes.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.sqlalchemy._codec.pieces import (
    MIN_BASE,
    PieceError,
    StoredRow,
    assemble,
    extension,
    next_piece,
)

SERDE = JsonPlusSerializer()


def messages(n: int, start: int = 0) -> list[Any]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"message {i} " + "x" * 400, id=f"m{i}")
        for i in range(start, start + n)
    ]


def dumps(value: Any) -> bytes:
    return SERDE.dumps_typed(value)[1]


@pytest.mark.parametrize("n", [1, 10, 50, 200])
def test_a_list_extended_at_its_end_is_the_old_bytes_with_a_new_header(n: int) -> None:
    old, new = messages(n), messages(n + 2)
    piece = extension(dumps(old), dumps(new))
    assert piece is not None and len(piece) < len(dumps(new)) - len(dumps(old)) + 6
    rows = {
        "1": StoredRow("msgpack", dumps(old), None, len(dumps(old))),
        "2": StoredRow("msgpack", piece, "1", len(dumps(new))),
    }
    assert assemble(rows, "2")[:2] == ("msgpack", dumps(new))


def _removed(v: list[Any]) -> list[Any]:
    return v[1:] + messages(1, 99)


def _replaced(v: list[Any]) -> list[Any]:
    return [HumanMessage("other", id=v[0].id), *v[1:], *messages(1, 99)]


def _changed_in_place(v: list[Any]) -> list[Any]:
    v[0].content = "changed"
    return [*v, *messages(1, 99)]


def _reordered(v: list[Any]) -> list[Any]:
    return [v[1], v[0], *v[2:], *messages(1, 99)]


def _shorter(v: list[Any]) -> list[Any]:
    return v[:-1]


def _a_dict(v: list[Any]) -> dict[str, Any]:
    return {str(i): m for i, m in enumerate(v)}


@pytest.mark.parametrize(
    "edit", [_removed, _replaced, _changed_in_place, _reordered, _shorter, _a_dict]
)
def test_anything_but_an_extension_is_not_a_piece(edit: Any) -> None:
    value = messages(20)
    old = dumps(value)
    assert extension(old, dumps(edit(value))) is None


def test_maps_and_strings_extend_too_and_scalars_never() -> None:
    for old, new in [({"a": 1}, {"a": 1, "b": 2}), ("x" * 5000, "x" * 5000 + "y")]:
        assert SERDE.dumps_typed(new)[0] == "msgpack"
        piece = extension(dumps(old), dumps(new))
        rows = {
            "1": StoredRow("msgpack", dumps(old), None, None),
            "2": StoredRow("msgpack", piece, "1", None),
        }
        assert assemble(rows, "2")[1] == dumps(new)
    assert extension(dumps(5), dumps(6)) is None
    assert extension(b"", dumps([1])) is None


def test_a_chain_rebuilds_every_version_byte_for_byte() -> None:
    versions = [messages(n) for n in range(10, 60, 3)]
    rows = {"0": StoredRow("msgpack", dumps(versions[0]), None, len(dumps(versions[0])))}
    for i in range(1, len(versions)):
        piece = extension(dumps(versions[i - 1]), dumps(versions[i]))
        rows[str(i)] = StoredRow("msgpack", piece, str(i - 1), len(dumps(versions[i])))
    for i, value in enumerate(versions):
        _type, data, whole, appended = assemble(rows, str(i))
        assert data == dumps(value) and whole == len(dumps(versions[0]))
        assert appended == sum(len(rows[str(j)].blob or b"") for j in range(1, i + 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.integers(0, 2**32))
def test_any_sequence_of_edits_reads_back_exactly(edits: list[int], seed: int) -> None:
    """Appends, removals, replacements, in-place changes: each version stored as a piece
    of the previous one when it extends it, else whole; each reads back exactly."""
    rng = random.Random(seed)
    value = messages(rng.randint(5, 15))
    stored = {"0": StoredRow("msgpack", dumps(value), None, len(dumps(value)))}
    expected = {"0": dumps(value)}

    def appended(v: list[Any]) -> list[Any]:
        return [*v, *messages(rng.randint(1, 3), 100 * len(stored))]

    for i, edit in enumerate(edits, start=1):
        value = [
            appended,
            _removed,
            _replaced,
            _changed_in_place,
        ][edit](list(value))
        data = dumps(value)
        piece = extension(expected[str(i - 1)], data)
        row = (piece, str(i - 1)) if piece is not None else (data, None)
        stored[str(i)] = StoredRow("msgpack", row[0], row[1], len(data))
        expected[str(i)] = data
    for version, data in expected.items():
        assert assemble(stored, version)[1] == data


def test_rows_that_disagree_are_an_error_never_other_bytes() -> None:
    old, new = dumps(messages(10)), dumps(messages(12))
    piece = extension(old, new)
    assert piece is not None
    with pytest.raises(PieceError, match="missing") as e:
        assemble({"2": StoredRow("msgpack", piece, "1", len(new))}, "2")
    assert e.value.missing == "1"
    with pytest.raises(PieceError, match="another type"):
        assemble(
            {"1": StoredRow("msgpack", old, None, None), "2": StoredRow("json", piece, "1", None)},
            "2",
        )
    # A base of the same kind but other bytes (a forged row): the recorded size tells.
    other = dumps(messages(3))
    with pytest.raises(PieceError, match="bytes where its writer stored"):
        assemble(
            {
                "1": StoredRow("msgpack", other, None, None),
                "2": StoredRow("msgpack", piece, "1", len(new)),
            },
            "2",
        )
    with pytest.raises(PieceError, match="not a container"):
        assemble(
            {
                "1": StoredRow("msgpack", dumps(5), None, None),
                "2": StoredRow("msgpack", piece, "1", None),
            },
            "2",
        )
    cycle = {
        "1": StoredRow("msgpack", piece, "2", None),
        "2": StoredRow("msgpack", piece, "1", None),
    }
    with pytest.raises(PieceError, match="chain longer"):
        assemble(cycle, "1")


def test_the_schedule_stores_whole_again_when_a_chain_outgrows_its_whole_value() -> None:
    base = dumps(messages(10))
    new = dumps(messages(12))
    piece = next_piece(base, len(base), 0, new)
    assert piece is not None and piece[1] == len(piece[0])
    # Appended bytes past the whole value's size: stored whole.
    assert next_piece(base, len(base), len(base) - len(piece[0]) + 1, new) is None
    # A small base: stored whole.
    small = dumps(["x"])
    assert len(small) < MIN_BASE and next_piece(small, len(small), 0, dumps(["x", "y"])) is None
