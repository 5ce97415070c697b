"""What each executor costs the server per call, measured on a native node (notebook 04, bench_native).

The server times every command it runs, and ``INFO commandstats`` keeps each
command's call count and total microseconds. Nothing here resets them: a
measurement reads the counters before and after a window of calls and divides
the difference — the window's ``usec_per_call`` — so it leaves the node's
statistics as they were.

Each executor works on its own queue, the two of the same size. A leg's calls
are cut into windows, and the executors take turns, window by window (script,
native, native, script, …): both see their sets at the same sizes and the machine
in the same moments. Each executor's figure is the median of its windows. A
window the machine's other work got in the way of (the server descheduled in the
middle of a call adds milliseconds to it) is an outlier the median leaves out;
an average over all calls would keep it. Windows are whole runs of one executor:
interleaving call by call would hand each native command the caches the Lua VM
just cooled, a cost no node running one executor pays.

``EVALSHA`` is counted as one command, whatever the script runs inside; its inner
calls are counted too, each under its own name, which is how a window counts
them.

Python-only, no course counterpart: the course page describes the executors; this
measures them.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import jobs, scripts, transitions
from ..connector import Connector
from ..errors import WireError
from ..transitions import Call

#: each leg: the transition whose script and native command it measures
LEGS: dict[str, str] = {"claim": "claim", "complete": "complete", "fail": "retry"}
LEASE_MS = 60_000
RETRY_DELAY_MS = 60_000
BATCH = 100  # calls per pipelined round trip
WARM = 50  # calls per executor in a warm-up window, before the measured ones


@dataclass(frozen=True)
class LegCost:
    """One leg measured: both executors' server time per call, and the commands each ran inside."""

    leg: str
    calls: int  # measured calls of each executor, over all its windows
    script_us: float  # the median window's usec_per_call of EVALSHA running the script
    native_us: float  # the same for the native command
    script_inner: float  # other commands the server ran per call in the script's windows (its redis.calls)
    native_inner: float  # the same in the native command's windows
    script_windows: tuple[float, ...] = ()  # each window's usec_per_call, in the order they ran
    native_windows: tuple[float, ...] = ()

    @property
    def script(self) -> str:
        return "@" + transitions.SCRIPTS[LEGS[self.leg]]

    @property
    def native(self) -> str:
        return transitions.COMMANDS[LEGS[self.leg]]

    @property
    def ratio(self) -> float:
        """native ÷ script: below 1, the native command costs the server less."""
        return self.native_us / self.script_us

    @property
    def window_ratios(self) -> tuple[float, ...]:
        """native ÷ script for each pair of windows that ran side by side."""
        return tuple(n / s for s, n in zip(self.script_windows, self.native_windows, strict=True))


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


def _window(raw: Any, calls: Sequence[Sequence[Any]]) -> tuple[list[Any], float, float]:
    """Sends the calls: their replies, the command's usec_per_call, and other commands per call."""
    before = _stats(raw)
    replies = _pipelined(raw, calls)
    after = _stats(raw)
    # the counters' own reads are not part of the window
    delta = {k: c - before.get(k, (0, 0))[0] for k, (c, _) in after.items() if k != "info"}
    command, n = str(calls[0][0]).lower(), len(calls)
    if delta.get(command, 0) != n:
        raise RuntimeError(
            f"expected {n} calls of {calls[0][0]} in the window, the server counted {delta.get(command, 0)}: "
            "is another client using this node? measure on a node of your own"
        )
    usec = after[command][1] - before.get(command, (0, 0))[1]
    return replies, usec / n, sum(c for k, c in delta.items() if k != command) / n


class _Queue:
    """One queue the measurement fills and drains, with the call each executor makes on it."""

    def __init__(self, name: str, native: bool) -> None:
        self.name, self.native = name, native

    def _send(self, call: Call) -> list[Any]:
        """The call's words on this queue's executor: its native command, or EVALSHA of its script."""
        return call.words(self.native)

    def enqueue_calls(self, ids: Iterable[str]) -> list[list[Any]]:
        return [self._send(transitions.enqueue(self.name, i, "payload")) for i in ids]

    def claim(self, _: Any = None) -> list[Any]:
        return self._send(transitions.claim(self.name, LEASE_MS))

    def complete(self, claimed: Sequence[Any]) -> list[Any]:
        job_id, _payload, token = claimed
        # the page's five ARGV: not recorded
        return self._send(transitions.complete(self.name, job_id, token, "done"))

    def fail(self, claimed: Sequence[Any]) -> list[Any]:
        job_id, _payload, token = claimed
        return self._send(transitions.retry(self.name, job_id, token, "boom", RETRY_DELAY_MS, 5))


def _check(leg: str, replies: list[Any]) -> None:
    if leg == "claim" and not all(replies):
        raise RuntimeError("a claim came back empty: every enqueued job should have been claimable")
    if leg != "claim" and any(r != (1 if leg == "complete" else "scheduled") for r in replies):
        raise RuntimeError(f"a {leg} was refused: every token should still have been good")


def measure(
    conn: Connector,
    n: int = 1000,
    legs: Sequence[str] = ("claim", "complete"),
    windows: int = 5,
    prefix: str = "cost",
) -> list[LegCost]:
    """Each leg's server time per call on both executors: ``n`` calls each, in ``windows`` windows.

    ``conn`` is a wire 6 connector on a native node of your own (on a shared
    node, other students' calls would be counted too, and the call counts would
    not add up: that is refused). Two queues, ``<prefix>-script`` and
    ``<prefix>-native``, are filled with ``n`` jobs (plus a few to warm up),
    drained leg by leg, and dropped again; the warm-up calls (sockets, caches,
    the script cache) are not measured.
    """
    if n < 1 or windows < 1 or n % windows:
        raise ValueError(f"n must be a positive multiple of windows (at least 1 each), got n={n}, windows={windows}")
    unknown = [leg for leg in legs if leg not in LEGS]
    if unknown or not legs or legs[0] != "claim" or len(set(legs)) != len(legs):
        raise ValueError(f"legs must start with 'claim' and name each of {sorted(LEGS)} at most once, got {list(legs)}")
    if not conn.module_loaded():
        raise WireError("measuring the native executor needs the trafikey module loaded (a native node)")
    raw = conn.client
    for name in ("enqueue", "claim2", "complete", "retry"):
        raw.script_load(scripts.load(name).source)  # what the script windows' EVALSHA runs
    queues = [_Queue(f"{prefix}-script", False), _Queue(f"{prefix}-native", True)]
    for q in queues:
        jobs.drop(conn, q.name)
    size, waves = n // windows, iter(range(1000))

    def fill(q: _Queue) -> None:
        w = next(waves)
        _pipelined(raw, q.enqueue_calls(f"JOB{w:03d}{i:08d}" for i in range(WARM + n)))

    out: list[LegCost] = []
    try:
        held: dict[bool, list[Any]] = {}
        for i, leg in enumerate(legs):
            for q in queues:
                if leg == "claim":
                    fill(q)
                elif leg == "fail" and "complete" in legs[:i]:
                    # the completions settled every claimed job: claim a fresh wave to fail (not measured)
                    fill(q)
                    held[q.native] = _pipelined(raw, [q.claim() for _ in range(WARM + n)])
            make = {q.native: getattr(q, leg) for q in queues}
            source = {q.native: held.get(q.native, [None] * (WARM + n)) for q in queues}
            replies: dict[bool, list[Any]] = {}
            for q in queues:
                replies[q.native] = _pipelined(raw, [make[q.native](c) for c in source[q.native][:WARM]])
            figures: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for w in range(windows):
                # the executors take turns: script then native, native then script, …
                for q in queues if w % 2 == 0 else queues[::-1]:
                    part = source[q.native][WARM + w * size : WARM + (w + 1) * size]
                    got, us, inner = _window(raw, [make[q.native](c) for c in part])
                    replies[q.native] += got
                    figures[q.native].append((us, inner))
            for q in queues:
                _check(leg, replies[q.native])
            if leg == "claim":
                held = replies
            s, nat = figures[False], figures[True]
            out.append(
                LegCost(
                    leg=leg,
                    calls=n,
                    script_us=statistics.median(us for us, _ in s),
                    native_us=statistics.median(us for us, _ in nat),
                    script_inner=s[0][1],
                    native_inner=nat[0][1],
                    script_windows=tuple(us for us, _ in s),
                    native_windows=tuple(us for us, _ in nat),
                )
            )
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
