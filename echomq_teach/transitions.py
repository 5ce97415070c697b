"""One builder per transition: the native command, the script, the keys and the arguments of each call.

Every call the kit makes to a queue's scripts is built here, once, from the
course's own arguments (BullMQ keeps each command's arguments in one place;
so does this kit): the job functions (``jobs``, ``flows``, ``stalled``,
``snapshots``), a Pool's lane (``shortcuts.Lane``), the floor's lease, the
lab's worker and executor cost, the two-executor widget and check all send
what these build. A builder checks nothing and sends nothing: the job
functions check their arguments first (``BadInput`` before any call), and a
raw call (notebook 04's, past claim/3's checks) is built the same way.

Which executor runs a ``Call`` is the connector's (``Connector.run``): the
native command on wire 6 where the call has one, else the script by EVALSHA.
A connector given a ``ScriptSet`` runs another script in a transition's place,
with the same keys and arguments, on either wire: the seam through which a
learner's own Lua runs under the kit's consumers, workers and checker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import scripts
from .errors import BadInput
from .keyspace import base

#: each transition's script in ``echomq_teach/lua/`` (the kit's), by the transition's name
SCRIPTS: dict[str, str] = {
    "enqueue": "enqueue",  # EchoMQ.Jobs.enqueue/5
    "enqueue_flow": "enqueue_flow",  # EchoMQ.Flows.add/3
    "claim": "claim2",  # EchoMQ.Jobs.claim/3
    "claim_many": "claim_many",  # the kit's batch claim
    "complete": "complete",  # EchoMQ.Jobs.complete/5
    "retry": "retry",  # EchoMQ.Jobs.retry/7: a failure, a burial at the cap, a parent's death by its child
    "promote": "promote",  # EchoMQ.Jobs.promote/3
    "reap": "reap",  # EchoMQ.Jobs.reap/2
    "stalled_check": "stalled_check",  # EchoMQ.Stalled.check/3
    "pause": "pause",  # EchoMQ.Jobs.pause/2
    "resume": "resume",  # EchoMQ.Jobs.resume/2
    "reprocess": "reprocess",  # EchoMQ.Jobs.reprocess/3
    "remove": "remove",  # EchoMQ.Jobs.remove/3
    "trim_dead": "trim_dead",  # EchoMQ.Jobs.trim_dead/3
    "drop": "drop",  # EchoMQ.Jobs.drop/2
    "snapshot": "snapshot",  # EchoMQ.Inspect.snapshot/2
    "floor_lease": "floor_lease",  # the archive driver's lease (EchoStore.StreamArchive.Driver)
    "floor_release": "floor_release",
    "floor_trim": "floor_trim",
}
#: the native twins (the trafikey module): a call that has one sends it on a wire 6 connector
COMMANDS: dict[str, str] = {
    "claim": "EMQ.CLAIM",
    "claim_many": "EMQ.CLAIM.MANY",
    "complete": "EMQ.COMPLETE",
    "retry": "EMQ.FAIL",
    "stalled_check": "EMQ.STALLED.CHECK",
}


@dataclass(frozen=True)
class Call:
    """One transition's call, built: its keys and arguments, and the native command it may go as."""

    transition: str
    keys: tuple[str, ...]
    argv: tuple[Any, ...]
    #: the native command on wire 6; ``""`` when there is none, or not for this call (a flow child's settle)
    command: str = ""

    @property
    def script(self) -> str:
        """The kit's script for this transition (``"claim2"``)."""
        return SCRIPTS[self.transition]

    def words(self, native: bool) -> list[Any]:
        """The call as one command's words, for a raw client's pipeline (a measurement, no trace): its native
        command where ``native`` and it has one, else EVALSHA of the kit's script (loaded by the caller)."""
        head = [self.command] if native and self.command else ["EVALSHA", scripts.load(self.script).sha]
        return [*head, len(self.keys), *self.keys, *self.argv]


def _call(transition: str, keys: Sequence[str], argv: Sequence[Any], native: bool = False) -> Call:
    return Call(transition, tuple(keys), tuple(argv), COMMANDS[transition] if native else "")


def _record(record: bool) -> tuple[str, ...]:
    # the kit's optional last argument: "1" records the ending; absent, the call has the page's own shape
    return ("1",) if record else ()


# -- the lifecycle (EchoMQ.Jobs) ------------------------------------------------------------------------------
def enqueue(queue: str, job_id: str, payload: Any) -> Call:
    """``@enqueue``: KEYS pending, the row; ARGV id, payload."""
    b = base(queue)
    return _call("enqueue", (b + "pending", f"{b}job:{job_id}"), (job_id, payload))


def enqueue_flow(queue: str, parent: tuple[str, Any], children: Sequence[tuple[str, Any]],
                 policies: Sequence[str]) -> Call:
    """``@enqueue_flow``: KEYS pending, the parent row and its three flow keys, each child's row; ARGV the
    parent's id and payload, each child's id and payload, then each child's policy."""
    b = base(queue)
    parent_id, parent_payload = parent
    row = f"{b}job:{parent_id}"
    keys = [b + "pending", row, row + ":dependencies", row + ":processed", row + ":unsuccessful"]
    keys += [f"{b}job:{child_id}" for child_id, _ in children]
    argv: list[Any] = [parent_id, parent_payload]
    for child_id, payload in children:
        argv += [child_id, payload]
    return _call("enqueue_flow", keys, [*argv, *policies])


def claim(queue: str, lease_ms: Any) -> Call:
    """``@claim2`` / ``EMQ.CLAIM``: KEYS pending, active, the base; ARGV lease_ms."""
    b = base(queue)
    return _call("claim", (b + "pending", b + "active", b), (str(lease_ms),), native=True)


def claim_many(queue: str, lease_ms: Any, k: int) -> Call:
    """``@claim_many`` / ``EMQ.CLAIM.MANY``: KEYS pending, active, the base; ARGV lease_ms, k."""
    b = base(queue)
    return _call("claim_many", (b + "pending", b + "active", b), (str(lease_ms), str(k)), native=True)


def complete(queue: str, job_id: str, token: Any, result: Any = "", parent: str = "", *,
             record: bool = False) -> Call:
    """``@complete`` / ``EMQ.COMPLETE``: KEYS active, the row (a flow child adds its parent's :dependencies,
    :processed and row); ARGV id, token, the base, parent id, result, and the kit's record flag.

    A flow child (``parent`` not empty) settles by the script on either wire: it has no native command.
    """
    b = base(queue)
    keys = [b + "active", f"{b}job:{job_id}"]
    if parent:
        p = f"{b}job:{parent}"
        keys += [p + ":dependencies", p + ":processed", p]
    argv = (job_id, str(token), b, parent, result, *_record(record))
    return _call("complete", keys, argv, native=not parent)


def retry(queue: str, job_id: str, token: Any, reason: Any, delay_ms: Any, max_attempts: Any, parent: str = "",
          *, record: bool = False) -> Call:
    """``@retry`` / ``EMQ.FAIL``: KEYS active, schedule, dead, the row (a flow child adds its parent's
    :dependencies, :unsuccessful and row); ARGV id, token, delay_ms, max_attempts, reason, the base, parent id,
    and the kit's record flag. A flow child's failure (and its parent's death) goes by the script."""
    b = base(queue)
    keys = [b + "active", b + "schedule", b + "dead", f"{b}job:{job_id}"]
    if parent:
        p = f"{b}job:{parent}"
        keys += [p + ":dependencies", p + ":unsuccessful", p]
    argv = (job_id, str(token), str(delay_ms), str(max_attempts), reason, b, parent, *_record(record))
    return _call("retry", keys, argv, native=not parent)


def promote(queue: str, limit: Any) -> Call:
    """``@promote``: KEYS schedule, pending, the base; ARGV limit."""
    b = base(queue)
    return _call("promote", (b + "schedule", b + "pending", b), (str(limit),))


def reap(queue: str) -> Call:
    """``@reap``: KEYS active, pending, the base; no ARGV."""
    b = base(queue)
    return _call("reap", (b + "active", b + "pending", b), ())


def stalled_check(queue: str, max_stalled: Any, *, record: bool = False) -> Call:
    """``@stalled_check`` / ``EMQ.STALLED.CHECK``: KEYS active, pending, dead, the base; ARGV max_stalled and
    the kit's record flag."""
    b = base(queue)
    return _call("stalled_check", (b + "active", b + "pending", b + "dead", b), (str(max_stalled), *_record(record)),
                 native=True)


def pause(queue: str) -> Call:
    """``@pause``: KEYS the flag; no ARGV."""
    return _call("pause", (base(queue) + "paused",), ())


def resume(queue: str) -> Call:
    """``@resume``: KEYS the flag; no ARGV."""
    return _call("resume", (base(queue) + "paused",), ())


def reprocess(queue: str, job_id: str) -> Call:
    """``@reprocess``: KEYS dead, pending, the row; ARGV id."""
    b = base(queue)
    return _call("reprocess", (b + "dead", b + "pending", f"{b}job:{job_id}"), (job_id,))


def remove(queue: str, job_id: str, *, record: bool = False) -> Call:
    """``@remove``: KEYS the four sets, the row, its three flow keys, the completions stream; ARGV id and the
    kit's record flag."""
    b = base(queue)
    row = f"{b}job:{job_id}"
    keys = [b + s for s in ("pending", "active", "schedule", "dead")]
    keys += [row, row + ":dependencies", row + ":processed", row + ":unsuccessful", b + "stream:completions"]
    return _call("remove", keys, (job_id, *_record(record)))


def trim_dead(queue: str, keep: Any) -> Call:
    """``@trim_dead``: KEYS dead, the base; ARGV keep."""
    b = base(queue)
    return _call("trim_dead", (b + "dead", b), (str(keep),))


def drop(queue: str) -> Call:
    """``@drop``: KEYS the base; no ARGV."""
    return _call("drop", (base(queue),), ())


def snapshot(queue: str) -> Call:
    """``@snapshot``: KEYS the base; no ARGV (a read: no WAIT follows it on a cluster)."""
    return _call("snapshot", (base(queue),), ())


# -- the floor's lease on a completions stream ---------------------------------------------------------------
def floor_lease(queue: str, holder: str, lease_ms: Any, seen: Any) -> Call:
    """``@floor_lease``: KEYS the lease, the fence counter; ARGV holder, lease_ms, the highest token seen."""
    b = base(queue)
    return _call("floor_lease", (b + "floor:driver", b + "floor:fence"), (holder, str(lease_ms), str(seen)))


def floor_release(queue: str, token: Any, holder: str) -> Call:
    """``@floor_release``: KEYS the lease; ARGV token, holder."""
    return _call("floor_release", (base(queue) + "floor:driver",), (str(token), holder))


def floor_trim(queue: str, stream: str, token: Any, holder: str, minid: str, lease_ms: Any, cursor: str) -> Call:
    """``@floor_trim``: KEYS the queue's completions stream, the lease; ARGV token, holder, MINID, lease_ms, the
    floor's cursor."""
    return _call("floor_trim", (stream, base(queue) + "floor:driver"),
                 (str(token), holder, minid, str(lease_ms), cursor))


# -- another script in a transition's place -----------------------------------------------------------------
@dataclass(frozen=True)
class ScriptSet:
    """The Lua each transition runs: the kit's (``echomq_teach/lua/``), unless another script stands in its place.

    ``ScriptSet({"claim": scripts.from_file("my/claim.lua")})`` runs that script
    for every claim a connector holding the set makes, with claim's keys and
    arguments, on either wire: a transition whose script is replaced never
    takes its native twin. A connector's forks keep its set
    (``Connector.script_set``); a lab run hands it to its worker processes as
    files (``files``).
    """

    replaced: Mapping[str, scripts.Script] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.replaced, Mapping):
            raise BadInput(f"a ScriptSet takes a mapping of transition → Script, got {type(self.replaced).__name__}")
        _known(self.replaced)
        for name, sc in self.replaced.items():
            if not isinstance(sc, scripts.Script):
                raise BadInput(f"the script for {name!r} must be a scripts.Script (scripts.from_file, "
                               f"scripts.from_source), got {type(sc).__name__}")
        object.__setattr__(self, "replaced", dict(self.replaced))

    @classmethod
    def from_files(cls, files: Mapping[str, str | Path]) -> ScriptSet:
        """A set from Lua files, by transition (``{"claim": "queue/claim.lua"}``): a worker process's."""
        if not isinstance(files, Mapping):
            raise BadInput(f"scripts must map a transition to a Lua file, got {type(files).__name__}")
        _known(files)
        return cls({name: scripts.from_file(path) for name, path in files.items()})

    def get(self, transition: str) -> scripts.Script | None:
        """The script standing in ``transition``'s place, or None (the kit's runs)."""
        return self.replaced.get(transition)

    def script(self, transition: str) -> scripts.Script:
        """The script ``transition`` runs under this set."""
        return self.replaced.get(transition) or scripts.load(SCRIPTS[transition])

    def replaces(self, *transitions: str) -> bool:
        """True when another script stands in any of these transitions' places."""
        return any(t in self.replaced for t in transitions)

    def files(self, folder: str | Path) -> dict[str, str]:
        """Each replacing script written to ``folder/<transition>.lua`` (as it runs, includes spliced in);
        answers transition → path, what ``from_files`` reads back (a worker process's options)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        out = {}
        for name, sc in self.replaced.items():
            path = folder / f"{name}.lua"
            path.write_text(sc.source, encoding="utf-8")
            out[name] = str(path)
        return out

    def __bool__(self) -> bool:
        return bool(self.replaced)


def _known(names: Mapping[str, Any]) -> None:
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        raise BadInput(f"unknown transition {unknown[0]!r}: the transitions are {sorted(SCRIPTS)}")


#: the kit's own scripts for every transition
KIT = ScriptSet()
