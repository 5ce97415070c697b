"""What a diagnosis may not do: write. A diagnose check keeps what its setup left (``keep``, or ``keep_keys``
for a case model's own keys) and, before it grades the answer, finds it as it was (``untouched``): a
diagnosis that "tried" a call to see what happens (a completion, a claim, a sweep, a model's own
recovery) changed the very state it was asked to read."""

from __future__ import annotations

from typing import Any

from ... import snapshots
from ...connector import Connector
from ..registry import Findings

#: the state each setup left, by its fresh queue (popped when the answer is graded)
_KEPT: dict[str, dict[str, Any]] = {}


def keep(conn: Connector, queue: str) -> None:
    """Keep the state the setup left on ``queue``, to compare with after the learner's function."""
    _KEPT[queue] = snapshots.snapshot(conn, queue).state_only()


def keep_keys(conn: Connector, queue: str, pattern: str) -> None:
    """Keep every key matching ``pattern`` (a case model's own keyspace) as the setup left it."""
    _KEPT[queue] = {"pattern": pattern, "keys": _read_keys(conn, pattern)}


def untouched(conn: Connector, queue: str, f: Findings) -> bool:
    """True when the learner's function left ``queue`` as the setup did; else a finding naming what moved."""
    kept = _KEPT.pop(queue)
    if "pattern" in kept:
        now_keys = _read_keys(conn, kept["pattern"])
        moved = sorted(k for k in set(now_keys) | set(kept["keys"]) if now_keys.get(k) != kept["keys"].get(k))
    else:
        now = snapshots.snapshot(conn, queue).state_only()
        if now == kept:
            return True
        moved = sorted({i for name in now["sets"] for i in set(now["sets"][name]) ^ set(kept["sets"][name])}
                       | {i for i in set(now["rows"]) | set(kept["rows"]) if now["rows"].get(i) != kept["rows"].get(i)})
        moved = moved or ["its counters"]
    return f.expect(not moved, f"your diagnosis changed what it was to read ({', '.join(moved)}): a diagnosis reads; "
                    "a call made to see what happens (a mechanism's own code among them) writes what it does.")


def _read_keys(conn: Connector, pattern: str) -> dict[str, Any]:
    """Every key matching ``pattern``, read whole by its type (a TTL left aside: it runs down as we read)."""
    client = conn.client
    out: dict[str, Any] = {}
    for key in client.scan_iter(match=pattern, count=500):
        kind = client.type(key)
        out[key] = (client.get(key) if kind == "string" else client.lrange(key, 0, -1) if kind == "list"
                    else client.hgetall(key) if kind == "hash" else sorted(client.smembers(key)) if kind == "set"
                    else client.zrange(key, 0, -1, withscores=True) if kind == "zset" else kind)
    return out
