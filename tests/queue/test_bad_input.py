"""Bad input: each is a clear exception naming the problem, and the queue is exactly as it was.

Every case compares the snapshot's ``state_only()`` before and after. Argument
checks also send nothing at all (the trace does not grow, the node's key count
stays): they are refused before any call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import redis
from conftest import state

from echomq_teach import BadInput, Connector, DuplicateJob, UnknownJob, jobs, keyspace, snapshots, stalled
from echomq_teach.consumer import Consumer, Metronome, Pool


@pytest.fixture
def busy(conn: Connector, queue: str) -> dict[str, str]:
    """A queue with one job in each of the four sets, so 'unchanged' has something to guard."""
    out = {"dead": jobs.enqueue(conn, queue, "dead one")}
    got = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, got.id, got.attempts, "fatal", 1, 1)
    out["scheduled"] = jobs.enqueue(conn, queue, "scheduled one")
    got = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, got.id, got.attempts, "later", 60_000, 3)
    out["active"] = jobs.enqueue(conn, queue, "active one")
    out["active_token"] = str(jobs.claim(conn, queue, 30_000).attempts)
    out["pending"] = jobs.enqueue(conn, queue, "pending one")
    assert snapshots.snapshot(conn, queue).sizes() == {"pending": 1, "active": 1, "schedule": 1, "dead": 1}
    return out


def assert_refused_before_any_call(
    conn: Connector, queue: str, call: Callable[[], Any], exc: type[Exception], match: str
) -> None:
    """``call`` raises ``exc`` naming the problem, sends nothing, and leaves the queue and node as they were."""
    before = state(conn, queue)
    keys_before = conn.client.dbsize()
    links_before = conn.client.info("stats")["total_connections_received"]
    conn.clear_trace()  # from here, every command the call sends would be in the trace
    with pytest.raises(exc, match=match):
        call()
    assert list(conn.trace) == [], "a refused argument must not reach the node"
    assert conn.client.dbsize() == keys_before
    # nor through a client of its own (a pool's forked connectors)
    assert conn.client.info("stats")["total_connections_received"] == links_before
    assert state(conn, queue) == before


# -- lease_ms ------------------------------------------------------------------------------------------
# 2**52 + 1: above the one bound both executors hold every number to (issue 13 item 9)
BAD_LEASES = [True, False, 1.5, 30_000.0, "30000", 0, -1, None, [30_000], 2**52 + 1]


@pytest.mark.parametrize("lease", BAD_LEASES, ids=repr)
def test_claim_refuses_a_lease_that_is_not_a_positive_int(
    conn: Connector, queue: str, busy: dict[str, str], lease: object
) -> None:
    assert_refused_before_any_call(
        conn, queue, lambda: jobs.claim(conn, queue, lease), BadInput, "lease_ms must be a positive integer"
    )


@pytest.mark.parametrize("lease", BAD_LEASES, ids=repr)
def test_consumer_refuses_a_bad_lease(conn: Connector, queue: str, busy: dict[str, str], lease: object) -> None:
    assert_refused_before_any_call(
        conn, queue, lambda: Consumer(conn, queue, lambda j: "", lease_ms=lease), BadInput, "lease_ms"
    )


def test_lease_message_names_the_value(conn: Connector, queue: str) -> None:
    with pytest.raises(BadInput) as err:
        jobs.claim(conn, queue, -5)
    assert "lease_ms" in str(err.value) and "-5" in str(err.value)


# -- queue names -------------------------------------------------------------------------------------------
BAD_QUEUES: list[tuple[object, str]] = [
    ("", "queue name is empty"),
    ("a" * 201, "201 bytes; at most 200"),
    ("é" * 101, "202 bytes; at most 200"),
    ("a{b", "holds '{'"),
    ("a}b", "holds '}'"),
    ("{q}", "holds '{'"),
    ("a:b", "holds ':'"),
    ("a b", "holds ' '"),
    ("a\tb", "holds '\\\\t'"),
    ("a\nb", "holds '\\\\n'"),
    (None, "must be a str, got NoneType"),
    (5, "must be a str, got int"),
    (b"q", "must be a str, got bytes"),
]

QUEUE_CALLS: dict[str, Callable[[Connector, Any, dict[str, str]], Any]] = {
    "enqueue": lambda c, q, b: jobs.enqueue(c, q, "x"),
    "claim": lambda c, q, b: jobs.claim(c, q, 1000),
    "complete": lambda c, q, b: jobs.complete(c, q, b["active"], int(b["active_token"])),
    "retry": lambda c, q, b: jobs.retry(c, q, b["active"], int(b["active_token"]), "r"),
    "promote": lambda c, q, b: jobs.promote(c, q),
    "reap": lambda c, q, b: jobs.reap(c, q),
    "pause": lambda c, q, b: jobs.pause(c, q),
    "resume": lambda c, q, b: jobs.resume(c, q),
    "paused": lambda c, q, b: jobs.paused(c, q),
    "reprocess": lambda c, q, b: jobs.reprocess(c, q, b["dead"]),
    "remove": lambda c, q, b: jobs.remove(c, q, b["pending"]),
    "trim_dead": lambda c, q, b: jobs.trim_dead(c, q, 0),
    "snapshot": lambda c, q, b: snapshots.snapshot(c, q),
    "stalled.check": lambda c, q, b: stalled.check(c, q),
    "Consumer": lambda c, q, b: Consumer(c, q, lambda j: ""),
    "Metronome": lambda c, q, b: Metronome(c, q),
    "Pool": lambda c, q, b: Pool(c, q, lambda j: ""),
}


@pytest.mark.parametrize(
    "bad_queue, message",
    BAD_QUEUES,
    ids=[
        "empty",
        "201B",
        "202B",
        "lbrace",
        "rbrace",
        "tag",
        "colon",
        "space",
        "tab",
        "newline",
        "None",
        "int",
        "bytes",
    ],
)
def test_every_call_refuses_a_bad_queue_name(
    conn: Connector, queue: str, busy: dict[str, str], bad_queue: object, message: str
) -> None:
    for name, call in QUEUE_CALLS.items():
        try:
            assert_refused_before_any_call(
                conn, queue, lambda call=call: call(conn, bad_queue, busy), BadInput, message
            )
        except AssertionError as exc:  # name the call that let the bad name through
            raise AssertionError(f"{name}({bad_queue!r}): {exc}") from exc


# -- payloads ------------------------------------------------------------------------------------------------
BAD_PAYLOADS = [None, 5, 1.5, True, ["a"], {"a": 1}, bytearray(b"x"), memoryview(b"x")]


@pytest.mark.parametrize("payload", BAD_PAYLOADS, ids=lambda v: type(v).__name__)
def test_enqueue_refuses_a_payload_that_is_not_str_or_bytes(
    conn: Connector, queue: str, busy: dict[str, str], payload: object
) -> None:
    message = f"payload must be str or bytes, got {type(payload).__name__}"
    assert_refused_before_any_call(conn, queue, lambda: jobs.enqueue(conn, queue, payload), BadInput, message)


@pytest.mark.parametrize("result", [None, 7, ["a"]], ids=repr)
def test_complete_refuses_a_result_that_is_not_str_or_bytes(
    conn: Connector, queue: str, busy: dict[str, str], result: object
) -> None:
    token = int(busy["active_token"])
    assert_refused_before_any_call(
        conn, queue, lambda: jobs.complete(conn, queue, busy["active"], token, result), BadInput, "must be str or bytes"
    )


# -- job ids and tokens ----------------------------------------------------------------------------------
BAD_IDS = ["", "a:b", "a b", "{x}", "x" * 201, None, 5]


@pytest.mark.parametrize("job_id", BAD_IDS, ids=lambda v: repr(v)[:20])
def test_calls_refuse_a_bad_job_id(conn: Connector, queue: str, busy: dict[str, str], job_id: object) -> None:
    calls = {
        # job_id=None asks enqueue to mint one, so None is a bad id only for the other calls
        **({} if job_id is None else {"enqueue": lambda: jobs.enqueue(conn, queue, "x", job_id=job_id)}),
        "complete": lambda: jobs.complete(conn, queue, job_id, 1),
        "retry": lambda: jobs.retry(conn, queue, job_id, 1, "r"),
        "remove": lambda: jobs.remove(conn, queue, job_id),
        "reprocess": lambda: jobs.reprocess(conn, queue, job_id),
    }
    for name, call in calls.items():
        try:
            assert_refused_before_any_call(conn, queue, call, BadInput, "job id")
        except AssertionError as exc:
            raise AssertionError(f"{name}({job_id!r}): {exc}") from exc


@pytest.mark.parametrize("token", [0, -1, True, "1", 1.0, None], ids=repr)
def test_settles_refuse_a_bad_token(conn: Connector, queue: str, busy: dict[str, str], token: object) -> None:
    job_id = busy["active"]
    assert_refused_before_any_call(conn, queue, lambda: jobs.complete(conn, queue, job_id, token), BadInput, "token")
    assert_refused_before_any_call(conn, queue, lambda: jobs.retry(conn, queue, job_id, token, "r"), BadInput, "token")


@pytest.mark.parametrize(
    "call, message",
    [
        pytest.param(
            lambda c, q, b: jobs.retry(c, q, b["active"], int(b["active_token"]), None),
            "reason must be a str",
            id="reason",
        ),
        pytest.param(
            lambda c, q, b: jobs.retry(c, q, b["active"], int(b["active_token"]), "r", 0), "delay_ms", id="delay"
        ),
        pytest.param(
            lambda c, q, b: jobs.retry(c, q, b["active"], int(b["active_token"]), "r", 1, 0), "max_attempts", id="cap"
        ),
        pytest.param(lambda c, q, b: jobs.promote(c, q, limit=0), "limit", id="promote limit"),
        pytest.param(lambda c, q, b: jobs.trim_dead(c, q, -1), "keep must be a non-negative integer", id="trim keep"),
        pytest.param(lambda c, q, b: jobs.trim_dead(c, q, True), "keep", id="trim keep bool"),
        pytest.param(lambda c, q, b: stalled.check(c, q, 0), "max_stalled", id="max_stalled"),
        pytest.param(lambda c, q, b: Consumer(c, q, "not callable"), "handler must be callable", id="handler"),
        pytest.param(lambda c, q, b: Consumer(c, q, lambda j: "", recovery="sweep"), "recovery must be", id="recovery"),
        pytest.param(
            lambda c, q, b: Consumer(c, q, lambda j: "", retry_delay_ms=0), "retry_delay_ms", id="retry delay"
        ),
        pytest.param(lambda c, q, b: Consumer(c, q, lambda j: "", max_attempts=-1), "max_attempts", id="consumer cap"),
        pytest.param(lambda c, q, b: Consumer(c, q, lambda j: "").run(timeout=0), "positive timeout", id="run timeout"),
        pytest.param(lambda c, q, b: Metronome(c, q, interval_ms=0), "interval_ms", id="metronome"),
        # issue 13 item 5: the Metronome checks its recovery leg and max_stalled too
        pytest.param(lambda c, q, b: Metronome(c, q, recovery="sweep"), "recovery must be", id="metronome recovery"),
        pytest.param(lambda c, q, b: Metronome(c, q, max_stalled=0), "max_stalled", id="metronome max_stalled"),
        pytest.param(lambda c, q, b: Consumer(c, q, lambda j: "", max_stalled=0), "max_stalled", id="consumer stalls"),
        pytest.param(lambda c, q, b: Pool(c, q, lambda j: "", max_stalled=-1), "max_stalled", id="pool max_stalled"),
        pytest.param(lambda c, q, b: Pool(c, q, lambda j: "", size=0), "size", id="pool size"),
        pytest.param(lambda c, q, b: Pool(c, q, lambda j: "", lease_ms=0), "lease_ms", id="pool lease"),
        pytest.param(lambda c, q, b: Pool(c, q, None), "handler must be callable", id="pool handler"),
        pytest.param(lambda c, q, b: Pool(c, q, lambda j: "", metronome_ms=0), "metronome_ms", id="pool metronome"),
        pytest.param(lambda c, q, b: Pool(c, q, lambda j: "", recovery="x"), "recovery must be", id="pool recovery"),
        # the Pool's shortcuts (echomq_teach.shortcuts), and the reply parser they may choose
        pytest.param(
            lambda c, q, b: Pool(c, q, lambda j: "", shortcuts="pipeline"), "shortcuts must be", id="shortcuts"
        ),
        pytest.param(lambda c, q, b: Pool(c, q, lambda j: "", shortcuts=["warp"]), "unknown shortcut", id="shortcut"),
        pytest.param(
            lambda c, q, b: Consumer(c, q, lambda j: "", shortcuts=["pipeline"]),
            "pipeline shortcut is for a consumer without promote and recovery",
            id="pipelined beat",
        ),
        pytest.param(
            lambda c, q, b: Consumer(c, q, lambda j: "", shortcuts=["hiredis"]), "unknown shortcut", id="parser"
        ),
        pytest.param(lambda c, q, b: c.fork(parser="fast"), "parser must be 'python' or 'hiredis'", id="fork parser"),
    ],
)
def test_other_arguments_are_refused(
    conn: Connector, queue: str, busy: dict[str, str], call: Callable[..., Any], message: str
) -> None:
    assert_refused_before_any_call(conn, queue, lambda: call(conn, queue, busy), BadInput, message)


# -- duplicate id and unknown job (refused by the node or a read: state unchanged) -----------------------------
@pytest.mark.parametrize("which", ["pending", "active", "scheduled", "dead"])
def test_duplicate_id_is_refused_and_the_row_stays_intact(
    conn: Connector, queue: str, busy: dict[str, str], which: str
) -> None:
    job_id = busy[which]
    before = state(conn, queue)
    row_before = jobs.row(conn, queue, job_id)
    with pytest.raises(DuplicateJob, match=f"job {job_id} already exists"):
        jobs.enqueue(conn, queue, "an impostor", job_id=job_id)
    assert state(conn, queue) == before
    assert jobs.row(conn, queue, job_id) == row_before
    assert jobs.row(conn, queue, job_id)["payload"] != "an impostor"


def test_reprocess_of_an_unknown_job(conn: Connector, queue: str, busy: dict[str, str]) -> None:
    before = state(conn, queue)
    keys_before = conn.client.dbsize()
    with pytest.raises(UnknownJob) as err:
        jobs.reprocess(conn, queue, "JOBnobodyHere0")
    assert str(err.value) == f"no job 'JOBnobodyHere0' in queue {queue!r}"
    assert isinstance(err.value, KeyError)  # it is also a lookup failure
    assert state(conn, queue) == before
    assert conn.client.dbsize() == keys_before


def test_reprocess_of_a_job_from_another_queue(conn: Connector, queue: str, busy: dict[str, str]) -> None:
    other = queue + "-x"
    before, before_other = state(conn, queue), state(conn, other)
    with pytest.raises(UnknownJob, match="no job"):
        jobs.reprocess(conn, other, busy["dead"])
    assert state(conn, queue) == before and state(conn, other) == before_other


# -- raw scripts: each checks what it can before its first write (issue 13 items 3, 9, 10) -------------------
# Called by EVALSHA with a bad argument, a script answers an EMQARG error naming it (worded as the
# native twin words it) and writes nothing: the queue's snapshot and the node's DEBUG DIGEST stay.
def _retry(conn: Connector, q: str, b: dict[str, str], **over: str) -> tuple[list[str], list[str]]:
    keys = [keyspace.queue_key(q, s) for s in ("active", "schedule", "dead")] + [keyspace.job_key(q, b["active"])]
    argv = {"id": b["active"], "token": b["active_token"], "delay": "1000", "cap": "3", "reason": "why"}
    argv |= {"base": keyspace.base(q), "parent": "", "record": "0"} | over
    return keys, [v for v in argv.values() if v is not None]


def _complete(conn: Connector, q: str, b: dict[str, str], **over: str) -> tuple[list[str], list[str]]:
    keys = [keyspace.queue_key(q, "active"), keyspace.job_key(q, b["active"])]
    argv = {"id": b["active"], "token": b["active_token"], "base": keyspace.base(q), "parent": "", "result": "r"}
    argv |= {"record": "0"} | over
    return keys, [v for v in argv.values() if v is not None]


def _sweep(conn: Connector, q: str, b: dict[str, str], *argv: str) -> tuple[list[str], list[str]]:
    # the active job's lease forced lapsed: a sweep has something to move, so a half-way write would show
    conn.client.zadd(keyspace.queue_key(q, "active"), {b["active"]: 1}, xx=True)
    return [keyspace.queue_key(q, s) for s in ("active", "pending", "dead")] + [keyspace.base(q)], list(argv)


def _spoil(conn: Connector, q: str, name: str) -> None:
    conn.client.delete(keyspace.queue_key(q, name))
    conn.client.set(keyspace.queue_key(q, name), "not a zset")


def _stream_spoiled(conn: Connector, q: str) -> None:
    conn.client.set(keyspace.queue_key(q, "stream:completions"), "not a stream")


def _remove_keys(q: str, job_id: str) -> list[str]:
    keys = [keyspace.queue_key(q, s) for s in ("pending", "active", "schedule", "dead")]
    keys.append(keyspace.job_key(q, job_id))
    keys += [keyspace.job_key(q, job_id, s) for s in ("dependencies", "processed", "unsuccessful")]
    return keys + [keyspace.queue_key(q, "stream:completions")]


def _flow_keys(q: str) -> tuple[list[str], list[str]]:
    keys = [keyspace.queue_key(q, "pending"), keyspace.job_key(q, "FP")]
    keys += [keyspace.job_key(q, "FP", s) for s in ("dependencies", "processed", "unsuccessful")]
    return keys + [keyspace.job_key(q, "FC")], ["FP", "p", "FC", "c"]


def _over(build: Callable[..., tuple[list[str], list[str]]], over: dict[str, str | None]) -> Callable[..., Any]:
    return lambda c, q, b: build(c, q, b, **over)


# a settle's arguments spoiled: script, its builder, the ARGV fields changed (None: left out), the refusal
# after EMQARG. The record flag is optional (the page's own shapes carry none): without it a call is
# well-formed, so "one short" leaves out the flag and the field before it
_SPOILED_ARGS = {
    "retry delay a word": ("retry", _retry, {"delay": "soon"}, "delay_ms must be a positive integer"),
    "retry delay zero": ("retry", _retry, {"delay": "0"}, "delay_ms must be a positive integer"),
    "retry delay 1.5": ("retry", _retry, {"delay": "1.5"}, "delay_ms must be a positive integer"),
    "retry delay 2^52+1": ("retry", _retry, {"delay": str(2**52 + 1)}, "delay_ms is too large"),
    "retry cap a word": ("retry", _retry, {"cap": "x"}, "max_attempts must be a positive integer"),
    "retry cap zero": ("retry", _retry, {"cap": "0"}, "max_attempts must be a positive integer"),
    "retry token a word": ("retry", _retry, {"token": "one"}, "token must be a positive integer"),
    "retry record yes": ("retry", _retry, {"record": "yes"}, "record must be 0 or 1"),
    "retry one short": (
        "retry", _retry, {"parent": None, "record": None}, "@retry takes 7 arguments (8 with record), got 6"
    ),
    "retry an extra argument": ("retry", _retry, {"extra": "x"}, "@retry takes 7 arguments (8 with record), got 9"),
    "complete token a word": ("complete", _complete, {"token": "one"}, "token must be a positive integer"),
    "complete record 2": ("complete", _complete, {"record": "2"}, "record must be 0 or 1"),
    "complete one short": (
        "complete", _complete, {"result": None, "record": None}, "@complete takes 5 arguments (6 with record), got 4"
    ),
    "complete an extra argument": (
        "complete", _complete, {"extra": "x"}, "@complete takes 5 arguments (6 with record), got 7"
    ),
}

RAW_SCRIPT_CASES: dict[str, tuple[str, Callable[..., tuple[list[str], list[str]]], str]] = {
    name: (script, _over(build, over), f"^EMQARG {re.escape(error)}$")
    for name, (script, build, over, error) in _SPOILED_ARGS.items()
} | {
    "retry schedule a string": (
        "retry",
        lambda c, q, b: (_spoil(c, q, "schedule"), _retry(c, q, b))[1],
        r"^WRONGTYPE emq:\{.+\}:schedule holds a string, not a zset$",
    ),
    "stalled max a word": (
        "stalled_check",
        lambda c, q, b: _sweep(c, q, b, "once"),
        "^EMQARG max_stalled must be a positive integer$",
    ),
    "stalled max zero": (
        "stalled_check",
        lambda c, q, b: _sweep(c, q, b, "0"),
        "^EMQARG max_stalled must be a positive integer$",
    ),
    "stalled max missing": (
        "stalled_check",
        lambda c, q, b: _sweep(c, q, b),
        "^EMQARG max_stalled must be a positive integer$",
    ),
    "stalled record yes": (
        "stalled_check",
        lambda c, q, b: _sweep(c, q, b, "1", "yes"),
        "^EMQARG record must be 0 or 1$",
    ),
    "stalled three arguments": (
        "stalled_check",
        lambda c, q, b: _sweep(c, q, b, "1", "1", "x"),
        r"^EMQARG @stalled_check takes 1 argument \(2 with record\), got 3$",
    ),
    "stalled three keys": (
        "stalled_check",
        lambda c, q, b: (_sweep(c, q, b, "1")[0][:3], ["1"]),
        "^EMQARG @stalled_check takes 4 keys, got 3$",
    ),
    "stalled recording, the stream a string": (
        "stalled_check",
        lambda c, q, b: (_stream_spoiled(c, q), _sweep(c, q, b, "1", "1"))[1],
        r"^WRONGTYPE emq:\{.+\}:stream:completions holds a string, not a stream$",
    ),
    "complete recording, the stream a string": (
        "complete",
        lambda c, q, b: (_stream_spoiled(c, q), _complete(c, q, b, record="1"))[1],
        r"^WRONGTYPE emq:\{.+\}:stream:completions holds a string, not a stream$",
    ),
    "remove record 2": (
        "remove",
        lambda c, q, b: (_remove_keys(q, b["pending"]), [b["pending"], "2"]),
        "^EMQARG record must be 0 or 1$",
    ),
    "remove three arguments": (
        "remove",
        lambda c, q, b: (_remove_keys(q, b["pending"]), [b["pending"], "1", "x"]),
        r"^EMQARG @remove takes 1 argument \(2 with record\), got 3$",
    ),
    "remove without the stream key": (
        "remove",
        lambda c, q, b: (_remove_keys(q, b["pending"])[:8], [b["pending"]]),
        "^EMQARG @remove takes 9 keys, got 8$",
    ),
    "remove recording, the stream a string": (
        "remove",
        lambda c, q, b: (_stream_spoiled(c, q), (_remove_keys(q, b["active"]), [b["active"], "1"]))[1],
        r"^WRONGTYPE emq:\{.+\}:stream:completions holds a string, not a stream$",
    ),
    "stalled dead a string": (
        "stalled_check",
        lambda c, q, b: (_spoil(c, q, "dead"), _sweep(c, q, b, "1"))[1],
        r"^WRONGTYPE emq:\{.+\}:dead holds a string, not a zset$",
    ),
    "promote limit a word": (
        "promote",
        lambda c, q, b: ([keyspace.queue_key(q, s) for s in ("schedule", "pending")] + [keyspace.base(q)], ["x"]),
        "^EMQARG limit must be a positive integer$",
    ),
    "trim keep negative": (
        "trim_dead",
        lambda c, q, b: ([keyspace.queue_key(q, "dead"), keyspace.base(q)], ["-1"]),
        "^EMQARG keep must be a non-negative integer$",
    ),
    "enqueue pending a string": (
        "enqueue",
        lambda c, q, b: (
            _spoil(c, q, "pending"),
            ([keyspace.queue_key(q, "pending"), keyspace.job_key(q, "NEW")], ["NEW", "p"]),
        )[1],
        r"^WRONGTYPE emq:\{.+\}:pending holds a string, not a zset$",
    ),
    "flow policy unknown": (
        "enqueue_flow",
        lambda c, q, b: (
            [keyspace.queue_key(q, "pending"), keyspace.job_key(q, "FP")]
            + [keyspace.job_key(q, "FP", s) for s in ("dependencies", "processed", "unsuccessful")]
            + [keyspace.job_key(q, "FC")],
            ["FP", "p", "FC", "c", "skip"],
        ),
        "^EMQARG unknown policy 'skip' for child FC: use fail, ignore, remove or wait$",
    ),
    # the flow counter emq:{q}:flows, whose next number the land stamps on the parent and its children
    "flow counter a word": (
        "enqueue_flow",
        lambda c, q, b: (c.client.set(keyspace.queue_key(q, "flows"), "many"), _flow_keys(q))[1],
        r"^EMQSTATE emq:\{.+\}:flows is not a count that can grow$",
    ),
    "flow counter a hash": (
        "enqueue_flow",
        lambda c, q, b: (c.client.hset(keyspace.queue_key(q, "flows"), "n", "1"), _flow_keys(q))[1],
        r"^WRONGTYPE emq:\{.+\}:flows holds a hash, not a string$",
    ),
    "flow first key not pending": (
        "enqueue_flow",
        lambda c, q, b: ([keyspace.queue_key(q, "active"), *_flow_keys(q)[0][1:]], _flow_keys(q)[1]),
        r"^EMQKEYS KEYS\[1\] must be the queue's pending set, got emq:\{.+\}:active$",
    ),
}


@pytest.mark.parametrize("name", list(RAW_SCRIPT_CASES))
def test_a_raw_script_refuses_bad_input_and_writes_nothing(
    conn: Connector, queue: str, busy: dict[str, str], name: str
) -> None:
    script, build, error = RAW_SCRIPT_CASES[name]
    keys, argv = build(conn, queue, busy)
    try:
        before = state(conn, queue)
    except redis.exceptions.ResponseError:
        before = None  # a spoiled set stops @snapshot itself: DEBUG DIGEST still guards the case
    d0 = conn.client.execute_command("DEBUG", "DIGEST")
    with pytest.raises(redis.exceptions.ResponseError) as err:
        conn.eval(script, keys, argv)
    assert err.match(error), str(err.value)
    assert conn.client.execute_command("DEBUG", "DIGEST") == d0
    if before is not None:
        assert state(conn, queue) == before
