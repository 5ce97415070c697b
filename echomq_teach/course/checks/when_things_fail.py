"""Notebook 07 · when things fail: predict the crash points; make a seeded nemesis pass the checker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
def _r071(conn: Connector, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    outcomes = crash_points(_node(conn), queue, handler="echomq_teach.lab.handlers:charge_first")
    return {o.point: {"handler runs": o.runs, "charges": o.charges} for o in outcomes}


# -- 07.2 · the capstone: pass the nemesis ----------------------------------------------------------------
CAPSTONE_JOBS = 120
CAPSTONE_WORK_MS = 60
CAPSTONE_DEADLINE_S = 25.0
CAPSTONE_NEMESIS = Nemesis(seed=2026, kinds=("kill", "freeze"), count=5, gap_s=(0.2, 0.5), freeze_s=(1.0, 1.0))


def capstone(conn: Connector, queue: str, lease_ms: int, max_attempts: int, handler: Any) -> dict[str, Any]:
    """The capstone's run: 120 jobs (every tenth marked ``!``), 4 workers, the seeded nemesis; what it gave."""
    with Run(_node(conn), queue, workers=4, lease_ms=lease_ms, max_attempts=max_attempts, handler=handler,
             work_ms=CAPSTONE_WORK_MS, retry_delay_ms=50, tick_ms=25, timeout=CAPSTONE_DEADLINE_S + 30) as run:
        enqueued = run.produce(CAPSTONE_JOBS, payload=lambda i: f"order {i}" + ("!" if i % 10 == 9 else ""))
        run.start()
        CAPSTONE_NEMESIS.run(run, deadline_s=CAPSTONE_DEADLINE_S)
        drained = run.wait_drained(CAPSTONE_DEADLINE_S)
        run.stop()
        report = run.check()
        made = handlers.effects(run.conn, queue)
        once = handlers.effects_once(run.conn, queue)
    charges = {j: made[j] + (j in once) for j in enqueued}
    return {"report": report, "drained": drained, "charges": charges}


@exercise(
    "07.2",
    "Pass the nemesis",
    "Hint: three things, one each. The lease must outlast the handler's 60 ms of work, yet bring a killed "
    "worker's job back well inside the deadline. A job marked '!' fails its first try, so it needs a second "
    "attempt. And a handler that runs twice must not charge twice: key the charge by the job "
    "(ctx.effect_once(job)).",
    solution="07_2_pass_the_nemesis.py",
    kind="build",
)
def _v072(conn: Connector, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    keys = {"lease_ms", "max_attempts", "handler"}
    if not f.expect(isinstance(result, Mapping) and set(result) == keys,
                    f"return a dict with exactly the keys {sorted(keys)}; got {result!r}."):
        return
    try:
        out = capstone(conn, queue, result["lease_ms"], result["max_attempts"], result["handler"])
    except BadInput as exc:
        f.expect(False, f"the run refused your choices: {exc}")
        return
    report, charges = out["report"], out["charges"]
    f.expect(report.valid, f"the checker says invalid: {report.counts()}.")
    left = report.unfinished
    f.expect(out["drained"] and not left,
             f"{len(left)} of {CAPSTONE_JOBS} jobs were still pending or active at the {CAPSTONE_DEADLINE_S:.0f} s "
             "deadline.")
    f.expect(report.dead == 0, f"{report.dead} jobs ended in dead.")
    twice = sum(1 for n in charges.values() if n > 1)
    never = sum(1 for j, n in charges.items() if n == 0 and j not in left)
    f.expect(twice == 0, f"{twice} customers were charged more than once.")
    f.expect(never == 0, f"{never} settled jobs never charged their customer.")
