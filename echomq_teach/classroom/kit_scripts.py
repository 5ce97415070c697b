"""The kit's scripts on a shared node: loaded by the instructor's side, kept there through every restart.

Students may not load scripts on a classroom's shared node (``acl.student_rules``
denies ``EVAL``, ``SCRIPT LOAD`` and ``FUNCTION``): they call the kit's own by
``EVALSHA``. A node's script cache is empty after every restart, and after the
instructor's ``flush-scripts``, so a keeper loads them again:

- ``load(admin)`` loads every script of ``echomq_teach/lua/`` once (``provision`` does);
- ``keep(admins)`` checks every ``interval_s`` that each node holds them all
  (``SCRIPT EXISTS``) and loads what is missing; a node that does not answer is
  tried again at the next turn. ``python -m echomq_teach.classroom keep-scripts``
  runs it (the classroom's hub runs it as a managed service of its own).

A student's connector that meets NOSCRIPT meanwhile waits for the keeper
(``connector.KEEPER_WAIT_S``) instead of loading the script itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import redis

from .. import scripts

INTERVAL_S = 0.5


def kit_scripts() -> list[scripts.Script]:
    """Every transition script of the kit."""
    return [scripts.load(name) for name in scripts.names()]


def missing(admin: redis.Redis) -> list[scripts.Script]:
    """The kit's scripts this node does not hold (one ``SCRIPT EXISTS``)."""
    all_scripts = kit_scripts()
    held = admin.script_exists(*[s.sha for s in all_scripts])
    return [s for s, there in zip(all_scripts, held, strict=True) if not there]


def load(admin: redis.Redis) -> int:
    """Load the kit's scripts the node does not hold; answers how many were loaded."""
    gone = missing(admin)
    for sc in gone:
        admin.script_load(sc.source)
    return len(gone)


def keep(admins: Sequence[Callable[[], redis.Redis]], interval_s: float = INTERVAL_S,
         stop: threading.Event | None = None, say: Callable[[str], None] = print) -> None:
    """Keep the kit's scripts on every node until ``stop`` is set (forever without one).

    ``admins`` make a fresh admin client each (one per node); a client whose node
    went away is dropped and made again at the next turn.
    """
    stop = stop or threading.Event()
    clients: list[redis.Redis | None] = [None] * len(admins)
    while not stop.is_set():
        for i, make in enumerate(admins):
            try:
                if clients[i] is None:
                    clients[i] = make()
                n = load(clients[i])
                if n:
                    say(f"keep-scripts: loaded {n} of the kit's scripts on node {i + 1} "
                        f"(run id {clients[i].info('server')['run_id'][:12]})")
            except (redis.exceptions.RedisError, OSError):
                if clients[i] is not None:
                    clients[i].close()
                clients[i] = None  # restarting, or full: the next turn tries again
        stop.wait(interval_s)
    for c in clients:
        if c is not None:
            c.close()
