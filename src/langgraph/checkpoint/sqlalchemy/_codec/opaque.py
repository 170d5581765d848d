"""Values moved and shown as data: the serializer of the operator paths.

LangGraph's ``JsonPlusSerializer`` stores an application object (a message, a pydantic
model, a dataclass, a ``datetime``) as a msgpack *extension* naming a module, a class or
function and its arguments; loading it imports that module and calls that callable. A
row forged by someone with write access to the database can therefore name
``os.system``. The operator paths (the CLI, :mod:`.transfer`: copy, export, import, copy
from the official savers, and :meth:`.SQLAlchemySaver.prune`'s look at a checkpoint)
never need the objects themselves, so they never rebuild them:

* :class:`OpaqueSerializer` reads a msgpack value into plain data with every extension
  kept as a :class:`Kept` (its code and bytes, never interpreted) and writes it back
  byte for byte; any other stored type (``pickle``, ``json``, an encrypted value whose
  key it lacks, a type it does not know) stays a :class:`Stored` (type tag and bytes) and
  is written back as it was. Nothing is imported, called or unpickled.
* With a cipher (the ``EncryptedSerializer`` of the saver it reads or writes for), it
  decrypts what it reads and encrypts what it writes, as that serializer does: a copy
  between savers of different keys re-encrypts, a value's plain bytes unchanged.
* :func:`shown` turns such data into JSON for display: an extension shows as
  ``{"$ext": code, "type": "module.Name", "data": [...]}`` (its stored fields, read the
  same way), a :class:`Stored` as its type tag and size.
* :func:`document` reads a checkpoint's own document (channel versions, ids) without
  rebuilding anything: what :meth:`.SQLAlchemySaver.prune` needs.

A value that is not valid msgpack raises :class:`ValueError` (``ormsgpack`` decode
error): the callers report it as they report any damaged value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import ormsgpack
from langgraph.checkpoint.serde.base import CipherProtocol, SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

__all__ = ["Kept", "OpaqueSerializer", "Stored", "cipher_of", "document", "shown"]

_OPTIONS = ormsgpack.OPT_NON_STR_KEYS
# Dataclasses and tuples go through _ext: ormsgpack would write a Kept (a dataclass) as
# a map and a Stored (a tuple) as an array.
_PACK_OPTIONS = _OPTIONS | ormsgpack.OPT_PASSTHROUGH_DATACLASS | ormsgpack.OPT_PASSTHROUGH_TUPLE


@dataclass(frozen=True)
class Kept:
    """A msgpack extension value kept as stored: its extension ``code`` and ``data``
    bytes (for LangGraph's object extensions: module, name and arguments, packed)."""

    code: int
    data: bytes


class Stored(NamedTuple):
    """A serialised value kept as stored, undecoded: ``type`` tag and ``data`` bytes."""

    type: str
    data: bytes


def _kept(code: int, data: bytes) -> Kept:
    return Kept(code, data)


def _ext(obj: Any) -> Any:
    if isinstance(obj, Kept):
        return ormsgpack.Ext(obj.code, obj.data)
    if type(obj) is tuple:
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not data that can be written back as stored")


def unpack(data: bytes) -> Any:
    """Decode msgpack bytes into plain data, extensions as :class:`Kept`.

    Raises:
        ValueError: Not msgpack (``ormsgpack.MsgpackDecodeError``).
    """
    return ormsgpack.unpackb(data, ext_hook=_kept, option=_OPTIONS)


def pack(value: Any) -> bytes:
    """Encode what :func:`unpack` returned; the same bytes for the same value.

    Raises:
        TypeError: The value holds an object other than plain data and :class:`Kept`.
    """
    return ormsgpack.packb(value, default=_ext, option=_PACK_OPTIONS)


def cipher_of(serde: SerializerProtocol | None) -> CipherProtocol | None:
    """The cipher of an ``EncryptedSerializer`` or an :class:`OpaqueSerializer` (None for
    any other serializer)."""
    if isinstance(serde, (EncryptedSerializer, OpaqueSerializer)):
        return serde.cipher
    return None


class OpaqueSerializer(SerializerProtocol):
    """A serializer that never rebuilds an object (see the module).

    Args:
        cipher: Decrypt values read (type tags ``"<type>+<cipher>"``) and encrypt values
            written, as an ``EncryptedSerializer`` with this cipher does. None: encrypted
            values are read as :class:`Stored` and written back unchanged.
    """

    def __init__(self, cipher: CipherProtocol | None = None) -> None:
        self.cipher = cipher

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """``(type, bytes)`` as ``JsonPlusSerializer`` writes plain data; a
        :class:`Stored` as it was; encrypted when the serializer has a cipher.

        Raises:
            TypeError: ``obj`` holds something other than plain data, :class:`Kept` and
                (at the top) :class:`Stored`.
        """
        if isinstance(obj, Stored):
            type_, data = obj.type, obj.data
        elif obj is None:
            type_, data = "null", b""
        elif isinstance(obj, bytes):
            type_, data = "bytes", obj
        elif isinstance(obj, bytearray):
            type_, data = "bytearray", bytes(obj)
        else:
            type_, data = "msgpack", pack(obj)
        if self.cipher is not None and "+" not in type_:
            cipher_name, data = self.cipher.encrypt(data)
            type_ = f"{type_}+{cipher_name}"
        return type_, data

    def stored(self, type_: str, data: bytes) -> Stored:
        """A value as stored, not decoded: decrypted when encrypted with this
        serializer's cipher, else as it is.

        Raises:
            ValueError: Encrypted with this cipher, but it does not decrypt.
        """
        raw = bytes(data) if data is not None else b""
        if "+" in type_ and self.cipher is not None:
            inner, cipher_name = type_.split("+", 1)
            try:
                return Stored(inner, self.cipher.decrypt(cipher_name, raw))
            except Exception as e:  # wrong key or damaged: the callers' decode error
                raise ValueError(f"cannot decrypt ({type(e).__name__}: {e})") from None
        return Stored(type_, raw)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Plain data of a ``msgpack`` value, ``None``/``bytes`` for those tags, a
        :class:`Stored` for anything else (decrypted first when the cipher is known).

        Raises:
            ValueError: A ``msgpack`` value that is not msgpack, or a value encrypted
                with this cipher that does not decrypt.
        """
        type_, raw = self.stored(*data)
        if type_ == "msgpack":
            return unpack(raw)
        if type_ == "null":
            return None
        if type_ == "bytes":
            return raw
        return Stored(type_, raw)


def document(serde: SerializerProtocol, type_: str, data: bytes) -> Any:
    """A checkpoint document read without rebuilding any object: msgpack (decrypted
    with ``serde``'s cipher when it is an ``EncryptedSerializer``) as plain data.

    Raises:
        ValueError: Not a msgpack document (a ``pickle`` or ``json`` one is never
            handed to ``serde``: that would rebuild what it names), or not decodable.
    """
    cipher = cipher_of(serde)
    if type_ == "msgpack" or (cipher is not None and type_.startswith("msgpack+")):
        doc = OpaqueSerializer(cipher).loads_typed((type_, data))
        if isinstance(doc, dict):
            return doc
    raise ValueError(f"not a msgpack checkpoint document (type {type_!r})")


def _object_name(kept: Kept) -> tuple[str | None, Any]:
    """``("module.Name", arguments)`` of a LangGraph object extension, else
    ``(None, data)``: read as plain data, nothing imported."""
    try:
        payload = unpack(kept.data)
    except ValueError:
        return None, kept.data
    if (
        isinstance(payload, list)
        and len(payload) >= 2
        and isinstance(payload[0], str)
        and isinstance(payload[1], str)
    ):
        return f"{payload[0]}.{payload[1]}", payload[2:]
    return None, payload


def shown(value: Any, *, depth: int = 0) -> Any:
    """JSON-ready display of data read by :class:`OpaqueSerializer`.

    An extension is ``{"$ext": code, "type": "module.Name" | None, "data": ...}`` (its
    stored arguments shown the same way), a :class:`Stored` is ``{"$stored": type,
    "bytes": size}``, bytes are ``{"$bytes": size}``; dict keys become strings. Deeper
    than 100 levels shows ``"..."``.
    """
    if depth > 100:
        return "..."
    if isinstance(value, Kept):
        name, data = _object_name(value)
        return {"$ext": value.code, "type": name, "data": shown(data, depth=depth + 1)}
    if isinstance(value, Stored):
        if value.type == "msgpack":
            try:
                return shown(unpack(value.data), depth=depth + 1)
            except ValueError:
                pass
        if value.type == "null":
            return None
        return {"$stored": value.type, "bytes": len(value.data)}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": len(value)}
    if isinstance(value, dict):
        return {str(k): shown(v, depth=depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown(v, depth=depth + 1) for v in value]
    return value
