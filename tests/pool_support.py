"""The work a Pool's tests drain on both executors, and the end state they compare (shortcuts, batches)."""

from __future__ import annotations

from echomq_teach import Connector, flows, jobs, keyspace, snapshots
from echomq_teach.consumer import Error


def handler(job: jobs.Claimed) -> str | Error:
    """What a job answers depends on its payload and attempt only, so two runs can be compared."""
    p = job.payload
    if p.startswith("bad"):
        return Error(f"bad #{job.attempts}")
    if p.startswith("flaky") and job.attempts == 1:
        raise ValueError("flaky, once")
    return f"done {p}"


def land_work(conn: Connector, q: str) -> None:
    """Plain jobs, retried ones, dying ones, three flows (fail, ignore, all well), a non-UTF-8 payload."""
    for i in range(12):
        jobs.enqueue(conn, q, f"ok {i}", job_id=f"JOBok{i:02d}")
    for i in range(3):
        jobs.enqueue(conn, q, f"flaky {i}", job_id=f"JOBflaky{i}")
        jobs.enqueue(conn, q, f"bad {i}", job_id=f"JOBbad{i}")
    jobs.enqueue(conn, q, b"raw \xff\xfe bytes", job_id="JOBraw")
    flows.add(conn, q, ("JOBp1", "parent 1"), [("JOBc1a", "ok a"), ("JOBc1b", "flaky b")])
    flows.add(conn, q, ("JOBp2", "parent 2"), [("JOBc2a", "bad a"), ("JOBc2b", "ok b")], policy="ignore")
    flows.add(conn, q, ("JOBp3", "parent 3"), [("JOBc3a", "bad a"), ("JOBc3b", "ok b")], policy="fail")


def end_state(conn: Connector, q: str) -> dict[str, object]:
    """The queue without its clock: set members (not scores), rows, counters, stream entries, flow hashes."""
    snap = snapshots.snapshot(conn, q)
    entries = conn.client.xrange(keyspace.queue_key(q, "stream:completions"))
    return {
        "sets": {name: sorted(members) for name, members in snap.sets.items()},
        "rows": snap.rows,
        "counters": snap.counters,
        "completed": snap.completed,
        "stream": sorted(tuple(sorted(fields.items())) for _, fields in entries),
        "flow_hashes": snap.flow_hashes,
        "paused": snap.paused,
    }
