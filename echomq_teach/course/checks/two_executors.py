"""Notebook 04 · two executors: where the two part ways, what the native sweep will do, the brands."""

from __future__ import annotations

import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ... import jobs, keyspace, snapshots, stalled, transitions
from ...connector import Connector
from ...errors import WireError
from ...nodes.node import Node
from ...nodes.providers import start_node
from .. import forms
from ..registry import Findings, exercise, prediction, setup_for
from . import diagnosis, staging

# -- 04.2 · diagnose: what the native stall sweep will do with each lease ---------------------------------------
#: what EMQ.STALLED.CHECK does with a job in active, as 04.2 names it
FATES = ("put back uncounted", "put back counted", "buried", "left alone")
MAX_STALLED_42 = 1
_FATES: dict[str, list[str]] = {}


@exercise(
    "04.2",
    "What the native sweep will do",
    "Hint: the sweep decides each job from what it can read now: the set's score beside the server's clock, and "
    "fields of the row, one of which names a server process (INFO server names this one). Take the rules in the "
    "text above one at a time, and ask which of those readings each one needs, and which rule comes first.",
    solution="04_2_native_sweep.py",
    kind="diagnose",
)
def _verify_native_sweep(conns: Any, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    _, n_conn = conns
    active = _FATES.pop(queue)
    if not diagnosis.untouched(n_conn, queue, f):
        return
    if not f.expect(isinstance(result, dict) and set(result) == set(active) and set(result.values()) <= set(FATES),
                    f"return a dict from each of the {len(active)} jobs in active to one of {list(FATES)}; "
                    f"got {result!r}."):
        return
    before = snapshots.snapshot(n_conn, queue)
    run_id = n_conn.client.info("server")["run_id"]
    now = before.now_ms
    report = stalled.check(n_conn, queue, max_stalled=MAX_STALLED_42)  # EMQ.STALLED.CHECK: the node's own answer
    after = snapshots.snapshot(n_conn, queue)
    wrong = []
    for job_id in sorted(active):
        fate = ("buried" if job_id in report.dead
                else "left alone" if job_id not in report.requeued
                else "put back counted" if after.rows[job_id].get("stalled") != before.rows[job_id].get("stalled")
                else "put back uncounted")
        if result[job_id] != fate:
            wrong.append(job_id)
    if wrong:  # the first one explained, by what the sweep read; the others counted
        job_id, row = wrong[0], before.rows[wrong[0]]
        lapsed = before.sets["active"][job_id] < now
        epoch = "this server process" if row.get("lease_epoch") == run_id else "a server process that is gone"
        more = f"; {len(wrong) - 1} more are not right either" if len(wrong) > 1 else ""
        f.expect(False, f"{job_id}: not {result[job_id]!r}: its lease {'had lapsed' if lapsed else 'had not lapsed'} "
                 f"when the sweep ran, {epoch} granted it, and its row counted {row.get('stalled', '0')} stalls "
                 f"before (max_stalled={MAX_STALLED_42}){more}.")


#: 04.2's stories: (stalls before, lease ms, granted by a server process that is gone)
_LEASES_42 = {
    "buried": (1, 20, False),
    "counted": (0, 20, False),
    "uncounted": (0, 20, True),
    "uncounted, stalled before": (1, 20, True),
    "another's, running": (0, 60_000, True),
    "running": (0, 60_000, False),
    "running, stalled before": (1, 60_000, False),
}
#: in every check (each reading, read wrong, names one of them wrongly); then up to two of the others
_ALWAYS_42 = ("buried", "counted", "uncounted", "another's, running", "running")


@setup_for("04.2")
def _setup_native_sweep(conns: Any, queue: str) -> tuple[Any, ...]:
    _, n_conn = conns
    rng = staging.chance()
    gone = secrets.token_hex(20)  # the run_id of a server process that went away (a restart leaves such leases)
    others = [k for k in _LEASES_42 if k not in _ALWAYS_42]
    stories = dict(zip(staging.dealt(7, rng), [*_ALWAYS_42, *rng.sample(others, rng.randint(0, 2))]))
    before = [job for job, story in stories.items() if _LEASES_42[story][0]]
    for job in stories:
        jobs.enqueue(n_conn, queue, "a job", job_id=job)
    for job in before:
        staging.claim_this(n_conn, queue, job, 20)
    time.sleep(0.03)
    assert sorted(stalled.check(n_conn, queue, max_stalled=5).requeued) == sorted(before)  # a stall counted each
    for job, story in stories.items():
        _, lease, former = _LEASES_42[story]
        staging.claim_this(n_conn, queue, job, lease)
        if former:
            n_conn.call("HSET", keyspace.job_key(queue, job), "lease_epoch", gone)
    jobs.enqueue(n_conn, queue, "waiting in pending")
    time.sleep(0.03)  # the short leases lapse
    _FATES[queue] = sorted(stories)
    diagnosis.keep(n_conn, queue)
    return ()


# -- 04.3 · which wire does each node take? ----------------------------------------------------------------
# What a night of maintenance left on six nodes of the check's own (a brand is never changed on a shared
# node): (module loaded, brand). Neither the brand alone nor the module alone says which wire each takes.
FOREIGN = "somebody-else:1.0"
_STATES: tuple[tuple[bool, str | None], ...] = (
    (False, keyspace.BRAND_WIRE6),  # the brand with no module behind it
    (True, None),  # a native node whose brand was deleted
    (True, keyspace.BRAND_WIRE4),  # a native node rebranded for the scripts
    (False, FOREIGN),  # another program's brand
    (True, keyspace.BRAND_WIRE6),  # a native node as it started
    (False, None),  # a scripted node whose brand was deleted
)
WIRES = ("wire 4", "wire 6", "neither")
_LEFT: dict[str, list[tuple[bool, str | None]]] = {}


def _wire_taken(node: Any) -> str:
    """What the connectors themselves say about ``node`` now: the wire one accepts, or neither."""
    for wire in (6, 4):  # wire 6 first: it writes nothing; a wire 4 connector may brand the node
        try:
            node.connector(wire=wire).close()
        except WireError:
            continue
        return f"wire {wire}"
    return "neither"


def _what(n: int, module: bool, brand: str | None) -> str:
    """What node ``n`` is: the finding for a wrong answer says what it read, never the connectors' rules."""
    return f"node {n} is {'branded ' + repr(brand) if brand else 'unbranded'} and {'has' if module else 'has no'} " \
        "trafikey loaded."


@exercise(
    "04.3",
    "Which wire does each node take?",
    "Hint: read each node's brand (GET {emq}:version on node.client()) and whether trafikey is loaded "
    "(MODULE LIST); the connectors' rules are in the cells above. Trying a connector is not reading: "
    "a wire 4 connector brands a node that has no brand.",
    solution="04_3_which_wire.py",
    kind="diagnose",
)
def _verify_which_wire(conns: Any, queue: str, result: Any, args: tuple[Any, ...], f: Findings) -> None:
    (nodes,) = args
    states = _LEFT.pop(queue)
    try:
        moved = False
        for n, (node, (_, brand)) in enumerate(zip(nodes, states)):
            now = node.client().get(keyspace.VERSION_KEY)
            if not f.expect(now == brand, f"node {n}: your diagnosis wrote its brand ({brand!r} before, {now!r} "
                            "after): a wire 4 connector brands a node that has none; read the node, do not "
                            "try a connector on it."):
                moved = True
                node.client().execute_command("DEL" if brand is None else "SET", keyspace.VERSION_KEY,
                                              *(() if brand is None else (brand,)))
        if moved or not diagnosis.untouched(None, queue, f):
            return
        if not f.expect(isinstance(result, (list, tuple)) and len(result) == len(nodes)
                        and all(r in WIRES for r in result),
                        f"return a list of {len(nodes)} answers, one per node in order, each one of {WIRES}; "
                        f"got {result!r}."):
            return
        for n, (node, (module, brand), said) in enumerate(zip(nodes, states, result)):
            taken = _wire_taken(node)  # the connectors' own answer, asked after yours
            f.expect(said == taken, f"you said {said!r}, and the connectors did not: " + _what(n, module, brand))
    finally:
        for node in nodes:
            node.stop()


@setup_for("04.3")
def _setup_which_wire(conns: Any, queue: str) -> tuple[Any, ...]:
    states = staging.shuffled(list(_STATES), staging.chance())  # a new order each check: no answer by position

    def left(state: tuple[bool, str | None]) -> Node:
        module, brand = state
        node = start_node(native=module, provider="local")  # the check's own: a brand is changed below
        raw = node.client()
        if brand is None:
            raw.delete(keyspace.VERSION_KEY)
        else:
            raw.set(keyspace.VERSION_KEY, brand)
        return node

    with ThreadPoolExecutor(len(states)) as pool:  # six servers start side by side, not one after another
        nodes = list(pool.map(left, states))
    _LEFT[queue] = states  # kept from the learner: what a node is in, it must say itself
    diagnosis.keep_nodes(queue, nodes)
    return (nodes,)


# -- 04.1 · where the two part ways --------------------------------------------------------------------------
ANSWERS = forms.pair(forms.words("claimed", "empty", "error"))
PLACES = forms.pair(forms.words("pending", "active", "nowhere"))
PAUSED_GHOST = "a paused queue, a ghost at its head: the raw claim answers"
GHOST_AFTER = "after that claim, the ghost is"
SOON_GHOST = "a lease of 'soon', a ghost at its head: the raw claim answers"
SOON_PAUSED = "a lease of 'soon' on a paused queue: its one job is then"
GHOST = "JOB00000000000"  # sorts before every minted id: the head


def _raw_claim(conn: Connector, queue: str, lease: object) -> str:
    """A raw claim, not the kit's claim/3 (no host-side pause read, no lease check): its answer's kind."""
    try:
        # EMQ.CLAIM on wire 6, else @claim2 (loaded first if the node has not seen it: a NOSCRIPT would be the
        # cache's answer, not the script's)
        reply = conn.run(transitions.claim(queue, lease))
    except Exception:  # noqa: BLE001 - the kind of answer is what is predicted
        return "error"
    return "claimed" if reply else "empty"


def _where(conn: Connector, queue: str, job: str) -> str:
    return "/".join(snapshots.snapshot(conn, queue).where(job)) or "nowhere"


@prediction(
    "04.1",
    "Where the two part ways",
    "Hint: for each executor, list what it does in order — its argument checks, the pause read, the pop, the "
    "ghost guard, its writes — and stop at the first step that answers or fails. Where is the pause flag read "
    "(claim/3, @claim2, EMQ.CLAIM), and where is the lease turned into a number?",
    solution="04_1_part_ways.py",
    form=forms.record({PAUSED_GHOST: ANSWERS, GHOST_AFTER: PLACES, SOON_GHOST: ANSWERS, SOON_PAUSED: PLACES}),
    explain="@claim2 reads no pause flag and checks no argument: it pops the head first, and a ghost ends it with "
    "an empty answer before the lease is ever used (the ghost is gone); with a real job it writes the token and "
    "the state, then fails on 'soon', the job in no set. EMQ.CLAIM checks its lease first (an error before "
    "anything else), then the pause flag (empty, the ghost left where it was), then the head.",
)
def _run_part_ways(conns: Any, queue: str) -> dict[str, Any]:
    seen: dict[str, list[str]] = {k: [] for k in (PAUSED_GHOST, GHOST_AFTER, SOON_GHOST, SOON_PAUSED)}
    for n, conn in enumerate(conns):
        q = f"{queue}-{n}"
        jobs.enqueue(conn, q, "behind the ghost")
        conn.call("ZADD", keyspace.queue_key(q, "pending"), 0, GHOST)
        jobs.pause(conn, q)
        seen[PAUSED_GHOST].append(_raw_claim(conn, q, 30_000))
        pending = conn.call("ZRANGE", keyspace.queue_key(q, "pending"), 0, -1)
        seen[GHOST_AFTER].append("pending" if GHOST in pending else "nowhere")
        jobs.drop(conn, q)  # the jobs, their rows and the pause flag
        jobs.enqueue(conn, q, "behind the ghost")
        conn.call("ZADD", keyspace.queue_key(q, "pending"), 0, GHOST)
        seen[SOON_GHOST].append(_raw_claim(conn, q, "soon"))
        jobs.drop(conn, q)
        fragile = jobs.enqueue(conn, q, "fragile")
        jobs.pause(conn, q)
        _raw_claim(conn, q, "soon")
        seen[SOON_PAUSED].append(_where(conn, q, fragile))
        jobs.drop(conn, q)
    return seen
