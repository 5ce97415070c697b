"""05.2 · your queue, stage 5: a parent that needs only a quorum, judged.

``complete.lua`` grows: a flow child's completion comes with its parent's keys (``@complete``'s five KEYS), and the
fan-in it makes differs from the kit's (which releases a parent when the last of its children completed): a parent
is released when ``quorum`` of its children completed (the ``quorum`` field of its row; a parent without one waits
for all of them), and the completions that come after count nothing — their children settle, the parent is not
counted down, nor given a result, nor released again, nor written at all once it is gone. A plain job's completion
stays as stage 2 asked.

The probes: a repeated completion recorded as a run records it and read by the checker, with a parent's early
release as a finding of its own; then three flows whose answers are known, the queue held to notebook 01's table
after every call, the gap the fence guards (a worker wakes after a sweep put its child back in pending, no claim
since, and completes), and the gap the once-only branch guards (notebook 04's half-done claim: the fence passes a
child that is not in active, which must count nothing), then a parent of five children without a quorum, which
waits for all five. The judged run: three worker processes beat with your beat.py and your scripts, two flows of
five children, quorum three, while a seeded nemesis freezes a worker mid-child past its lease (a zombie) and kills
others.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ... import flows, ids, jobs, keyspace, snapshots, transitions
from ...lab.checker import CLOCK_SLACK_MS, Finding, check
from ...lab.history import History, Recorder
from ...lab.nemesis import Nemesis
from ...lab.run import Run
from ..registry import Findings
from .frame import AtWork, FreezeFirst, Watched, checker_valid, end_run, state_holds, unchanged, until
from .queue import Loaded, failed_in, probing, ran_clean, scenario, show_timeline, telling


class FANIN:
    """The judged run of 05.2: flows drained by workers whose flow children complete by the learner's script,
    while a seeded nemesis kills workers and freezes one past its lease (a zombie that completes late)."""

    # a loaded machine stalls a worker well past 50 ms now and then: the lease outlasts the work by 350 ms
    LEASE_MS = 600
    WORK_MS = 250
    WORKERS = 3
    FLOWS = 2
    CHILDREN = 5
    QUORUM = 3
    SEEDS = 2
    DEADLINE_S = 8.0
    #: after the queue drained: how long a thawed zombie may take to send its late completion
    GRACE_S = 2.0

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # one freeze in every schedule, first (every worker holds a child then: the parents wait for ten; a
        # kill's new worker takes a while to start) and longer than the lease: its child is reaped and
        # completed by another worker before the zombie wakes and completes it too
        return FreezeFirst(seed=seed, kinds=("freeze", "kill"), count=3, must=("freeze",), gap_s=(0.03, 0.15),
                            freeze_s=(1.4, 1.6))


SEEDS, DEADLINE_S = FANIN.SEEDS, FANIN.DEADLINE_S


def land(conn: Any, queue: str, parent: str | tuple[str, str], children: list[Any], quorum: int) -> flows.Flow:
    """A flow landed (``flows.add``) whose parent's row says how many completions release it (``quorum``)."""
    flow = flows.add(conn, queue, parent, children)
    conn.call("HSET", keyspace.job_key(queue, flow.parent_id), "quorum", quorum)
    return flow


class _Dry:
    """The dry run's calls of the learner's script, each judged as it comes."""

    def __init__(self, conn: Any, queue: str, f: Findings) -> None:
        self.conn, self.queue, self.f = conn, queue, f

    def complete(self, parent: str, c: jobs.Claimed, who: str, token: int | None = None) -> Any:
        """Your complete.lua for ``who``, a flow child's (five keys); its reply, or None (with the finding) when
        it failed or was not 0/1."""
        call = transitions.complete(self.queue, c.id, c.attempts if token is None else token, f"{c.payload} done",
                                    parent)
        try:
            reply = self.conn.run(call)
        except Exception as exc:  # noqa: BLE001 - your Lua's runtime error: a finding naming its line
            return failed_in("complete.lua", f"when {who} completed", exc, self.f)
        if not self.f.expect(reply in (0, 1), f"your complete.lua answered {reply!r} to {who}: answer 1 when this "
                             "call completed the child, 0 when the caller no longer held it."):
            return None
        return reply

    def claim(self, lease_ms: int = 30_000) -> jobs.Claimed:
        c = jobs.claim(self.conn, self.queue, lease_ms)
        assert c is not None
        return c

    def holds(self, said: str, settled: Iterable[str] = ()) -> bool:
        return state_holds(self.conn, self.queue, self.f, said, settled=settled)

    def processed(self, parent: str) -> list[str]:
        return sorted(flows.children_values(self.conn, self.queue, parent).values())

    def settled_child(self, c: jobs.Claimed, reply: Any, who: str) -> bool:
        """The child's holder completed it: answered 1, its row gone, out of active."""
        s = snapshots.snapshot(self.conn, self.queue)
        return self.f.expect(reply == 1 and not s.where(c.id) and c.id not in s.rows,
                             f"{who} holds its child {c.id}: your complete.lua should complete it (answer 1, its row "
                             f"deleted, out of active); it answered {reply!r} and left it in "
                             f"{'/'.join(s.where(c.id)) or 'no set'}{' with its row' if c.id in s.rows else ''}.")


def _known(conn: Any, f: Findings) -> bool:
    """Flow one, three children and a quorum of 2: the first completion counts and holds the parent; a worker
    woken after a sweep put its child back (no claim since) is refused, nothing written; the second completion
    releases the parent; the parent is claimed, and the third child's completion settles the child and counts
    nothing. Flow two, two children and a quorum of 1: released by its first, the parent run and completed (its
    row gone), then the second child completes: nothing of the parent is written back. Then a repeated
    completion is refused, and last a half-done claim's completion counts nothing (``_half_done``)."""
    queue = "probe-fan-in"
    jobs.drop(conn, queue)
    d = _Dry(conn, queue, f)
    one = land(conn, queue, "parent one", ["a", "b", "c"], 2).parent_id
    a = d.claim()
    reply = d.complete(one, a, "the first child's holder")
    if reply is None or not (d.settled_child(a, reply, "the first child's holder")
                             and d.holds("after the first of three children completed (quorum 2)", [a.id])):
        return False
    s = snapshots.snapshot(conn, queue)
    if not f.expect(s.state(one) == "awaiting_children" and not s.where(one),
                    f"after 1 of its 3 children completed, parent {one} (quorum 2) must still wait "
                    f"(awaiting_children, in no set); it is in {'/'.join(s.where(one)) or 'no set'}, its row says "
                    f"{s.state(one)!r}."):
        return False
    if not f.expect(d.processed(one) == ["a done"],
                    f"after 1 of its 3 children completed, parent {one}'s :processed should hold that child's "
                    f"result, {'a done'!r}, and nothing else; it holds {d.processed(one)}."):
        return False
    # the gap: the second child's lease lapses, a sweep puts it back, its worker wakes before any new claim
    b = d.claim(20)
    time.sleep(0.04)
    if jobs.reap(conn, queue) != [b.id]:
        raise RuntimeError("the dry run's lapsed lease was not reaped")
    before = snapshots.snapshot(conn, queue)
    who = (f"a worker that woke after a sweep put its child {b.id} back in pending (no claim since, so its token "
           "is still the row's attempts)")
    reply = d.complete(one, b, who)
    if reply is None or not d.holds(f"after {who} completed", [a.id]):
        return False
    if not (f.expect(reply == 0, f"your complete.lua answered 1 to {who}: it no longer holds the child (its row says "
                     "pending), so answer 0: the fence reads the row's state as well as its token.")
            and unchanged(conn, queue, before, f, f"your complete.lua answered 0 to {who}")):
        return False
    b = d.claim()
    reply = d.complete(one, b, "the second child's holder")
    if reply is None or not (d.settled_child(b, reply, "the second child's holder")
                             and d.holds("after the second of three children completed (quorum 2)", [a.id, b.id])):
        return False
    s = snapshots.snapshot(conn, queue)
    if not f.expect(s.where(one) == ["pending"] and s.state(one) == "pending",
                    f"after 2 of its 3 children completed, parent {one} has its quorum of 2: release it to pending "
                    f"(its row's state pending); it is in {'/'.join(s.where(one)) or 'no set'}, its row says "
                    f"{s.state(one)!r}."):
        return False
    ran = d.claim()
    assert ran.id == one
    c = d.claim()
    reply = d.complete(one, c, "the third child's holder, its parent already released and running")
    if reply is None or not (d.settled_child(c, reply, "the third child's holder")
                             and d.holds("after the third child completed, its parent running", [a.id, b.id, c.id])):
        return False
    s = snapshots.snapshot(conn, queue)
    if not f.expect(d.processed(one) == ["a done", "b done"] and s.counters.get(f"{one}:dependencies") == 1
                    and s.where(one) == ["active"] and s.state(one) == "active",
                    f"the third child completed after its parent's quorum: it counts nothing. Parent {one} should "
                    f"stay as it was (running, in active, :dependencies 1, :processed 2 results); it is in "
                    f"{'/'.join(s.where(one)) or 'no set'}, :dependencies {s.counters.get(f'{one}:dependencies')}, "
                    f":processed {len(d.processed(one))} results."):
        return False
    # flow two: the parent released by its first child, run and completed, then its second child completes
    two = land(conn, queue, "parent two", ["x", "y"], 1).parent_id
    x = d.claim()
    reply = d.complete(two, x, "a child's holder (quorum 1)")
    if reply is None or not d.holds("after the first child of a quorum-1 flow completed", [a.id, b.id, c.id, x.id]):
        return False
    claimed = d.claim()
    if not f.expect(claimed.id == two, f"after 1 of its 2 children completed, parent {two} (quorum 1) should be "
                    f"released, and be the next job claimed; the claim handed out {claimed.id}."):
        return False
    jobs.complete(conn, queue, two, claimed.attempts, "assembled")
    y = d.claim()
    done = [a.id, b.id, c.id, x.id, two, y.id]
    reply = d.complete(two, y, "the last child's holder, its parent completed and gone")
    if reply is None or not (d.settled_child(y, reply, "the last child's holder")
                             and d.holds("after a child completed whose parent had completed", done)):
        return False
    if not f.expect(snapshots.snapshot(conn, queue).where(two) == [], f"parent {two} completed before its last "
                    "child did; that child's completion released it again."):
        return False
    before = snapshots.snapshot(conn, queue)
    reply = d.complete(one, a, "a late, repeated completion of the first child")
    said = "a repeated completion"
    if reply is None or not (f.expect(reply == 0, f"your complete.lua answered 1 to {said} of a child already "
                                      "completed: its row is gone, so the caller holds nothing; answer 0.")
                             and unchanged(conn, queue, before, f, f"your complete.lua answered 0 to {said}")):
        return False
    return _half_done(conn, queue, d, f, done) and _no_quorum(conn, queue, d, f)


def _no_quorum(conn: Any, queue: str, d: _Dry, f: Findings) -> bool:
    """Flow four, five children and no quorum in its parent's row: it waits for all of them. After four completions
    the parent still waits; the fifth releases it (a quorum read with a default of its own releases it early)."""
    four = flows.add(conn, queue, "parent four", [f"part {i}" for i in range(5)]).parent_id
    done: list[str] = []
    for n in range(1, 6):
        c = d.claim()
        reply = d.complete(four, c, f"the holder of child {n} of 5 (no quorum)")
        done.append(c.id)
        if reply is None or not (d.settled_child(c, reply, f"the holder of child {n} of 5")
                                 and d.holds(f"after {n} of 5 children of a parent without a quorum completed", done)):
            return False
        s = snapshots.snapshot(conn, queue)
        waits = s.state(four) == "awaiting_children" and not s.where(four)
        if not f.expect(waits if n < 5 else s.where(four) == ["pending"] and s.state(four) == "pending",
                        f"parent {four}'s row carries no quorum: a parent without one waits for all its children, "
                        f"here 5. After {n} of them completed it should "
                        f"{'still wait (awaiting_children, in no set)' if n < 5 else 'be released to pending'}; it is "
                        f"in {'/'.join(s.where(four)) or 'no set'}, its row says {s.state(four)!r}."):
            return False
    jobs.drop(conn, queue)
    return True


def _half_done(conn: Any, queue: str, d: _Dry, f: Findings, done: list[str]) -> bool:
    """Flow three, quorum 1: a half-done claim (notebook 04's: the child popped from pending, its token moved and
    its row active, never added to active) and then its holder completes. The fence passes it (the row is active
    with that token); the child was not in active, so the completion settles it and counts nothing: the parent
    still waits, :dependencies and :processed as they were."""
    three = land(conn, queue, "parent three", ["half-claimed", "never claimed"], 1).parent_id
    half = snapshots.snapshot(conn, queue).pending[0]
    conn.call("ZREM", keyspace.queue_key(queue, "pending"), half)
    conn.call("HSET", keyspace.job_key(queue, half), "state", "active", "attempts", 1)
    who = (f"the holder of {half}, whose claim stopped half-done (its row active with token 1, the child popped from "
           "pending and never added to active)")
    reply = d.complete(three, jobs.Claimed(half, "half-claimed", 1), who)
    if reply is None or not d.holds(f"after {who} completed", [*done, half]):
        return False
    s = snapshots.snapshot(conn, queue)
    deps = s.counters.get(f"{three}:dependencies")
    if not f.expect(reply == 1 and half not in s.rows and d.processed(three) == [] and deps == 2
                    and s.state(three) == "awaiting_children" and not s.where(three),
                    f"{who}: the fence passes it, so your complete.lua settles the child (answer 1, its row deleted), "
                    "but counts it only when its ZREM took the child out of active, and this one was not in active. "
                    f"Parent {three} (quorum 1) should still wait, :dependencies 2, :processed empty; your "
                    f"complete.lua answered {reply!r}, and the parent is in {'/'.join(s.where(three)) or 'no set'}, "
                    f"its row says {s.state(three)!r}, :dependencies {deps}, :processed {len(d.processed(three))} "
                    "results."):
        return False
    jobs.drop(conn, queue)
    return True


def land_flows(conn: Any, queue: str, producer: Recorder, n: int, children: int, quorum: int,
               ) -> dict[str, list[str]]:
    """``n`` flows landed, each recorded in ``producer``'s lane: the parent's enqueue around its children's (all
    sent before the one atomic land, all answered after it), each child's naming its parent. The queue is paused
    meanwhile, so no child is claimed before its parent's row says its quorum."""
    out: dict[str, list[str]] = {}
    jobs.pause(conn, queue)
    try:
        for i in range(n):
            pid, kids = ids.mint(), [(ids.mint(), f"flow {i} part {k}") for k in range(children)]

            def nest(k: int, pid: str = pid, kids: list[tuple[str, str]] = kids, i: int = i) -> str:
                if k == len(kids):
                    return land(conn, queue, (pid, f"flow {i} assemble"), kids, quorum).parent_id
                producer.call("enqueue", lambda: nest(k + 1), job=kids[k][0], extra={"parent": pid})
                return pid

            producer.call("enqueue", lambda nest=nest: nest(0), job=pid)
            out[pid] = [k for k, _ in kids]
    finally:
        jobs.resume(conn, queue)
    return out


def released_early(history: History, parents: dict[str, list[str]], quorum: int) -> list[Finding]:
    """Each parent claimed before ``quorum`` of its children could have completed, as a finding of the checker's
    kind ("released early", lab.models.findings, here with a quorum): a completion whose answer was lost counts
    from the moment it was sent (the earliest it could have run); one answered stale counts nothing."""
    ended: dict[str, float] = {}
    for o in history.calls("complete"):
        if o.job and (o.reply == jobs.OK or o.indeterminate):
            ended[o.job] = min(ended.get(o.job, o.sent), o.sent)
    out = []
    for pid, kids in parents.items():
        first = min((c for c in history.calls("claim") if c.ok and c.job == pid), key=lambda c: c.sent, default=None)
        if first is None:
            continue
        done = [k for k in kids if ended.get(k, float("inf")) <= (first.answered or first.sent) + CLOCK_SLACK_MS]
        if len(done) < quorum:
            ops = [o for o in history.ops if o.at != "note" and (o.job in (pid, *kids)
                                                                 or set(o.released()) & {pid, *kids})]
            out.append(Finding("released_early", pid, f"claimed by {first.worker} when {len(done)} of its "
                               f"{len(kids)} children had completed; its quorum is {quorum}", ops))
    return out


def _repeated(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Recorded, read by the checker: one flow of three children, quorum 2. w1's lease on a child lapses, a sweep
    puts it back, w2 claims it; w1 wakes and completes it with its old token (a completion repeated by a zombie:
    answered 0, counting nothing); w2 completes it. One child has completed: w3's claim must get a child, not the
    parent."""
    with scenario(node, loaded, "probe-fan-in-repeat") as s:
        parents = land_flows(s.conn, s.queue, s.rec("producer"), 1, 3, 2)
        try:
            a = s.claim("w1", 20)
            time.sleep(0.04)
            s.reap()
            again = s.claim("w2", 30_000)
            assert a is not None and again is not None and again.id == a.id
            s.complete("w1", a.id, a.attempts, "w1 woke late")
            s.complete("w2", a.id, again.attempts, "done")
            s.claim("w3", 30_000)
        except Exception as exc:  # noqa: BLE001 - your Lua's runtime error: a finding naming its line
            return failed_in("complete.lua", "when a zombie and a new holder completed one flow child", exc, f)
        report = s.report()
        report.findings += released_early(s.history(), parents, 2)
        said = ("one flow of three children, quorum 2: w1's lease on a child lapsed, a sweep put it back and w2 "
                "claimed it; w1 woke and completed it with its old token, w2 completed it, then w3 claimed")
        if checker_valid(said, report, f, telling(report)):
            return True
        show_timeline(f, s.history(), report, "your queue: a flow child completed by a zombie and its new holder")
        return False


def probes(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Stage 5's probes: the repeated completion the checker reads, then the flows whose answers are known."""
    if not _repeated(node, loaded, f):
        return False
    with probing(node, loaded, "probe-fan-in") as conn:
        return _known(conn, f)


def _zombies_settled(history: History) -> bool:
    """Every worker the nemesis froze and thawed has sent a call since (its late settle, or its next claim)."""
    thaws = history.notes("thaw")
    return all(any(o.worker == t.extra.get("worker") and o.sent > t.sent for o in history.calls("complete", "claim"))
               for t in thaws)


def one_seed(node: Any, loaded: Loaded, seed: int, f: Findings) -> bool:
    """One judged run of your fan-in; False (with findings) when it does not pass."""
    queue = f"judge-fanin-{seed}"
    with Run(node, queue, workers=FANIN.WORKERS, lease_ms=FANIN.LEASE_MS, work_ms=FANIN.WORK_MS, max_attempts=10,
             retry_delay_ms=20, tick_ms=25, idle_ms=20, record=False, timeout=FANIN.DEADLINE_S + 30,
             scripts=loaded.scripts, beat=loaded.beat_file) as run:
        run.start()
        # the flows land once every worker is asking for work (a loaded machine starts processes slowly):
        # the first children then go to all of them at once, and the nemesis finds each inside a handler
        until(lambda h: len({c.worker for c in h.calls("claim")}) >= FANIN.WORKERS, run, 10.0)
        parents = land_flows(run.conn, queue, run.producer, FANIN.FLOWS, FANIN.CHILDREN, FANIN.QUORUM)
        watched = Watched(AtWork(run))
        faults = FANIN.nemesis(seed).run(watched, deadline_s=FANIN.DEADLINE_S)  # type: ignore[arg-type]
        drained = run.wait_drained(FANIN.DEADLINE_S)
        until(_zombies_settled, run, FANIN.GRACE_S)
        drained = run.wait_drained(0.5) and drained

        def judged(h: History) -> Any:
            r = check(h, run.final_state(), recorded=False)
            r.findings += released_early(h, parents, FANIN.QUORUM)
            return r

        e = end_run(run, seed, faults, judged, watched)
        final = run.final_state()
        said, history, report = e.said, e.history, e.report
        processed = {p: len(flows.children_values(run.conn, queue, p)) for p in parents}
        jobs.drop(run.conn, queue)
    odd = [o for o in history.calls("complete") if o.ok and o.reply not in (jobs.OK, jobs.STALE)]
    if odd:
        f.expect(False, f"{said}: your complete.lua answered {odd[0].reply!r}: answer 1 when it completed, 0 when "
                 "not.")
        return False
    if not ran_clean(e, loaded, f):
        return False
    held = sorted(p for p in parents if final.rows.get(p, {}).get("state") == "awaiting_children")
    if held:
        f.expect(False, f"{said}: {len(held)} of {len(parents)} parents were never released, though every child "
                 f"completed (e.g. {held[0]}, still awaiting_children): the completion that makes the quorum "
                 "puts its parent in pending.")
        return False
    off = {p: n for p, n in processed.items() if n != FANIN.QUORUM}
    if off:
        p, n = next(iter(off.items()))
        f.expect(False, f"{said}: parent {p}'s :processed holds {n} results; with a quorum of {FANIN.QUORUM} it "
                 f"holds the {FANIN.QUORUM} that released it, once each: later completions count nothing.")
        return False
    if not drained or report.unfinished:
        f.expect(False, f"{said}: {len(report.unfinished)} jobs were not done within {FANIN.DEADLINE_S:.0f} s.")
        return False
    return True
