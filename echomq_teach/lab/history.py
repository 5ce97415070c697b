"""A run's history: every call a worker made, when it went out, when it came back, and what it said.

Each process of a run (a worker, the run's own metronome, the nemesis, the
producer) keeps a ``Recorder``: one JSON-lines file in the run's folder, named
after the process. A call is written twice, once as it goes out (``send``)
and once as its answer comes back (``answer``, ``refused`` or ``lost``); each
line is handed to the kernel as soon as it is made (one ``write`` on an
``O_APPEND`` file), so a worker killed by SIGKILL keeps everything up to its
last line. A ``send`` with no answer after it is a call whose outcome the
worker never learned: it may or may not have run on the node (an
*indeterminate* call, in the words of Jepsen's checkers).

Times are the node's clock in milliseconds: each process measures the offset
between its own wall clock and the node's ``TIME`` once, when it starts,
keeping the sample with the shortest round trip, and stamps every line with
its own clock plus that offset. On one machine the two clocks are the same
clock and the offset is within a fraction of a millisecond; ``ServerClock``
keeps the round trip as the bound on its error.

``History.read(folder)`` pairs the lines back into ``Op`` records for the
checker (``echomq_teach.lab.checker``) and the timeline (``echomq_teach.lab.timeline``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import jobs, stalled
from ..connector import LINK_ERRORS, Connector, NotSent
from ..errors import BadInput
from ..shortcuts import Lane

#: calls that hand a job out, settle it, or put it back where a claim can find it
SETTLES = ("complete", "retry")
RELEASES = ("reap", "stalled", "promote", "reprocess")
_CALIBRATION_SAMPLES = 5


class ServerClock:
    """The node's clock (``TIME``) read through this process's wall clock and one measured offset."""

    def __init__(self, conn: Connector) -> None:
        best: tuple[float, float] | None = None  # (round trip, offset), both ms
        for _ in range(_CALIBRATION_SAMPLES):
            before = time.time() * 1000
            sec, usec = conn.client.time()
            after = time.time() * 1000
            rtt = after - before
            offset = sec * 1000 + usec / 1000 - (before + after) / 2
            if best is None or rtt < best[0]:
                best = (rtt, offset)
        assert best is not None
        self.error_ms = best[0] / 2
        self.offset_ms = best[1]

    def now_ms(self) -> float:
        """The node's clock now, in ms (a float: sub-millisecond order matters between two calls)."""
        return time.time() * 1000 + self.offset_ms


class Recorder:
    """One process's history file: ``call`` records a call and its answer, ``note`` a moment.

    The job functions are here in recorded form (``rec.claim(conn, q, lease_ms)``
    is ``jobs.claim`` plus two lines of history), so a worker, a notebook cell
    and a test record the same way.
    """

    def __init__(self, folder: str | os.PathLike[str], worker: str, clock: ServerClock) -> None:
        if not worker or any(c in worker for c in "/\\\n") or worker.startswith("."):
            raise BadInput(f"a worker name must be a plain file name, got {worker!r}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.worker = worker
        self.clock = clock
        self.path = self.folder / f"{worker}.jsonl"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._n = 0

    def _write(self, line: dict[str, Any]) -> None:
        # one write per line on an O_APPEND file: a process killed right after still left it whole
        os.write(self._fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())

    def _open(self, op: str, at: str = "send", *, job: str | None = None, token: int | None = None,
              **extra: Any) -> int:
        """The first (or only) line of an op: a call going out, or a note. Answers the op's number."""
        self._n += 1
        self._write({"w": self.worker, "n": self._n, "op": op, "at": at, "t": self.clock.now_ms(),
                     "job": job, "token": token, **extra})
        return self._n

    def _close(self, n: int, at: str, t: float | None = None, **fields: Any) -> None:
        """The line that ends call ``n``: ``answer``, ``refused`` or ``lost``."""
        self._write({"w": self.worker, "n": n, "at": at, "t": self.clock.now_ms() if t is None else t, **fields})

    def _close_failed(self, sent: list[int], exc: BaseException) -> None:
        """End every call of one round trip that raised: all lost, or all refused, at one moment."""
        t = self.clock.now_ms()
        for n in sent:
            self._close(n, _failed(exc), t, error=_err(exc))

    def call(
        self, op: str, fn: Callable[[], Any], *, job: str | None = None, token: int | None = None,
        shape: Callable[[Any], dict[str, Any]] | None = None, extra: dict[str, Any] | None = None,
    ) -> Any:
        """Run ``fn`` as the call ``op``: a ``send`` line before, an ``answer``/``refused``/``lost`` line after.

        ``shape`` turns the reply into the fields the checker reads (a claim's
        job and token); the reply itself is kept as text. ``extra`` goes on
        the ``send`` line (a claim's ``lease_ms``).
        """
        n = self._open(op, job=job, token=token, **(extra or {}))
        try:
            reply = fn()
        except Exception as exc:
            self._close(n, _failed(exc), error=_err(exc))
            raise
        fields = shape(reply) if shape is not None else {}
        self._close(n, "answer", reply=_plain(reply), **fields)
        return reply

    def note(self, op: str, *, job: str | None = None, token: int | None = None, **extra: Any) -> None:
        """A moment with no answer: a handler run starting or ending, a fault, a crash."""
        self._open(op, "note", job=job, token=token, **extra)

    # -- the job functions, recorded -----------------------------------------------------
    def enqueue(self, conn: Connector, queue: str, payload: str | bytes, job_id: str | None = None) -> str:
        """``jobs.enqueue`` recorded; the id is known before the call (minted here when not given)."""
        from .. import ids

        job_id = ids.mint() if job_id is None else job_id
        return self.call("enqueue", lambda: jobs.enqueue(conn, queue, payload, job_id), job=job_id)

    def enqueue_many(self, conn: Connector, queue: str, payloads: list[str | bytes]) -> list[str]:
        """``jobs.enqueue_many`` recorded job by job: each its own send and answer, one round trip for all."""
        from .. import ids

        job_ids = [ids.mint() for _ in payloads]
        sent = [self._open("enqueue", job=job_id) for job_id in job_ids]
        try:
            answers = jobs.enqueue_many(conn, queue, payloads, job_ids)
        except Exception as exc:
            self._close_failed(sent, exc)
            raise
        t = self.clock.now_ms()
        for n, answer in zip(sent, answers):
            if isinstance(answer, Exception):
                self._close(n, "refused", t, error=_err(answer))
            else:
                self._close(n, "answer", t, reply=answer)
        return [a for a in answers if not isinstance(a, Exception)]

    def enqueue_flow(self, parent: str, children: Sequence[str], enqueue: Callable[..., Any], *args: Any) -> Any:
        """``enqueue(*args)``, a flow's enqueue (``flows.add``, or a case model's), recorded as the calls it stands for.

        One atomic step lands the parent and its children, and the history says
        so: the parent's enqueue and each child's (naming its ``parent``, which
        the case files' ``released_early`` reads) go out together and are
        answered together, or all end as that one call ended.
        """
        sent = [self._open("enqueue", job=parent)] + [self._open("enqueue", job=c, parent=parent) for c in children]
        try:
            reply = enqueue(*args)
        except Exception as exc:
            self._close_failed(sent, exc)
            raise
        t = self.clock.now_ms()
        for n in sent:
            self._close(n, "answer", t, reply="ok")
        return reply

    def claim(self, conn: Connector, queue: str, lease_ms: int) -> jobs.Claimed | None:
        """``jobs.claim`` recorded; the job and its token are known only from the answer."""
        return self.call("claim", lambda: jobs.claim(conn, queue, lease_ms), shape=claimed_fields,
                         extra={"lease_ms": lease_ms})

    def claim_many(self, lane: Lane, k: int) -> list[jobs.Claimed]:
        """A batch claim (``jobs.claim_many`` on ``lane``) recorded as the k claims it stands for.

        A batch is k one-job claims made as one atomic step, and the history
        says so: k ``claim`` lines go out, and each is answered with one job of
        the batch, or with nothing (pending ran out, a ghost was popped, the
        queue is paused). A lost link leaves all k indeterminate, as k lost
        claims would be.
        """
        jobs.check_batch(k)
        lease = lane.lease_ms
        sent = [self._open("claim", lease_ms=lease, batch=k) for _ in range(k)]
        try:
            got = lane.claim_many(k)
        except Exception as exc:
            self._close_failed(sent, exc)
            raise
        t = self.clock.now_ms()
        for i, n in enumerate(sent):
            job = got[i] if i < len(got) else None
            self._close(n, "answer", t, reply=_plain(job), **claimed_fields(job))
        return got

    def settle_many(self, lane: Lane, answers: list[tuple[jobs.Claimed, bool, str | bytes]]) -> list[str | None]:
        """A batch's settles (``Lane.settle_many``, one round trip), recorded job by job: each its own call.

        ``answers`` holds (job, ok, value): complete with the value, or retry with
        it as the reason. Answers each outcome, ``None`` where the node refused
        that settle (recorded ``refused``).
        """
        sent = [self._open("complete" if ok else "retry", job=job.id, token=job.attempts) for job, ok, _ in answers]
        try:
            done = lane.settle_many(answers, 0)
        except Exception as exc:
            self._close_failed(sent, exc)
            raise
        t = self.clock.now_ms()
        for n, outcome, error in zip(sent, done.outcomes, done.errors):
            if error is not None:
                self._close(n, "refused", t, error=_err(error))
            else:
                self._close(n, "answer", t, reply=outcome)
        return done.outcomes

    def complete(self, conn: Connector, queue: str, job_id: str, token: int, result: str | bytes = "",
                 *, record: bool = False) -> str:
        fn = lambda: jobs.complete(conn, queue, job_id, token, result, record=record)  # noqa: E731
        return self.call("complete", fn, job=job_id, token=token)

    def retry(self, conn: Connector, queue: str, job_id: str, token: int, reason: str,
              delay_ms: int = jobs.DEFAULT_RETRY_DELAY_MS, max_attempts: int = jobs.DEFAULT_MAX_ATTEMPTS,
              *, record: bool = False) -> str:
        fn = lambda: jobs.retry(conn, queue, job_id, token, reason, delay_ms, max_attempts, record=record)  # noqa: E731
        return self.call("retry", fn, job=job_id, token=token)

    def reap(self, conn: Connector, queue: str) -> list[str]:
        return self.call("reap", lambda: jobs.reap(conn, queue))

    def promote(self, conn: Connector, queue: str) -> list[str]:
        return self.call("promote", lambda: jobs.promote(conn, queue))

    def stalled(self, conn: Connector, queue: str, max_stalled: int = stalled.DEFAULT_MAX_STALLED,
                *, record: bool = False) -> Any:
        return self.call("stalled", lambda: stalled.check(conn, queue, max_stalled, record=record))

    def reprocess(self, conn: Connector, queue: str, job_id: str) -> str:
        return self.call("reprocess", lambda: jobs.reprocess(conn, queue, job_id), job=job_id)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def claimed_fields(reply: jobs.Claimed | None) -> dict[str, Any]:
    """A claim's answer as history fields: the job and its token, or none for ``:empty``."""
    return {"job": reply.id, "token": reply.attempts} if reply is not None else {}


def _plain(reply: Any) -> Any:
    """A reply as JSON: a stall report as its two lists, a claim as [id, payload, attempts]."""
    if isinstance(reply, stalled.StallReport):
        return {"requeued": list(reply.requeued), "dead": list(reply.dead)}
    if isinstance(reply, tuple):
        return list(reply)
    return reply


def _failed(exc: BaseException) -> str:
    """How a call that raised ended: ``lost`` if its link went mid-call (it may have run), else ``refused``.

    A link that could not even be opened (``NotSent``) is a refusal: the call never left this process.
    """
    return "lost" if isinstance(exc, LINK_ERRORS) and not isinstance(exc, NotSent) else "refused"


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


@dataclass(eq=False)  # an op is itself: sets of ops compare by identity
class Op:
    """One call (or one moment, ``at == "note"``) as the checker reads it. Times are the node's ms."""

    worker: str
    n: int
    op: str
    sent: float
    answered: float | None = None  # None: no answer came (lost or never read)
    at: str = "send"  # "answer", "refused", "lost", "send" (no line after it), or "note"
    job: str | None = None
    token: int | None = None
    reply: Any = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: when the caller found its link gone (a ``lost`` call): the call ran before then, or never
    gave_up: float | None = None

    @property
    def ok(self) -> bool:
        """The call answered (whatever it said)."""
        return self.at == "answer"

    @property
    def indeterminate(self) -> bool:
        """The call went out and its outcome is unknown: it may or may not have run on the node."""
        return self.at in ("send", "lost")

    @property
    def end(self) -> float:
        """When the call ended for its caller: its answer, the lost link, or (neither known) its send."""
        if self.answered is not None:
            return self.answered
        return self.gave_up if self.gave_up is not None else self.sent

    @property
    def latest(self) -> float:
        """The latest moment the call can have taken effect on the node (infinity: no bound is known).

        A link found lost bounds it: the node ran the call before the link went,
        or never. A call whose caller died after sending it has no bound.
        """
        if self.answered is not None:
            return self.answered
        return self.gave_up if self.gave_up is not None else float("inf")

    def released(self) -> list[str]:
        """The ids a recovery call put back where a claim can find them (pending)."""
        if not self.ok:
            return []
        if self.op in ("reap", "promote"):
            return list(self.reply or [])
        if self.op == "stalled":
            return list((self.reply or {}).get("requeued", []))
        if self.op == "reprocess":
            return [self.job] if self.job else []
        return []

    def buried(self) -> list[str]:
        """The ids a stall sweep buried in dead."""
        return list((self.reply or {}).get("dead", [])) if self.ok and self.op == "stalled" else []

    def describe(self, t0: float = 0.0) -> str:
        """One line: who, when (ms after ``t0``), what, and what came back."""
        what = f"{self.op} {self.job or ''}{f' token {self.token}' if self.token is not None else ''}".strip()
        how = {"answer": f"→ {self.reply!r}", "refused": f"refused ({self.error})", "lost": f"lost ({self.error})",
               "send": "→ no answer", "note": ""}[self.at]
        return f"+{self.sent - t0:8.1f} ms  {self.worker:<10} {what} {how}".rstrip()

    def __str__(self) -> str:
        return self.describe()


@dataclass
class History:
    """Every op of a run, in the order the calls went out."""

    ops: list[Op]

    @classmethod
    def read(cls, folder: str | os.PathLike[str]) -> History:
        """Pair every process's lines in ``folder`` back into ops."""
        ops: list[Op] = []
        for path in sorted(Path(folder).glob("*.jsonl")):
            ops.extend(_pair(_lines(path)))
        ops.sort(key=lambda o: (o.sent, o.worker, o.n))
        return cls(ops)

    @classmethod
    def of(cls, ops: Iterable[Op]) -> History:
        return cls(sorted(ops, key=lambda o: (o.sent, o.worker, o.n)))

    def calls(self, *names: str) -> list[Op]:
        """The calls (not notes) named, every one when none are named."""
        return [o for o in self.ops if o.at != "note" and (not names or o.op in names)]

    def notes(self, *names: str) -> list[Op]:
        return [o for o in self.ops if o.at == "note" and (not names or o.op in names)]

    def workers(self) -> list[str]:
        return sorted({o.worker for o in self.ops})

    @property
    def start(self) -> float:
        return min((o.sent for o in self.ops), default=0.0)

    @property
    def end(self) -> float:
        return max((o.end for o in self.ops), default=0.0)

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            try:
                yield json.loads(raw)
            except json.JSONDecodeError:
                continue  # a line cut by a full disk: the calls before it still count


def _pair(lines: Iterable[dict[str, Any]]) -> list[Op]:
    open_calls: dict[tuple[str, int], Op] = {}
    out: list[Op] = []
    for ln in lines:
        key = (ln["w"], ln["n"])
        if ln["at"] == "note":
            extra = {k: v for k, v in ln.items() if k not in ("w", "n", "op", "at", "t", "job", "token")}
            out.append(Op(ln["w"], ln["n"], ln["op"], ln["t"], ln["t"], "note", ln.get("job"), ln.get("token"),
                          extra=extra))
        elif ln["at"] == "send":
            extra = {k: v for k, v in ln.items() if k not in ("w", "n", "op", "at", "t", "job", "token")}
            op = Op(ln["w"], ln["n"], ln["op"], ln["t"], None, "send", ln.get("job"), ln.get("token"), extra=extra)
            open_calls[key] = op
            out.append(op)
        else:
            op = open_calls.pop(key, None)
            if op is None:
                continue
            op.at = ln["at"]
            if ln["at"] == "answer":
                op.answered = ln["t"]
                op.reply = ln.get("reply")
                op.job = ln.get("job", op.job)
                op.token = ln.get("token", op.token)
            elif ln["at"] == "refused":
                op.answered = ln["t"]
                op.error = ln.get("error")
            else:  # lost: the link went away; the call ran before the caller saw that, or never
                op.error = ln.get("error")
                op.gave_up = ln["t"]
    return out
