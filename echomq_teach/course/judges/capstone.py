"""07.2 · the capstone, judged: the learner's lease, attempts and handler on a shop's orders, under the provider's
timeouts and a seeded nemesis, over seeds run side by side, one queue each on the learner's node.

The spec differs from what notebook 07 shows (a charge keyed by the job's id): the shop enqueues some orders
twice (a customer's double click: two jobs, one order), and every customer must be charged exactly once per
order. Per seed, three worker processes run the learner's handler on 60 jobs for 50 orders; the provider times
out on the first call of some (before taking the money, or after); the nemesis kills a worker and freezes
another inside its handler past a sound lease (a zombie that wakes and charges). Besides the checker's
verdict and the queue's own state against notebook 01's table, the judge reads the handlers' runs: an order
is done only when the run that completed it did the order's work (``ctx.work``, recorded with the ms it took,
before the completion was sent), so a handler cannot pass the lease's lesson by skipping the work; and a lease
shorter than every run of a healthy handler lapses under each of them, whatever the seed draws (a lease only
a little longer than the work is not refused by a rule: on a loaded machine it lapses now and then, and what
that costs — runs again, attempts spent — shows in the other findings).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ... import jobs, keyspace
from ...connector import Connector
from ...errors import BadInput
from ...lab import handlers, queue_state
from ...lab.nemesis import Nemesis
from ...lab.run import Run
from ..registry import Findings
from .frame import (
    AtWork,
    FreezeFirst,
    Watched,
    draw_seeds,
    healthy_runs_ms,
    node_of,
    over_seeds,
    side_by_side,
    wait_drained,
)


class CAPSTONE:
    """The capstone's judged run, per seed: orders, workers, the nemesis; the seeds run side by side."""

    JOBS = 60
    #: jobs ORDERS … JOBS-1 are orders 0 … 9 sent again (a double click): 50 orders in 60 jobs
    ORDERS = 50
    WORKERS = 3
    WORK_MS = 60
    SEEDS = 3
    DEADLINE_S = 15.0

    @staticmethod
    def order(i: int) -> int:
        return i % CAPSTONE.ORDERS

    @staticmethod
    def payload(i: int) -> str:
        # the provider, not the handler, fails these on their first call: '!' after taking the money, '?' before
        n = CAPSTONE.order(i)
        mark = handlers.TIMEOUT_AFTER if n % 10 == 9 else handlers.TIMEOUT_BEFORE if n % 10 == 4 else ""
        return f"order {n}{mark}"

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # a freeze first, inside a handler and longer than a sound lease (a zombie wakes up and charges), and a
        # kill, in every schedule; the third fault as the seed draws
        return FreezeFirst(seed=seed, kinds=("kill", "freeze"), count=3, must=("kill", "freeze"), gap_s=(0.2, 0.5),
                           freeze_s=(1.2, 1.5))


def _outlived(history: Any, lease_ms: int) -> bool:
    """Three handler runs no fault touched, each longer than the lease: the lease lapses under every one."""
    runs = healthy_runs_ms(history)
    return len(runs) >= 3 and min(runs) > lease_ms


def _unworked(history: Any) -> list[str]:
    """The jobs completed (answered ``ok``) by a run that had not done the job's whole work before it sent the
    completion: no ``worked`` note of that worker, job and token, one shorter than the work, or one noted sooner
    after the run began than the work takes (the worker's own ``run`` note: a note the handler wrote itself, with
    any ms it likes, does not stand for the work)."""
    worked = {(o.worker, o.job, o.token): o for o in history.notes("worked")}
    began = {(o.worker, o.job, o.token): o.sent for o in history.notes("run")}
    return [o.job for o in history.calls("complete") if o.ok and o.reply == jobs.OK
            and ((w := worked.get(k := (o.worker, o.job, o.token))) is None or w.sent > o.sent
                 or float(w.extra.get("ms") or 0) < CAPSTONE.WORK_MS
                 # 1 ms for the wall clock the notes are read on; a note written at once is ~0 ms in
                 or ((b := began.get(k)) is not None and w.sent - b < CAPSTONE.WORK_MS - 1))]


def capstone(conn: Connector, queue: str, lease_ms: int, max_attempts: int, handler: Any, seed: int) -> dict[str, Any]:
    """One seed of the capstone: 60 jobs for 50 orders, 3 workers, the provider's timeouts, the seeded nemesis;
    what it gave."""
    with Run(node_of(conn), queue, workers=CAPSTONE.WORKERS, lease_ms=lease_ms, max_attempts=max_attempts,
             handler=handler, work_ms=CAPSTONE.WORK_MS, retry_delay_ms=50, tick_ms=25,
             timeout=CAPSTONE.DEADLINE_S + 30) as run:
        enqueued = run.produce(CAPSTONE.JOBS, payload=CAPSTONE.payload)
        run.start()
        watched = Watched(AtWork(run))
        faults = CAPSTONE.nemesis(seed).run(watched, deadline_s=CAPSTONE.DEADLINE_S)  # type: ignore[arg-type]
        # the verdict is known once healthy handlers outlived the lease, or an order was completed with its work
        # not done: waiting on would only take time
        drained = wait_drained(run, CAPSTONE.DEADLINE_S, lambda h: _outlived(h, lease_ms) or bool(_unworked(h)))
        run.stop()
        history = run.history()
        report = run.check()
        left = queue_state.read(run.conn, queue, settled=queue_state.completed_in(history))
        state = [*watched.broken, *(f"at the end of the run, the queue's own state breaks notebook 01's table: {b}"
                                    for b in left[:1])]
        made = handlers.charges(run.conn, queue)
        asked = handlers.provider_calls(run.conn, queue)
        dead = set(run.conn.client.zrange(keyspace.queue_key(queue, "dead"), 0, -1))
        jobs.drop(run.conn, queue)
    return {"report": report, "drained": drained, "faults": faults, "enqueued": enqueued, "history": history,
            "charges": {j: made[j] for j in enqueued}, "asked": {j: asked.get(j, 0) for j in enqueued},
            "dead": dead, "state": state, "lease_ms": lease_ms}


def _one_seed(out: dict[str, Any], seed: int, f: Findings) -> None:
    said = f"seed {seed} ({', '.join(str(x) for x in out['faults'])})"
    report, charges, history = out["report"], out["charges"], out["history"]
    if _outlived(history, out["lease_ms"]):
        runs = healthy_runs_ms(history)
        f.expect(False, f"{said}: your lease is {out['lease_ms']} ms, and the quickest of your handlers' runs that no "
                 f"fault touched took {min(runs):.0f} ms (the work alone is {CAPSTONE.WORK_MS} ms): every lease lapses "
                 "before its holder settles, and a sweep in that gap hands the order to a second worker.")
        return
    order = {j: CAPSTONE.order(i) for i, j in enumerate(out["enqueued"])}
    unworked = sorted({order[j] for j in _unworked(history)})
    if unworked:
        f.expect(False, f"{said}: {len(unworked)} orders were completed by a handler run that had not done the "
                 f"order's {CAPSTONE.WORK_MS} ms of work (ctx.work) when it sent the completion (e.g. order "
                 f"{unworked[0]}): the shop settled an order whose work was never done, and would ship nothing.")
        return
    f.expect(report.valid, f"{said}: the checker says invalid: {report.counts()}.")
    f.items.extend(f"{said}: {b}." for b in out["state"])
    left = report.unfinished
    f.expect(out["drained"] and not left, f"{said}: {len(left)} of {CAPSTONE.JOBS} jobs were still pending or "
             f"active at the {CAPSTONE.DEADLINE_S:.0f} s deadline.")
    f.expect(report.dead == 0, f"{said}: {report.dead} jobs ended in dead: a provider timeout, or a fault, took "
             "their last attempt.")
    per_order: Counter[int] = Counter()
    asked: Counter[int] = Counter()
    for j, n in charges.items():
        per_order[order[j]] += n
        asked[order[j]] += out["asked"][j]
    settled = {order[j] for j in out["enqueued"] if j not in left and j not in out["dead"]}
    twice = sorted(n for n, c in per_order.items() if c > 1)
    never = sorted(n for n in settled if per_order[n] == 0 and asked[n])
    unasked = sorted(n for n in settled if asked[n] == 0)
    doubled = sorted({order[j] for j in out["enqueued"][CAPSTONE.ORDERS:]})
    f.expect(not twice, f"{said}: {len(twice)} customers were charged more than once for one order (e.g. order "
             f"{twice[0] if twice else ''}: {per_order[twice[0]] if twice else 0} charges; orders {doubled[0]} … "
             f"{doubled[-1]} came in twice, as two jobs each).")
    f.expect(not unasked, f"{said}: {len(unasked)} orders settled without the payment provider ever being asked "
             f"to charge their customer (e.g. order {unasked[0] if unasked else ''}): the shop's money is taken by the "
             "provider alone, and no record of your own takes any.")
    f.expect(not never, f"{said}: {len(never)} orders settled though the provider never took their customer's "
             f"money (e.g. order {never[0] if never else ''}: asked {asked[never[0]] if never else 0} time(s), it "
             "took nothing): a provider timeout is not a charge.")


def judge_capstone(conn: Connector, queue: str, result: Any, f: Findings, seeds: list[int] | None = None) -> None:
    """Judge the learner's choices over seeds the check draws, one queue each on the learner's node."""
    drawn = draw_seeds(seeds, CAPSTONE.SEEDS)
    outs: dict[int, dict[str, Any]] = {}

    def one(seed: int) -> None:
        outs[seed] = capstone(conn, f"{queue}-{seed}", result["lease_ms"], result["max_attempts"], result["handler"],
                              seed)

    try:
        side_by_side(one, drawn, CAPSTONE.DEADLINE_S * 3 + 60)
    except BadInput as exc:
        f.expect(False, f"the run refused your choices: {exc}")
        return
    found = {s: Findings() for s in drawn}
    for s in drawn:
        _one_seed(outs[s], s, found[s])
    over_seeds(found, f)
