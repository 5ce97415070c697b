"""Every node the kit starts says ``maxmemory-policy noeviction`` itself (docs/decisions.md).

A queue must never lose a key to eviction: a row evicted under memory pressure
is a job lost without a trace. ``noeviction`` is the server's default; the kit
sets it explicitly all the same, on every kind of node it starts, so no build's
default and no later ``maxmemory`` can change it. (What a full node answers:
tests/classroom/test_classroom.py, ``test_a_full_node_refuses_writes_and_evicts_nobody``.)
The container nodes are checked in tests/nodes/test_container.py, beside the engine
they need.
"""

from __future__ import annotations

import pytest

from echomq_teach.classroom import compose
from echomq_teach.nodes.local import LocalNode
from echomq_teach.nodes.server import server_config


def policy(node) -> str:
    """What the running node answers to CONFIG GET maxmemory-policy."""
    client = node.client()
    try:
        return client.config_get("maxmemory-policy")["maxmemory-policy"]
    finally:
        client.close()


def started_policy(**kwargs) -> str:
    """The policy of a node started with these arguments, stopped again."""
    node = LocalNode(**kwargs)
    try:
        return policy(node)
    finally:
        node.stop()


def test_the_shared_config_says_it():
    lines = server_config(1, "pw", logfile="l", data_dir="d", durable=False, module_path=None)
    assert "maxmemory-policy noeviction" in lines


@pytest.mark.parametrize("kwargs", [{}, {"native": True}, {"durable": True}], ids=["scripted", "native", "durable"])
def test_a_local_node_never_evicts(kwargs):
    node = LocalNode(**kwargs)
    try:
        assert policy(node) == "noeviction"
        assert "maxmemory-policy noeviction" in (node.dir / "valkey.conf").read_text().splitlines()
    finally:
        node.stop()


def test_a_replica_never_evicts():
    primary = LocalNode()
    try:
        assert started_policy(replica_of=primary) == "noeviction"
    finally:
        primary.stop()


def test_every_cluster_node_never_evicts(cluster):
    for node in cluster.nodes:
        assert policy(node) == "noeviction", f"node {node.port}"


@pytest.mark.parametrize("native", [False, True], ids=["scripted", "native"])
def test_the_classroom_shared_nodes_never_evict(native):
    # the shared nodes run in the node container from these files (docs/classroom.md)
    text = compose.node_conf(6379, "users.acl", native=native)
    assert "maxmemory-policy noeviction" in text.splitlines()
    # and a node started with the classroom's limits answers so
    assert started_policy(native=native, extra_config=compose.protection()) == "noeviction"
