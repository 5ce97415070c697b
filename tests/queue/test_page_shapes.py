"""The page's own call shapes: every script and command it shows, checked against one table of KEYS and ARGV.

``SHAPES`` is the one table: for each script (``@name``) or native command
(``EMQ.*``), its keys and its arguments in the page's places, and the kit's
optional tail (the record flag). The tests read the layouts from it alone:

* each script's header (``-- KEYS:``, ``-- ARGV:``) and each command's opening
  comment name the table's keys and arguments, in the table's order;
* a call in exactly the table's shape does what the page says (``SCENARIOS``):
  the page's five-ARGV ``@complete`` and ``EMQ.COMPLETE`` settle a job, a stale
  token answers 0, a flow child settles through the script;
* a call one argument short, or one past the optional tail, is refused and
  writes nothing, where the executor checks its arguments (``strict``);
* the kit's one builder per transition (``echomq_teach.transitions``) places
  every key and argument where the table does, and names the native command
  only where the call may take it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from native_support import digest, force

from echomq_teach import flows, jobs, scripts, snapshots, transitions
from echomq_teach.connector import Connector
from echomq_teach.keyspace import base, job_key, queue_key

NATIVE = Path(__file__).resolve().parents[2] / "native"
LEASE = "30000"


@dataclass(frozen=True)
class Shape:
    """One script or command: its KEYS and ARGV as the page places them, and the kit's optional tail."""

    name: str  # "@claim2", or "EMQ.CLAIM"
    keys: tuple[str, ...]
    argv: tuple[str, ...]
    optional: tuple[str, ...] = ()  # the kit's: may follow the page's arguments, or not
    flow_keys: tuple[str, ...] = ()  # what a flow child's call adds after the keys (scripts only)
    strict: bool = True  # the executor refuses a call with another number of arguments

    @property
    def native(self) -> bool:
        return self.name.startswith("EMQ.")


COMPLETE_ARGV = ("id", "token", "base", "parent_id", "result")
RETRY_ARGV = ("id", "token", "delay_ms", "max_attempts", "reason", "base", "parent_id")
SHAPES: tuple[Shape, ...] = (
    # the page's @claim2 body checks nothing (Python refuses a bad lease; EMQ.CLAIM checks)
    Shape("@claim2", ("pending", "active", "base"), ("lease_ms",), strict=False),
    Shape("EMQ.CLAIM", ("pending", "active", "base"), ("lease_ms",)),
    Shape("@complete", ("active", "row"), COMPLETE_ARGV, ("record",), ("dependencies", "processed", "parent_row")),
    Shape("EMQ.COMPLETE", ("active", "row"), COMPLETE_ARGV, ("record",)),
    Shape("@retry", ("active", "schedule", "dead", "row"), RETRY_ARGV, ("record",),
          ("dependencies", "unsuccessful", "parent_row")),
    Shape("EMQ.FAIL", ("active", "schedule", "dead", "row"), RETRY_ARGV, ("record",)),
    Shape("@reap", ("active", "pending", "base"), (), strict=False),
    Shape("@promote", ("schedule", "pending", "base"), ("limit",), strict=False),
    Shape("@stalled_check", ("active", "pending", "dead", "base"), ("max_stalled",), ("record",)),
    Shape("EMQ.STALLED.CHECK", ("active", "pending", "dead", "base"), ("max_stalled",), ("record",)),
    Shape("@enqueue", ("pending", "row"), ("id", "payload"), strict=False),
)
BY_NAME = {s.name: s for s in SHAPES}

# how a script's header words each key and argument (the commands' comments use the table's names)
HEADER_WORDS = {
    "base": "the base",
    "row": "the row",
    "parent_id": "parent id",
    "dependencies": "parent's :dependencies",
    "processed": "its :processed",
    "unsuccessful": "its :unsuccessful",
    "parent_row": "the parent row",
}


def _word(role: str) -> str:
    return HEADER_WORDS.get(role, role)


def test_the_table_names_every_twin_with_the_same_layout():
    for script, command in (("@claim2", "EMQ.CLAIM"), ("@complete", "EMQ.COMPLETE"), ("@retry", "EMQ.FAIL"),
                            ("@stalled_check", "EMQ.STALLED.CHECK")):
        a, b = BY_NAME[script], BY_NAME[command]
        assert (a.keys, a.argv, a.optional) == (b.keys, b.argv, b.optional), script


@pytest.mark.parametrize("shape", [s for s in SHAPES if not s.native], ids=lambda s: s.name)
def test_each_scripts_header_names_the_tables_layout(shape: Shape):
    header = scripts.load(shape.name).header
    keys = next(ln for ln in header if ln.startswith("-- KEYS:"))
    argv = next(ln for ln in header if ln.startswith("-- ARGV:"))
    for i, role in enumerate(shape.keys + shape.flow_keys, start=1):
        assert f"[{i}] {_word(role)}" in keys, (shape.name, role, keys)
    if not shape.argv:
        assert argv == "-- ARGV: none"
    for i, name in enumerate(shape.argv + shape.optional, start=1):
        assert f"[{i}] {_word(name)}" in argv, (shape.name, name, argv)
    for i, name in enumerate(shape.optional, start=len(shape.argv) + 1):
        assert re.search(rf"\[{i}\] {name}, optional", argv), (shape.name, argv)


@pytest.mark.parametrize("shape", [s for s in SHAPES if s.native], ids=lambda s: s.name)
def test_each_commands_comment_names_the_tables_layout(shape: Shape):
    source = next(p for p in NATIVE.glob("emq_*.c") if f"/* {shape.name} " in p.read_text())
    opening = " ".join(ln.lstrip("/* ").strip() for ln in source.read_text().split("*/")[0].splitlines())
    m = re.match(rf"{re.escape(shape.name)} (\d+) ((?:\[?<[a-z_]+>\]? ?)+):", opening)
    assert m, opening
    words = m.group(2).split()
    want = [f"<{w}>" for w in shape.keys + shape.argv] + [f"[<{w}>]" for w in shape.optional]
    assert (int(m.group(1)), words) == (len(shape.keys), want)


# -- the kit's one builder per transition places them so ---------------------------------------------------------
BUILDERS: dict[str, Callable[[str, str, dict[str, Any], str], transitions.Call]] = {
    "claim": lambda q, j, v, p: transitions.claim(q, v["lease_ms"]),
    "complete": lambda q, j, v, p: transitions.complete(q, j, v["token"], v["result"], p, record=True),
    "retry": lambda q, j, v, p: transitions.retry(q, j, v["token"], v["reason"], v["delay_ms"], v["max_attempts"], p,
                                                  record=True),
    "reap": lambda q, j, v, p: transitions.reap(q),
    "promote": lambda q, j, v, p: transitions.promote(q, v["limit"]),
    "stalled_check": lambda q, j, v, p: transitions.stalled_check(q, v["max_stalled"], record=True),
    "enqueue": lambda q, j, v, p: transitions.enqueue(q, j, v["payload"]),
}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_each_builder_places_the_tables_keys_and_arguments(shape: Shape):
    # the builder answers the table's layout, a flow child's keys, the record flag, and the name it goes by
    script = {f"@{name}": t for t, name in transitions.SCRIPTS.items()}
    command = {c: t for t, c in transitions.COMMANDS.items()}
    transition = command[shape.name] if shape.native else script[shape.name]
    q, job = "shapes", "J"
    for parent in ("", "P") if shape.flow_keys else ("",):
        v = values_for(q, job, parent_id=parent, record="1")
        call = BUILDERS[transition](q, job, v, parent)
        keys = [key_of(q, r, job) for r in shape.keys] + [key_of(q, r, job, parent) for r in shape.flow_keys if parent]
        assert list(call.keys) == keys
        assert list(call.argv) == [v[n] for n in shape.argv + shape.optional]
        assert (call.transition, call.script) == (transition, transitions.SCRIPTS[transition])
        # a flow child's settle names no native command: it goes by the script on either wire
        assert call.command == ("" if parent else transitions.COMMANDS.get(transition, ""))
        if shape.native:
            assert call.command == shape.name


# -- calls in the table's shape ------------------------------------------------------------------------------
def key_of(queue: str, role: str, job: str, parent: str = "") -> str:
    if role == "base":
        return base(queue)
    if role == "row":
        return job_key(queue, job)
    if role == "parent_row":
        return job_key(queue, parent)
    if role in ("dependencies", "processed", "unsuccessful"):
        return job_key(queue, parent, role)
    return queue_key(queue, role)


def send(c: Connector, shape: Shape, queue: str, job: str, values: dict[str, Any], *, extra: tuple = (),
         flow_parent: str = "", short: bool = False) -> Any:
    """``shape``'s call: its keys for ``job`` (and a flow parent's), its ARGV from ``values`` in the table's order,
    each optional argument only when ``values`` names it; ``short`` leaves out the last required one."""
    keys = [key_of(queue, r, job) for r in shape.keys]
    if flow_parent:
        keys += [key_of(queue, r, job, flow_parent) for r in shape.flow_keys]
    names = list(shape.argv[:-1] if short else shape.argv)
    args = [values[n] for n in names] + [values[n] for n in shape.optional if n in values and not short] + list(extra)
    if shape.native:
        return c.call(shape.name, len(keys), *keys, *args)
    return c.eval(shape.name, keys, args)


def values_for(queue: str, job: str, **over: Any) -> dict[str, Any]:
    v = {"lease_ms": LEASE, "id": job, "token": "1", "base": base(queue), "parent_id": "", "result": "r",
         "delay_ms": "60000", "max_attempts": "3", "reason": "why", "limit": "100", "max_stalled": "1",
         "payload": "p"}
    return v | over


def claimed(c: Connector, queue: str, job: str = "J") -> int:
    jobs.enqueue(c, queue, "p", job_id=job)
    got = jobs.claim(c, queue, 30_000)
    assert got.id == job
    return got.attempts


def _claim(c: Connector, shape: Shape, q: str) -> None:
    jobs.enqueue(c, q, "p", job_id="J")
    assert send(c, shape, q, "J", values_for(q, "J")) == ["J", "p", 1]
    assert snapshots.snapshot(c, q).where("J") == ["active"]


def _complete(c: Connector, shape: Shape, q: str) -> None:
    token = claimed(c, q)
    # the page's five ARGV settle the job, unrecorded
    assert send(c, shape, q, "J", values_for(q, "J", token=str(token))) == 1
    assert c.client.exists(job_key(q, "J"), queue_key(q, "stream:completions")) == 0
    # a stale token answers 0 and writes nothing
    token = claimed(c, q, "K")
    d0 = digest(c.client)
    assert send(c, shape, q, "K", values_for(q, "K", token=str(token + 1))) == 0
    assert digest(c.client) == d0
    # and the page's call a second time, once the job is gone, is stale too
    assert send(c, shape, q, "J", values_for(q, "J", token="1")) == 0


def _retry(c: Connector, shape: Shape, q: str) -> None:
    token = claimed(c, q)
    assert send(c, shape, q, "J", values_for(q, "J", token=str(token))) == "scheduled"
    token = claimed(c, q, "K")
    assert send(c, shape, q, "K", values_for(q, "K", token=str(token), max_attempts="1")) == "dead"
    assert c.client.exists(queue_key(q, "stream:completions")) == 0  # no flag, no record
    d0 = digest(c.client)
    assert send(c, shape, q, "K", values_for(q, "K", token=str(token))) == 0
    assert digest(c.client) == d0


def _reap(c: Connector, shape: Shape, q: str) -> None:
    claimed(c, q)
    force(c.client, q, "active", "J", 1)
    assert send(c, shape, q, "J", values_for(q, "J")) == ["J"]


def _promote(c: Connector, shape: Shape, q: str) -> None:
    token = claimed(c, q)
    assert jobs.retry(c, q, "J", token, "later", 60_000, 3) == jobs.SCHEDULED
    force(c.client, q, "schedule", "J", 1)
    assert send(c, shape, q, "J", values_for(q, "J")) == ["J"]


def _stalled(c: Connector, shape: Shape, q: str) -> None:
    claimed(c, q)
    force(c.client, q, "active", "J", 1)
    assert send(c, shape, q, "J", values_for(q, "J")) == [["J"], []]


def _enqueue(c: Connector, shape: Shape, q: str) -> None:
    assert send(c, shape, q, "J", values_for(q, "J")) == 1
    assert snapshots.snapshot(c, q).where("J") == ["pending"]


SCENARIOS: dict[str, Callable[[Connector, Shape, str], None]] = {
    "@claim2": _claim,
    "EMQ.CLAIM": _claim,
    "@complete": _complete,
    "EMQ.COMPLETE": _complete,
    "@retry": _retry,
    "EMQ.FAIL": _retry,
    "@reap": _reap,
    "@promote": _promote,
    "@stalled_check": _stalled,
    "EMQ.STALLED.CHECK": _stalled,
    "@enqueue": _enqueue,
}


def test_every_shape_has_a_scenario():
    assert set(SCENARIOS) == set(BY_NAME)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_a_call_in_the_pages_shape_does_what_the_page_says(conn, native_conn, queue, shape: Shape):
    SCENARIOS[shape.name](native_conn if shape.native else conn, shape, queue)


@pytest.mark.parametrize("name", ["@complete", "@retry"])
def test_a_flow_child_settles_through_the_script_in_the_pages_shape(either, queue, name):
    shape = BY_NAME[name]
    flows.add(either, queue, ("P", "parent"), [("C", "child")])
    token = jobs.claim(either, queue, 30_000).attempts
    values = values_for(queue, "C", token=str(token), parent_id="P", max_attempts="1")
    reply = send(either, shape, queue, "C", values, flow_parent="P")
    snap = snapshots.snapshot(either, queue)
    if name == "@complete":
        assert reply == 1 and snap.where("P") == ["pending"]  # the last child released its parent
        assert flows.children_values(either, queue, "P") == {"C": "r"}
    else:
        assert reply == "dead" and snap.where("P") == ["dead"]  # the default policy failed the parent


@pytest.mark.parametrize("shape", [s for s in SHAPES if s.optional], ids=lambda s: s.name)
def test_the_optional_record_flag_records_the_ending(conn, native_conn, queue, shape: Shape):
    c = native_conn if shape.native else conn
    token = claimed(c, queue)
    values = values_for(queue, "J", token=str(token), max_attempts="1", record="1")
    if shape.name.endswith(("stalled_check", "STALLED.CHECK")):
        c.client.hset(job_key(queue, "J"), "stalled", 1)
        force(c.client, queue, "active", "J", 1)
    send(c, shape, queue, "J", values)
    [(_, entry)] = c.client.xrange(queue_key(queue, "stream:completions"))
    assert entry["id"] == "J" and entry["outcome"] in jobs.OUTCOMES


@pytest.mark.parametrize("how", ["one short", "one past the tail"])
@pytest.mark.parametrize("shape", [s for s in SHAPES if s.strict], ids=lambda s: s.name)
def test_a_malformed_call_is_refused_and_writes_nothing(conn, native_conn, queue, shape: Shape, how: str):
    c = native_conn if shape.native else conn
    token = claimed(c, queue)
    force(c.client, queue, "active", "J", 1)  # a lapsed lease: a sweep would have work to do
    values = values_for(queue, "J", token=str(token), record="0")
    before, d0 = snapshots.snapshot(c, queue).state_only(), digest(c.client)
    with pytest.raises(redis.exceptions.ResponseError) as err:
        if how == "one short":
            send(c, shape, queue, "J", values, short=True)
        else:
            send(c, shape, queue, "J", values, extra=("x",))
    assert re.search(r"EMQARG|wrong number of arguments", str(err.value)), str(err.value)
    assert digest(c.client) == d0 and snapshots.snapshot(c, queue).state_only() == before
