"""What a diagnosis may not do: write. A diagnose check keeps what its setup left (``keep``, ``keep_keys`` for a
case model's own keys, ``keep_nodes`` for nodes of the check's own) and, before it grades the answer, finds it as
it was (``untouched``): a diagnosis that "tried" a call to see what happens (a completion, a claim, a sweep, a
model's own recovery) changed the very state it was asked to read.

Putting the state back afterwards, or trying the call on a copy (a queue restored from ``DUMP``, another node), is
still trying. So while the learner's function runs (``reading``, around that one call), the node counts: every
node the function was handed, the nodes the setup names, and every node this kernel runs, each read from its
``INFO commandstats`` before and after — the calls of its write commands (a script's writes are counted under
their own commands; the module's ``EMQ.*`` are write commands), and how many processes the kit started. A
diagnosis makes neither. A count that went down was reset (``CONFIG RESETSTAT``, a restart) to hide what ran
before: that is refused too.

Scope: on a shared node (a classroom's, under ``ECHOMQ_NAMESPACE``) every student's writes land in the same
counters, so there only the state left behind is compared: a copy made and removed within the call is not seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from ... import ending, keyspace, snapshots
from ...connector import Connector
from ...nodes import process
from ...nodes.node import Node
from ..registry import Findings

#: what each setup left, by its fresh queue (popped when the answer is graded, or when the check ends)
_KEPT: dict[str, dict[str, Any]] = {}
#: the write commands (lower case, a subcommand as ``cmd|sub``) of a server build with its modules loaded
_WRITE_COMMANDS: dict[tuple[Any, ...], frozenset[str]] = {}


def keep(conn: Connector, queue: str, *, nodes: Sequence[Node] = ()) -> None:
    """Keep the state the setup left on ``queue``, to compare with after the learner's function."""
    _KEPT[queue] = {"queue": queue, "state": snapshots.snapshot(conn, queue).state_only(), "nodes": list(nodes)}


def keep_keys(conn: Connector, queue: str, pattern: str) -> None:
    """Keep every key matching ``pattern`` (a case model's own keyspace) as the setup left it."""
    _KEPT[queue] = {"pattern": pattern, "keys": _read_keys(conn, pattern), "nodes": []}


def keep_nodes(queue: str, nodes: Sequence[Node]) -> None:
    """Nodes of the check's own that the diagnosis of ``queue`` reads (their writes are counted, no queue kept)."""
    _KEPT[queue] = {"nodes": list(nodes)}


def forget(queue: str) -> None:
    """Drop what was kept for ``queue`` (the check is over, graded or not)."""
    _KEPT.pop(queue, None)


@contextmanager
def reading(queue: str, conns: Sequence[Any]) -> Iterator[None]:
    """Around the learner's call: the writes every watched node counts, and the processes started, meanwhile.

    Nothing is watched for a queue whose setup kept nothing (a repair, a prediction).
    """
    kept = _KEPT.get(queue)
    if kept is None:
        yield
        return
    watched = _watched(conns, kept["nodes"])
    before = {where: _write_calls(client) for where, client in watched.items()}
    launched = process.launches()
    try:
        yield
    finally:
        wrote: Counter[str] = Counter()
        reset: list[str] = []
        for where, client in watched.items():
            try:
                after = _write_calls(client)
            except redis.exceptions.RedisError:
                continue  # a node the learner's function stopped: it counts nothing more
            if any(after.get(name, 0) < n for name, n in before[where].items()):
                reset.append(where)  # a count only grows, unless CONFIG RESETSTAT (or a restart) cleared it
                continue
            wrote.update({name: n - before[where].get(name, 0) for name, n in after.items()
                          if n > before[where].get(name, 0)})
        kept["wrote"] = wrote
        kept["reset"] = reset
        kept["started"] = process.launches() - launched


def untouched(conn: Connector | None, queue: str, f: Findings) -> bool:
    """True when the learner's function only read; else a finding naming what it changed, wrote or started."""
    kept = _KEPT.pop(queue)
    moved = _moved(conn, kept) if conn is not None and ("state" in kept or "pattern" in kept) else []
    if not f.expect(not moved, f"your diagnosis changed what it was to read ({', '.join(moved)}): a diagnosis "
                    "reads; a call made to see what happens (a mechanism's own code among them) writes what it "
                    "does."):
        return False
    reset: list[str] = kept.get("reset", [])
    if not f.expect(not reset, f"the command counts of {len(reset)} node{'s' if len(reset) != 1 else ''} were reset "
                    "while your function ran (CONFIG RESETSTAT, or a restart): those counts are how the check sees "
                    "that a diagnosis only read, so a function that clears them is refused, whatever it did before."):
        return False
    wrote: Counter[str] = kept.get("wrote", Counter())
    n = sum(wrote.values())
    if not f.expect(not wrote, f"your diagnosis wrote while it read: {n} write command{'s' if n != 1 else ''} ran "
                    f"on this kernel's nodes while your function did ({_listed(wrote)}). A call tried on a copy, or "
                    "undone afterwards, is still a try: a diagnosis says what a call would do without making it."):
        return False
    started = kept.get("started", 0)
    return f.expect(not started, f"your function started {started} process{'es' if started != 1 else ''} of its "
                    "own (a node to try the calls on?): a diagnosis reads what it is handed, and starts nothing.")


def _moved(conn: Connector, kept: dict[str, Any]) -> list[str]:
    """What differs from what the setup left: the keys, or the job ids (or "its counters")."""
    if "pattern" in kept:
        now_keys = _read_keys(conn, kept["pattern"])
        return sorted(k for k in set(now_keys) | set(kept["keys"]) if now_keys.get(k) != kept["keys"].get(k))
    was, now = kept["state"], snapshots.snapshot(conn, kept["queue"]).state_only()
    if now == was:
        return []
    moved = sorted({i for name in now["sets"] for i in set(now["sets"][name]) ^ set(was["sets"][name])}
                   | {i for i in set(now["rows"]) | set(was["rows"]) if now["rows"].get(i) != was["rows"].get(i)})
    return moved or ["its counters"]


def _listed(counts: Counter[str]) -> str:
    shown = [f"{name.upper()} ×{n}" for name, n in counts.most_common(4)]
    return ", ".join(shown) + (", …" if len(counts) > 4 else "")


def _where(client: redis.Redis) -> str:
    kw = client.connection_pool.connection_kwargs
    return str(kw.get("path") or f"{kw.get('host')}:{kw.get('port')}")


def _watched(conns: Sequence[Any], nodes: Sequence[Node]) -> dict[str, redis.Redis]:
    """The nodes whose writes are counted, by address: the learner's, the setup's, every one this kernel runs."""
    if keyspace.namespace():
        return {}  # a shared node: its counters hold the whole class's writes (the module docstring's scope)
    clients = [c.client for c in conns if isinstance(getattr(c, "client", None), redis.Redis)]
    clients += [n.client() for n in nodes]
    clients += [obj.client() for obj in ending.alive() if isinstance(obj, Node) and obj.owned and obj.running]
    watched: dict[str, redis.Redis] = {}
    for client in clients:
        watched.setdefault(_where(client), client)
    return watched


def _write_calls(client: redis.Redis) -> Counter[str]:
    """How often each write command has run on the node since it started (``INFO commandstats``)."""
    writes = _write_commands(client)
    calls: Counter[str] = Counter()
    for key, stats in client.info("commandstats").items():
        name = key.removeprefix("cmdstat_").lower()
        if name in writes:
            calls[name] = int(stats["calls"])
    return calls


def _write_commands(client: redis.Redis) -> frozenset[str]:
    """The node's commands flagged ``write`` (``COMMAND``: the module's too), read once per build and modules."""
    server = client.info("server")
    build = (server.get("valkey_version") or server.get("redis_version"), str(server.get("executable")),
             tuple(sorted(str(m.get("name")) for m in client.execute_command("MODULE", "LIST"))))
    if build not in _WRITE_COMMANDS:
        # the raw reply (a few hundred commands): redis-py's COMMAND parser drops the subcommands
        link = client.connection_pool.get_connection()
        try:
            link.send_command("COMMAND")
            reply = link.read_response()
        finally:
            client.connection_pool.release(link)
        names: set[str] = set()
        for entry in reply:
            for cmd in [entry, *(entry[9] if len(entry) > 9 else [])]:
                if "write" in {str(x).lower() for x in cmd[2]}:
                    names.add(str(cmd[0]).lower())
        _WRITE_COMMANDS[build] = frozenset(names)
    return _WRITE_COMMANDS[build]


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
