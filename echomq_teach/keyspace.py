"""The keyspace: every key of queue ``q`` shares the hashtag ``{q}`` (EchoMQ.Keyspace).

One queue lives in one cluster slot; the base is ``emq:{q}:``.
"""

from __future__ import annotations

import os
import re

from redis.crc import key_slot

from .errors import BadInput

#: The node's wire brand lives outside every queue's slot.
VERSION_KEY = "{emq}:version"
#: On a cluster the brand is the queue's own, in the queue's slot (docs/cluster.md).
QUEUE_BRAND_PREFIX = "emq:version:"
BRAND_WIRE4 = "echomq:4.0.0"
BRAND_WIRE6 = "echomq:6.0.0"

#: The four sorted sets of the state machine, in the order the course names them.
SETS = ("pending", "active", "schedule", "dead")

MAX_QUEUE_BYTES = 200
# one rule for a key segment (a queue name, a job id), the same bytes the native module refuses:
# braces, colons, the space and the ASCII control characters (tab, newline and the rest).
# Other characters, Unicode spaces among them, are allowed on both executors.
_FORBIDDEN = re.compile(r"[{}:\x00-\x20\x7f]")


def forbidden_in_key(segment: str) -> str | None:
    """The first character of ``segment`` a key segment may not hold, or None."""
    bad = _FORBIDDEN.search(segment)
    return bad.group() if bad else None


def check_queue(queue: object) -> str:
    """Refuse a queue name that would break the hashtag or the key layout."""
    if not isinstance(queue, str):
        raise BadInput(f"queue name must be a str, got {type(queue).__name__}")
    if queue == "":
        raise BadInput("queue name is empty")
    size = len(queue.encode("utf-8"))
    if size > MAX_QUEUE_BYTES:
        raise BadInput(f"queue name is {size} bytes; at most {MAX_QUEUE_BYTES} are allowed")
    bad = forbidden_in_key(queue)
    if bad:
        raise BadInput(
            f"queue name {queue!r} holds {bad!r}: braces, colons, spaces and control characters "
            "would break the {q} hashtag or the key layout"
        )
    return queue


def namespace() -> str:
    """A classroom student's namespace (``$ECHOMQ_NAMESPACE``), or "" outside a shared node."""
    return os.environ.get("ECHOMQ_NAMESPACE", "")


def namespaced(queue: str) -> str:
    """The queue as the node knows it: ``<ns>.q`` under a namespace, so its keys stay ``emq:{<ns>.q}:…``.

    The namespace goes inside the hashtag, so one queue still lives in one slot;
    a name that already carries the prefix is left as it is.
    """
    q = check_queue(queue)
    ns = namespace()
    if not ns or q.startswith(ns + "."):
        return q
    return check_queue(f"{ns}.{q}")


def base(queue: str) -> str:
    """``emq:{q}:`` — the root every key of the queue starts with (Keyspace.queue_key(q, ""))."""
    return f"emq:{{{namespaced(queue)}}}:"


def queue_key(queue: str, suffix: str) -> str:
    """``emq:{q}:<suffix>`` — the counterpart of EchoMQ.Keyspace.queue_key/2."""
    return base(queue) + suffix


def job_key(queue: str, job_id: str, suffix: str = "") -> str:
    """``emq:{q}:job:<id>`` and, with a suffix, its flow keys (``:dependencies`` …)."""
    return queue_key(queue, f"job:{job_id}") + (f":{suffix}" if suffix else "")


def queue_of(key: str) -> str:
    """The queue name inside a key's hashtag."""
    start, end = key.find("{"), key.find("}")
    if start < 0 or end < start:
        raise BadInput(f"key {key!r} has no {{q}} hashtag")
    return key[start + 1 : end]


def brand_key(queue: str) -> str:
    """``emq:version:{q}``: a queue's brand on a cluster, in its slot but outside its base (``@drop`` keeps it)."""
    return f"{QUEUE_BRAND_PREFIX}{{{namespaced(queue)}}}"


def slot(key_or_queue: str) -> int:
    """The cluster slot (0..16383) of a key, or of a queue (the slot of its hashtag): CRC16 mod 16384."""
    key = key_or_queue if "{" in key_or_queue else base(key_or_queue)
    return key_slot(key.encode("utf-8", "surrogateescape"))
