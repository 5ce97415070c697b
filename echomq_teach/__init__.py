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

from . import jobs, keyspace, scripts, snapshots, stalled
from .connector import Connector, TraceEntry
from .errors import BadInput, DuplicateJob, EchoMQError, NodeError, UnknownJob, WireError, WrongState

# the course's entry point; the nodes themselves live in echomq_teach.nodes
from .nodes.providers import start_node

__all__ = [
    "BadInput",
    "Connector",
    "DuplicateJob",
    "EchoMQError",
    "NodeError",
    "TraceEntry",
    "UnknownJob",
    "WireError",
    "WrongState",
    "jobs",
    "keyspace",
    "scripts",
    "snapshots",
    "stalled",
    "start_node",
]

__version__ = "0.1.0"
