"""The nodes and processes the kit starts for a learner, a test or a classroom.

A node is a real ``valkey-server``: the embedded local one (``local``), one in a
container (``container``, with its ``reaper``), a Valkey Cluster of local nodes
(``cluster``), or one named by a URL. ``providers.start_node`` chooses among them;
``module`` builds the native module (trafikey) a native node loads;
``objectstore`` runs a local SeaweedFS for the durable floor's remote. Imports
flow one way: this room uses the queue's core (the connector, the keyspace,
the errors) and nothing of the lab, the course, the floor or the classroom.
"""

from __future__ import annotations

from .local import LocalNode, Node, RemoteNode
from .providers import start_node

__all__ = ["LocalNode", "Node", "RemoteNode", "start_node"]
