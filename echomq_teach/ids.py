"""Job ids (D-2 in docs/decisions.md): ``JOB`` + 11 base62 characters, minted host-side.

Seven characters carry the millisecond clock and four a counter within that
millisecond, both in ASCII-ordered base62 (``0-9A-Za-z``), fixed width. Within
one process, lexicographic order is mint order, even inside one millisecond,
so the pending set (every score 0) hands out the oldest mint first.
"""

from __future__ import annotations

import os
import random
import threading
import time

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
PREFIX = "JOB"
CLOCK_WIDTH = 7
COUNTER_WIDTH = 4
_COUNTER_SPAN = 62**COUNTER_WIDTH

_lock = threading.Lock()
_last_ms = -1
_counter = 0
_pid = os.getpid()


def _b62(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 62)
        out.append(ALPHABET[r])
    if n:
        raise OverflowError("value does not fit the id width")
    return "".join(reversed(out))


def _start() -> int:
    # A random start in the lower half keeps two processes minting in the same
    # millisecond apart, and leaves room for millions of mints before a carry.
    return random.randrange(_COUNTER_SPAN // 2)


def mint() -> str:
    """A fresh, fixed-width id whose order is this process's mint order."""
    global _last_ms, _counter, _pid
    with _lock:
        if os.getpid() != _pid:  # a forked child must not repeat its parent's ids
            _pid, _last_ms = os.getpid(), -1
        now = time.time_ns() // 1_000_000
        if now <= _last_ms:
            # the same millisecond, or the clock stepped back: stay on the last one
            _counter += 1
            if _counter >= _COUNTER_SPAN:
                _last_ms, _counter = _last_ms + 1, _start()
        else:
            _last_ms, _counter = now, _start()
        return PREFIX + _b62(_last_ms, CLOCK_WIDTH) + _b62(_counter, COUNTER_WIDTH)


def is_job_id(value: object) -> bool:
    """True for a string shaped like a minted id."""
    return (
        isinstance(value, str)
        and len(value) == len(PREFIX) + CLOCK_WIDTH + COUNTER_WIDTH
        and value.startswith(PREFIX)
        and all(c in ALPHABET for c in value[len(PREFIX) :])
    )


def id_at(ms: int, counter: int = 0) -> str:
    """The id a producer whose clock reads ``ms`` mints first in that millisecond (counter ``counter``).

    For teaching: a second producer, on another machine with a slower clock, mints ids that sort
    before this process's, though it enqueued later. Mint order holds within one process only.
    """
    return PREFIX + _b62(ms, CLOCK_WIDTH) + _b62(counter, COUNTER_WIDTH)
