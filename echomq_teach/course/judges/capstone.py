"""07.2 · the capstone, judged: the learner's lease, attempts and handler on 60 orders, under the provider's
timeouts and a seeded nemesis, over seeds run side by side, one queue each on the learner's node."""

from __future__ import annotations

from typing import Any

from ... import jobs, keyspace
from ...connector import Connector
from ...errors import BadInput
from ...lab import handlers
from ...lab.nemesis import Nemesis
from ...lab.run import Run
from ..registry import Findings
from .frame import draw_seeds, node_of, over_seeds, side_by_side


class CAPSTONE:
    """The capstone's judged run, per seed: orders, workers, the nemesis; the seeds run side by side."""

    JOBS = 60
    WORKERS = 3
    WORK_MS = 60
    SEEDS = 3
    DEADLINE_S = 15.0

    @staticmethod
    def payload(i: int) -> str:
        # the provider, not the handler, fails these on their first call: '!' after taking the money, '?' before
        mark = handlers.TIMEOUT_AFTER if i % 10 == 9 else handlers.TIMEOUT_BEFORE if i % 10 == 4 else ""
        return f"order {i}{mark}"

    @staticmethod
    def nemesis(seed: int) -> Nemesis:
        # a kill and a freeze in every schedule (the freeze longer than a sound lease: a zombie wakes up)
        return Nemesis(seed=seed, kinds=("kill", "freeze"), count=3, must=("kill", "freeze"), gap_s=(0.2, 0.5),
                       freeze_s=(1.2, 1.5))


def capstone(conn: Connector, queue: str, lease_ms: int, max_attempts: int, handler: Any, seed: int) -> dict[str, Any]:
    """One seed of the capstone: 60 orders, 3 workers, the provider's timeouts, the seeded nemesis; what it gave."""
    with Run(node_of(conn), queue, workers=CAPSTONE.WORKERS, lease_ms=lease_ms, max_attempts=max_attempts,
             handler=handler, work_ms=CAPSTONE.WORK_MS, retry_delay_ms=50, tick_ms=25,
             timeout=CAPSTONE.DEADLINE_S + 30) as run:
        enqueued = run.produce(CAPSTONE.JOBS, payload=CAPSTONE.payload)
        run.start()
        faults = CAPSTONE.nemesis(seed).run(run, deadline_s=CAPSTONE.DEADLINE_S)
        drained = run.wait_drained(CAPSTONE.DEADLINE_S)
        run.stop()
        report = run.check()
        made = handlers.charges(run.conn, queue)
        asked = handlers.provider_calls(run.conn, queue)
        dead = set(run.conn.client.zrange(keyspace.queue_key(queue, "dead"), 0, -1))
        jobs.drop(run.conn, queue)
    return {"report": report, "drained": drained, "faults": faults, "enqueued": enqueued,
            "charges": {j: made[j] for j in enqueued}, "asked": asked, "dead": dead}


def _one_seed(out: dict[str, Any], seed: int, f: Findings) -> None:
    said = f"seed {seed} ({', '.join(str(x) for x in out['faults'])})"
    report, charges = out["report"], out["charges"]
    f.expect(report.valid, f"{said}: the checker says invalid: {report.counts()}.")
    left = report.unfinished
    f.expect(out["drained"] and not left, f"{said}: {len(left)} of {CAPSTONE.JOBS} orders were still pending or "
             f"active at the {CAPSTONE.DEADLINE_S:.0f} s deadline.")
    f.expect(report.dead == 0, f"{said}: {report.dead} orders ended in dead: a provider timeout, or a kill, "
             "took their last attempt.")
    twice = sorted(j for j, n in charges.items() if n > 1)
    never = sorted(j for j, n in charges.items() if n == 0 and j not in left and j not in out["dead"])
    f.expect(not twice, f"{said}: {len(twice)} customers were charged more than once (e.g. {twice[:1]}, "
             f"{charges[twice[0]] if twice else 0} charges).")
    f.expect(not never, f"{said}: {len(never)} orders settled without their customer ever being charged "
             f"(e.g. {never[:1]}): a provider timeout is not a charge.")


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
