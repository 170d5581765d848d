"""Strict decoding: a stored object that cannot be rebuilt raises instead of turning into
its raw fields.

LangGraph's ``JsonPlusSerializer`` stores a pydantic model, a dataclass or any other
object as a msgpack extension naming its class (``module``, ``name``) and its fields. When
that class cannot be rebuilt on load (its module is gone or renamed, its constructor
rejects the stored fields, or the serializer's msgpack allowlist blocks it), LangGraph
returns the raw fields (a dict or list) and logs a warning once per class: the graph then
receives a dict where it expects a model. That is LangGraph's default, and the saver's.

With strict decoding (saver option ``strict_decode=True``, off by default in every mode:
strict mode restricts what the serializer rebuilds, and by default the saver hands back
exactly what LangGraph's serializer returns, as every official saver does), ``pickle``
and ``json`` values are refused (decoding them would
rebuild whatever they name) and every object the serializer reads back is checked: its
class must be importable and the value returned must be an instance of it (for a factory
function: not its raw argument). Otherwise :func:`loads` raises :class:`NotRebuiltError`,
which the saver reports as a ``CheckpointDecodeError`` naming the thread, checkpoint and
channel or write.

Strict mode itself (:func:`strict_serde`) also limits what the serializer rebuilds:
LangGraph's safe types, an allowlist, and a graph's state types (``with_allowlist``).

The check covers each object the serializer meets in a stored value (a list of messages:
each message); an object nested inside another object's fields is rebuilt by that
object's own constructor (pydantic validates it), and is not checked separately. Values
of a serializer other than ``JsonPlusSerializer`` (optionally inside an
``EncryptedSerializer``) are decoded as that serializer does, unchecked. Nothing here
imports or calls anything the serializer itself would not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

__all__ = [
    "OUR_STRICT_ENV",
    "NotRebuiltError",
    "loads",
    "saver_serde",
    "strict_serde",
    "strict_setting",
]

#: Environment variable of LangGraph's strict msgpack mode, which also turns strict
#: decoding on (values LangGraph reads as true).
STRICT_ENV = "LANGGRAPH_STRICT_MSGPACK"
#: Our environment variable for the saver's ``strict`` option, parsed strictly: it wins
#: over ``LANGGRAPH_STRICT_MSGPACK`` when set.
OUR_STRICT_ENV = "LANGGRAPH_CHECKPOINT_STRICT"
_YES = {"1", "true", "yes", "on"}
#: Stored types strict decoding refuses: decoding them rebuilds what they name.
_NOT_DATA = frozenset(("pickle", "json"))
_NO = {"0", "false", "no", "off"}

# LangGraph's msgpack extension codes (langgraph.checkpoint.serde.jsonplus): objects
# rebuilt by calling their class (or a method of it) on stored fields.
_CONSTRUCTOR_SINGLE_ARG = 0
_CONSTRUCTOR_POS_ARGS = 1
_CONSTRUCTOR_KW_ARGS = 2
_METHOD_SINGLE_ARG = 3
_PYDANTIC_V1 = 4
_PYDANTIC_V2 = 5
_NUMPY_ARRAY = 6
_REBUILT_BY_CALL = frozenset(
    (
        _CONSTRUCTOR_SINGLE_ARG,
        _CONSTRUCTOR_POS_ARGS,
        _CONSTRUCTOR_KW_ARGS,
        _METHOD_SINGLE_ARG,
        _PYDANTIC_V1,
        _PYDANTIC_V2,
    )
)


class NotRebuiltError(ValueError):
    """A stored object came back as its raw fields instead of an instance of its class."""


def strict_setting(explicit: bool | None, *, default: bool = False) -> bool:
    """The saver's ``strict`` mode: ``explicit`` when given, else
    ``LANGGRAPH_CHECKPOINT_STRICT`` (1/true/yes/on or 0/false/no/off), else
    ``LANGGRAPH_STRICT_MSGPACK`` when it holds one of those, else ``default`` (so an
    unreadable value never turns the server factory's strict default off).

    Raises:
        ValueError: ``LANGGRAPH_CHECKPOINT_STRICT`` holds another value.
    """
    if explicit is not None:
        return bool(explicit)
    ours = os.environ.get(OUR_STRICT_ENV)
    if ours is not None and ours.strip():
        value = ours.strip().lower()
        if value in _YES:
            return True
        if value in _NO:
            return False
        raise ValueError(
            f"{OUR_STRICT_ENV}={ours!r} is not understood: use 1/true/yes/on for strict "
            "deserialisation or 0/false/no/off for LangGraph's permissive default"
        )
    theirs = os.environ.get(STRICT_ENV, "").strip().lower()
    if theirs in _YES:
        return True
    if theirs in _NO:
        return False
    return default  # unset, empty or a value LangGraph does not read either


def strict_serde(
    serde: SerializerProtocol | None, allowed: Iterable[tuple[str, ...] | type] | None
) -> SerializerProtocol:
    """The serializer of a strict saver.

    No ``serde``: a ``JsonPlusSerializer`` that rebuilds LangGraph's built-in safe types
    and ``allowed`` only (LangGraph's ``allowed_msgpack_modules``). A given ``serde``
    (optionally inside an ``EncryptedSerializer``) is kept, with ``allowed`` added to its
    allowlist; it must not be LangGraph's permissive default, which would rebuild any
    type a row names before anything could refuse it.

    Raises:
        ValueError: ``serde`` is not a ``JsonPlusSerializer`` (inside at most one
            ``EncryptedSerializer``), allows every type (LangGraph's permissive default),
            or has ``pickle_fallback``.
    """
    extra = tuple(allowed or ())
    if serde is None:
        return JsonPlusSerializer(allowed_msgpack_modules=extra or None)
    inner = serde.serde if isinstance(serde, EncryptedSerializer) else serde
    if not isinstance(inner, JsonPlusSerializer):
        # Another serializer (or one wrapped twice) decodes as it likes: the saver could
        # not check what it rebuilds, so strict mode would be a promise it cannot keep.
        raise ValueError(
            f"strict=True needs a JsonPlusSerializer, optionally inside one "
            f"EncryptedSerializer, not {type(inner).__name__}: use strict=False and your "
            "serializer's own safeguards"
        )
    if inner.pickle_fallback:
        raise ValueError("strict=True refuses a JsonPlusSerializer with pickle_fallback=True")
    if getattr(inner, "_allowed_msgpack_modules", None) is True:
        raise ValueError(
            "strict=True needs a serializer that refuses unknown types, but this "
            "JsonPlusSerializer allows every type (LangGraph's default without "
            "LANGGRAPH_STRICT_MSGPACK): build it with allowed_msgpack_modules=[...] "
            "or leave serde out"
        )
    if not extra:
        return serde
    stricter = inner.with_msgpack_allowlist(extra)
    if isinstance(serde, EncryptedSerializer):
        return EncryptedSerializer(serde.cipher, stricter)
    return stricter


class _Opaque:
    """Stands for a nested extension while peeking at an object's stored fields."""


def _opaque(code: int, data: bytes) -> _Opaque:
    return _Opaque()


def _peek(data: bytes) -> tuple[str, str, Any] | None:
    """``(module, name, fields)`` of an object extension, read without importing or
    calling anything; None when the payload is not such a triple."""
    try:
        tup = ormsgpack.unpackb(data, ext_hook=_opaque, option=ormsgpack.OPT_NON_STR_KEYS)
    except ormsgpack.MsgpackDecodeError:
        return None
    if isinstance(tup, (list, tuple)) and len(tup) >= 3:
        module, name = tup[0], tup[1]
        if isinstance(module, str) and isinstance(name, str):
            return module, name, tup[2]
    return None


def _check(code: int, data: bytes, value: Any) -> None:
    if code == _NUMPY_ARRAY and value is None:
        raise NotRebuiltError("a numpy array was not rebuilt (is numpy installed?)")
    if code not in _REBUILT_BY_CALL:
        return
    peeked = _peek(data)
    if peeked is None:
        return
    module, name, fields = peeked
    owner = sys.modules.get(module)
    target = getattr(owner, name, None) if owner is not None else None
    try:
        raw = type(value) is type(fields) and bool(value == fields)
    except Exception:  # an __eq__ that does not answer a bool (arrays): not raw fields
        raw = False
    if target is None or (isinstance(target, type) and not isinstance(value, target)) or raw:
        raise NotRebuiltError(
            f"the stored {module}.{name} was not rebuilt (its module or class is gone, its "
            "constructor rejected the stored fields, or the serializer's msgpack allowlist "
            f"blocks it); without strict decoding it would be its raw "
            f"{type(value).__name__}. Restore the class, or add it to the allowlist"
        )


def _checking(
    hook: Callable[[int, bytes], Any], failures: list[NotRebuiltError]
) -> Callable[[int, bytes], Any]:
    def ext_hook(code: int, data: bytes) -> Any:
        value = hook(code, data)
        try:
            _check(code, data, value)
        except NotRebuiltError as e:
            failures.append(e)  # ormsgpack replaces a hook's exception with its own
            raise
        return value

    return ext_hook


def loads(serde: SerializerProtocol, type_: str, data: bytes) -> Any:
    """Decode ``(type_, data)`` as ``serde.loads_typed`` does, checking each object.

    Args:
        serde: The saver's serializer.
        type_: The stored type tag (``"msgpack"``, ``"msgpack+aes"``, ``"null"``, ...).
        data: The stored bytes.

    Returns:
        The decoded value, the same as ``serde.loads_typed((type_, data))``.

    Raises:
        NotRebuiltError: An object of the value could not be rebuilt (see the module).
        Exception: Whatever ``serde.loads_typed`` raises for damaged data.
    """
    if isinstance(serde, EncryptedSerializer) and "+" in type_:
        inner_type, cipher_name = type_.split("+", 1)
        return loads(serde.serde, inner_type, serde.cipher.decrypt(cipher_name, data))
    if isinstance(serde, EncryptedSerializer):
        return loads(serde.serde, type_, data)
    # LangGraph keeps the serializer's ext hook (its allowlist applied) on the instance:
    # decode as its loads_typed does, with that hook wrapped by the check.
    if type_ in _NOT_DATA:
        raise NotRebuiltError(
            f"a {type_!r} value: strict decoding reads msgpack values only (a pickle or "
            "LangChain JSON value rebuilds whatever it names, outside any allowlist)"
        )
    hook = getattr(serde, "_unpack_ext_hook", None)
    if type_ != "msgpack" or not isinstance(serde, JsonPlusSerializer) or not callable(hook):
        return serde.loads_typed((type_, data))
    failures: list[NotRebuiltError] = []
    try:
        return ormsgpack.unpackb(
            data, ext_hook=_checking(hook, failures), option=ormsgpack.OPT_NON_STR_KEYS
        )
    except ormsgpack.MsgpackDecodeError:
        if failures:
            raise failures[0] from None
        raise


def saver_serde(
    serde: SerializerProtocol | None,
    strict: bool | None,
    allowed: Iterable[tuple[str, ...] | type] | None,
) -> tuple[bool, SerializerProtocol | None]:
    """The saver's strict mode (:func:`strict_setting`) and its serializer: the strict one
    (:func:`strict_serde`) in strict mode, else ``serde`` as given.

    Raises:
        ValueError: An unknown ``LANGGRAPH_CHECKPOINT_STRICT``, a serializer strict mode
            refuses, or ``allowed`` without strict mode.
    """
    if strict_setting(strict):
        return True, strict_serde(serde, allowed)
    if allowed is not None:
        raise ValueError(
            "allowed_msgpack_modules applies to strict mode: pass strict=True (or set "
            f"{OUR_STRICT_ENV}=1 or LANGGRAPH_STRICT_MSGPACK=true)"
        )
    return False, serde
