"""A cluster-mode node alone takes every slot: a classroom's node, where a queue's hashtag names one slot."""

from __future__ import annotations

import time

import redis

from ..errors import NodeError

#: every slot of a cluster-mode node
SLOTS = (0, 16383)


def claim_slots(admin: redis.Redis, timeout: float = 10.0) -> bool:
    """On a cluster-mode node that serves no slot yet, take all 16384; answers True when it did.

    A classroom node runs in cluster mode alone: then ``SCAN MATCH emq:{q}:…`` (the
    hashtag names one slot) visits only that queue's slot, so ``@snapshot`` and
    ``@drop`` cost what one queue holds, not what the whole class holds.
    """
    if admin.info("cluster").get("cluster_enabled") != 1:
        return False
    if _assigned(admin):
        return False
    admin.execute_command("CLUSTER", "ADDSLOTSRANGE", *SLOTS)
    deadline = time.monotonic() + timeout
    while _state(admin) != "ok":
        if time.monotonic() > deadline:
            raise NodeError("the classroom node took every slot but its cluster state did not turn ok")
        time.sleep(0.05)
    return True


def _cluster_info(admin: redis.Redis) -> dict[str, str]:
    text = admin.execute_command("CLUSTER", "INFO")
    if isinstance(text, dict):
        return {str(k): str(v) for k, v in text.items()}
    return dict(line.split(":", 1) for line in str(text).splitlines() if ":" in line)


def _assigned(admin: redis.Redis) -> int:
    return int(_cluster_info(admin).get("cluster_slots_assigned", "0"))


def _state(admin: redis.Redis) -> str:
    return _cluster_info(admin).get("cluster_state", "")
