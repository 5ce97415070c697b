"""Helpers the native-executor tests share: digests, cross-node comparisons, forced lapses.

A scripted node and a native node never share a clock, so a comparison between
them keeps everything but the scores that are times (lease deadlines, run-ats,
times of death). Tests that must compare those scores pin them first with a
raw ``ZADD XX`` to a small constant below ``FORCED_MAX``, identically on both nodes.
"""

from __future__ import annotations

import time
from itertools import combinations
from pathlib import Path
from typing import Any

from echomq_teach import snapshots
from echomq_teach.connector import Connector
from echomq_teach.keyspace import queue_key

# scores below this were written by a test (a forced lapse, a forced due date), not by a clock
FORCED_MAX = 1_000_000
TIMED_SETS = ("active", "schedule", "dead")


def digest(client: Any) -> str:
    """``DEBUG DIGEST`` of the whole dataset: equal digests, equal data."""
    return client.execute_command("DEBUG", "DIGEST")


def run_id(client: Any) -> str:
    return client.info("server")["run_id"]


def force(client: Any, queue: str, set_name: str, job_id: str, score: int) -> int:
    """Pin a member's score into the past (a lapsed lease, a due run-at); XX never adds a member."""
    assert score < FORCED_MAX
    return client.zadd(queue_key(queue, set_name), {job_id: score}, xx=True)


def comparable(snap: snapshots.Snapshot) -> dict[str, Any]:
    """A snapshot without the clock and without the native row's own field (lease_epoch)."""
    rows = {i: {k: v for k, v in r.items() if k != "lease_epoch"} for i, r in snap.rows.items()}
    sets: dict[str, Any] = {"pending": snap.sets["pending"]}
    for name in TIMED_SETS:
        members = snap.sets[name]
        # membership always; a score only where a test pinned it (equal on both nodes by construction)
        sets[name] = sorted(members)
        sets[name + "_forced"] = {m: s for m, s in members.items() if s < FORCED_MAX}
    return {
        "paused": snap.paused,
        "sets": sets,
        "rows": rows,
        "counters": snap.counters,
        "completed": snap.completed,
        "stream_len": snap.stream_len,
        "flow_hashes": snap.flow_hashes,
    }


def order_conflicts(a: dict[str, int], b: dict[str, int]) -> list[tuple[str, str]]:
    """Pairs that two nodes rank strictly the opposite way by score (ties on either side are fine).

    The same transitions in the same sequence give non-decreasing times on both
    nodes, so a strict inversion means the executors disagree on order.
    """
    out = []
    for x, y in combinations(sorted(set(a) & set(b)), 2):
        if (a[x] - a[y]) * (b[x] - b[y]) < 0:
            out.append((x, y))
    return out


def stream(client: Any, queue: str) -> list[dict[str, str]]:
    """The completions stream's entries without their ids (which are times)."""
    return [fields for _, fields in client.xrange(queue_key(queue, "stream:completions"))]


def assert_same_end_state(scripted: Connector, native: Connector, queue: str) -> None:
    """Equal end states except the documented differences (lease_epoch, clock scores)."""
    a, b = snapshots.snapshot(scripted, queue), snapshots.snapshot(native, queue)
    # plain asserts are not rewritten outside test modules: the messages say what differs
    ca, cb = comparable(a), comparable(b)
    assert ca == cb, "end states differ:\n" + "\n".join(
        f"  {k}: scripted {ca[k]!r}\n  {' ' * len(k)}  native   {cb[k]!r}" for k in ca if ca[k] != cb[k]
    )
    for name in TIMED_SETS:
        conflicts = order_conflicts(a.sets[name], b.sets[name])
        assert not conflicts, f"{name} ordered differently: {conflicts}"
    sa, sb = stream(scripted.client, queue), stream(native.client, queue)
    assert sa == sb, f"completions streams differ: scripted {sa!r}, native {sb!r}"
    # the native executor's one extra field is the server's run_id, and only on the native node
    rid = run_id(native.client)
    epochs = {i: r["lease_epoch"] for i, r in b.rows.items() if r.get("lease_epoch", rid) != rid}
    assert not epochs, f"lease_epoch is not the run_id {rid}: {epochs}"
    assert not any("lease_epoch" in r for r in a.rows.values()), "a scripted row has lease_epoch"


def aof_commands(data_dir: Path) -> list[list[str]]:
    """Every command in a durable node's AOF increments (``appenddirname aof``), in order, as words.

    The AOF is the replication stream a restart replays: what is in it is what a
    replica is sent.
    """
    out: list[list[str]] = []
    for path in sorted((data_dir / "aof").glob("*.incr.aof")):
        data, i = path.read_bytes(), 0
        while i < len(data):
            assert data[i : i + 1] == b"*", f"{path.name}: not a command at byte {i}"
            end = data.index(b"\r\n", i)
            count, words = int(data[i + 1 : end]), []
            i = end + 2
            for _ in range(count):
                end = data.index(b"\r\n", i)
                size = int(data[i + 1 : end])
                words.append(data[end + 2 : end + 2 + size].decode())
                i = end + 2 + size + 2
            out.append(words)
    return out


def transactions(commands: list[list[str]]) -> list[list[list[str]]]:
    """The MULTI … EXEC blocks among commands, each without its MULTI and EXEC; a lone command is refused."""
    blocks: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for words in commands:
        name = words[0].upper()
        if name == "SELECT":
            continue
        if name == "MULTI":
            current = []
        elif name == "EXEC":
            assert current is not None, "EXEC without MULTI"
            blocks.append(current)
            current = None
        else:
            assert current is not None, f"{words} outside a MULTI/EXEC"
            current.append(words)
    assert current is None, "a MULTI without its EXEC"
    return blocks


def wait_replicated(primary: Any, replica: Any, timeout_s: float = 15.0) -> None:
    """Until the replica has applied everything the primary has sent (bounded, no timed assertion)."""
    deadline = time.monotonic() + timeout_s
    want = primary.info("replication")["master_repl_offset"]
    while time.monotonic() < deadline:
        info = replica.info("replication")
        if info.get("master_link_status") == "up" and info.get("slave_repl_offset", -1) >= want:
            return
        time.sleep(0.02)
    raise AssertionError(f"replica did not reach offset {want}: {replica.info('replication')}")


__all__ = [
    "FORCED_MAX",
    "aof_commands",
    "assert_same_end_state",
    "comparable",
    "digest",
    "force",
    "order_conflicts",
    "run_id",
    "stream",
    "transactions",
    "wait_replicated",
]
