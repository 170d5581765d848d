"""Split a callgrind dump's instructions into serde, driver and the rest.

Used by :mod:`.instructions` to say where a call's instructions go: the inclusive cost of
every call from outside into the serializer's extension (``ormsgpack``, with the Python
callbacks it makes: LangChain's and pydantic's encoders) and into the database driver's C
code (``_sqlite3`` and libsqlite3; psycopg's binary module and libpq; PyMySQL is pure
Python and counts as the rest). The rest is Python: ours, SQLAlchemy's, LangGraph's.
Nested entries (a callback that packs again) are counted once: callgrind names a function
entered again while on the stack ``name'2``, and those are skipped.
"""

from __future__ import annotations

import re

__all__ = ["CATEGORIES", "split"]

#: Category of a callee's object file, by a pattern of its path.
CATEGORIES: dict[str, re.Pattern[str]] = {
    "serde": re.compile(r"ormsgpack"),
    "driver": re.compile(r"_sqlite3|libsqlite3|psycopg_binary|libpq"),
}

_NAMED = re.compile(r"^\((\d+)\)(?: (.*))?$")


def _name(table: dict[str, str], value: str) -> str:
    m = _NAMED.match(value)
    if m is None:
        return value
    key, name = m.group(1), m.group(2)
    if name is not None:
        table[key] = name
        return name
    return table.get(key, key)


def split(path: str) -> dict[str, int]:
    """``{"total", "serde", "driver", "rest"}`` instructions of one callgrind dump."""
    obs: dict[str, str] = {}
    fns: dict[str, str] = {}
    ob = cob = cfn = ""
    pending = False
    out = {"serde": 0, "driver": 0}
    total = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if pending:
                pending = False
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                target = cob or ob
                caller = _category(ob)
                callee = _category(target)
                if callee and callee != caller and not cfn.endswith("'2"):
                    out[callee] += cost
                cob = ""
                continue
            if line.startswith("ob="):
                ob = _name(obs, line[3:].strip())
            elif line.startswith("cob="):
                cob = _name(obs, line[4:].strip())
            elif line.startswith("cfn="):
                cfn = _name(fns, line[4:].strip())
            elif line.startswith("fn="):
                _name(fns, line[3:].strip())
                cob = ""
            elif line.startswith("calls="):
                pending = True
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    return {"total": total, **out, "rest": total - out["serde"] - out["driver"]}


def _category(obj: str) -> str | None:
    for name, pattern in CATEGORIES.items():
        if pattern.search(obj):
            return name
    return None
