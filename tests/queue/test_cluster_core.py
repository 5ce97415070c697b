"""The lifecycle and flow tests' own bodies, run on a Valkey Cluster, once per executor.

Each body takes a connector and a queue; here the connector is a cluster
connector, so every call goes to the primary of the queue's slot. The bodies
are collected from test_lifecycle and test_flows (their parametrisations too),
not copied; the few that need a single node of their own are named below.
"""

from __future__ import annotations

import inspect as pyinspect

import pytest
import test_flows
import test_lifecycle

# bodies that need something a cluster connector is not: each says what it uses instead
NOT_HERE = {
    # starts a durable node of its own to restart it
    "test_a_flow_survives_a_restart_of_a_durable_node_midway": "its own durable node",
}
CONN_ARGS = {"conn", "queue", "native_conn", "either"}
# bodies that assert a whole row: a natively claimed row also carries lease_epoch (the page's fourth
# difference), so they run on the scripted executor only; test_cluster.py checks lease_epoch per shard
SCRIPTS_ONLY = {"test_retry_at_cap_buries_in_dead": "the row gains lease_epoch natively"}


def _expand(fn):
    """(kwargs, id) for each case of fn's own parametrize marks (one case with none)."""
    cases = [({}, fn.__name__)]
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        grown = []
        for kwargs, ident in cases:
            for v in values:
                v = v.values if hasattr(v, "values") and not isinstance(v, dict) else v
                v = v if len(names) > 1 else (v[0] if isinstance(v, tuple) and len(v) == 1 else v,)
                grown.append(({**kwargs, **dict(zip(names, v))}, f"{ident}[{'-'.join(map(str, v))}]"))
        cases = grown
    return cases


def _bodies():
    out = []
    for module in (test_lifecycle, test_flows):
        for name, fn in vars(module).items():
            if not name.startswith("test_") or not callable(fn) or name in NOT_HERE:
                continue
            params = set(pyinspect.signature(fn).parameters)
            marked = {n for kw, _ in _expand(fn) for n in kw}
            assert params - CONN_ARGS <= marked, f"{name} needs {params - CONN_ARGS - marked}: add it to NOT_HERE"
            native_only = "native_conn" in params
            for wire in (4, 6):
                if (wire == 4 and native_only) or (wire == 6 and name in SCRIPTS_ONLY):
                    continue
                executor = "scripts" if wire == 4 else "native"
                for kwargs, ident in _expand(fn):
                    out.append(pytest.param(wire, fn, kwargs, id=f"{executor}-{module.__name__[5:]}::{ident}"))
    return out


BODIES = _bodies()


@pytest.fixture
def wire_conn(cluster, request):
    c = cluster.connector(wire=request.param)
    yield c
    c.close()


@pytest.mark.parametrize(("wire_conn", "body", "kwargs"), BODIES, indirect=["wire_conn"])
def test_on_the_cluster(wire_conn, queue, body, kwargs):
    params = pyinspect.signature(body).parameters
    args = {"conn": wire_conn, "native_conn": wire_conn, "either": wire_conn, "queue": queue, **kwargs}
    body(**{k: v for k, v in args.items() if k in params})
    # every call went to the one primary that owns the queue's slot
    nodes = {e.node for e in wire_conn.trace if e.node and e.node not in ("cluster", "all primaries")}
    assert nodes <= {wire_conn.node_for(queue)}


def test_every_body_is_collected():
    """Nothing is left out silently: the bodies here plus NOT_HERE are every test of the two modules."""
    names = {p.values[1].__name__ for p in BODIES} | set(NOT_HERE)
    for module in (test_lifecycle, test_flows):
        assert {n for n in vars(module) if n.startswith("test_")} <= names
    # and both executors run every body but the ones named for one side
    by_wire = {w: {p.values[1] for p in BODIES if p.values[0] == w} for w in (4, 6)}
    native_only = {f for f in by_wire[6] if "native_conn" in pyinspect.signature(f).parameters}
    assert {f.__name__ for f in by_wire[4] ^ by_wire[6]} == set(SCRIPTS_ONLY) | {f.__name__ for f in native_only}
