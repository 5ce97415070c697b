"""The ACL rules of a shared node: one user per student, keys in their own namespace.

Under ``ECHOMQ_NAMESPACE=alice`` queue ``orders`` lives at ``emq:{alice.orders}:…``
(the namespace sits inside the hashtag, so a queue still lives in one slot),
and the key pattern ``~emq:{alice.*}:*`` covers every key of every queue of
hers and of nobody else. The brand ``{emq}:version`` is readable, never
writable. Everything in ``@dangerous`` is denied, and so are ``SCRIPT KILL`` and
``FUNCTION KILL``: only the instructor (the node's ``default`` user) may end a
busy script.

A student runs only the kit's own scripts here, by ``EVALSHA``: ``EVAL``,
``SCRIPT LOAD`` and ``FUNCTION`` are denied, and the instructor's side loads the
kit's scripts (``kit_scripts``). A script of a student's own could hold the
node's one Lua heap past the node's memory and make the node's next write,
anyone's, abort it (docs/classroom.md); a student's own Lua runs on a node of
their own kernel's instead (the builds' judge starts one).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from .. import keyspace
from .roster import check_name

NATIVE_COMMANDS = ("emq.claim", "emq.claim.many", "emq.complete", "emq.fail", "emq.stalled.check")


def key_pattern(name: str) -> str:
    """Every key of every queue of the student's: ``emq:{<name>.*}:*``."""
    return f"emq:{{{name}.*}}:*"


def student_rules(name: str, password: str, native_commands: Sequence[str] = ()) -> list[str]:
    """The ``ACL SETUSER`` rules for one student, in the order they apply."""
    check_name(name)
    return [
        "reset",  # a re-run replaces everything, old passwords included
        "on",
        f">{password}",
        f"~{key_pattern(name)}",
        f"%R~{keyspace.VERSION_KEY}",  # the brand: read, never written
        "resetchannels",
        "-@all",
        # what the kit and its scripts send: reads and writes of their own keys, MULTI/EXEC,
        # AUTH/HELLO/CLIENT SETINFO/COMMAND (the connector's module check) ...
        "+@read",
        "+@write",
        "+@connection",
        "+@transaction",
        # ... less the dangerous ones (FLUSHALL, FLUSHDB, KEYS, SORT, DEBUG, CONFIG, MODULE,
        # CLIENT LIST/KILL/PAUSE, MONITOR, ...)
        "-@dangerous",
        # INFO's server section (the version, run_id) and commandstats (notebook 04 counts its own
        # calls), not the rest: keyspace, clients, memory, persistence are the whole class's
        "+info|server",
        "+info|commandstats",
        "+time",  # the scripts read the server clock
        # the kit's scripts, loaded by the instructor's side, by their SHA; never a script of one's own
        "+evalsha",
        "+evalsha_ro",
        "+script|exists",
        "-eval",
        "-eval_ro",
        "-script|load",
        # denied explicitly as well, so the list reads as the course promises: a student never
        # ends another student's script, flushes, or reconfigures the node
        "-flushall",
        "-flushdb",
        "-script|flush",
        "-script|kill",
        "-function",
        "-fcall",
        "-fcall_ro",
        "-config",
        "-module",
        # CLIENT TRACKING ... BCAST would stream every key name anyone writes (other students' too)
        "-client|tracking",
        *[f"+{c}" for c in native_commands],
    ]


def native_commands(admin: redis.Redis) -> list[str]:
    """The ``EMQ.*`` commands this node knows (ACL SETUSER refuses a command the node does not know)."""
    return [c.lower() for c in admin.command_list(module="trafikey") if c.lower() in NATIVE_COMMANDS]
