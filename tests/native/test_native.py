"""The two executors on real nodes: the EMQ.* commands beside the scripts they twin.

The ordinary path answers and ends the same on both; the four documented
differences (pause read inside, refusal writes nothing, cached time, lease_epoch)
are each shown; then the brand fence, the flow refusals, the wire 6 connector
and the module build.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from conftest import state
from native_support import assert_same_end_state, digest, force, run_id

from echomq_teach import WireError, WrongState, flows, jobs, keyspace, snapshots, stalled
from echomq_teach.connector import Connector, connect
from echomq_teach.keyspace import base, job_key, queue_key
from echomq_teach.nodes import trafikey
from echomq_teach.nodes.local import LocalNode

LEASE = 30_000
Scenario = Callable[[Connector, str], list[Any]]


def claim_keys(q: str) -> list[str]:
    return [queue_key(q, "pending"), queue_key(q, "active"), base(q)]


def both(conn: Connector, native_conn: Connector, queue: str, scenario: Scenario) -> list[Any]:
    """Run one scenario on each executor: equal replies, equal end states (but the documented differences)."""
    scripted = scenario(conn, queue)
    natively = scenario(native_conn, queue)
    assert scripted == natively
    assert_same_end_state(conn, native_conn, queue)
    return scripted


# -- the ordinary path: equal replies and end states ---------------------------------------
def happy_path(c: Connector, q: str) -> list[Any]:
    out: list[Any] = [jobs.enqueue(c, q, p, job_id=f"J{i}") for i, p in enumerate(["a", b"\xff\x00raw", "c"])]
    first, second = jobs.claim(c, q, LEASE), jobs.claim(c, q, LEASE)
    out += [first, second]
    out.append(jobs.complete(c, q, first.id, first.attempts, "done", record=True))
    out.append(jobs.complete(c, q, second.id, second.attempts))
    out.append(jobs.claim(c, q, LEASE))
    out.append(jobs.claim(c, q, LEASE))  # empty
    return out


def failure_fork(c: Connector, q: str) -> list[Any]:
    jobs.enqueue(c, q, "flaky", job_id="F")
    first = jobs.claim(c, q, LEASE)
    out: list[Any] = [first, jobs.retry(c, q, "F", first.attempts, "first", 60_000, 2)]
    force(c.client, q, "schedule", "F", 5)  # due now, on both nodes alike
    out.append(jobs.promote(c, q))
    second = jobs.claim(c, q, LEASE)
    out += [second, jobs.retry(c, q, "F", second.attempts, "last", 60_000, 2, record=True)]
    return out


def stale_tokens(c: Connector, q: str) -> list[Any]:
    jobs.enqueue(c, q, "x", job_id="S")
    got = jobs.claim(c, q, LEASE)
    out: list[Any] = [
        jobs.complete(c, q, "S", got.attempts + 1),
        jobs.retry(c, q, "S", got.attempts + 1, "nope"),
    ]
    force(c.client, q, "active", "S", 7)
    out.append(jobs.reap(c, q))
    # reaped: state pending, so the old token is refused by both executors (D-3 in docs/decisions.md)
    out += [jobs.complete(c, q, "S", got.attempts), jobs.retry(c, q, "S", got.attempts, "late")]
    again = jobs.claim(c, q, LEASE)
    out += [again, jobs.complete(c, q, "S", got.attempts), jobs.complete(c, q, "S", again.attempts)]
    out.append(jobs.complete(c, q, "never-was", 1))  # no row at all
    return out


def stall_sweep(c: Connector, q: str) -> list[Any]:
    for i in range(4):
        jobs.enqueue(c, q, str(i), job_id=f"K{i}")
    claimed = [jobs.claim(c, q, LEASE) for _ in range(3)]
    c.client.hset(job_key(q, "K1"), "stalled", 1)  # one earlier stall: this one buries it
    for score, got in enumerate(claimed, start=1):
        force(c.client, q, "active", got.id, score)
    c.client.zadd(queue_key(q, "active"), {"ghost": 4})  # an id with no row: dropped, in neither list
    return [claimed, stalled.check(c, q, 1), stalled.check(c, q, 1), jobs.claim(c, q, LEASE)]


def ghost_head(c: Connector, q: str) -> list[Any]:
    jobs.enqueue(c, q, "real", job_id="G1")
    c.client.zadd(queue_key(q, "pending"), {"G0": 0})  # the lower id, with no row
    return [jobs.claim(c, q, LEASE), jobs.claim(c, q, LEASE), jobs.claim(c, q, LEASE)]


@pytest.mark.parametrize("scenario", [happy_path, failure_fork, stale_tokens, stall_sweep, ghost_head])
def test_ordinary_path_is_the_same_on_both_executors(conn, native_conn, queue, scenario):
    replies = both(conn, native_conn, queue, scenario)
    assert replies  # a scenario that ran nothing would prove nothing


def test_ordinary_path_replies_are_what_the_course_shows(conn, native_conn, queue):
    replies = both(conn, native_conn, queue, happy_path)
    assert replies[3] == jobs.Claimed("J0", "a", 1)
    assert replies[5:7] == [jobs.OK, jobs.OK]
    assert replies[7] == jobs.Claimed("J2", "c", 1) and replies[8] is None
    replies = both(conn, native_conn, queue + "-fork", failure_fork)
    assert replies[1] == jobs.SCHEDULED and replies[2] == ["F"] and replies[4] == jobs.DEAD
    snap = snapshots.snapshot(native_conn, queue + "-fork")
    assert snap.rows["F"]["last_error"] == "last" and snap.where("F") == ["dead"]


def test_the_native_commands_run_on_the_native_node(native_conn, queue):
    # the equality above would hold trivially if the wire 6 connector fell back to scripts
    both_lines = []
    for scenario in (happy_path, stall_sweep):
        native_conn.clear_trace()
        scenario(native_conn, f"{queue}-{scenario.__name__}")
        both_lines += [e.line.split()[0] for e in native_conn.trace]
    for command in ("EMQ.CLAIM", "EMQ.COMPLETE", "EMQ.STALLED.CHECK"):
        assert command in both_lines
    native_conn.clear_trace()
    failure_fork(native_conn, queue)
    assert "EMQ.FAIL" in [e.line.split()[0] for e in native_conn.trace]


# -- the parity fix: a child buried by the native sweep answers to its parent_policy ----------
def stalled_flow(policies: list[str], prepare: Callable[[Connector, str], None] | None = None) -> Scenario:
    """A flow whose children all stall past max_stalled=1 in one sweep, after an optional raw tweak."""

    def run(c: Connector, q: str) -> list[Any]:
        kids = [(f"C{i}", f"k{i}") for i in range(len(policies))]
        flows.add(c, q, ("P", "parent"), kids, policy=policies)
        claimed = [jobs.claim(c, q, LEASE) for _ in kids]
        for score, got in enumerate(claimed, start=10):
            force(c.client, q, "active", got.id, score)
            c.client.hset(job_key(q, got.id), "stalled", 1)
        if prepare:
            prepare(c, q)
        return [claimed, stalled.check(c, q, 1), jobs.claim(c, q, LEASE)]

    return run


def _requeue_c1(c: Connector, q: str) -> None:
    c.client.hdel(job_key(q, "C1"), "stalled")  # its first stall: back to pending, not buried


def _drop_parent(c: Connector, q: str) -> None:
    c.client.delete(job_key(q, "P"))  # an operator removed it: the script skips the policy


def _bogus_policy(c: Connector, q: str) -> None:
    c.client.hset(job_key(q, "C0"), "parent_policy", "bogus")


def _parent_dead(c: Connector, q: str) -> None:
    c.client.hset(job_key(q, "P"), "state", "dead")


def _parent_lapsed_first(c: Connector, q: str) -> None:
    # the parent in active too, ahead of its children: the sweep requeues it before they die
    c.client.zadd(queue_key(q, "active"), {"P": 1})


def _parent_lapsed_last(c: Connector, q: str) -> None:
    # behind its children: their deaths see it awaiting_children, then its own lapse moves it
    c.client.zadd(queue_key(q, "active"), {"P": 99})


def _self_parent(c: Connector, q: str) -> None:
    c.client.hset(job_key(q, "C0"), "parent", "C0")


FLOW_STALLS = {
    "fail": stalled_flow(["fail", "fail"]),
    "ignore": stalled_flow(["ignore", "ignore"]),
    "ignore-partial": stalled_flow(["ignore", "ignore"], _requeue_c1),
    "remove": stalled_flow(["remove", "remove", "remove"]),
    "wait": stalled_flow(["wait", "wait"]),
    "mixed": stalled_flow(["ignore", "fail", "remove"]),
    "remove-then-fail": stalled_flow(["remove", "remove", "fail"]),
    "parent-removed": stalled_flow(["fail", "ignore"], _drop_parent),
    "unknown-policy": stalled_flow(["fail", "ignore"], _bogus_policy),
    "parent-already-dead": stalled_flow(["fail", "ignore"], _parent_dead),
    "parent-lapsed-first": stalled_flow(["fail", "ignore"], _parent_lapsed_first),
    "parent-lapsed-last": stalled_flow(["ignore", "fail"], _parent_lapsed_last),
    "parent-lapsed-last-release": stalled_flow(["ignore", "remove"], _parent_lapsed_last),
    "self-parent": stalled_flow(["fail", "ignore"], _self_parent),
}


@pytest.mark.parametrize("name", list(FLOW_STALLS))
def test_native_sweep_applies_the_parent_policy_as_the_script_does(conn, native_conn, queue, name):
    both(conn, native_conn, queue, FLOW_STALLS[name])


@pytest.mark.parametrize(
    ("name", "parent_state", "deps", "unsuccessful"),
    [
        ("fail", "dead", 2, {}),
        ("ignore", "released", 0, {"C0": "stalled", "C1": "stalled"}),
        ("ignore-partial", "awaiting_children", 1, {"C0": "stalled"}),
        ("remove", "released", 0, {}),
        ("wait", "awaiting_children", 2, {}),
        ("mixed", "dead", 1, {"C0": "stalled"}),
    ],
)
def test_native_sweep_policy_outcomes(native_conn, queue, name, parent_state, deps, unsuccessful):
    # what the equality above compares, spelled out, so it cannot pass by both executors doing nothing
    replies = FLOW_STALLS[name](native_conn, queue)
    snap = snapshots.snapshot(native_conn, queue)
    # a released parent went to pending, and the scenario's last claim took it
    assert snap.state("P") == ("active" if parent_state == "released" else parent_state)
    assert (replies[2] is not None and replies[2].id == "P") is (parent_state == "released")
    assert flows.dependencies(native_conn, queue, "P") == deps
    assert flows.ignored_failures(native_conn, queue, "P") == unsuccessful
    for cid, row in snap.rows.items():
        if cid.startswith("C") and row["state"] == "dead":
            policy_kept = name == "wait"
            assert ("parent" in row) is policy_kept and ("parent_policy" in row) is policy_kept
    if parent_state == "dead":
        first_fail = "C1" if name == "mixed" else "C0"  # the first child with policy fail to die
        assert snap.rows["P"]["last_error"] == f"child {first_fail} failed: stalled"
        assert "P" in snap.dead
    if parent_state == "released":
        assert snap.active == ["P"] and "P" not in snap.dead


# -- difference 1: the pause read moves inside the command -------------------------------------
def test_raw_native_claim_on_a_paused_queue_answers_empty_and_leaves_pending(native_conn, queue):
    c = native_conn
    jobs.enqueue(c, queue, "held")
    jobs.pause(c, queue)
    before, d0 = state(c, queue), digest(c.client)
    assert c.call("EMQ.CLAIM", 3, *claim_keys(queue), LEASE) == []
    assert state(c, queue) == before and digest(c.client) == d0
    jobs.resume(c, queue)
    assert c.call("EMQ.CLAIM", 3, *claim_keys(queue), LEASE)[2] == 1


def test_scripted_pause_read_is_host_side_only(conn, native_conn, queue):
    # the script itself never reads the flag: sent raw on a paused queue, @claim2 claims
    jobs.enqueue(conn, queue, "held", job_id="H")
    jobs.pause(conn, queue)
    assert conn.eval("claim2", claim_keys(queue), [LEASE]) == ["H", "held", 1]
    # claim/3 reads the flag first on both executors, and a paused queue sends no claim at all
    for c in (conn, native_conn):
        jobs.enqueue(c, queue, "held2", job_id="H2")
        jobs.pause(c, queue)
        c.clear_trace()
        assert jobs.claim(c, queue, LEASE) is None
        assert [e.line for e in c.trace] == [f"EXISTS {queue_key(queue, 'paused')}"]


# -- difference 2: every read and check before the first write --------------------------------
@pytest.mark.parametrize(
    ("spoil", "error"),
    [
        (lambda cl, q: cl.hset(job_key(q, "A"), "attempts", "many"), r"^EMQSTATE .*attempts is not an integer"),
        (lambda cl, q: cl.set(queue_key(q, "active"), "oops"), r"^WRONGTYPE .*active holds a string"),
    ],
    ids=["head-attempts-not-integer", "active-not-a-zset"],
)
def test_a_refused_native_claim_writes_nothing(conn, native_conn, queue, spoil, error):
    for c in (conn, native_conn):
        jobs.enqueue(c, queue, "a", job_id="A")
        spoil(c.client, queue)
    d0 = digest(native_conn.client)
    with pytest.raises(redis.exceptions.ResponseError, match=error):
        native_conn.call("EMQ.CLAIM", 3, *claim_keys(queue), LEASE)
    assert digest(native_conn.client) == d0
    pending = queue_key(queue, "pending")
    assert native_conn.client.zrange(pending, 0, -1) == ["A"]  # peeked, never popped
    # the script fails half-way: the pop (and more) already happened
    d0 = digest(conn.client)
    with pytest.raises(redis.exceptions.ResponseError):
        conn.eval("claim2", claim_keys(queue), [LEASE])
    assert digest(conn.client) != d0 and conn.client.zrange(pending, 0, -1) == []


# -- difference 3: the deadline is the cached command time, with no TIME call ------------------
def time_calls(client: redis.Redis) -> int:
    return client.info("commandstats").get("cmdstat_time", {}).get("calls", 0)


def test_native_claim_calls_no_time_and_the_script_calls_it_once(conn, native_conn, queue):
    for c, sent, calls in ((native_conn, "EMQ.CLAIM", 0), (conn, "@claim2", 1)):
        jobs.enqueue(c, queue, "t", job_id="T")
        before = time_calls(c.client)
        got = jobs.claim(c, queue, LEASE)
        entry = c.last()[0]
        assert got is not None and (entry.script or entry.line.split()[0]) == sent
        assert time_calls(c.client) - before == calls


@pytest.mark.parametrize("executor", ["scripted", "native"])
def test_the_deadline_is_server_time_plus_the_lease(conn, native_conn, queue, executor):
    c = native_conn if executor == "native" else conn
    jobs.enqueue(c, queue, "t", job_id="T")

    def now_ms() -> int:
        sec, usec = c.client.time()
        return sec * 1000 + usec // 1000

    t0 = now_ms()
    jobs.claim(c, queue, LEASE)
    t1 = now_ms()
    deadline = int(c.client.zscore(queue_key(queue, "active"), "T"))
    # causality, not a timing bound: the command ran between the two TIME reads
    assert t0 <= deadline - LEASE <= t1


# -- difference 4: the row gains lease_epoch, the server's run_id -------------------------------
def test_native_claim_writes_lease_epoch_the_run_id(conn, native_conn, native_node, queue):
    for c in (conn, native_conn):
        jobs.enqueue(c, queue, "e", job_id="E")
        jobs.claim(c, queue, LEASE)
    assert jobs.row(native_conn, queue, "E")["lease_epoch"] == run_id(native_conn.client) == native_node.run_id
    assert "lease_epoch" not in jobs.row(conn, queue, "E")


# -- the brand fence ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def own_native():
    """A native node of this module's own, so breaking its brand cannot disturb other tests."""
    n = LocalNode(native=True)
    yield n
    n.stop()


def every_command(q: str) -> dict[str, list[Any]]:
    """One well-formed call of each EMQ.* command."""
    b, active, row = base(q), queue_key(q, "active"), job_key(q, "B")
    return {
        "claim": ["EMQ.CLAIM", 3, *claim_keys(q), LEASE],
        "claim_many": ["EMQ.CLAIM.MANY", 3, *claim_keys(q), LEASE, 2],
        "complete": ["EMQ.COMPLETE", 2, active, row, "B", 1, b, "", "r", 0],
        "fail": ["EMQ.FAIL", 4, active, queue_key(q, "schedule"), queue_key(q, "dead"), row]
        + ["B", 1, 1000, 3, "why", b, "", 0],
        "stalled": ["EMQ.STALLED.CHECK", 4, active, queue_key(q, "pending"), queue_key(q, "dead"), b, 1],
    }


@pytest.mark.parametrize(
    ("brand", "error"),
    [
        (None, r"^EMQWIRE node has no \{emq\}:version brand; a wire 6 node needs echomq:6\.0\.0$"),
        ("echomq:4.0.0", r"^EMQWIRE node is branded echomq:4\.0\.0; need echomq:6\.0\.0$"),
        ("echomq:6.0.1", r"^EMQWIRE node is branded echomq:6\.0\.1; need echomq:6\.0\.0$"),
        ("", r"^EMQWIRE node is branded ; need echomq:6\.0\.0$"),
    ],
    ids=["absent", "wire-4", "foreign", "empty"],
)
def test_every_native_command_refuses_an_absent_or_foreign_brand(own_native, queue, brand, error):
    c = own_native.connector()
    jobs.enqueue(c, queue, "b", job_id="B")
    jobs.claim(c, queue, LEASE)
    force(c.client, queue, "active", "B", 1)
    try:
        if brand is None:
            c.client.delete(keyspace.VERSION_KEY)
        else:
            c.client.set(keyspace.VERSION_KEY, brand)
        before, d0 = state(c, queue), digest(c.client)
        for name, args in every_command(queue).items():
            with pytest.raises(redis.exceptions.ResponseError, match=error):
                c.call(*args)
            assert digest(c.client) == d0, name
        assert state(c, queue) == before
    finally:
        c.client.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)
    # restored: the very same sweep now runs
    assert c.call(*every_command(queue)["stalled"]) == [["B"], []]
    c.close()


# -- flows run only as scripts -----------------------------------------------------------------
def test_native_complete_and_fail_refuse_flow_children_and_layouts(native_conn, queue):
    c = native_conn
    flow = flows.add(c, queue, ("P", "p"), [("C", "c")])
    got = jobs.claim(c, queue, LEASE)
    active, row, b = queue_key(queue, "active"), job_key(queue, "C"), base(queue)
    deps, processed, unsuccessful = (job_key(queue, "P", s) for s in ("dependencies", "processed", "unsuccessful"))
    prow = job_key(queue, "P")
    sched, dead = queue_key(queue, "schedule"), queue_key(queue, "dead")
    tok = got.attempts
    tries = [
        # a row carrying parent, sent as a plain job
        (["EMQ.COMPLETE", 2, active, row, "C", tok, b, "", "r", 0], "complete"),
        (["EMQ.FAIL", 4, active, sched, dead, row, "C", tok, 1000, 3, "x", b, "", 0], "fail"),
        # a parent id named
        (["EMQ.COMPLETE", 2, active, row, "C", tok, b, "P", "r", 0], "complete"),
        (["EMQ.FAIL", 4, active, sched, dead, row, "C", tok, 1000, 3, "x", b, "P", 0], "fail"),
        # the scripts' flow key layouts
        (["EMQ.COMPLETE", 5, active, row, deps, processed, prow, "C", tok, b, "P", "r", 0], "complete"),
        (
            ["EMQ.FAIL", 7, active, sched, dead, row, deps, unsuccessful, prow, "C", tok, 1000, 3, "x", b, "P", 0],
            "fail",
        ),  # noqa: E501
    ]
    before, d0 = state(c, queue), digest(c.client)
    for args, verb in tries:
        with pytest.raises(redis.exceptions.ResponseError, match=f"^EMQSTATE {verb} flow not native$"):
            c.call(*args)
        assert digest(c.client) == d0, args
    assert state(c, queue) == before
    # the kit sends the script for a flow child on either executor, so the fan-in runs
    assert jobs.complete(c, queue, "C", tok, "R") == jobs.OK
    assert c.last()[0].script == "@complete"
    assert flows.children_values(c, queue, flow) == {"C": "R"}


# -- the wire 6 connector ----------------------------------------------------------------------
def test_wire6_connector_refuses_a_node_branded_wire4(node):
    with pytest.raises(WireError, match=r"^EMQWIRE node is branded 'echomq:4\.0\.0'.*'echomq:6\.0\.0'"):
        connect(node.address, wire=6)


def test_wire4_connector_refuses_a_native_node(native_node):
    with pytest.raises(WireError, match="echomq:6.0.0"):
        connect(native_node.address, wire=4)


def test_wire6_connector_needs_the_module_loaded():
    plain = LocalNode()  # no module, yet branded as a wire 6 node would be
    try:
        c = plain.client()
        c.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)
        c.close()
        with pytest.raises(WireError, match="trafikey module loaded"):
            connect(plain.address, wire=6)
    finally:
        plain.stop()


def test_wire6_claim_reads_the_pause_flag_then_sends_emq_claim(native_conn, queue):
    c = native_conn
    job_id = jobs.enqueue(c, queue, "w6")
    c.clear_trace()
    got = jobs.claim(c, queue, 30_000)
    assert got == jobs.Claimed(job_id, "w6", 1)
    pause_read, claim = c.last(2)
    assert pause_read.line == f"EXISTS {queue_key(queue, 'paused')}" and pause_read.reply == 0
    assert claim.script is None
    assert re.fullmatch(r"EMQ\.CLAIM 3 \S+ \S+ \S+ 30000", claim.line)
    assert claim.line == f"EMQ.CLAIM 3 {' '.join(claim_keys(queue))} 30000"
    assert claim.reply == [job_id, "w6", 1]


def test_wire6_sends_scripts_where_no_twin_exists(native_conn, queue):
    c = native_conn
    jobs.enqueue(c, queue, "x", job_id="X")
    got = jobs.claim(c, queue, LEASE)
    force(c.client, queue, "active", "X", 1)
    sent = {}
    for name, call in {
        "reap": lambda: jobs.reap(c, queue),
        "promote": lambda: jobs.promote(c, queue),
        "complete": lambda: jobs.complete(c, queue, "X", got.attempts),  # stale now: still EMQ.COMPLETE
        "check": lambda: stalled.check(c, queue),
    }.items():
        call()
        entry = c.last()[0]
        sent[name] = entry.script or entry.line.split()[0]
    assert sent == {"reap": "@reap", "promote": "@promote", "complete": "EMQ.COMPLETE", "check": "EMQ.STALLED.CHECK"}


# -- the module build ------------------------------------------------------------------------
@pytest.fixture
def native_copy(tmp_path, monkeypatch):
    """A private copy of native/ and an empty cache, so builds here touch nothing shared."""
    src = tmp_path / "native"
    shutil.copytree(trafikey.source_dir(), src, ignore=shutil.ignore_patterns("*.so", "*.o"))
    monkeypatch.setenv("ECHOMQ_NATIVE_DIR", str(src))
    monkeypatch.setenv("ECHOMQ_CACHE_DIR", str(tmp_path / "cache"))
    return src


def test_build_reuses_the_cached_module_until_the_source_changes(native_copy, tmp_path):
    first = trafikey.build()
    stat = first.stat()
    assert first.parent == tmp_path / "cache" and stat.st_mode & 0o111
    again = trafikey.build()
    assert again == first
    assert (again.stat().st_ino, again.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)  # not rebuilt
    with open(native_copy / "trafikey.c", "a") as f:
        f.write("\n/* an edit: the hash of the sources moves */\n")
    rebuilt = trafikey.build()
    assert rebuilt != first and rebuilt.exists() and first.exists()
    assert sorted(p.name for p in (tmp_path / "cache").glob("*.so")) == sorted([first.name, rebuilt.name])
    # a header counts too
    with open(native_copy / "tk_util.h", "a") as f:
        f.write("\n/* another edit */\n")
    assert trafikey.build() not in (first, rebuilt)


def test_a_rebuilt_module_loads_and_serves(native_copy):
    with open(native_copy / "trafikey.c", "a") as f:
        f.write("\n/* rebuilt for this test */\n")
    n = LocalNode(native=True)  # builds from the copy, through the same cache lookup
    try:
        assert n.module_path == trafikey.build() and str(n.module_path).startswith(str(native_copy.parent))
        c = n.connector()
        jobs.enqueue(c, "q", "built")
        assert jobs.claim(c, "q", LEASE).payload == "built"
        assert c.last()[0].line.startswith("EMQ.CLAIM 3 ")
        c.close()
    finally:
        n.stop()


def test_build_fails_clearly_when_the_c_has_a_warning(native_copy):
    with open(native_copy / "trafikey.c", "a") as f:
        f.write("\nstatic int tk_never_used;\n")  # -Wunused-variable, an error under -Werror
    with pytest.raises(trafikey.NativeBuildError, match=r"(?s)^building trafikey failed:.*tk_never_used"):
        trafikey.build()
    assert not list(Path(trafikey.cache_dir()).glob("*"))  # no half-written .so left behind


def test_build_with_a_missing_compiler_named_by_cc(native_copy, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent")
    with pytest.raises(trafikey.NativeBuildError, match=r"^CC='/nonexistent' is not a runnable C compiler.*apt-get"):
        trafikey.build()


def test_build_with_no_compiler_on_path(native_copy, monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(trafikey.NativeBuildError, match=r"^no C compiler \(cc, gcc or clang\) on PATH.*apt-get"):
        trafikey.build()


def test_a_native_node_without_a_compiler_fails_clearly_and_leaves_nothing(native_copy, monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "/nonexistent")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(trafikey.NativeBuildError, match="not a runnable C compiler"):
        LocalNode(native=True)
    assert list(scratch.iterdir()) == []  # no node folder left behind


# -- review defects (issue 13): each of these failed before its fix ------------------------------
def test_lease_epoch_goes_when_its_lease_ends(native_conn, queue):
    # issue 13 item 4: lease_epoch belongs to one lease; every transition that ends a lease clears it
    c = native_conn
    for job_id in ("R", "F", "S", "D"):
        jobs.enqueue(c, queue, job_id, job_id=job_id)
    claims = {g.id: g for g in (jobs.claim(c, queue, LEASE) for _ in range(4))}
    assert all("lease_epoch" in jobs.row(c, queue, i) for i in claims)
    force(c.client, queue, "active", "R", 1)
    assert jobs.reap(c, queue) == ["R"]  # @reap (no native twin)
    assert jobs.retry(c, queue, "F", claims["F"].attempts, "later", 60_000, 3) == jobs.SCHEDULED  # EMQ.FAIL
    assert jobs.retry(c, queue, "D", claims["D"].attempts, "fatal", 1_000, 1) == jobs.DEAD
    force(c.client, queue, "active", "S", 2)
    assert stalled.check(c, queue, 3) == stalled.StallReport(["S"], [])  # EMQ.STALLED.CHECK
    rows = snapshots.snapshot(c, queue).rows
    assert {i: "lease_epoch" in r for i, r in rows.items()} == dict.fromkeys("RFSD", False)


def test_the_scripts_end_a_native_lease_epoch_too(native_conn, queue):
    # issue 13 item 4, the scripted side: a natively claimed flow child settles by @retry on wire 6,
    # and @stalled_check may be run raw on a native node; both end the lease, and its epoch with it
    c = native_conn
    flow = flows.add(c, queue, ("P", "p"), [("A", "a"), ("B", "b")], policy="wait")
    a, b = (jobs.claim(c, queue, LEASE) for _ in range(2))
    assert sum(e.line.startswith("EMQ.CLAIM") for e in c.trace) == 2
    assert all("lease_epoch" in jobs.row(c, queue, j.id) for j in (a, b))
    assert jobs.retry(c, queue, a.id, a.attempts, "later", 60_000, 3) == jobs.SCHEDULED
    assert c.last()[0].script == "@retry"  # a row naming a parent takes the script
    force(c.client, queue, "active", b.id, 1)
    keys = [queue_key(queue, s) for s in ("active", "pending", "dead")] + [base(queue)]
    assert c.eval("stalled_check", keys, [3]) == [[b.id], []]
    rows = snapshots.snapshot(c, queue).rows
    assert {j: "lease_epoch" in rows[j] for j in (a.id, b.id)} == {a.id: False, b.id: False}
    assert rows[flow.parent_id]["state"] == "awaiting_children"


def test_python_and_c_share_one_rule_for_queue_names(native_conn, queue):
    # issue 13 item 9: check_queue and the native base check accept and refuse the same names
    names = ["a b", "a\tb", "a\x0bb", "a\x1cb", "a\x1fb", "a\x00b", "a\x7fb", "a\u00a0b", "a\u2028b", "a\x85b"]
    names += ["café", "a.b-c_d", "a*b?[c]", "a{b", "a:b"]
    verdicts = {}
    for name in names:
        try:
            keyspace.check_queue(name)
            python_ok = True
        except jobs.BadInput:
            python_ok = False
        b = f"emq:{{{name}}}:"
        try:
            native_conn.call("EMQ.CLAIM", 3, b + "pending", b + "active", b, LEASE)
            native_ok = True
        except redis.exceptions.ResponseError as exc:
            assert str(exc).startswith("EMQKEYS base must look like"), exc
            native_ok = False
        verdicts[name] = (python_ok, native_ok)
    assert {n: v for n, v in verdicts.items() if v[0] != v[1]} == {}
    assert verdicts["a b"] == verdicts["a\x1cb"] == (False, False) and verdicts["café"] == (True, True)


@pytest.mark.parametrize("executor", ["scripted", "native"])
def test_numbers_above_2_pow_52_are_refused_on_both_executors(conn, native_conn, queue, executor):
    # issue 13 item 9: one bound for every number the kit sends, checked in Python before any call
    c = conn if executor == "scripted" else native_conn
    jobs.enqueue(c, queue, "n", job_id="N")
    got = jobs.claim(c, queue, LEASE)
    before = state(c, queue)
    c.clear_trace()
    calls = {
        "lease_ms": lambda: jobs.claim(c, queue, 2**52 + 1),
        "delay_ms": lambda: jobs.retry(c, queue, "N", got.attempts, "r", 2**52 + 1),
        "max_attempts": lambda: jobs.retry(c, queue, "N", got.attempts, "r", 1_000, 2**52 + 1),
        "token": lambda: jobs.complete(c, queue, "N", 2**52 + 1),
        "max_stalled": lambda: stalled.check(c, queue, 2**52 + 1),
    }
    for name, call in calls.items():
        with pytest.raises(jobs.BadInput, match=f"{name}.* at most 2\\^52"):
            call()
    assert list(c.trace) == [] and state(c, queue) == before
    assert jobs.claim(c, queue, 2**52) is None  # the bound itself passes (the queue is empty now)


def test_wire6_refusals_map_to_the_kits_errors(own_native, queue):
    # issue 13 item 8: a native refusal reaches the caller as the kit's error, as a script's does
    c = own_native.connector()
    try:
        jobs.enqueue(c, queue, "w", job_id="W")
        c.client.hset(job_key(queue, "W"), "attempts", "1e3")
        with pytest.raises(WrongState, match="^EMQSTATE .*attempts is not an integer"):
            jobs.claim(c, queue, LEASE)
        c.client.hset(job_key(queue, "W"), "attempts", "0")
        got = jobs.claim(c, queue, LEASE)
        c.client.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE4)
        for call in (
            lambda: jobs.claim(c, queue, LEASE),
            lambda: jobs.complete(c, queue, "W", got.attempts),
            lambda: jobs.retry(c, queue, "W", got.attempts, "r"),
            lambda: stalled.check(c, queue),
        ):
            with pytest.raises(WireError, match="^EMQWIRE node is branded echomq:4"):
                call()
    finally:
        c.client.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)
        c.close()


# each twin pair and an argument list: the script and the command must both take it or both refuse it
ARGUMENT_LISTS = {
    "complete": [
        ("well formed", ["T", "{tok}", "{b}", "", "r", "0"], True),
        ("record 1", ["T", "{tok}", "{b}", "", "r", "1"], True),
        ("the page's five, no record", ["T", "{tok}", "{b}", "", "r"], True),
        ("one short", ["T", "{tok}", "{b}", ""], False),
        ("record yes", ["T", "{tok}", "{b}", "", "r", "yes"], False),
        ("an extra argument", ["T", "{tok}", "{b}", "", "r", "0", "x"], False),
        ("token a word", ["T", "one", "{b}", "", "r", "0"], False),
    ],
    "retry": [
        ("well formed", ["T", "{tok}", "1000", "3", "why", "{b}", "", "0"], True),
        ("no record", ["T", "{tok}", "1000", "3", "why", "{b}", ""], True),
        ("one short", ["T", "{tok}", "1000", "3", "why", "{b}"], False),
        ("record 2", ["T", "{tok}", "1000", "3", "why", "{b}", "", "2"], False),
        ("an extra argument", ["T", "{tok}", "1000", "3", "why", "{b}", "", "0", "x"], False),
        ("delay a word", ["T", "{tok}", "soon", "3", "why", "{b}", "", "0"], False),
        ("cap zero", ["T", "{tok}", "1000", "0", "why", "{b}", "", "0"], False),
    ],
}


@pytest.mark.parametrize(("twin", "case"), [(t, i) for t, cases in ARGUMENT_LISTS.items() for i in range(len(cases))])
def test_the_twins_accept_the_same_argument_lists(conn, native_conn, queue, twin, case):
    # issue 13 item 10: @complete/EMQ.COMPLETE and @retry/EMQ.FAIL take and refuse the same lists
    what, argv, accepted = ARGUMENT_LISTS[twin][case]
    answers = []
    for c in (conn, native_conn):
        jobs.enqueue(c, queue, "t", job_id="T")
        got = jobs.claim(c, queue, LEASE)
        args = [a.format(tok=got.attempts, b=base(queue)) for a in argv]
        keys = [queue_key(queue, "active"), job_key(queue, "T")]
        if twin == "retry":
            keys[1:1] = [queue_key(queue, "schedule"), queue_key(queue, "dead")]
        before, d0 = state(c, queue), digest(c.client)
        try:
            if c.native:
                c.call("EMQ.COMPLETE" if twin == "complete" else "EMQ.FAIL", len(keys), *keys, *args)
            else:
                c.eval(twin, keys, args)
            answers.append(True)
        except redis.exceptions.ResponseError:
            assert digest(c.client) == d0 and state(c, queue) == before, what
            answers.append(False)
    assert answers == [accepted, accepted], what


# -- direct key access: the server still learns which keys a command changed ------------------------
def test_a_native_write_breaks_a_watch_and_a_refusal_does_not(native_conn, queue):
    """The commands write through the key API and tell the server each key they changed (WATCH,
    client-side caching); a refused call tells it nothing, even one refused after it opened the keys
    it would have written (the row's type is checked after the head is peeked)."""
    jobs.enqueue(native_conn, queue, "w", job_id="W")
    pending, active, row = queue_key(queue, "pending"), queue_key(queue, "active"), job_key(queue, "W")
    claim = ("EMQ.CLAIM", 3, *claim_keys(queue), LEASE)

    def watched(send: Callable[[], Any]) -> bool:
        """True when a transaction WATCHing the queue's keys still commits after send()."""
        with native_conn.client.pipeline() as pipe:
            pipe.watch(pending, active, row)
            send()
            pipe.multi()
            pipe.zcard(pending)
            try:
                pipe.execute()
            except redis.WatchError:
                return False
            return True

    def refused(error: str) -> Callable[[], None]:
        def send() -> None:
            with pytest.raises(redis.ResponseError, match=error):
                native_conn.call(*claim)

        return send

    fields = native_conn.client.hgetall(row)
    native_conn.client.delete(row)
    native_conn.client.set(row, "not a row")
    assert watched(refused("WRONGTYPE"))
    native_conn.client.delete(row)
    native_conn.client.hset(row, mapping=fields)
    jobs.pause(native_conn, queue)
    assert watched(lambda: native_conn.call(*claim))  # paused: [], nothing written
    jobs.resume(native_conn, queue)
    assert not watched(lambda: native_conn.call(*claim))  # claimed W
    assert native_conn.client.zrange(active, 0, -1) == ["W"]
