"""Notebook 07 · when things fail: predict the crash points; choices and a handler that pass a seeded nemesis."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping
from typing import Any

from ... import jobs, keyspace
from ...connector import Connector
from ...errors import BadInput
from ...lab import handlers
from ..judge import CRASH_POINTS, Nemesis, Run, crash_points
from ..registry import Findings, exercise, prediction


def _node(conn: Connector) -> Any:
    if conn.node is None:
        raise BadInput("this check starts worker processes: hand it a connector from your node (node.connector())")
    return conn.node


# -- 07.1 · predict the crash points ---------------------------------------------------------------------
def _crash_shape(answer: Any, args: tuple[Any, ...]) -> str | None:
    ok = isinstance(answer, Mapping) and set(answer) == set(CRASH_POINTS) and all(
        isinstance(v, Mapping) and set(v) == {"handler runs", "charges"} for v in answer.values())
    return None if ok else (f"return a dict from each crash point {list(CRASH_POINTS)} to "
                            '{"handler runs": n, "charges": n}; got ' + repr(answer))


@prediction(
    "07.1",
    "Predict the crash points",
    "Hint: charge_first charges before its work. A crash that comes after the charge and before the "
    "settle leaves a charged job whose settle never happened: it runs again, and charges again. A crash "
    "before the handler starts charges nothing; a settle that reached the node is not run again.",
    solution="07_1_predict_the_crashes.py",
    shape=_crash_shape,
)
def _run_predict_the_crashes(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    outcomes = crash_points(_node(conn), queue, handler="echomq_teach.lab.handlers:charge_first")
    return {o.point: {"handler runs": o.runs, "charges": o.charges} for o in outcomes}


# -- 07.2 · the capstone: pass the nemesis ----------------------------------------------------------------
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
    with Run(_node(conn), queue, workers=CAPSTONE.WORKERS, lease_ms=lease_ms, max_attempts=max_attempts,
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
    seeds = seeds if seeds is not None else [secrets.randbelow(1_000_000) for _ in range(CAPSTONE.SEEDS)]
    outs: dict[int, dict[str, Any]] = {}
    errors: list[BaseException] = []

    def one(seed: int) -> None:
        try:
            outs[seed] = capstone(conn, f"{queue}-{seed}", result["lease_ms"], result["max_attempts"],
                                  result["handler"], seed)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(s,), daemon=True) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=CAPSTONE.DEADLINE_S * 3 + 60)
    if errors:
        if isinstance(errors[0], BadInput):
            f.expect(False, f"the run refused your choices: {errors[0]}")
            return
        raise errors[0]
    found = {s: Findings() for s in seeds}
    for s in seeds:
        _one_seed(outs[s], s, found[s])
    failed = [s for s in seeds if found[s].items]
    if failed:
        # one seed's findings read better than three
        f.items.extend(found[failed[0]].items)
        f.items.append(f"failed on {len(failed)} of {len(seeds)} seeds ({', '.join(map(str, failed))}).")


@exercise(
    "07.2",
    "Pass the nemesis",
    "Hint: three things, one each. The lease must outlast the handler's 60 ms of work, yet bring a killed "
    "worker's job back well inside the deadline. A provider timeout leaves you not knowing whether the money "
    "was taken: let the job fail (raise) so it is tried again, and give it the attempts to be. And a charge "
    "asked for twice must be made once: hand the provider an idempotency key that every run of the same order "
    "shares (ctx.charge(job, key=job.id)).",
    solution="07_2_pass_the_nemesis.py",
    kind="build",
)
def _verify_pass_the_nemesis(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    keys = {"lease_ms", "max_attempts", "handler"}
    if not f.expect(isinstance(result, Mapping) and set(result) == keys,
                    f"return a dict with exactly the keys {sorted(keys)}; got {result!r}."):
        return
    judge_capstone(conn, queue, result, f)
