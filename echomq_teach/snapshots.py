"""Snapshots and diffs: the whole queue in one atomic read (the course's ``@snapshot``).

Widgets redraw from a snapshot after every call, and tests compare two of them
to show that a refused call wrote nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import transitions
from .connector import Connector
from .keyspace import SETS, base

# the time of death, the run-at and the lease deadline move with the clock;
# row fields that a diff should still name, but that carry no teaching meaning
_CLOCK_SETS = ("active", "schedule", "dead")


@dataclass
class Snapshot:
    """One queue at one instant, on the server's clock."""

    queue: str
    now_ms: int
    paused: bool
    sets: dict[str, dict[str, int]]
    rows: dict[str, dict[str, str]]
    counters: dict[str, int]
    completed: int
    stream_len: int
    flow_hashes: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def pending(self) -> list[str]:
        return list(self.sets["pending"])

    @property
    def active(self) -> list[str]:
        return list(self.sets["active"])

    @property
    def schedule(self) -> list[str]:
        return list(self.sets["schedule"])

    @property
    def dead(self) -> list[str]:
        return list(self.sets["dead"])

    def sizes(self) -> dict[str, int]:
        """How many ids each of the four sets holds."""
        return {s: len(self.sets[s]) for s in SETS}

    def where(self, job_id: str) -> list[str]:
        """The sets that hold ``job_id`` (one, in a healthy queue; none for a held parent)."""
        return [s for s in SETS if job_id in self.sets[s]]

    def state(self, job_id: str) -> str | None:
        return self.rows.get(job_id, {}).get("state")

    def relative(self, set_name: str, job_id: str) -> int:
        """A score as ms from server now: a lease deadline or run-at ahead (+) or past (-)."""
        return self.sets[set_name][job_id] - self.now_ms

    def total(self) -> int:
        return sum(self.sizes().values())

    def ids(self) -> set[str]:
        """Every id the queue knows of: in a set, or with a row."""
        out = set(self.rows)
        for s in SETS:
            out.update(self.sets[s])
        return out

    def render(self, rows: bool = True) -> str:
        """The four sets and the rows as text; scores that are times read relative to server now."""
        out = [f"queue {self.queue}" + ("  (paused)" if self.paused else "")]
        for name in SETS:
            members = self.sets[name]
            if not members:
                out.append(f"  {name:<8} —")
                continue
            parts = []
            for job_id, score in members.items():
                if name == "pending":
                    parts.append(f"{job_id} @0")
                else:
                    label = {"active": "deadline", "schedule": "runs", "dead": "died"}[name]
                    parts.append(f"{job_id} {label} {_rel(score - self.now_ms)}")
            out.append(f"  {name:<8} " + ", ".join(parts))
        if rows:
            for job_id in sorted(self.rows):
                fields = " ".join(f"{k}={_short(v)}" for k, v in sorted(self.rows[job_id].items()))
                out.append(f"  row {job_id}: {fields}")
            for key, value in sorted(self.counters.items()):
                out.append(f"  {key} = {value}")
            for key, value in sorted(self.flow_hashes.items()):
                out.append(f"  {key}: {value}")
        out.append(f"  metrics:completed count={self.completed}")
        return "\n".join(out)

    def state_only(self) -> dict[str, Any]:
        """Everything but the clock: for "nothing was written" comparisons."""
        return {
            "paused": self.paused,
            "sets": self.sets,
            "rows": self.rows,
            "counters": self.counters,
            "completed": self.completed,
            "stream_len": self.stream_len,
            "flow_hashes": self.flow_hashes,
        }


def _rel(ms: int) -> str:
    """A time relative to now, in seconds: "in 30.0 s" or "1.2 s ago"."""
    return f"in {ms / 1000:.1f} s" if ms >= 0 else f"{-ms / 1000:.1f} s ago"


def _short(value: str, width: int = 40) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"


def _pairs(flat: list[Any]) -> list[tuple[Any, Any]]:
    return list(zip(flat[::2], flat[1::2]))


def snapshot(conn: Connector, queue: str) -> Snapshot:
    """EchoMQ.Inspect.snapshot/2 → ``@snapshot`` (a read-only script: ``no-writes``)."""
    b = base(queue)
    reply = conn.run(transitions.snapshot(queue))
    now, paused, pending, active, schedule, dead, rows_flat, counters_flat, completed, stream_len = reply
    sets = {
        name: {m: int(float(s)) for m, s in _pairs(flat)} for name, flat in zip(SETS, (pending, active, schedule, dead))
    }
    prefix = b + "job:"
    rows: dict[str, dict[str, str]] = {}
    flow_hashes: dict[str, dict[str, str]] = {}
    for key, fields in _pairs(rows_flat):
        rest = key[len(prefix) :]
        as_dict = dict(_pairs(fields))
        if ":" in rest:  # emq:{q}:job:<id>:processed or :unsuccessful
            flow_hashes[rest] = as_dict
        else:
            rows[rest] = as_dict
    counters = {key[len(prefix) :]: int(v) for key, v in _pairs(counters_flat)}
    return Snapshot(
        queue=queue,
        now_ms=int(now),
        paused=bool(paused),
        sets=sets,
        rows=rows,
        counters=counters,
        completed=int(completed),
        stream_len=int(stream_len),
        flow_hashes=flow_hashes,
    )


@dataclass
class Change:
    """One difference between two snapshots."""

    kind: str  # "moved", "added", "removed", "field", "score", "counter", "paused", "metric"
    job_id: str | None
    detail: str

    def __str__(self) -> str:
        return self.detail


def diff(before: Snapshot, after: Snapshot) -> list[Change]:
    """What changed between two snapshots of one queue, in words a learner reads."""
    out: list[Change] = []
    for job_id in sorted(before.ids() | after.ids()):
        was, now = before.where(job_id), after.where(job_id)
        if was != now:
            src = "/".join(was) or "nowhere"
            dst = "/".join(now) or "nowhere"
            out.append(Change("moved", job_id, f"{job_id}: {src} → {dst}"))
        else:
            for s in now:
                if s in _CLOCK_SETS and before.sets[s][job_id] != after.sets[s][job_id]:
                    out.append(Change("score", job_id, f"{job_id}: new {s} score"))
        r0, r1 = before.rows.get(job_id), after.rows.get(job_id)
        if r0 is None and r1 is not None:
            out.append(Change("added", job_id, f"{job_id}: row written (state {r1.get('state')})"))
        elif r0 is not None and r1 is None:
            out.append(Change("removed", job_id, f"{job_id}: row deleted"))
        elif r0 is not None and r1 is not None:
            for f in sorted(set(r0) | set(r1)):
                if r0.get(f) != r1.get(f):
                    out.append(Change("field", job_id, f"{job_id}.{f}: {r0.get(f)} → {r1.get(f)}"))
    for key in sorted(set(before.counters) | set(after.counters)):
        a, b = before.counters.get(key), after.counters.get(key)
        if a != b:
            out.append(Change("counter", key.split(":")[0], f"{key}: {a} → {b}"))
    for key in sorted(set(before.flow_hashes) | set(after.flow_hashes)):
        a, b = before.flow_hashes.get(key, {}), after.flow_hashes.get(key, {})
        if a != b:
            out.append(Change("counter", key.split(":")[0], f"{key}: {len(a)} → {len(b)} entries"))
    if before.paused != after.paused:
        out.append(Change("paused", None, f"paused: {before.paused} → {after.paused}"))
    if before.completed != after.completed:
        out.append(Change("metric", None, f"metrics:completed count: {before.completed} → {after.completed}"))
    if before.stream_len != after.stream_len:
        out.append(Change("metric", None, f"stream:completions: {before.stream_len} → {after.stream_len} entries"))
    return out
