"""Every node the kit starts says ``maxmemory-policy noeviction`` itself (docs/decisions.md).

A queue must never lose a key to eviction: a row evicted under memory pressure
is a job lost without a trace. ``noeviction`` is the server's default; the kit
sets it explicitly all the same, on every kind of node it starts, so no build's
default and no later ``maxmemory`` can change it. (What a full node answers:
tests/test_classroom.py, ``test_a_full_node_refuses_writes_and_evicts_nobody``.)
The container nodes are checked in tests/test_container.py, beside the engine
they need.
"""

from __future__ import annotations

import pytest

from echomq_teach import compose
from echomq_teach.node import LocalNode, server_config


def policy(client) -> str:
    return client.config_get("maxmemory-policy")["maxmemory-policy"]


def test_the_shared_config_says_it():
    lines = server_config(1, "pw", logfile="l", data_dir="d", durable=False, module_path=None)
    assert "maxmemory-policy noeviction" in lines


@pytest.mark.parametrize("kwargs", [{}, {"native": True}, {"durable": True}], ids=["scripted", "native", "durable"])
def test_a_local_node_never_evicts(kwargs):
    node = LocalNode(**kwargs)
    try:
        client = node.client()
        assert policy(client) == "noeviction"
        assert "maxmemory-policy noeviction" in (node.dir / "valkey.conf").read_text().splitlines()
        client.close()
    finally:
        node.stop()


def test_a_replica_never_evicts():
    primary = LocalNode()
    try:
        replica = LocalNode(replica_of=primary)
        try:
            client = replica.client()
            assert policy(client) == "noeviction"
            client.close()
        finally:
            replica.stop()
    finally:
        primary.stop()


def test_every_cluster_node_never_evicts(cluster):
    for node in cluster.nodes:
        client = node.client()
        assert policy(client) == "noeviction", f"node {node.port}"
        client.close()


@pytest.mark.parametrize("native", [False, True], ids=["scripted", "native"])
def test_the_classroom_shared_nodes_never_evict(native):
    # the shared nodes run in the node container from these files (docs/classroom.md)
    text = compose.node_conf(6379, "users.acl", native=native)
    assert "maxmemory-policy noeviction" in text.splitlines()
    # and a node started with the classroom's limits answers so
    node = LocalNode(native=native, extra_config=compose.protection())
    try:
        client = node.client()
        assert policy(client) == "noeviction"
        client.close()
    finally:
        node.stop()
