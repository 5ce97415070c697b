"""What each executor costs the server per call, measured on a native node (notebook 04, bench_native).

The server times every command it runs, and ``INFO commandstats`` keeps each
command's call count and total microseconds. Nothing here resets them: a
measurement reads the counters before and after a window of calls and divides
the difference, so it leaves the node's statistics as they were.

Each executor gets its own window of ``n`` calls on its own queue, the two
queues of the same size, one window right after the other (interleaving them call
by call would hand each native command the caches the Lua VM just cooled, a cost
no node running one executor pays). ``EVALSHA`` is counted as one command,
whatever the script runs inside; its inner calls are counted too, each under its
own name, which is how the windows count them.

Python-only, no course counterpart: the course page describes the executors; this
measures them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import jobs, scripts
from .connector import Connector
from .errors import WireError
from .keyspace import base, job_key, queue_key

#: each leg: the script and the native command that do the same transition
LEGS: dict[str, tuple[str, str]] = {
    "claim": ("claim2", "EMQ.CLAIM"),
    "complete": ("complete", "EMQ.COMPLETE"),
    "fail": ("retry", "EMQ.FAIL"),
}
LEASE_MS = 60_000
RETRY_DELAY_MS = 60_000
BATCH = 100  # calls per pipelined round trip
WARM = 50  # calls per executor in a warm-up window, before the measured ones


@dataclass(frozen=True)
class LegCost:
    """One leg measured: both executors' server time per call, and the commands each ran inside."""

    leg: str
    calls: int  # calls of each executor in the measured window
    script_us: float  # usec_per_call of EVALSHA running the script
    native_us: float  # usec_per_call of the native command
    script_inner: float  # other commands the server ran per call in the script's window (its redis.calls)
    native_inner: float  # the same in the native command's window

    @property
    def script(self) -> str:
        return "@" + LEGS[self.leg][0]

    @property
    def native(self) -> str:
        return LEGS[self.leg][1]

    @property
    def ratio(self) -> float:
        """native ÷ script: below 1, the native command costs the server less."""
        return self.native_us / self.script_us


def _stats(raw: Any) -> dict[str, tuple[int, int]]:
    """(calls, usec) of every command so far, by lowercase name (the server keeps a module's case)."""
    return {
        name.lower().removeprefix("cmdstat_"): (int(s["calls"]), int(s["usec"]))
        for name, s in raw.info("commandstats").items()
    }


def _pipelined(raw: Any, calls: Sequence[Sequence[Any]]) -> list[Any]:
    replies: list[Any] = []
    for i in range(0, len(calls), BATCH):
        pipe = raw.pipeline(transaction=False)
        for args in calls[i : i + BATCH]:
            pipe.execute_command(*args)
        replies += pipe.execute()
    return replies


def _window(raw: Any, calls: Sequence[Sequence[Any]]) -> tuple[list[Any], dict[str, tuple[int, int]]]:
    """Sends the calls; answers their replies and what each command name added to the counters."""
    before = _stats(raw)
    replies = _pipelined(raw, calls)
    after = _stats(raw)
    delta = {k: (c - before.get(k, (0, 0))[0], u - before.get(k, (0, 0))[1]) for k, (c, u) in after.items()}
    # the counters' own reads are not part of the window
    delta.pop("info", None)
    return replies, {k: v for k, v in delta.items() if v[0] > 0}


def _per_call(delta: dict[str, tuple[int, int]], command: str, n: int) -> float:
    calls, usec = delta.get(command.lower(), (0, 0))
    if calls != n:
        raise RuntimeError(
            f"expected {n} calls of {command} in the window, the server counted {calls}: "
            "is another client using this node? measure on a node of your own"
        )
    return usec / calls


def _inner(delta: dict[str, tuple[int, int]], command: str, n: int) -> float:
    """Calls of every other command during a window of one executor alone, per call."""
    return sum(c for name, (c, _) in delta.items() if name != command.lower()) / n


class _Queue:
    """One queue the measurement fills and drains, with the call each executor makes on it."""

    def __init__(self, name: str, native: bool, shas: dict[str, str]) -> None:
        self.name, self.native, self.shas = name, native, shas
        self.p = base(name)

    def _send(self, leg: str, keys: list[str], argv: list[Any]) -> list[Any]:
        script, command = LEGS[leg]
        if self.native:
            return [command, len(keys), *keys, *argv]
        return ["EVALSHA", self.shas[script], len(keys), *keys, *argv]

    def enqueue_calls(self, ids: Iterable[str]) -> list[list[Any]]:
        return [
            ["EVALSHA", self.shas["enqueue"], 2, queue_key(self.name, "pending"), job_key(self.name, i), i, "payload"]
            for i in ids
        ]

    def claim(self) -> list[Any]:
        keys = [queue_key(self.name, "pending"), queue_key(self.name, "active"), self.p]
        return self._send("claim", keys, [LEASE_MS])

    def complete(self, claimed: Sequence[Any]) -> list[Any]:
        job_id, _payload, token = claimed
        keys = [queue_key(self.name, "active"), job_key(self.name, job_id)]
        return self._send("complete", keys, [job_id, token, self.p, "", "done", "0"])

    def fail(self, claimed: Sequence[Any]) -> list[Any]:
        job_id, _payload, token = claimed
        sets = [queue_key(self.name, s) for s in ("active", "schedule", "dead")]
        argv = [job_id, token, RETRY_DELAY_MS, 5, "boom", self.p, "", "0"]
        return self._send("fail", [*sets, job_key(self.name, job_id)], argv)


def measure(
    conn: Connector, n: int = 1000, legs: Sequence[str] = ("claim", "complete"), rounds: int = 3, prefix: str = "cost"
) -> list[LegCost]:
    """Each leg's server time per call on both executors: the best of ``rounds`` rounds (see measure_round).

    Rounds alternate which executor goes first. The best is each executor's
    lowest figure: work on the same machine only ever adds time to a window.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    return best([measure_round(conn, n, legs, f"{prefix}-{r}", native_first=r % 2 == 1) for r in range(rounds)])


def best(rounds: Sequence[Sequence[LegCost]]) -> list[LegCost]:
    """Each leg's lowest figure per executor over rounds of the same legs."""
    out = []
    for legs in zip(*rounds, strict=True):
        first = legs[0]
        out.append(
            LegCost(
                leg=first.leg,
                calls=first.calls,
                script_us=min(c.script_us for c in legs),
                native_us=min(c.native_us for c in legs),
                script_inner=first.script_inner,
                native_inner=first.native_inner,
            )
        )
    return out


def measure_round(
    conn: Connector,
    n: int = 1000,
    legs: Sequence[str] = ("claim", "complete"),
    prefix: str = "cost",
    native_first: bool = False,
) -> list[LegCost]:
    """One round: each leg's server time per call, a window of ``n`` calls for each executor.

    ``conn`` is a wire 6 connector on a native node of your own (on a shared
    node, other students' calls would be counted too, and the call counts would
    not add up: that is refused). Two queues, ``<prefix>-script`` and
    ``<prefix>-native``, are filled with ``n`` jobs (plus a few to warm up),
    drained leg by leg, and dropped again. ``native_first`` swaps the order of
    the two windows of each leg.
    """
    if n < 1:
        raise ValueError("n must be at least 1 call per executor")
    unknown = [leg for leg in legs if leg not in LEGS]
    if unknown or not legs or legs[0] != "claim" or len(set(legs)) != len(legs):
        raise ValueError(f"legs must start with 'claim' and name each of {sorted(LEGS)} at most once, got {list(legs)}")
    if not conn.module_loaded():
        raise WireError("measuring the native executor needs the trafikey module loaded (a native node)")
    raw = conn.client
    shas = {name: raw.script_load(scripts.load(name).source) for name in ("enqueue", "claim2", "complete", "retry")}
    queues = [_Queue(f"{prefix}-script", False, shas), _Queue(f"{prefix}-native", True, shas)]
    if native_first:
        queues.reverse()
    for q in queues:
        jobs.drop(conn, q.name)
    waves = iter(range(1000))

    def wave() -> list[str]:
        """Ids for a wave of jobs, in the order claims pop them."""
        w = next(waves)
        return [f"JOB{w:03d}{i:08d}" for i in range(WARM + n)]

    def claims(q: _Queue) -> list[Any]:
        """A fresh wave of jobs, enqueued and claimed (not measured): what a settle leg settles."""
        _pipelined(raw, q.enqueue_calls(wave()))
        return _pipelined(raw, [q.claim() for _ in range(WARM + n)])

    out: list[LegCost] = []
    try:
        held: dict[bool, list[Any]] = {}
        for i, leg in enumerate(legs):
            figures: dict[bool, tuple[float, float]] = {}
            for q in queues:
                if leg == "claim":
                    _pipelined(raw, q.enqueue_calls(wave()))
                    calls = [q.claim() for _ in range(WARM + n)]
                else:
                    if leg == "fail" and "complete" in legs[:i]:
                        held[q.native] = claims(q)  # the completions settled every claimed job
                    calls = [getattr(q, leg)(c) for c in held[q.native]]
                # a warm-up window (sockets, caches, the script cache), then the measured one
                warm = _pipelined(raw, calls[:WARM])
                replies, delta = _window(raw, calls[WARM:])
                command = calls[0][0]
                figures[q.native] = (_per_call(delta, command, n), _inner(delta, command, n))
                if leg == "claim":
                    if not all(warm + replies):
                        raise RuntimeError("a claim came back empty: every enqueued job should have been claimable")
                    held[q.native] = warm + replies
                elif any(r != (1 if leg == "complete" else "scheduled") for r in warm + replies):
                    raise RuntimeError(f"a {leg} was refused: every token should still have been good")
            out.append(LegCost(leg, n, figures[False][0], figures[True][0], figures[False][1], figures[True][1]))
    finally:
        for q in queues:
            jobs.drop(conn, q.name)
    return out


def report(costs: Sequence[LegCost]) -> str:
    """The figures side by side: a header, then one line a leg (µs: the server's time per call)."""
    head = ("leg", "script", "µs/call", "calls in", "native", "µs/call", "calls in", "native/script")
    lines = ["{:<10}{:<11}{:>9}{:>10}   {:<14}{:>8}{:>10}{:>15}".format(*head)]
    for c in costs:
        lines.append(
            f"{c.leg:<10}{c.script:<11}{c.script_us:>6.2f} µs{c.script_inner:>10.0f}   "
            f"{c.native:<14}{c.native_us:>5.2f} µs{c.native_inner:>10.0f}{c.ratio:>14.2f}×"
        )
    return "\n".join(lines)
