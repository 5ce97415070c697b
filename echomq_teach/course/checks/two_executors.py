"""Notebook 04 · two executors: the same claim on both, the brands, and where the two part ways."""

from __future__ import annotations

from typing import Any

from ... import ids, jobs, keyspace, scripts, snapshots
from ...connector import Connector
from ..registry import Findings, exercise, keyed_dict, prediction, setup_for


@exercise(
    "04.1",
    "Same claim, two executors",
    "Hint: the kit's claim/3 picks the executor from the connector's wire: call it once per connector.",
    solution="04_1_claim_both.py",
    kind="build",
)
def _v041(conns: Any, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    s_conn, n_conn = conns
    (job_id,) = args
    if not f.expect(
        isinstance(result, tuple) and len(result) == 2, f"return a pair of claims; got {type(result).__name__}."
    ):
        return
    f.expect(result[0] == result[1], f"the two claims should be equal; got {result[0]!r} and {result[1]!r}.")
    s_row = snapshots.snapshot(s_conn, queue).rows.get(job_id, {})
    n_row = snapshots.snapshot(n_conn, queue).rows.get(job_id, {})
    f.expect(s_row.get("state") == n_row.get("state") == "active", "both rows should be active after the claims.")
    run_id = n_conn.client.info("server")["run_id"]
    f.expect(n_row.get("lease_epoch") == run_id, "the native row should carry lease_epoch = the server's run_id.")
    f.expect("lease_epoch" not in s_row, "the scripted row should have no lease_epoch.")
    f.expect(
        any(e.line.startswith("EMQ.CLAIM") for e in n_conn.last(5)),
        "the native claim should go out as EMQ.CLAIM: use the wire 6 connector n_conn.",
    )


@setup_for("04.1")
def _s041(conns: Any, queue: str) -> tuple[Any, ...]:
    job_id = ids.mint()
    for c in conns:
        jobs.enqueue(c, queue, "twin", job_id=job_id)
    return (job_id,)


@exercise(
    "04.2",
    "Read the brands",
    "Hint: the brand is one string key, keyspace.VERSION_KEY; a connector sends any command with conn.call.",
    solution="04_2_read_brands.py",
    kind="diagnose",
)
def _v042(conns: Any, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    s_conn, n_conn = conns
    want = {"scripted": "echomq:4.0.0", "native": "echomq:6.0.0"}
    f.expect(result == want, f"expected {want}; got {result!r}.")
    for name, c in (("scripted", s_conn), ("native", n_conn)):
        f.expect(
            any(e.line == "GET {emq}:version" for e in c.last(5)),
            f"read the {name} brand through its connector, so it shows in the trace.",
        )


# -- 04.3 · where the two part ways --------------------------------------------------------------------------
ANSWERS = ("claimed", "empty", "error")
PARTS = (
    "a raw call on a paused queue",
    "a ghost at the head, a real job behind it",
    "a lease of 'soon'",
)
WHERE = "after the lease of 'soon', where the job is"


def _raw_claim(conn: Connector, queue: str, lease: object) -> str:
    """A raw claim, not the kit's claim/3 (no host-side pause read, no lease check): its answer's kind."""
    keys = [keyspace.queue_key(queue, "pending"), keyspace.queue_key(queue, "active"), keyspace.queue_key(queue, "")]
    try:
        if conn.wire == 6:
            reply = conn.call("EMQ.CLAIM", 3, *keys, lease)
        else:
            reply = conn.call("EVALSHA", scripts.load("claim2").sha, 3, *keys, lease)
    except Exception:  # noqa: BLE001 - the kind of answer is what is predicted
        return "error"
    return "claimed" if reply else "empty"


@prediction(
    "04.3",
    "Where the two part ways",
    "Hint: the pause flag is read by claim/3 and by EMQ.CLAIM, never by the @claim2 script; a script that "
    "fails after its first write keeps what it wrote, while the command checks everything before it writes.",
    solution="04_3_part_ways.py",
    shape=keyed_dict((*PARTS, WHERE)),
)
def _r043(conns: Any, queue: str, args: tuple[Any, ...]) -> dict[str, Any]:
    seen: dict[str, Any] = {part: () for part in PARTS}
    where: list[str] = []
    for n, conn in enumerate(conns):
        q = f"{queue}-{n}"
        waiting = jobs.enqueue(conn, q, "held")
        jobs.pause(conn, q)
        paused = _raw_claim(conn, q, 30_000)
        assert waiting
        jobs.drop(conn, q)  # the job, its row and the pause flag
        jobs.enqueue(conn, q, "behind the ghost")
        conn.call("ZADD", keyspace.queue_key(q, "pending"), 0, "JOB00000000000")
        ghost = _raw_claim(conn, q, 30_000)
        jobs.drop(conn, q)
        fragile = jobs.enqueue(conn, q, "fragile")
        soon = _raw_claim(conn, q, "soon")
        where.append("/".join(snapshots.snapshot(conn, q).where(fragile)) or "nowhere")
        jobs.drop(conn, q)
        for part, kind in zip(PARTS, (paused, ghost, soon)):
            seen[part] += (kind,)
    seen[WHERE] = tuple(where)
    return seen


@setup_for("04.3")
def _s043(conns: Any, queue: str) -> tuple[Any, ...]:
    return ()
