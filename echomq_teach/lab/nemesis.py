"""The nemesis: a seeded random schedule of faults, carried out on a run it drives (a ``Target``).

``Nemesis(seed)`` draws the schedule from its seed alone: the same seed, the
same faults at the same offsets (what the faults then do depends on timing, as
it would). ``run(target)`` carries it out, bounded, thawing every frozen worker.
A target is what the nemesis drives: the lab's ``Run``, and a case model's
``ModelRun`` (``lab.models.trial``), answer the one protocol ``Target``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .. import jobs
from ..errors import BadInput
from .history import Recorder
from .run import FAULTS, Fault


@runtime_checkable
class Target(Protocol):
    """What the nemesis drives: worker slots it aims faults at, a lane it notes them in, and the faults.

    ``size``: the worker slots; ``nemesis``: the recorder of the ``nemesis``
    lane (a skipped fault is noted there); ``pump``: whether a Pump promotes
    (``drop_pump_link`` needs one); ``apply``: carry out one fault (a freeze's
    thaw is the nemesis's, ``hold_s`` later, by ``thaw``).
    """

    size: int
    nemesis: Recorder
    pump: bool

    def apply(self, fault: Fault) -> None: ...

    def thaw(self, slot: int) -> None: ...


@dataclass
class Nemesis:
    """A seeded random schedule of faults: the same seed draws the same schedule.

    ``count`` faults, one every ``gap_s`` (drawn uniformly from the range),
    each drawn from ``kinds`` and aimed at a random worker slot. A freeze
    holds for ``freeze_s`` (drawn from the range: make it longer than the
    lease to make a zombie).
    """

    seed: int
    kinds: tuple[str, ...] = ("kill", "freeze", "drop_link", "script_flush")
    count: int = 8
    gap_s: tuple[float, float] = (0.1, 0.4)
    freeze_s: tuple[float, float] = (1.5, 2.5)
    #: kinds that happen exactly at one place each, whatever the draw (a node restart, say)
    must: tuple[str, ...] = ()
    schedule: list[Fault] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        bad = [k for k in (*self.kinds, *self.must) if k not in FAULTS]
        if bad or not self.kinds:
            raise BadInput(f"unknown fault kinds {bad}: the kinds are {FAULTS}")
        jobs.positive_int("count", self.count)
        if len(self.must) > self.count:
            raise BadInput(f"must names {len(self.must)} faults but the schedule holds {self.count}")
        for name, (lo, hi) in (("gap_s", self.gap_s), ("freeze_s", self.freeze_s)):
            if not 0 <= lo <= hi:
                raise BadInput(f"{name} must be a range (low, high) with 0 <= low <= high, got {(lo, hi)!r}")

    def draw(self, slots: int) -> list[Fault]:
        """The schedule for a run with ``slots`` worker slots (deterministic in the seed)."""
        rng = random.Random(self.seed)
        # each kind in ``must`` takes one place in the schedule, drawn like the rest
        forced = dict(zip(rng.sample(range(self.count), len(self.must)), self.must))
        t = 0.0
        out: list[Fault] = []
        for i in range(self.count):
            t += rng.uniform(*self.gap_s)
            kind = forced.get(i) or rng.choice(self.kinds)
            slot = rng.randrange(slots) if kind in ("kill", "freeze", "drop_link") else None
            hold = rng.uniform(*self.freeze_s) if kind == "freeze" else 0.0
            out.append(Fault(round(t, 3), kind, slot, round(hold, 3)))
        self.schedule = out
        return out

    def run(self, run: Target, deadline_s: float = 60.0) -> list[Fault]:
        """Carry out the schedule on ``run`` (a ``Target``: this call blocks, bounded); answers the faults applied.

        A slot that is frozen takes no other fault until it is thawed: the
        fault aimed at it is skipped and recorded as skipped.
        """
        if "drop_pump_link" in (*self.kinds, *self.must) and not run.pump:
            # refused before the first fault, not halfway through the schedule
            raise BadInput("drop_pump_link needs a run with pump=True: this run's metronome promotes")
        schedule = self.draw(run.size)
        thaws: list[tuple[float, int]] = []
        start = time.monotonic()
        applied: list[Fault] = []
        pending = list(schedule)
        while (pending or thaws) and time.monotonic() - start < deadline_s:
            now = time.monotonic() - start
            for at, slot in [t for t in thaws if t[0] <= now]:
                thaws.remove((at, slot))
                run.thaw(slot)
            if pending and pending[0].at_s <= now:
                f = pending.pop(0)
                frozen = f.slot is not None and any(s == f.slot for _, s in thaws)
                if frozen:
                    run.nemesis.note("skipped", kind=f.kind, slot=f.slot)
                else:
                    run.apply(f)
                    applied.append(f)
                    if f.kind == "freeze" and f.slot is not None:
                        thaws.append((now + f.hold_s, f.slot))
                continue
            if not pending and not thaws:
                break
            nxt = min([p.at_s for p in pending[:1]] + [t[0] for t in thaws])
            time.sleep(max(0.0, min(0.05, nxt - now)))
        for _, slot in thaws:  # the deadline came first: nobody stays frozen
            run.thaw(slot)
        return applied
