"""Your queue's stages, judged: on a node of the judge's own, the stage's probes, then those of every stage
before it again, in the course's order, then the stage's judged runs on seeds the judge draws, side by side.

One module per stage (``stage_claim`` 02.2, ``stage_settle`` 03.3, ``stage_recover`` 03.6, ``stage_beat`` 03.7,
``stage_fan_in`` 05.2, ``stage_fast`` 10.4), each with ``probes(node, loaded, f)`` (calls whose answers are
known, deterministic, recorded where the checker can read them) and ``one_seed(node, loaded, seed, f)`` (one
recorded run of your queue under a seeded nemesis), ``SEEDS`` and ``DEADLINE_S``; a stage that measures more
once it passes has ``after(node, loaded, f)``, and one whose runs are not one a seed has ``plan(seeds)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from types import ModuleType
from typing import Any

from ...nodes.local import LocalNode
from ..my_queue.stages import stage, upto
from ..registry import Findings, judged
from . import stage_beat, stage_claim, stage_fan_in, stage_fast, stage_recover, stage_settle
from .frame import draw_seeds, over_seeds, side_by_side
from .queue import load, prepare

JUDGES: dict[str, ModuleType] = {"02.2": stage_claim, "03.3": stage_settle, "03.6": stage_recover,
                                 "03.7": stage_beat, "05.2": stage_fan_in, "10.4": stage_fast}


def judge_stage(key: str, answer: Any, f: Findings, seeds: Iterable[int] | None = None) -> None:
    """Judge stage ``key`` of the folder ``answer`` (a ``my_queue.Folder``): load it, run ``key``'s probes, then
    those of every earlier stage (the queue it grew must still do what it did), then ``key``'s judged runs, on
    ``seeds`` or on seeds drawn here."""
    stage(key)
    mine = prepare(answer, key, f)
    if mine is None:
        return
    node = LocalNode()
    try:
        conn = node.connector()
        try:
            loaded = load(mine, key, conn, f)
        finally:
            conn.close()
        if loaded is None:
            return
        # the stage's own probes first (what is new is what most likely fails), then every earlier stage's again
        for s in (stage(key), *upto(key)[:-1]):
            before = len(f.items)
            if not JUDGES[s.key].probes(node, loaded, f):
                if s.key != key:
                    f.items.insert(before, f"stage {s.key} ({s.title.split(': ', 1)[1]}), checked again as your "
                                   f"queue grows, no longer passes:")
                return
        judge = JUDGES[key]
        # a stage may run something other than one run per seed (``plan``: 10.4 runs one case file a seed)
        runs = getattr(judge, "plan", list)(draw_seeds(seeds, judge.SEEDS))
        found = {run: Findings() for run in runs}
        side_by_side(lambda run: judge.one_seed(node, loaded, run, found[run]), runs, judge.DEADLINE_S * 4 + 60)
        failed = over_seeds(found, f, what="runs" if hasattr(judge, "plan") else "seeds")
        if failed:
            f.shown.extend(found[failed[0]].shown)
            return
        after = getattr(judge, "after", None)
        if after is not None:
            after(node, loaded, f)
        # a pass of files load_reference put there, unedited, is the references', not the learner's
        f.references = mine.references_for(key)
    finally:
        node.stop()


def stage_exercise(key: str, hint: str) -> None:
    """Register stage ``key`` of your queue as the build of the same key: the stage's title, ``hint``, its
    reference folder (``notebooks/solutions/my_queue/NN_M``), judged by ``judge_stage``."""
    judged(key, stage(key).title, hint, solution=f"my_queue/{key.replace('.', '_')}")(partial(judge_stage, key))
