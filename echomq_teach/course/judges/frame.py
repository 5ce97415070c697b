"""What every judged build shares: seeds run side by side, one verdict, and the small pieces of a judged run.

A judge runs a learner's mechanism on a node of its own (never the learner's
notebook node, never a classroom's shared one): calls whose answers are known,
then one judged run per seed, the seeds side by side (``side_by_side``).
``over_seeds`` turns each seed's findings into the verdict: the first failing
seed's findings (one counterexample reads better than three), then "failed on
N of M seeds". The rest are the helpers the judges' runs use: waiting on a
run, the queue held to notebook 01's table at each point a fault leaves it
(``Watched``), what the end of a run reads (``end_run``), a checker finding as a
few lines, a Lua error as one line.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from ... import snapshots
from ...errors import BadInput
from ...lab import queue_state
from ...lab.checker import Report
from ...lab.history import History, Op
from ...lab.nemesis import Nemesis
from ...lab.run import Fault, Run
from ..registry import Findings


def lua_error(what: str, exc: BaseException, script: str = "your script") -> str:
    """A Lua error as one finding that names the script's line (``user_script:N`` in the node's words);
    ``script`` is what the finding calls the script (a file of your queue: ``claim.lua``)."""
    text = str(exc)
    m = re.search(r"user_script:(\d+)", text)
    reason = re.sub(r"^Error compiling script \(new function\): ", "", text)
    reason = re.sub(r"\s*script: .*$", "", re.sub(r"user_script:\d+:\s*", "", reason)).strip()
    where = f"line {m.group(1)} of {script}" if m else script
    return f"{what}: {where}: {reason}"


def node_of(conn: Any) -> Any:
    """The node behind the learner's connector: a check that starts worker processes runs them on it."""
    if conn.node is None:
        raise BadInput("this check starts worker processes: hand it a connector from your node (node.connector())")
    return conn.node


def draw_seeds(seeds: Iterable[int] | None, n: int) -> list[int]:
    """The seeds given, or ``n`` the judge draws (the learner does not choose them)."""
    return list(seeds) if seeds is not None else [secrets.randbelow(1_000_000) for _ in range(n)]


def side_by_side(one: Callable[[Any], None], items: Iterable[Any], join_s: float) -> None:
    """``one(item)`` for every item, each in a thread of its own; the first error is raised here."""
    errors: list[BaseException] = []

    def run(item: Any) -> None:
        try:
            one(item)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(item,), daemon=True) for item in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=join_s)
    if errors:
        raise errors[0]


def over_seeds(found: dict[Any, Findings], f: Findings, *, what: str = "seeds",
               name: Callable[[Hashable], str] = str) -> list[Any]:
    """The verdict over several judged runs: the first failing run's findings, then "failed on N of M"
    (``what`` names the runs, ``name`` each one). Answers the failing runs."""
    failed = [k for k, v in found.items() if v.items]
    if failed:
        f.items.extend(found[failed[0]].items)
        f.items.append(f"failed on {len(failed)} of {len(found)} {what} ({', '.join(name(k) for k in failed)}).")
    return failed


def call_script(conn: Any, sha: str, keys: list[str], argv: list[Any], f: Findings, when: str) -> tuple[bool, Any]:
    """The learner's script called once: (True, its reply), or (False, None) with its Lua error as a finding."""
    try:
        return True, conn.call("EVALSHA", sha, len(keys), *keys, *argv)
    except Exception as exc:  # noqa: BLE001 - a runtime error of the learner's Lua: a finding naming its line
        f.expect(False, lua_error(f"your script failed {when}", exc))
        return False, None


def server_ms(conn: Any) -> int:
    """The node's clock now, in ms (``TIME``), as every script reads it."""
    sec, usec = conn.client.time()
    return int(sec) * 1000 + int(usec) // 1000


def state_holds(conn: Any, queue: str, f: Findings, said: str, *, settled: Iterable[str] = ()) -> bool:
    """True when the queue's own state holds to notebook 01's table (``lab.queue_state``); else False, with
    the first break (and how many more) as a finding that starts with ``said``."""
    broken = queue_state.read(conn, queue, settled=settled)
    if not broken:
        return True
    more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
    f.expect(False, f"{said}, the queue's own state breaks notebook 01's table: {broken[0]}{more}.")
    return False


def unchanged(conn: Any, queue: str, before: Any, f: Findings, said: str) -> bool:
    """True when the queue is as ``before`` (a snapshot's ``state_only()``); else False, naming what changed."""
    after = snapshots.snapshot(conn, queue)
    if after.state_only() == before.state_only():
        return True
    changes = "; ".join(str(c) for c in snapshots.diff(before, after)[:3]) or "scores or flow keys changed"
    f.expect(False, f"{said}, yet your script wrote: {changes}. A caller that no longer holds the job writes nothing.")
    return False


def wait_drained(run: Run, deadline_s: float, failed: Callable[[History], bool]) -> bool:
    """Until the queue is drained (True), the deadline, or ``failed(history)`` (the verdict is known then:
    waiting on would only take time)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if run.wait_drained(0.3):
            return True
        if failed(run.history()):
            return False
    return False


def until(done: Callable[[History], bool], run: Run, timeout_s: float) -> bool:
    """Poll the run's history until ``done`` says so (True), or ``timeout_s`` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if done(run.history()):
            return True
        time.sleep(0.05)
    return False


def _fault_between(faults: list[Op], worker: str, lo: float, hi: float) -> bool:
    return any(n.extra.get("worker") == worker and lo <= n.sent <= hi for n in faults)


def lapsed_under_healthy(history: History) -> list[Op]:
    """The settles refused stale whose worker no fault touched between its claim and the settle: its lease
    lapsed and was swept while its handler was at work (a lease too short, or a renewal that did not keep it)."""
    claims = {(o.worker, o.token, o.job): o for o in history.calls("claim") if o.ok and o.job}
    faults = history.notes("freeze", "kill")
    return [o for o in history.calls("complete", "retry") if o.ok and o.reply == "stale"
            and (c := claims.get((o.worker, o.token, o.job))) is not None
            and not _fault_between(faults, o.worker, c.sent, o.sent)]


def healthy_runs_ms(history: History) -> list[float]:
    """How long each handler run no fault touched took, from its start to its end (the ``run`` and ``ran``
    notes of one worker, job and token)."""
    starts = {(o.worker, o.job, o.token): o for o in history.notes("run")}
    faults = history.notes("freeze", "kill")
    return [o.sent - s.sent for o in history.notes("ran") if (s := starts.get((o.worker, o.job, o.token)))
            and not _fault_between(faults, o.worker, s.sent, o.sent)]


def counterexample(finding: Any) -> str:
    """A checker finding as a few lines: what it says, then the claims, releases and late calls that show it."""
    ops = finding.ops
    claims = [o for o in ops if o.op == "claim" and o.at != "note"]
    since = max((c.sent for c in claims), default=0.0)
    # a parent released early is shown with every settle of its children: which of them counted is the story
    late = 0.0 if finding.kind == "released_early" else since
    shown = [o for o in ops if o.op in ("claim", "reap", "stalled", "promote")
             or (o.at != "note" and o.sent >= late and o.op in ("extend", "complete", "retry"))]
    t0 = min((o.sent for o in ops), default=0.0)
    return "\n".join([f"{finding.kind.replace('_', ' ')}: {finding.job} — {finding.detail}",
                      *[f"    {o.describe(t0)}" for o in shown[:10]]])


def checker_valid(said: str, report: Report, f: Findings, first: Any = None) -> bool:
    """True when the checker says valid; else False, with its counts and one counterexample (``first``, or its
    first finding)."""
    if report.valid:
        return True
    counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in report.counts().items() if n)
    f.expect(False, f"{said}: the checker says invalid ({counts}). Its counterexample:\n"
             + counterexample(first or report.findings[0]))
    return False


class FreezeFirst(Nemesis):
    """A seeded schedule whose first fault is its first freeze (the faults keep their drawn times)."""

    def draw(self, slots: int) -> list[Fault]:
        out = super().draw(slots)
        i = next(n for n, x in enumerate(out) if x.kind == "freeze")
        out[0], out[i] = (dataclasses.replace(out[i], at_s=out[0].at_s), dataclasses.replace(out[0], at_s=out[i].at_s))
        self.schedule = out
        return out


class AtWork:
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


class Watched:
    """A run as the nemesis sees it, whose queue is held to notebook 01's table at each point a fault leaves
    it: right after every fault is applied, and after every thaw. The first breaks are kept in ``broken``."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.broken: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)

    def _look(self, what: str) -> None:
        if not self.broken:
            found = queue_state.read(self.run.conn, self.run.queue)
            self.broken = [f"right after {what}, the queue's own state breaks notebook 01's table: {found[0]}"
                           + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")] if found else []

    def apply(self, fault: Any) -> None:
        self.run.apply(fault)
        self._look(str(fault).split(" ", 1)[1])

    def thaw(self, slot: int) -> None:
        self.run.thaw(slot)
        self._look(f"the thaw of slot {slot}")


@dataclass
class Ended:
    """A judged run once stopped: what names it in a finding, its history, the checker's report, and the
    breaks of notebook 01's table the queue was left with (as findings)."""

    said: str
    history: History
    report: Report
    state: Findings


def end_run(run: Run, seed: int, faults: list[Any], report: Callable[[History], Report] | None = None,
            watched: Watched | None = None) -> Ended:
    """Stop ``run`` and read what the judge reads: its history, the checker's report (``report(history)``, or
    the run's own check), and the queue's state against the table — at each point a fault left it (``watched``)
    and at the end, every acknowledged completion rowless."""
    run.stop()
    history = run.history()
    said = f"seed {seed} ({', '.join(str(x) for x in faults)})"
    state = Findings()
    for broken in watched.broken if watched else []:
        state.expect(False, f"{said}: {broken}.")
    state_holds(run.conn, run.queue, state, f"{said}: at the end of the run", settled=queue_state.completed_in(history))
    return Ended(said, history, report(history) if report else run.check(), state)
