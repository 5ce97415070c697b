"""The nodes and processes the kit starts for a learner, a test or a classroom.

A node is a real ``valkey-server``: the embedded local one (``local``), one in a
container (``container``, with its ``reaper``), a Valkey Cluster of local nodes
(``cluster``), or one named by a URL (``remote``); what every node answers is
``node``'s. The server's binary and config are ``server``'s, a node's port and
folder ``host``'s, a lone cluster-mode node's slots ``slots``'.
``providers.start_node`` chooses among them; ``trafikey`` builds the native
module a native node loads; ``process`` is the child process that every
process the kit starts runs as (the floor's object store and driver, the lab's
workers included). Imports flow one way: this room uses the queue's core only;
the other rooms build on it.
"""

from __future__ import annotations

from .local import LocalNode
from .node import Node
from .providers import start_node
from .remote import RemoteNode

__all__ = ["LocalNode", "Node", "RemoteNode", "start_node"]
