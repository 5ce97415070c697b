"""echomq_teach — the teaching kit behind *The Queue*.

Every transition the course names runs as the real Lua script (or the real
native command) on a real Valkey node that the kit starts::

    from echomq_teach import start_node, jobs
    node = start_node()
    conn = node.connector()
    job_id = jobs.enqueue(conn, "q", "hello")
    jobs.claim(conn, "q", 30_000)
"""

from __future__ import annotations

from . import inspect, jobs, keyspace, scripts, snapshots, stalled  # inspect: the old name, one release
from .connector import Connector, TraceEntry
from .errors import BadInput, DuplicateJob, EchoMQError, NodeError, UnknownJob, WireError, WrongState
from .node import LocalNode, Node, RemoteNode
from .providers import start_node

__all__ = [
    "BadInput",
    "Connector",
    "DuplicateJob",
    "EchoMQError",
    "LocalNode",
    "Node",
    "NodeError",
    "RemoteNode",
    "TraceEntry",
    "UnknownJob",
    "WireError",
    "WrongState",
    "inspect",
    "jobs",
    "keyspace",
    "scripts",
    "snapshots",
    "stalled",
    "start_node",
]

__version__ = "0.1.0"
