"""09.2 · the learner's design for a short WAIT, judged: probes on a replica that confirms nothing, then one
failover per seed, on a cluster of the judge's own (never the learner's notebook cluster).

The spec is a design, not a parameter: the judge fixes ``WAIT 1 200`` for every process, and the learner writes
what a worker does with WAIT's answer when fewer replicas confirmed a write than it asked
(``cluster_connector.ShortWait``): tell the caller the primary's reply, send the write again, or raise
``Unconfirmed`` (the caller learns nothing: an unknown outcome). The probes are deterministic, one for every kind
of write the spec names (an enqueue, a completion, a retry that buries its job, a sweep that buries one, a
promotion, a claim), each on a fresh queue of a shard whose replica is held (``CLIENT PAUSE … WRITE``: it applies
nothing, so WAIT confirms 0 of 1). Held for good (a replica down), no caller may be told "done", no write may
wait for ever, and a claim may not be sent twice (a second claim hands out a second job, where a settle's token,
an enqueue's id, a sweep or a promotion with nothing left to do refuse or do nothing). Then, but for the claim,
the replica only behind: it is let go and has caught up when the design is called, and a write that could be
sent again with no risk of applying twice must not be left an unknown outcome, nor answered with its second
send's refusal. Then each seed draws the shard, how long the replica lags before the primary's SIGKILL and when
the hold comes, and the checker judges the run against what the promoted replica holds.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ... import jobs, keyspace, stalled
from ...cluster_connector import Unconfirmed
from ...lab.failover import Failover, failover, hold_replication
from ...lab.worker_process import handler_source
from ...nodes.cluster import start_cluster
from ..registry import Findings
from .frame import draw_seeds, over_seeds


@dataclass(frozen=True)
class Schedule:
    """One seed's failover: the shard hit, how long the replica lags before the kill, when the hold comes."""

    seed: int
    shard: int
    window_s: float
    start_after: float

    @property
    def hold_ms(self) -> int:
        # the hold outlasts the kill: the replica applies nothing of the window before its primary dies
        return int(self.window_s * 1000) + 1_000

    def __str__(self) -> str:
        return (f"seed {self.seed} (shard {self.shard}, the replica held back {self.window_s:.2f} s before the "
                f"primary's kill, {self.start_after:.0%} of the jobs settled)")


class FAILOVER:
    """The judged runs of 09.2 (and the run of 09.1's prediction), per seed: a small run, a burst in the window,
    one primary killed."""

    JOBS = 60
    WORKERS = 2
    BURST = 10
    SEEDS = 2
    #: every process of a judged run sends WAIT 1 200 after each write: a window's writes come back short
    WAIT = (1, 200)
    #: the replica lags 0.4 … MAX_WINDOW_S before the kill: longer than WAIT's timeout, every time
    MAX_WINDOW_S = 1.2
    TIMEOUT_S = 40.0
    #: how long a probe's write may take while its replica confirms nothing (several of WAIT's timeouts)
    PROBE_S = 2.0

    @staticmethod
    def schedule(seed: int, shards: int = 3, longest: bool = False) -> Schedule:
        rng = random.Random(seed)
        window = FAILOVER.MAX_WINDOW_S if longest else round(rng.uniform(0.4, FAILOVER.MAX_WINDOW_S), 2)
        return Schedule(seed, seed % shards, window, round(rng.uniform(0.1, 0.4), 2))


def _design_of(answer: Any, f: Findings) -> Callable[..., Any] | None:
    """The learner's ``on_short_wait``, or None (with a finding) when it is none the workers can import."""
    if not callable(answer) or isinstance(answer, type):
        f.expect(False, "return your design, a function on_short_wait(short) (the function itself, not a call of "
                 f"it); got {answer!r}.")
        return None
    try:
        handler_source(answer)
    except Exception as exc:  # noqa: BLE001 - BadInput naming why no worker can import it
        f.expect(False, f"{exc}.")
        return None
    return answer


def _bounded(call: Callable[[], Any], seconds: float) -> tuple[str, Any, threading.Thread]:
    """``call()`` in a thread: ("returned", value), ("raised", the exception) or ("running", None) after ``seconds``."""
    out: list[tuple[str, Any]] = []

    def run() -> None:
        try:
            out.append(("returned", call()))
        except BaseException as exc:  # noqa: BLE001 - what the design made of the write: judged by the caller
            out.append(("raised", exc))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return (*out[0], t) if out else ("running", None, t)


@dataclass(frozen=True)
class Probe:
    """One kind of write the spec names, probed on a shard whose replica is held: how to bring the queue to the
    state before it (through a connector the replica confirms), the write itself, and who its caller is."""

    transition: str
    #: the write as a finding names it
    noun: str
    #: the write's caller, what it is told when told "done", and what a failover does then to a write only the
    #: primary held
    caller: str
    told: str
    lost: str
    #: what an unknown outcome costs this caller
    price: str
    set_up: Callable[[Any, str], Any]
    write: Callable[[Any, str, Any], Any]


def _held_twice(sure: Any, queue: str) -> Any:
    """A job whose lease lapsed once already (a sweep counted it) and lapses again: the next sweep buries it."""
    jobs.enqueue(sure, queue, "a job that stalls")
    for lapse in (1, 2):
        held = jobs.claim(sure, queue, 50)
        assert held is not None
        time.sleep(0.12)
        if lapse == 1:
            stalled.check(sure, queue, max_stalled=1)  # counted: the row's stalled is 1
    return held


def _due(sure: Any, queue: str) -> Any:
    """A job on the schedule whose time has come: the next promote moves it to pending."""
    jobs.enqueue(sure, queue, "a job retried later")
    held = jobs.claim(sure, queue, 30_000)
    assert held is not None
    jobs.retry(sure, queue, held.id, held.attempts, "try again later", 50, 5)
    time.sleep(0.12)
    return held


def _claimed(sure: Any, queue: str) -> Any:
    jobs.enqueue(sure, queue, "a job in hand")
    held = jobs.claim(sure, queue, 30_000)
    assert held is not None
    return held


def _pending(sure: Any, queue: str) -> None:
    for i in range(4):
        jobs.enqueue(sure, queue, f"probe job {i}")


_WORKER_PRICE = ("the worker cannot tell whether its job ended, and the history counts an unknown outcome where "
                 "there was none")
_RUNS_AGAIN = "a failover brings the job back in active, its lease lapses, and "

PROBES = {
    "enqueue": Probe(
        "enqueue", "an enqueue", "producer", "its job is stored",
        "a failover now loses a job its producer was told is stored",
        "the producer cannot tell a stored job from a lost one: it must send the job again, or give up on one the "
        "queue holds", _pending, lambda c, q, _: jobs.enqueue(c, q, "the probe's write")),
    "complete": Probe(
        "complete", "a completion", "worker", "its job is completed",
        _RUNS_AGAIN + "it runs and completes a second time",
        _WORKER_PRICE, _claimed, lambda c, q, held: jobs.complete(c, q, held.id, held.attempts, "done")),
    "retry": Probe(
        "retry", "a retry", "worker", "its job is buried in dead (its last attempt failed)",
        _RUNS_AGAIN + "a job whose end was reported runs again", _WORKER_PRICE, _claimed,
        lambda c, q, held: jobs.retry(c, q, held.id, held.attempts, "boom", 1_000, 1)),
    "sweep": Probe(
        "sweep", "a sweep", "sweeper", "it buried the job that stalled past its cap",
        "a failover brings the buried job back in active, and a job whose end was reported runs again",
        "the sweeper cannot tell which jobs it put back or buried", _held_twice,
        lambda c, q, _: stalled.check(c, q, max_stalled=1)),
    "promote": Probe(
        "promote", "a promotion", "promoter", "it moved the due job to pending",
        "a failover puts the job back on the schedule: the promoter was told of a move that, on the new primary, "
        "never happened", "the promoter cannot tell which jobs it moved", _due, lambda c, q, _: jobs.promote(c, q)),
    "claim": Probe(
        "claim", "a claim", "worker", "it holds the job",
        "a failover puts the job back in pending, and a second worker runs it beside the first: one job handed out "
        "twice", "", _pending, lambda c, q, _: jobs.claim(c, q, 30_000)),
}
#: per kind of write, the probe with the replica held for good ("down"), then with a replica only behind (it
#: catches up as the design is called); a claim is probed down only, since nothing tells the two apart before a
#: second send, and a second claim is never safe
ORDER = ("enqueue", "complete", "retry", "sweep", "promote", "claim")


def _caught_up(primary: Any, replica: Any, timeout_s: float = 10.0) -> None:
    """Until the replica has applied everything its primary has sent (bounded)."""
    p, r = primary.client(), replica.client()
    try:
        target = int(p.info("replication")["master_repl_offset"])
        deadline = time.monotonic() + timeout_s
        while int(r.info("replication").get("slave_repl_offset", -1)) < target and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        p.close()
        r.close()


def _unpause(replica: Any) -> None:
    c = replica.client()
    try:
        c.execute_command("CLIENT", "UNPAUSE")
    finally:
        c.close()


def _shown(reply: Any) -> str:
    """A reply as a finding shows it: a refusal by its words."""
    return f"the refusal {str(reply)!r}" if isinstance(reply, Exception) else repr(reply)


def _said(probe: Probe, behind: bool) -> str:
    held = ("its replica only behind: it had caught up by the time your design was called" if behind else
            "the replica held: it applied nothing, as a replica that is down or far behind")
    return f"{probe.noun} whose WAIT 1 200 confirmed 0 of 1 replicas ({held})"


def _probe_one(cluster: Any, design: Callable[..., Any], probe: Probe, behind: bool, f: Findings) -> bool:
    """One write through the design while the replica confirms nothing; False with a finding naming what went
    wrong."""
    queue = cluster.queue_on(0, f"judge-{'behind' if behind else 'down'}-{probe.transition}")
    primary = cluster.primary_of(queue)
    replica = cluster.replica_of(primary)
    seen: list[tuple[Any, Any]] = []  # (the first send's reply, what the design answered)

    def watched(short: Any) -> Any:
        if behind:
            _unpause(replica)
            _caught_up(primary, replica)
        out = design(short)
        seen.append((short.reply, out))
        return out

    waited = cluster.connector(wait=FAILOVER.WAIT)
    waited.on_short_wait = watched
    sure = cluster.connector(wait=(1, 5_000))  # the probe's own set-up, confirmed by the replica before the hold
    said = _said(probe, behind)
    try:
        jobs.drop(sure, queue)
        state = probe.set_up(sure, queue)
        before = int(sure.call("ZCARD", keyspace.queue_key(queue, "pending")))
        hold_replication(replica, int(FAILOVER.PROBE_S * 3_000) + 2_000)
        how, value, thread = _bounded(lambda: probe.write(waited, queue, state), FAILOVER.PROBE_S)
        if how == "running":
            return f.expect(False, f"{said}: your design was still waiting {FAILOVER.PROBE_S:.0f} s later. A shard "
                            "whose replica is down never confirms: a design that waits until one does holds its "
                            f"{probe.caller}, and every caller behind it, for ever.")
        if probe.transition == "claim":
            thread.join(FAILOVER.PROBE_S * 2)
            taken = before - int(sure.call("ZCARD", keyspace.queue_key(queue, "pending")))
            if not f.expect(taken <= 1, f"{said}: your design sent it again, and the second claim handed out "
                            f"another job (one claim took {taken} jobs out of pending): nobody holds that job, "
                            "and it waits out a lease before anyone runs it."):
                return False
        if how == "raised" and not isinstance(value, Unconfirmed):
            return f.expect(False, f"{said}: your design raised {type(value).__name__}: {value}. No caller reads "
                            "that as an unknown outcome (the spec's error for one is Unconfirmed): the "
                            f"{probe.caller} fails on it instead.")
        if not behind:
            return f.expect(how == "raised", f"{said}: your design told the {probe.caller} {probe.told} (it "
                            f"answered {value!r}). Only the primary holds that write: {probe.lost}.")
        if how == "raised":
            return f.expect(False, f"{said}: your design left the {probe.caller} an unknown outcome, though the "
                            "write was safe on the replica a moment later, and the design could have learned so "
                            f"with no risk of applying it twice. An unknown outcome has a price: {probe.price}.")
        first, told = seen[-1] if seen else (None, None)
        return f.expect(told == first, f"{said}: your design told the {probe.caller} {_shown(told)}, the answer of "
                        f"a later send of the write, not the first send's {_shown(first)}, which is what happened.")
    finally:
        _unpause(replica)
        waited.close()
        sure.close()


def _probe(cluster: Any, design: Callable[..., Any], f: Findings) -> bool:
    """The design on every kind of write the spec names, each while its replica confirms nothing: held for good,
    then (but a claim) only behind. False with the first finding."""
    return all(_probe_one(cluster, design, PROBES[k], False, f)
               and (k == "claim" or _probe_one(cluster, design, PROBES[k], True, f)) for k in ORDER)


def _counterexample(fo: Failover) -> str:
    """The checker's first finding, and which of the window's writes it names."""
    r = fo.report
    first = r.findings[0]
    shown = [o for o in first.ops if o.at != "note"][:6]
    t0 = min((o.sent for o in first.ops), default=0.0)
    inside = " (a call about it was answered inside the window the replica held back)" if fo.in_window(first) else ""
    return "\n".join([f"{first.kind.replace('_', ' ')}: {first.job} — {first.detail}{inside}",
                      *[f"    {o.describe(t0)}" for o in shown]])


def _one_seed(cluster: Any, design: Callable[..., Any] | None, sched: Schedule, f: Findings,
              wait: tuple[int, int] | None = FAILOVER.WAIT) -> bool:
    queue = cluster.queue_on(sched.shard, f"judge{sched.seed}")
    out = failover(cluster, {queue: wait}, jobs_n=FAILOVER.JOBS, workers=FAILOVER.WORKERS, hold_ms=sched.hold_ms,
                   window_s=sched.window_s, burst=FAILOVER.BURST, start_after=sched.start_after,
                   timeout=FAILOVER.TIMEOUT_S, on_short_wait=design)
    fo = out[queue]
    r = fo.report
    if not r.valid:
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in r.counts().items() if n)
        short = (f" {fo.wait_short} writes came back from a WAIT that timed out: the primary alone had them."
                 if fo.wait_short else "")
        f.expect(False, f"{sched}: the checker says invalid ({counts}).{short} Its counterexample:\n"
                 + _counterexample(fo))
        return False
    # valid means no write the queue acknowledged was lost; the run must also have finished its jobs
    return f.expect(fo.drained and not r.unfinished, f"{sched}: {len(r.unfinished)} jobs were not done within "
                    f"{FAILOVER.TIMEOUT_S:.0f} s of the promotion.")


def judge_failover(answer: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a design for short WAITs (09.2) on a cluster of the judge's own: the probes, then one failover per
    seed it draws."""
    design = _design_of(answer, f)
    if design is None:
        return
    drawn = draw_seeds(seeds, FAILOVER.SEEDS)
    cluster = start_cluster(native=True)
    try:
        if not _probe(cluster, design, f):
            return
        # one failover at a time: two primaries of three killed at once leave no majority to promote a replica
        found = {s: Findings() for s in drawn}
        for i, s in enumerate(drawn):
            _one_seed(cluster, design, FAILOVER.schedule(s, cluster.shards, longest=i == 0), found[s])
    finally:
        cluster.stop()
    over_seeds(found, f)
