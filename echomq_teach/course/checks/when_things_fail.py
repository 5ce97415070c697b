"""Notebook 07 · when things fail: predict the crash points; choices and a handler that pass a seeded nemesis."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...connector import Connector
from ...lab.crashes import crash_points
from ...lab.worker import CRASH_POINTS
from ..judges.capstone import judge_capstone
from ..judges.frame import node_of
from ..registry import Findings, exercise, prediction


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
    outcomes = crash_points(node_of(conn), queue, handler="echomq_teach.lab.handlers:charge_first")
    return {o.point: {"handler runs": o.runs, "charges": o.charges} for o in outcomes}


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
