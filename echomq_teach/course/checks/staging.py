"""How a check's setup stages its stories so that nothing but the queue's own state tells them apart.

A setup deals its stories to ids at random (``dealt``), from a seed the learner does not choose (``shuffled``):
an id's place among the others, or the order a function is handed them in, says nothing about what happened
to it. ``claim_this`` claims one named job whatever else waits in pending, so a story can run in any order.
"""

from __future__ import annotations

import random
import secrets
from typing import TypeVar

from ... import ids, jobs, keyspace
from ...connector import Connector

T = TypeVar("T")


def chance() -> random.Random:
    """A generator seeded afresh from the system's randomness: each check deals its own way."""
    return random.Random(secrets.randbits(64))


def shuffled(items: list[T], rng: random.Random) -> list[T]:
    """``items`` in a random order (a new list)."""
    out = list(items)
    rng.shuffle(out)
    return out


def dealt(n: int, rng: random.Random) -> list[str]:
    """``n`` freshly minted ids in a random order: the k-th story gets an id whose rank among them is random."""
    return shuffled([ids.mint() for _ in range(n)], rng)


def claim_this(conn: Connector, queue: str, job_id: str, lease_ms: int) -> jobs.Claimed:
    """Claim ``job_id`` itself: whatever else waits in pending steps aside for this one claim, then comes back.

    Every pending score is 0, so the set put back is the set that was there.
    """
    pending = keyspace.queue_key(queue, "pending")
    others = [i for i in conn.call("ZRANGE", pending, 0, -1) if i != job_id]
    if others:
        conn.call("ZREM", pending, *others)
    try:
        c = jobs.claim(conn, queue, lease_ms)
    finally:
        if others:
            conn.call("ZADD", pending, *[x for i in others for x in (0, i)])
    if c is None or c.id != job_id:
        raise RuntimeError(f"{queue}: the claim handed out {c!r}, not {job_id}")
    return c
