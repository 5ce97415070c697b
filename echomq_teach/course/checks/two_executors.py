"""Notebook 04 · two executors: leases a former server granted, the brands, and where the two part ways."""

from __future__ import annotations

import secrets
from typing import Any

from ... import jobs, keyspace, snapshots
from ...connector import Connector
from ..registry import Findings, exercise, keyed_dict, prediction, setup_for

# -- 04.1 · leases a former server granted ---------------------------------------------------------------
_FORMER: dict[str, list[str]] = {}


@exercise(
    "04.1",
    "Leases a former server granted",
    "Hint: a native claim stamps the row's lease_epoch with the run_id of the server process that granted the "
    "lease (INFO server, conn.client.info('server')['run_id']). A lease from before a restart carries another "
    "run_id; compare each active row's lease_epoch with the node's run_id now.",
    solution="04_1_former_leases.py",
    kind="diagnose",
)
def _v041(conns: Any, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    former = _FORMER.pop(queue)
    if not f.expect(isinstance(result, (list, tuple, set)) and all(isinstance(x, str) for x in result),
                    f"return a list of job ids; got {result!r}."):
        return
    got = set(result)
    wrong = sorted(got - set(former))
    missed = sorted(set(former) - got)
    f.expect(not wrong, f"{', '.join(wrong)}: a server process that is still running granted this lease "
             "(or the job holds no native lease at all).")
    f.expect(not missed, f"{len(missed)} lease(s) from before the restart are missing from your answer.")


@setup_for("04.1")
def _s041(conns: Any, queue: str) -> tuple[Any, ...]:
    _, n_conn = conns
    ids_ = [jobs.enqueue(n_conn, queue, f"job {i}") for i in range(5)]
    claimed = [jobs.claim(n_conn, queue, 60_000) for _ in range(4)]  # the fifth waits in pending
    # what a restart of a durable node leaves (the check cannot restart a node that may be shared):
    # two rows still in active, stamped by the run_id of the server process that went away
    gone = secrets.token_hex(20)
    former = [c.id for c in claimed[1::2]]
    for job_id in former:
        n_conn.call("HSET", keyspace.job_key(queue, job_id), "lease_epoch", gone)
    _FORMER[queue] = former
    assert len(ids_) == 5
    return ()


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
            # loaded first if the node has not seen it: a NOSCRIPT would be the cache's answer, not the script's
            reply = conn.eval("claim2", keys, [lease])
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
