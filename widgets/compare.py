"""One transition, two executors: run the same step on a scripted and a native node, and compare.

The comparison names each difference and says whether the page documents it:
the command line (EVALSHA <sha> vs EMQ.CLAIM), the pause read inside the
command, the deadline from the cached command time, and ``lease_epoch``.
Anything else that differs is flagged as undocumented.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from echomq_teach import ids, jobs, transitions
from echomq_teach.connector import Connector, TraceEntry
from echomq_teach.keyspace import queue_key

from .model import Call, drop_queue, fresh_queue, ms, reader_for, run_call

LEASE_MS = 30_000
CLOCK_SLACK_MS = 5  # two nodes' clocks read a few ms apart are the same reading


@dataclass(frozen=True)
class Scenario:
    """Setup calls (not compared), then the one step whose commands, reply and end state are compared."""

    name: str
    title: str
    setup: Callable[[Connector, str, str], None]
    step: Callable[[Connector, str, str], Any]


def _enqueue(c: Connector, q: str, jid: str) -> None:
    jobs.enqueue(c, q, "hello", job_id=jid)


def _enqueue_claim(c: Connector, q: str, jid: str) -> None:
    _enqueue(c, q, jid)
    jobs.claim(c, q, LEASE_MS)


def _ghost(c: Connector, q: str, jid: str) -> None:
    # an id in pending with no row: what a removed job can leave behind
    c.call("ZADD", queue_key(q, "pending"), 0, jid)


def _paused(c: Connector, q: str, jid: str) -> None:
    _enqueue(c, q, jid)
    jobs.pause(c, q)


def _raw_claim(c: Connector, q: str, jid: str) -> Any:
    # what claim/3 sends after its own pause read, sent here without that read
    return c.run(transitions.claim(q, LEASE_MS))


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("claim", "claim/3 on a pending job", _enqueue, lambda c, q, j: jobs.claim(c, q, LEASE_MS)),
        Scenario(
            "complete",
            "complete/5 with the claim's token",
            _enqueue_claim,
            lambda c, q, j: jobs.complete(c, q, j, 1, "done"),
        ),
        Scenario(
            "retry",
            "retry/7 below max attempts",
            _enqueue_claim,
            lambda c, q, j: jobs.retry(c, q, j, 1, "boom", 1_000, 3),
        ),
        Scenario(
            "stale", "complete/5 with a token that moved on", _enqueue_claim, lambda c, q, j: jobs.complete(c, q, j, 2)
        ),
        Scenario(
            "ghost", "claim/3 when the head of pending has no row", _ghost, lambda c, q, j: jobs.claim(c, q, LEASE_MS)
        ),
        Scenario("paused", "claim/3 on a paused queue", _paused, lambda c, q, j: jobs.claim(c, q, LEASE_MS)),
        Scenario("paused-raw", "the raw claim command on a paused queue", _paused, _raw_claim),
    )
}


@dataclass
class Difference:
    kind: str  # "command", "reply", "set", "score", "field"
    text: str
    documented: bool | None  # True: the page lists it; False: it should not differ; None: the same on both


@dataclass
class Side:
    label: str
    conn: Connector
    call: Call
    run_id: str


@dataclass
class Comparison:
    scenario: Scenario
    job_id: str
    queue: str
    scripted: Side
    native: Side
    differences: list[Difference] = field(default_factory=list)

    @property
    def undocumented(self) -> list[Difference]:
        return [d for d in self.differences if d.documented is False]

    @property
    def documented(self) -> list[Difference]:
        return [d for d in self.differences if d.documented]


def _words(e: TraceEntry) -> list[str]:
    """The command's words after its name (and after the sha for EVALSHA), for line-by-line comparison."""
    return e.line.split()[2:] if e.script else e.line.split()[1:]


def _head(e: TraceEntry) -> str:
    return f"EVALSHA <sha> ({e.script})" if e.script else str(e.args[0]).upper()


def compare_commands(a: list[TraceEntry], b: list[TraceEntry]) -> list[Difference]:
    out: list[Difference] = []
    for i in range(max(len(a), len(b))):
        ea, eb = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        if ea is None or eb is None:
            only = ea or eb
            out.append(Difference("command", f"only one executor sent: {only.line}", False))  # type: ignore[union-attr]
            continue
        if ea.line == eb.line:
            out.append(Difference("command", ea.line, None))  # its badge already says "same"
        elif _words(ea) == _words(eb):
            native_name = _head(eb)
            out.append(
                Difference(
                    "command",
                    f"{_head(ea)} gives way to {native_name}: the same KEYS and ARGV in the same places, "
                    "nothing to load and no NOSCRIPT path",
                    True,
                )
            )
        else:
            out.append(Difference("command", f"{ea.line}  ≠  {eb.line}", False))
    return out


def compare(scenario: Scenario, s: Call, n: Call, job_id: str, native_run_id: str) -> list[Difference]:
    """Every difference between the scripted and the native run of one step, with its documentation status."""
    out = compare_commands(s.entries, n.entries)
    if s.reply == n.reply:
        out.append(Difference("reply", _reply(s), None))
    else:
        # the pause read inside EMQ.CLAIM is difference 1 on the page; only a raw command can show it
        doc = scenario.name == "paused-raw"
        why = " — the pause read moved inside the command" if doc else ""
        out.append(Difference("reply", f"replies differ: {_reply(s)} vs {_reply(n)}{why}", doc))
    a, b = s.after, n.after
    for set_name in ("pending", "active", "schedule", "dead"):
        ina, inb = job_id in a.sets[set_name], job_id in b.sets[set_name]
        if ina != inb:
            doc = scenario.name == "paused-raw"
            out.append(
                Difference("set", f"in {set_name}: scripted {_yes(ina)}, native {_yes(inb)}{_follows(doc)}", doc)
            )
        elif ina and set_name != "pending":
            ra, rb = a.relative(set_name, job_id), b.relative(set_name, job_id)
            what = {"active": "deadline", "schedule": "run-at", "dead": "time of death"}[set_name]
            both = f"{set_name} {what} vs each server's now: scripted {ms(ra)}, native {ms(rb)}"
            if set_name == "active" and n.executor.startswith("EMQ."):
                # difference 3 on the page: the native deadline is the cached command time + the lease
                out.append(Difference("score", both + " — natively the cached command time, no TIME call", True))
            elif abs(ra - rb) <= CLOCK_SLACK_MS:
                out.append(Difference("score", both + " — the same, within a clock reading", None))
            else:
                out.append(Difference("score", both, False))
    ra_row, rb_row = a.rows.get(job_id, {}), b.rows.get(job_id, {})
    for f in sorted(set(ra_row) | set(rb_row)):
        va, vb = ra_row.get(f), rb_row.get(f)
        if va == vb:
            continue
        if f == "lease_epoch" and va is None:
            ok = "= the native server's run_id" if vb == native_run_id else "≠ the server's run_id (!)"
            out.append(Difference("field", f"lease_epoch only natively: {vb} {ok}", vb == native_run_id))
        else:
            # on a paused queue the raw script claimed and the command did not: every row change follows
            doc = scenario.name == "paused-raw"
            out.append(Difference("field", f"row field {f}: scripted {va!r}, native {vb!r}{_follows(doc)}", doc))
    if a.rows.get(job_id) is None and b.rows.get(job_id) is None:
        out.append(Difference("field", "no row on either node", None))
    elif not any(d.kind == "field" for d in out):
        out.append(Difference("field", "same row on both nodes", None))
    return out


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _follows(documented: bool) -> str:
    return " — follows from the pause read inside EMQ.CLAIM" if documented else ""


def _reply(c: Call) -> str:
    if c.error is not None:
        return f"(error) {c.error}"
    return repr(c.reply)


class ExecutorRun:
    """Runs scenarios on both nodes, each on one fresh queue name shared by the two."""

    def __init__(
        self,
        scripted: Connector,
        native: Connector,
        *,
        queue_prefix: str = "twin",
    ) -> None:
        if not native.native:
            raise ValueError("the native side needs a wire=6 connector on a node with trafikey loaded")
        if scripted.native:
            raise ValueError("the scripted side needs a wire=4 connector")
        self.scripted, self.native = scripted, native
        self.readers = (reader_for(scripted), reader_for(native))
        self.queue_prefix = queue_prefix
        self.last: Comparison | None = None

    def run(self, name: str = "claim") -> Comparison:
        sc = SCENARIOS[name]
        if self.last is not None:
            for r in self.readers:
                drop_queue(r, self.last.queue)
        q, jid = fresh_queue(self.queue_prefix), ids.mint()
        sides = []
        for label, conn, reader in (
            ("scripted", self.scripted, self.readers[0]),
            ("native", self.native, self.readers[1]),
        ):
            sc.setup(conn, q, jid)
            call = run_call(conn, reader, q, lambda c=conn: sc.step(c, q, jid))
            run_id = reader.client.info("server")["run_id"]
            sides.append(Side(label, conn, call, run_id))
        self.last = Comparison(sc, jid, q, sides[0], sides[1])
        self.last.differences = compare(sc, sides[0].call, sides[1].call, jid, sides[1].run_id)
        return self.last

    def close(self) -> None:
        for r, c in zip(self.readers, (self.scripted, self.native)):
            if self.last is not None:
                drop_queue(r, self.last.queue)
            if r is not c:
                r.close()
