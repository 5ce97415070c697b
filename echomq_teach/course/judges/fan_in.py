"""05.2 · the learner's fan-in, judged: flows drained by workers whose children complete by the learner's script,
under kills and a zombie."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from typing import Any

from ... import flows, ids, jobs, keyspace
from ...lab.checker import check
from ...lab.history import History, Op
from ...lab.nemesis import Nemesis
from ...lab.run import Fault, Run
from ..registry import Findings
from .frame import checker_valid, judge_script, lua_error, until


class FANIN:
    """The judged run of 05.2: flows drained by workers whose flow children complete by the learner's script,
    while a seeded nemesis kills workers and freezes one past its lease (a zombie that completes late)."""

    LEASE_MS = 300
    WORK_MS = 250
    WORKERS = 3
    FLOWS = 2
    CHILDREN = 5
    SEEDS = 3
    DEADLINE_S = 5.0
    #: after the queue drained: how long a thawed zombie may take to send its late completion
    GRACE_S = 2.0

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # one freeze in every schedule, first (every worker holds a child then: the parents wait for ten; a
        # kill's new worker takes a while to start) and longer than the lease: its child is reaped and
        # completed by another worker before the zombie wakes and completes it too
        return _FreezeFirst(seed=seed, kinds=("freeze", "kill"), count=3, must=("freeze",), gap_s=(0.03, 0.15),
                            freeze_s=(1.2, 1.4))


class _FreezeFirst(Nemesis):
    """A seeded schedule whose first fault is its first freeze (the faults keep their drawn times)."""

    def draw(self, slots: int) -> list[Fault]:
        out = super().draw(slots)
        i = next(n for n, x in enumerate(out) if x.kind == "freeze")
        out[0], out[i] = (dataclasses.replace(out[i], at_s=out[0].at_s), dataclasses.replace(out[0], at_s=out[i].at_s))
        self.schedule = out
        return out


class _AtWork:
    """A run as the nemesis sees it, whose freeze waits (bounded) until the slot's worker is inside a
    handler: a worker frozen between two jobs holds nothing, and no zombie wakes from it."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)

    def apply(self, fault: Fault) -> None:
        if fault.kind == "freeze" and fault.slot is not None:
            name = self.run.worker(fault.slot).name
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                mine = [o for o in self.run.history().ops if o.worker == name]
                if mine and mine[-1].op == "run":
                    break
                time.sleep(0.01)
        self.run.apply(fault)


def _complete_child(conn: Any, sha: str, queue: str, parent: str, child: str, token: int, result: str) -> Any:
    """The learner's script as a worker calls it (``lab.worker``): @complete's KEYS and ARGV for a flow child."""
    keys = [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, child),
            *(keyspace.job_key(queue, parent, s) for s in ("dependencies", "processed")),
            keyspace.job_key(queue, parent)]
    return conn.call("EVALSHA", sha, 5, *keys, child, token, keyspace.base(queue), parent, result)


def _fan_in_dry_run(conn: Any, sha: str, f: Findings) -> bool:
    """The script once for a child's holder and once for a late caller: it runs, and answers 1 or 0."""
    queue = "judge-dry-flow"
    flow = flows.add(conn, queue, "parent", ["a", "b"])
    claimed = jobs.claim(conn, queue, 30_000)
    assert claimed is not None
    for token, who in ((claimed.attempts, "a child's holder"), (claimed.attempts, "a late, repeated completion")):
        try:
            reply = _complete_child(conn, sha, queue, flow.parent_id, claimed.id, token, "a done")
        except Exception as exc:  # noqa: BLE001 - a runtime error of the learner's Lua: a finding
            f.expect(False, lua_error(f"your script failed when {who} completed", exc))
            return False
        if not f.expect(reply in (0, 1), f"your script answered {reply!r} to {who}: answer 1 when this call "
                        "completed the child, 0 when the caller no longer held it."):
            return False
    jobs.drop(conn, queue)
    return True


def _land_flows(run: Run, n: int, children: int) -> dict[str, list[str]]:
    """``n`` flows landed, each recorded in the producer's lane: the parent's enqueue around its children's
    (all sent before the one atomic land, all answered after it), each child's naming its parent."""
    out: dict[str, list[str]] = {}
    for i in range(n):
        pid, kids = ids.mint(), [(ids.mint(), f"flow {i} part {k}") for k in range(children)]

        def nest(k: int, pid: str = pid, kids: list[tuple[str, str]] = kids, i: int = i) -> str:
            if k == len(kids):
                return flows.add(run.conn, run.queue, (pid, f"flow {i} assemble"), kids).parent_id
            run.producer.call("enqueue", lambda: nest(k + 1), job=kids[k][0], extra={"parent": pid})
            return pid

        run.producer.call("enqueue", lambda nest=nest: nest(0), job=pid)
        out[pid] = [k for k, _ in kids]
    return out


def _parents_released_early(history: History, parents: dict[str, list[str]]) -> list[tuple[Op, list[str]]]:
    """Each parent claimed while a child of it had no completion yet (a completion whose answer was lost
    counts from the moment it was sent: the earliest it could have run)."""
    ended: dict[str, float] = {}
    for o in history.calls("complete"):
        if o.job and (o.reply == jobs.OK or o.indeterminate):
            ended[o.job] = min(ended.get(o.job, o.sent), o.sent)
    out = []
    for pid, kids in parents.items():
        first = min((c for c in history.calls("claim") if c.ok and c.job == pid), key=lambda c: c.sent, default=None)
        if first is not None:
            waiting = [k for k in kids if ended.get(k, float("inf")) > (first.answered or first.sent)]
            if waiting:
                out.append((first, waiting))
    return out


def _zombies_settled(history: History) -> bool:
    """Every worker the nemesis froze and thawed has sent a call since (its late settle, or its next claim)."""
    thaws = history.notes("thaw")
    return all(any(o.worker == t.extra.get("worker") and o.sent > t.sent for o in history.calls("complete", "claim"))
               for t in thaws)


def _fan_in_seed(node: Any, sha: str, seed: int, f: Findings) -> bool:
    """One judged run of the fan-in; False (with findings) when it does not pass."""
    queue = f"judge-fanin-{seed}"
    with Run(node, queue, workers=FANIN.WORKERS, lease_ms=FANIN.LEASE_MS, work_ms=FANIN.WORK_MS, max_attempts=10,
             retry_delay_ms=20, tick_ms=25, idle_ms=20, record=False, timeout=FANIN.DEADLINE_S + 30) as run:
        # every worker, the ones that replace the killed too, completes a flow child by the learner's script
        run.options = dataclasses.replace(run.options, flow_complete=sha)
        run.start()
        # the flows land once every worker is asking for work (a loaded machine starts processes slowly):
        # the first children then go to all of them at once, and the nemesis finds each inside a handler
        until(lambda h: len({c.worker for c in h.calls("claim")}) >= FANIN.WORKERS, run, 10.0)
        parents = _land_flows(run, FANIN.FLOWS, FANIN.CHILDREN)
        faults = FANIN.nemesis(seed).run(_AtWork(run), deadline_s=FANIN.DEADLINE_S)  # type: ignore[arg-type]
        drained = run.wait_drained(FANIN.DEADLINE_S)
        until(_zombies_settled, run, FANIN.GRACE_S)
        drained = run.wait_drained(0.5) and drained
        run.stop()
        history = run.history()
        final = run.final_state()
        report = check(history, final, recorded=False)
        processed = {p: len(flows.children_values(run.conn, queue, p)) for p in parents}
        jobs.drop(run.conn, queue)
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    refused = [o for o in history.calls("complete") if o.at == "refused"]
    if refused:
        f.expect(False, lua_error(f"{said}: your script failed inside a worker", Exception(refused[0].error)))
        return False
    odd = [o for o in history.calls("complete") if o.ok and o.reply not in (jobs.OK, jobs.STALE)]
    if odd:
        f.expect(False, f"{said}: your script answered {odd[0].reply!r}: answer 1 when it completed, 0 when not.")
        return False
    # a fence violation first, when there is one: it says why the other findings happened
    if not checker_valid(said, report, f, first=(report.fence_violations or report.findings or [None])[0]):
        return False
    early = _parents_released_early(history, parents)
    if early:
        claim, waiting = early[0]
        f.expect(False, f"{said}: parent {claim.job} was released early: {claim.worker} claimed it while "
                 f"{len(waiting)} of its {FANIN.CHILDREN} children had not completed ({', '.join(waiting)}).")
        return False
    held = sorted(p for p in parents if final.rows.get(p, {}).get("state") == "awaiting_children")
    if held:
        f.expect(False, f"{said}: {len(held)} of {len(parents)} parents were never released, though every child "
                 f"completed (e.g. {held[0]}, still awaiting_children): the last child's completion "
                 "must put its parent in pending.")
        return False
    short = {p: n for p, n in processed.items() if n != FANIN.CHILDREN}
    if short:
        p, n = next(iter(short.items()))
        f.expect(False, f"{said}: parent {p}'s :processed holds {n} results, not its {FANIN.CHILDREN} children's: "
                 "each child's completion records its result there, once.")
        return False
    if not drained or report.unfinished:
        f.expect(False, f"{said}: {len(report.unfinished)} jobs were not done within {FANIN.DEADLINE_S:.0f} s.")
        return False
    return True


def judge_fan_in(source: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge a fan-in script (05.2) on a node of the judge's own, over seeds it draws."""
    judge_script(source, f, dry_run=_fan_in_dry_run, one_seed=_fan_in_seed, seeds=seeds, n_seeds=FANIN.SEEDS,
                 join_s=FANIN.DEADLINE_S * 4 + 60)
