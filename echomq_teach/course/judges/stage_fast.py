"""10.4 · your queue, stage 6: valid first, then fast, judged.

No new file: the whole queue, every stage's files together, runs two of notebook 10's case files as this queue
runs them — the same workload, the same seeded nemesis (``lab.models.trial``): ``kombu_restore`` (long
freezes past the lease: zombies) and ``sidekiq_orphans`` (kills, and a poison job). It passes when, on every
seed, both runs are valid to the checker (with the case files' two added invariants), the queue keeps notebook
01's table, and every job ended. Then fast: one clean drain of 200 jobs by three workers on the judge's node,
your queue beside the kit's, each with its round trips per job and its jobs per second (printed after the
verdict, never judged: valid first, then fast). In the notebook, the chaos widget runs your queue too.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ...lab.drain_cost import drain_cost
from ...lab.models.trial import trial
from ..registry import Findings
from .frame import checker_valid
from .queue import Loaded, show_timeline, telling

SEEDS = 2
DEADLINE_S = 30.0
#: notebook 10's cases your queue runs, each under its own workload and nemesis
CASES = ("kombu_restore", "sidekiq_orphans")


def probes(node: Any, loaded: Loaded, f: Findings) -> bool:
    """Nothing new to probe: the earlier stages' probes have run."""
    return True


class Case(NamedTuple):
    """One judged run of stage 6: a case file's workload on a seed."""

    case: str
    seed: int

    def __str__(self) -> str:
        return f"{self.case} on seed {self.seed}"


def plan(seeds: list[int]) -> list[Case]:
    """One case file a seed: each of ``CASES`` on a seed of its own (the runs go side by side)."""
    return [Case(c, s) for c, s in zip(CASES, seeds)]


def one_seed(node: Any, loaded: Loaded, run: Case, f: Findings) -> bool:
    """One case file's workload on your queue under its seeded nemesis; False (with findings) when it fails."""
    case, seed = run
    t = trial(case, node, seed, "queue", queue=f"judge-fast-{case.replace('_', '-')}-{seed}",
              run_options={"scripts": loaded.scripts, "beat": loaded.beat_file})
    said = f"{case} (seed {seed}, its faults: {', '.join(str(x) for x in t.faults) or 'none'})"
    if not checker_valid(f"{said}, on your queue", t.report, f, telling(t.report)):
        show_timeline(f, t.history, t.report, f"your queue: {case}, seed {seed}")
        return False
    if not f.expect(not t.state, f"{said}: at the end of the run, your queue's own state breaks notebook 01's "
                    f"table: {t.state[0] if t.state else ''}."):
        return False
    if not f.expect(not t.report.unfinished, f"{said}: {len(t.report.unfinished)} jobs never finished on your "
                    f"queue (e.g. {t.report.unfinished[:2]})."):
        show_timeline(f, t.history, t.report, f"your queue: {case}, seed {seed}")
        return False
    return True


def after(node: Any, loaded: Loaded, f: Findings) -> None:
    """Then fast: one clean drain of your queue and one of the kit's, side by side in the verdict's notes."""
    yours = drain_cost(node, "your queue", scripts=loaded.scripts, beat=loaded.beat_file)
    kits = drain_cost(node, "the kit's  ")
    # a beat.py load_reference put there, unedited, is the reference's: its figure is labelled as such
    ref = loaded.folder.reference_in("beat.py") if loaded.beat_file is not None else None
    mine = f"  {yours}" + (f"   (with {ref}'s reference beat.py: the reference's figure, not yours)" if ref else "")
    f.notes += ["valid on every seed; then fast — one clean drain of 200 jobs by 3 worker processes on the judge's "
                "node (the kit's workers leave promote and recovery to a metronome; yours sweep in their beats):",
                mine, f"  {kits}"]
