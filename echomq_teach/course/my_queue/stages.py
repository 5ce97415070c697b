"""The stages of your own queue: what each one adds to the folder, in the order the course meets them.

Each stage is an exercise of the registry (its key is the exercise's: the live view shows it as one), taught
where its idea is, and each adds a file to the same folder or grows one (``complete.lua`` takes flow children
at 05.2). A stage's check runs the probes of every stage before it again, then its own, then its judged runs:
a queue grows, and what it did before keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import BadInput


@dataclass(frozen=True)
class Stage:
    """One stage: its exercise key, its title, the files it asks for (new, or grown), its notebook's words."""

    key: str
    title: str
    files: tuple[str, ...]
    #: what a learner reads in the folder's README and in ``Folder.status``
    asks: str


STAGES: tuple[Stage, ...] = (
    Stage("02.2", "Your queue, stage 1: claim and renew", ("claim.lua", "renew.lua"),
          "a claim that hands out a job under a lease and a token, past ghosts; a renewal only while the job is "
          "yours"),
    Stage("03.3", "Your queue, stage 2: complete and retry", ("complete.lua", "retry.lua"),
          "settles fenced by the token and the row's state; a retry that backs off, honours a job's own cap and "
          "buries at it"),
    Stage("03.6", "Your queue, stage 3: recover, with a poison bound", ("recover.lua",),
          "lapsed leases back to pending, and a lapse at the cap buried: a poison job stops"),
    Stage("03.7", "Your queue, stage 4: the beat", ("beat.py",),
          "one beat of your consumer: promote, recover, claim within a budget, handle, settle"),
    Stage("05.2", "Your queue, stage 5: a parent that needs only a quorum", ("complete.lua",),
          "complete.lua takes flow children: a parent released once a quorum of its children completed"),
    Stage("10.4", "Your queue, stage 6: valid first, then fast", (),
          "the whole queue under notebook 10's nemesis and in the chaos widget; its cost beside the kit's"),
)
BY_KEY = {s.key: s for s in STAGES}
#: every file a queue of your own holds, in the order the stages first ask for it
FILES: tuple[str, ...] = tuple(dict.fromkeys(f for s in STAGES for f in s.files))
#: the kit's transition each Lua file runs in the place of (``transitions.SCRIPTS``); renew.lua has none
TRANSITIONS = {"claim.lua": "claim", "complete.lua": "complete", "retry.lua": "retry", "recover.lua": "stalled_check"}


def stage(key: str) -> Stage:
    """The stage of exercise ``key``; ``BadInput`` naming the stages for any other key."""
    if key not in BY_KEY:
        raise BadInput(f"{key!r} is no stage of your queue; the stages are {', '.join(BY_KEY)}")
    return BY_KEY[key]


def upto(key: str) -> tuple[Stage, ...]:
    """The stages up to ``key`` and ``key`` itself, in the course's order."""
    last = STAGES.index(stage(key))
    return STAGES[: last + 1]


def files_upto(key: str) -> tuple[str, ...]:
    """Every file the stages up to ``key`` ask for: what a check of ``key`` runs of your folder."""
    return tuple(dict.fromkeys(f for s in upto(key) for f in s.files))


def first_asked(name: str) -> Stage:
    """The stage that first asks for file ``name``."""
    return next(s for s in STAGES if name in s.files)
