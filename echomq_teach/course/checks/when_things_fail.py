"""Notebook 07 · when things fail: predict the crash points; choices and a handler that pass a seeded nemesis."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ... import jobs
from ...connector import Connector
from ...lab.crashes import HEALTHY_LEASE_MS, CrashOutcome, settle_and_judge
from ...lab.run import Run
from .. import forms
from ..judges.capstone import judge_capstone
from ..judges.frame import node_of
from ..registry import Findings, exercise, prediction

# -- 07.1 · predict the crash points ---------------------------------------------------------------------
#: the worker that first takes the job is killed at one point, the one that takes it next at another; a third
#: (healthy) settles it. No cell of 07 runs two crashes on one job: crash_points runs one each.
IN_TURN = (("claimed", "claimed"), ("handler", "handled"), ("handled", "settle-sent"), ("claimed", "handler"))
RUNS, CHARGES, TOKEN = "handler runs", "charges", "settled with token"
HANDLER_71 = "echomq_teach.lab.handlers:charge_first"


def in_turn(first: str, then: str) -> str:
    return f"{first}, then {then}"


@prediction(
    "07.1",
    "Predict the crash points",
    "Hint: for each worker in turn, ask where its crash point falls against charge_first's two lines: before the "
    "charge, between the charge and the settle, or after the settle reached the node. Which of those leave the "
    "job to the next worker, and what does each claim do to the token?",
    solution="07_1_predict_the_crashes.py",
    form=forms.record({in_turn(*pair): forms.record({RUNS: forms.Count(), CHARGES: forms.Count(),
                                                      TOKEN: forms.Count(1)}) for pair in IN_TURN}),
    explain="charge_first charges before its work. A worker killed at 'claimed' ran nothing; one killed in the "
    "handler or after it had charged, and its settle never reached the node, so the job ran again and charged "
    "again; a settle that reached the node ends the job, whoever never read its answer. Every claim raised the "
    "token, so the settle carries the number of the claim that made it.",
)
def _run_predict_the_crashes(conn: Connector, queue: str) -> dict[str, Any]:
    node = node_of(conn)

    def one(n: int, pair: tuple[str, str]) -> tuple[str, dict[str, int]]:
        o = _crashes_in_turn(node, f"{queue}-{n}", pair)
        return in_turn(*pair), {RUNS: o.runs, CHARGES: o.charges, TOKEN: o.token or 0}

    with ThreadPoolExecutor(len(IN_TURN)) as pool:  # side by side, one queue each
        return dict(pool.map(one, range(len(IN_TURN)), IN_TURN))


def _crashes_in_turn(node: Any, queue: str, points: tuple[str, ...]) -> CrashOutcome:
    """One job; the first worker to take it dies at ``points[0]``, the next at ``points[1]``; then healthy ones."""
    # the healthy workers hold long leases, the crashed ones short: only a crashed worker's lease lapses
    with Run(node, queue, workers=len(points), lease_ms=HEALTHY_LEASE_MS, work_ms=40, handler=HANDLER_71,
             tick_ms=25, timeout=60.0) as run:
        jobs.drop(run.conn, queue)
        [job] = run.produce(1)
        for slot, point in enumerate(points):
            doomed = run.spawn(slot, crash_at=point, lease_ms=300)
            doomed.wait_ready()
            if slot == 0:
                run.start_metronome()
            doomed.wait(timeout=60.0)  # dead before the next worker comes: it takes the job after the reap
        outcome = settle_and_judge(run, job, in_turn(*points), 60.0)
        jobs.drop(run.conn, queue)  # the check's queue goes with its run
        return outcome


# -- 07.2 · the capstone: pass the nemesis ----------------------------------------------------------------
@exercise(
    "07.2",
    "Pass the nemesis",
    "Hint: take the findings one at a time; each is a rule this notebook taught. A lease against the runs of a "
    "healthy handler: the pool and the lone consumer above. A run that stops between an effect and its settle, "
    "and a provider's timeout, which leaves you not knowing whether the money was taken: 07.1's crash points, "
    "and what the queue does with a handler that fails. An effect made once: 07's idempotent handler made it "
    "once per job; ask what this shop's customer must be charged once for.",
    solution="07_2_pass_the_nemesis.py",
    kind="build",
)
def _verify_pass_the_nemesis(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    keys = {"lease_ms", "max_attempts", "handler"}
    if not f.expect(isinstance(result, Mapping) and set(result) == keys,
                    f"return a dict with exactly the keys {sorted(keys)}; got {result!r}."):
        return
    judge_capstone(conn, queue, result, f)
