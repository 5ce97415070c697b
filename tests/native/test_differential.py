"""Differential test: Hypothesis sequences run on a scripted node and on a native node.

Each generated sequence (enqueue, claim, the kit's batch claim, complete,
retry, promote, reap, pause/resume, the stall sweep, reprocess, remove, flows,
ghosts, stale tokens, forced lapses; settles, sweeps and removes each recorded
or not) runs
step by step on both executors, in a fresh queue per example. Every reply must
be equal, and the end states equal except for the documented differences:
lease_epoch on natively claimed rows, and scores that are times (compared by
membership and order; scores the test pinned are compared exactly).

Lapses are forced, not waited for: a raw ``ZADD XX`` rewrites an active (or
schedule) score to the same small constant on both nodes, so neither clock decides
what is due. Unforced leases and delays are 30 s or more, far beyond one example.

Across every sequence and both executors, no claim ever hands out a token one
of its job's earlier claims had (D-5 in docs/decisions.md), reprocess or not.

``ECHOMQ_HYPOTHESIS_EXAMPLES`` asks for a longer run (default 200).
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_support import assert_same_end_state, stream

from echomq_teach import flows, jobs, stalled, transitions
from echomq_teach.connector import Connector
from echomq_teach.keyspace import base, queue_key

EXAMPLES = int(os.environ.get("ECHOMQ_HYPOTHESIS_EXAMPLES", "200"))
LEASES = (30_000, 60_000)
DELAYS = (30_000, 60_000)

# which claim (or member) an op acts on, counted back from the newest: mostly a recent one
pick = st.sampled_from([0, 0, 0, 1, 2, 5, 11])
token_shift = st.sampled_from([0, 0, 0, 1, -1])  # mostly the claim's own token; sometimes a stale one
# settle a claim not yet settled (mostly), or any claim of the sequence: an old token is a stale one
which = st.sampled_from(["open", "open", "open", "any"])
# each op's arguments, and its weight in the draw: claims and settles dominate, controls are rarer
ARGS = {
    "enqueue": (5, ()),
    "ghost": (1, ()),  # an id in pending with no row
    "ghost_active": (1, ()),  # an id in active, lapsed, with no row
    "claim": (5, (st.sampled_from(LEASES), st.booleans())),
    # the kit's batch: @claim_many against EMQ.CLAIM.MANY, raw replies (each job's parent too) compared
    "claim_many": (3, (st.sampled_from(LEASES), st.integers(1, 6))),
    "complete": (3, (which, pick, token_shift, st.booleans())),
    "retry": (3, (which, pick, token_shift, st.sampled_from(DELAYS), st.integers(1, 3), st.booleans())),
    "promote": (2, (st.sampled_from([1, 100]),)),
    "reap": (1, ()),
    "stalled": (3, (st.integers(1, 2), st.booleans())),  # max_stalled, record
    # a pause lasts a few steps (the sequence then resumes it), so a paused queue does not end the story
    "pause": (2, (st.integers(1, 4),)),
    "resume": (1, ()),
    # a lapse may also record one earlier stall, so a single sweep can bury as well as requeue
    "lapse": (3, (pick, st.sampled_from([True, True, False]))),
    # a worker crash seen by the counted sweep: a lapse, then the stall check at once
    "crash": (3, (pick, st.sampled_from([True, True, False]), st.sampled_from([1, 1, 2]), st.booleans())),
    "due": (2, (pick,)),
    # a retried job's run-at forced due, then the promote that moves it
    "backoff": (2, (pick, st.sampled_from([1, 100]))),
    "flow": (2, (st.lists(st.sampled_from(flows.POLICIES), min_size=1, max_size=3),)),
    # a dead job back to pending: its next claims carry new tokens and a fresh count against the cap
    "reprocess": (3, (pick,)),
    # a second life at once: reprocess, the next claim, and a retry below the cap of that life (weighed so
    # that a settle with a token of the earlier life is reached in the default 200 examples)
    "relive": (3, (pick, st.sampled_from(LEASES), st.sampled_from(DELAYS), st.integers(2, 3))),
    # an operator deletes one job wherever it is (a flow parent, too: its children settle as plain jobs)
    "remove": (1, (pick, st.booleans())),  # which id, record
    # a flow's parent removed and a new flow landed under the same id: the old children count toward neither
    "reflow": (1, (pick, st.lists(st.sampled_from(flows.POLICIES), min_size=1, max_size=2))),
}
# sampled_from draws each listed element alike, so an op listed w times weighs w
KINDS = st.sampled_from([kind for kind, (weight, _) in ARGS.items() for _ in range(weight)])
OPS = KINDS.flatmap(lambda kind: st.tuples(st.just(kind), *ARGS[kind][1]))
SEQUENCES = st.lists(OPS, min_size=15, max_size=60)

_queues = itertools.count()


@dataclass
class Story:
    """What one sequence has made so far, shared by its scripted and native runs."""

    ids: list[str] = field(default_factory=list)
    claims: list[jobs.Claimed] = field(default_factory=list)
    open: list[int] = field(default_factory=list)  # claims no settle has answered yet
    children: set[str] = field(default_factory=set)  # flow children, to tally their deaths
    parents: list[str] = field(default_factory=list)  # flow parents, in the order they were landed
    kids: dict[str, set[str]] = field(default_factory=dict)  # each parent id's children, of its latest flow
    old_children: set[str] = field(default_factory=set)  # children of a parent whose id now names another flow
    tokens: dict[str, list[int]] = field(default_factory=dict)  # every token each id was handed
    lives: dict[str, int] = field(default_factory=dict)  # id -> its highest token when last reprocessed

    def mint(self, op: tuple[Any, ...], counter: itertools.count) -> None:
        """Fresh ids in mint order (fixed width, so lexicographic order is creation order)."""
        n = {"enqueue": 1, "ghost": 1, "ghost_active": 1}.get(op[0], 0)
        if op[0] == "flow":
            n = len(op[1]) + 1  # the children, then the parent: named last, ids[-1]
        if op[0] == "reflow":
            n = len(op[2])  # new children only: the parent's id is used again
        self.ids += [f"J{next(counter):04d}" for _ in range(n)]

    def target(self, op: tuple[Any, ...]) -> tuple[int | None, str, int]:
        """The claim a settle acts on: its index, id and token (its own, or shifted: stale or not yet issued)."""
        if not self.claims:
            return None, "J0000", 1
        pool = self.open if op[1] == "open" and self.open else list(range(len(self.claims)))
        i = pool[-1 - op[2] % len(pool)]
        return i, self.claims[i].id, max(1, self.claims[i].attempts + op[3])

    def settled(self, op: tuple[Any, ...], reply: Any) -> None:
        handed = [reply] if op[0] == "claim" and reply is not None else []
        if op[0] == "claim_many" and isinstance(reply, list):
            handed = [jobs.Claimed(j[0], j[1], int(j[2])) for j in reply]
        for job in handed:
            self.open.append(len(self.claims))
            self.claims.append(job)
            # D-5 in docs/decisions.md: a token is never handed out twice for one job while its row lives
            seen = self.tokens.setdefault(job.id, [])
            assert job.attempts not in seen, f"token {job.attempts} of {job.id} again: {seen}"
            seen.append(job.attempts)
        if op[0] == "reprocess" and reply is not None and reply[1] == jobs.OK:
            self.lives[reply[0]] = max(self.tokens.get(reply[0], [0]))
        if op[0] in ("complete", "retry") and reply != jobs.STALE:
            i = self.target(op)[0]
            self.open = [j for j in self.open if j != i]
        if op[0] == "flow":
            self.children.update(reply.child_ids)
            self.parents.append(reply.parent_id)
            self.kids[reply.parent_id] = set(reply.child_ids)
        if op[0] == "reflow" and isinstance(reply, tuple) and reply[:1] != ("error",):
            flow = reply[1]
            self.old_children |= self.kids[flow.parent_id]
            self.children.update(flow.child_ids)
            self.kids[flow.parent_id] = set(flow.child_ids)


def claim_raw(c: Connector, q: str, lease: int) -> jobs.Claimed | None:
    """The bare EMQ.CLAIM, with no host-side pause read: its own read must answer as claim/3 does."""
    reply = c.call("EMQ.CLAIM", 3, queue_key(q, "pending"), queue_key(q, "active"), base(q), lease)
    return jobs.Claimed(reply[0], reply[1], int(reply[2])) if reply else None


def step(c: Connector, q: str, op: tuple[Any, ...], story: Story, forced: int) -> Any:
    """One op on one executor; its reply (an error's class name, should one be raised)."""
    kind, ids = op[0], story.ids
    try:
        if kind == "enqueue":
            return jobs.enqueue(c, q, f"payload {ids[-1]}", job_id=ids[-1])
        if kind == "ghost":
            return c.client.zadd(queue_key(q, "pending"), {ids[-1]: 0})
        if kind == "ghost_active":
            return c.client.zadd(queue_key(q, "active"), {ids[-1]: forced})
        if kind == "claim":
            return claim_raw(c, q, op[1]) if op[2] and c.native else jobs.claim(c, q, op[1])
        if kind == "claim_many":
            # the batch claim as built, past claim_many's checks: each executor's own refusal is compared
            reply = jobs.send(c, transitions.claim_many(q, op[1], op[2]))
            return [tuple(j) for j in reply]
        if kind in ("complete", "retry"):
            _, job_id, token = story.target(op)
            if kind == "complete":
                return jobs.complete(c, q, job_id, token, f"result of {job_id}", record=op[4])
            return jobs.retry(c, q, job_id, token, f"failed {job_id}", op[4], op[5], record=op[6])
        if kind == "promote":
            return jobs.promote(c, q, op[1])
        if kind == "reap":
            return jobs.reap(c, q)
        if kind == "stalled":
            return stalled.check(c, q, op[1], record=op[2])
        if kind == "pause":
            return jobs.pause(c, q)
        if kind == "resume":
            return jobs.resume(c, q)
        if kind in ("lapse", "due"):
            set_key = queue_key(q, "active" if kind == "lapse" else "schedule")
            members = sorted(c.client.zrange(set_key, 0, -1))
            if not members:
                return None
            member = members[-1 - op[1] % len(members)]
            row = f"{base(q)}job:{member}"
            if kind == "lapse" and op[2] and c.client.exists(row):
                c.client.hincrby(row, "stalled", 1)
            # CH answers 1 only when the score moved: a member missing on one node shows at once
            return member, c.client.zadd(set_key, {member: forced}, xx=True, ch=True)
        if kind == "flow":
            kids = [(i, f"child {i}") for i in ids[-len(op[1]) - 1 : -1]]
            return flows.add(c, q, (ids[-1], "parent"), kids, op[1])
        if kind == "reflow":
            if not story.parents:
                return None
            parent = story.parents[-1 - op[1] % len(story.parents)]
            removed = jobs.remove(c, q, parent)
            kids = [(i, f"child {i}") for i in ids[-len(op[2]) :]]
            return removed, flows.add(c, q, (parent, "again"), kids, op[2])
        if kind == "reprocess":
            dead = sorted(c.client.zrange(queue_key(q, "dead"), 0, -1))
            if not dead:
                return None
            job_id = dead[-1 - op[1] % len(dead)]
            return job_id, jobs.reprocess(c, q, job_id)
        if kind == "remove":
            return jobs.remove(c, q, ids[-1 - op[1] % len(ids)], record=op[2]) if ids else None
    except Exception as exc:  # noqa: BLE001 - compared across executors by class
        return ("error", type(exc).__name__)
    raise AssertionError(f"unknown op {op!r}")


def expand(ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The steps to run: a crash is a lapse and a sweep, a backoff a forced run-at and a promote,
    a relive a reprocess, a claim and a retry; each pause's resume comes the drawn number of steps later."""
    out: list[tuple[Any, ...]] = []
    due: dict[int, int] = {}  # index in ops -> resumes to send before it
    for i, op in enumerate(ops):
        out += [("resume",)] * due.pop(i, 0)
        if op[0] == "crash":
            out += [("lapse", op[1], op[2]), ("stalled", op[3], op[4])]
            continue
        if op[0] == "backoff":
            out += [("due", op[1]), ("promote", op[2])]
            continue
        if op[0] == "relive":
            out += [("reprocess", op[1]), ("claim", op[2], False), ("retry", "open", 0, 0, op[3], op[4], False)]
            continue
        out.append(op)
        if op[0] == "pause":
            due[i + 1 + op[1]] = due.get(i + 1 + op[1], 0) + 1
    return out


def note(
    tally: Counter, op: tuple[Any, ...], reply: Any, was_paused: bool, story: Story, target: tuple[Any, ...] | None,
    heads: list[tuple[str, bool]] | None = None,
) -> None:
    """What a sequence reached, so the suite can show it explored the corners it claims to.

    ``heads``: for a batch claim, the k heads of pending it could pop, each with whether it has a row.
    """
    kind = op[0]
    if kind == "claim_many":
        if was_paused:
            tally["batch claim on a paused queue"] += 1
        elif heads:
            tally["batch claim"] += 1
            if not all(has_row for _, has_row in heads):
                tally["batch claim popped a ghost"] += 1
            if len(heads) < op[2]:
                tally["batch claim cut short by pending"] += 1
            if any(j[3] for j in reply):
                tally["batch claim of a flow child"] += 1
            if any(j[0] in story.lives for j in reply):
                tally["batch claim in a later life"] += 1
    if kind == "stalled" and set(reply.dead) & story.children:
        tally["flow child buried by the sweep"] += 1
    if kind == "stalled" and set(reply.dead) & story.old_children:
        tally["an earlier flow's child buried under a reused parent id"] += 1
    if kind in ("complete", "retry") and reply != jobs.STALE and target and target[1] in story.old_children:
        tally["an earlier flow's child settled under a reused parent id"] += 1
    if kind == "claim" and reply and reply.id in story.lives:
        tally["claim in a later life"] += 1
    if kind == "claim":
        tally["claim on a paused queue" if was_paused else ("claim" if reply else "empty claim")] += 1
    elif kind in ("complete", "retry") and reply == jobs.STALE:
        tally["stale token"] += 1
    elif kind == "retry" and reply == jobs.DEAD:
        tally["retry at the cap"] += 1
    elif kind == "reap" and reply:
        tally["lapsed lease reaped"] += 1
    elif kind == "stalled" and reply.dead:
        tally["stall sweep buried"] += 1
    elif kind == "stalled" and reply.requeued:
        tally["stall sweep requeued"] += 1
    elif kind == "promote" and reply:
        tally["promoted"] += 1
    elif kind == "ghost":
        tally["ghost"] += 1
    elif kind == "flow":
        tally["flow"] += 1
    elif kind == "reflow" and reply is not None:
        tally["flow landed again under a parent id"] += 1
    elif kind == "reprocess" and reply is not None:
        tally["reprocessed"] += 1
    elif kind == "remove" and reply:
        tally["removed"] += 1
    if target is not None:  # a settle: (claim index, id, token), as the op resolved it before it ran
        _, job_id, token = target
        if token <= story.lives.get(job_id, 0) and reply == jobs.STALE:
            tally["stale token from an earlier life"] += 1
        if kind == "retry" and reply == jobs.SCHEDULED and token > story.lives.get(job_id, token):
            tally["retry scheduled in a later life"] += 1


def test_scripted_and_native_executors_agree(conn, native_conn):
    tally: Counter[str] = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(ops=SEQUENCES)
    def sequence(ops: list[tuple[Any, ...]]) -> None:
        q = f"diff-{os.getpid()}-{next(_queues)}"
        counter = itertools.count()
        story = Story()
        for n, op in enumerate(expand(ops)):
            story.mint(op, counter)
            forced = 1_000 + n  # pinned scores rise with the step, so a sweep's order is fixed
            was_paused = jobs.paused(conn, q)
            target = story.target(op) if op[0] in ("complete", "retry") else None
            heads = None
            if op[0] == "claim_many":
                found = conn.client.zrange(queue_key(q, "pending"), 0, op[2] - 1)
                heads = [(h, bool(conn.client.exists(f"{base(q)}job:{h}"))) for h in found]
            a = step(conn, q, op, story, forced)
            b = step(native_conn, q, op, story, forced)
            assert a == b, f"step {n} {op!r}: scripted {a!r}, native {b!r}"
            assert not (isinstance(a, tuple) and a[:1] == ("error",)), f"step {n} {op!r} raised {a!r}"
            story.settled(op, a)
            note(tally, op, a, was_paused, story, target, heads)
        assert_same_end_state(conn, native_conn, q)
        # the completions stream is compared above; which endings it held, tallied
        for fields in stream(conn.client, q):
            tally[f"{fields['outcome']} entry"] += 1

    sequence()
    # every corner the issue names was reached at least once, or the agreement above proves less
    wanted = [
        "ghost",
        "empty claim",
        "claim on a paused queue",
        "stale token",
        "retry at the cap",
        "lapsed lease reaped",
        "stall sweep buried",
        "stall sweep requeued",
        "promoted",
        "flow",
        "flow child buried by the sweep",
        "flow landed again under a parent id",
        "an earlier flow's child settled under a reused parent id",
        "reprocessed",
        "removed",
        "stale token from an earlier life",
        "retry scheduled in a later life",
        # every ending a recording call writes, on both executors alike
        *(f"{outcome} entry" for outcome in jobs.OUTCOMES),
        "batch claim",
        "batch claim on a paused queue",
        "batch claim popped a ghost",
        "batch claim cut short by pending",
        "batch claim of a flow child",
        "batch claim in a later life",
    ]
    assert [w for w in wanted if tally[w] == 0] == [], tally
