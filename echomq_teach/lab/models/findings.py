"""Two invariants the case files need beside the checker's own, both sound for this queue's runs.

* **released early** — a parent claimed while one of its children had no
  ending yet (neither completed nor dead): the flow counter let it go too soon.
  The history must say which jobs are children: the producer records each
  child's enqueue with its ``parent``.
* **a hand-out under a live lease** (a ``double_handouts`` finding) — a job
  claimed by a second worker before the first claim's lease could have lapsed,
  while the first holder had not settled it: something put it back early (an
  evicted lock, say). A claim without ``lease_ms`` is not judged.
"""

from __future__ import annotations

from collections import defaultdict

from ...jobs import COMPLETED, DEATHS
from .. import checker
from ..checker import CLOCK_SLACK_MS, Facts, FinalState, Finding, Report, check, double_handouts
from ..history import History


def released_early(f: Facts) -> list[Finding]:
    """A parent claimed while one of its children had not ended."""
    history, final = f.history, f.final
    parents: dict[str, list[str]] = defaultdict(list)
    for o in history.calls("enqueue"):
        if o.job and o.extra.get("parent"):
            parents[o.extra["parent"]].append(o.job)
    endings: dict[str, float] = {}
    for s in final.stream:
        if s.outcome == COMPLETED or s.outcome in DEATHS:
            at = float(s.settled_ms)
            endings[s.job_id] = min(endings.get(s.job_id, at), at)
    out = []
    for c in history.calls("claim"):
        if not (c.ok and c.job in parents):
            continue
        at = c.answered or c.sent
        waiting = [k for k in parents[c.job] if endings.get(k, float("inf")) > at + CLOCK_SLACK_MS]
        if waiting:
            ops = [o for o in history.ops if o.job in (c.job, *waiting)]
            out.append(Finding("released_early", c.job, f"claimed by {c.worker} while {len(waiting)} of its "
                               f"{len(parents[c.job])} children had not ended ({', '.join(waiting)})", ops))
            parents.pop(c.job)  # one finding per parent
    return out


def live_lease_handouts(f: Facts) -> list[Finding]:
    """A job claimed by a second worker before the first claim's lease could lapse (not found twice: a job the
    checker's own ``double_handouts`` names is left to it)."""
    history = f.history
    flagged = {x.job for x in double_handouts(f)}
    claims: dict[str, list] = defaultdict(list)
    for o in history.calls("claim"):
        if o.ok and o.job and o.job not in flagged:
            claims[o.job].append(o)
    settles = [o for o in history.calls("complete", "retry") if o.ok]
    out = []
    for job, cs in claims.items():
        cs.sort(key=lambda o: o.sent)
        for x, y in zip(cs, cs[1:]):
            lease = x.extra.get("lease_ms")
            if lease is None or x.worker == y.worker:
                continue
            done = any(s.job == job and s.worker == x.worker and s.token == x.token and s.answered is not None
                       and s.answered <= (y.answered or y.sent) for s in settles)
            if not done and (y.answered or y.sent) + CLOCK_SLACK_MS < x.sent + float(lease):
                out.append(Finding("double_handouts", job, f"claimed by {x.worker} (lease {lease} ms) and by "
                                   f"{y.worker} {(y.answered or y.sent) - x.sent:.0f} ms later, before that lease "
                                   "could lapse: two workers held it at once",
                                   [o for o in history.ops if o.job == job]))
                break
    return out


#: the checker's invariants and the two above, composed: one signature (the run's facts), one report
INVARIANTS: dict[str, checker.Invariant] = {
    **checker.INVARIANTS,
    "released_early": released_early,
    "live_lease_handouts": live_lease_handouts,
}


def judge(history: History, final: FinalState, *, recorded: bool = True) -> Report:
    """The checker's report, with the two invariants above composed with its own."""
    return check(history, final, recorded=recorded, invariants=INVARIANTS)
