"""The connector on a Valkey Cluster: every call goes to the primary of its keys' slot, traced.

Built on redis-py's cluster client (``redis.RedisCluster``): its slot map and
its per-node connection pools. The sending loop is the kit's own, so that the
trace can say which node answered and every ``MOVED`` or ``ASK`` on the way,
and so that nothing is retried silently: a redirection (the node refused
before running anything) is followed; a lost link is raised, after the slot map
is refreshed for the next call.

What changes from one node (docs/cluster.md):

* a call whose keys hash to more than one slot is refused here, before anything
  is sent (``CrossSlot``), so the server's ``CROSSSLOT`` refusal is never reached;
* the brand is per queue, ``emq:version:{q}`` in the queue's own slot: a
  connector brands a queue on its first transition there (``SET NX``) and
  refuses a queue branded for the other wire;
* ``wait=(numreplicas, timeout_ms)`` sends ``WAIT`` on the same link after
  every write, and traces how many replicas acknowledged it. A WAIT that comes
  back with fewer replicas than asked leaves a write only its primary holds;
  the kit answers it all the same and counts it (``wait_short``), unless the
  connector has an ``on_short_wait``: then that function decides what the
  caller is told (``ShortWait``), and may raise ``Unconfirmed`` — the caller
  then learns nothing, an unknown outcome, as if the link had gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from . import keyspace, scripts
from .connector import Connector, NotSent, TraceEntry, check_parser, client_options, connect, lists_trafikey
from .errors import BadInput, CrossSlot, WireError
from .transitions import KIT, ScriptSet

#: redirections followed for one call before giving up (a slot moving twice in one call is a storm)
MAX_REDIRECTS = 5
_ALL_PRIMARIES = {"DBSIZE"}  # keyless commands whose answer is the sum over the shards


#: the transition each script or native command makes, as a ``ShortWait`` names it
TRANSITIONS = {
    "@claim2": "claim", "EMQ.CLAIM": "claim", "@claim_many": "claim", "EMQ.CLAIM.MANY": "claim",
    "@complete": "complete", "EMQ.COMPLETE": "complete", "@retry": "retry", "EMQ.FAIL": "retry",
    "@enqueue": "enqueue", "@enqueue_flow": "enqueue", "@reap": "sweep", "@stalled_check": "sweep",
    "EMQ.STALLED.CHECK": "sweep", "@promote": "promote",
}


class Unconfirmed(redis.exceptions.ConnectionError):
    """A write no replica confirmed, reported to its caller as an unknown outcome: it ran on the primary, and a
    failover may or may not keep it (a ``ConnectionError``, so every caller treats it as a lost link's answer)."""


@dataclass
class ShortWait:
    """One write whose WAIT came back with fewer replicas than asked: what ``on_short_wait`` is handed.

    ``transition`` is what the write was (``claim``, ``complete``, ``retry``, ``enqueue``, ``sweep``,
    ``promote``, or ``other``), ``command`` what was sent (``@claim2``, ``EMQ.COMPLETE`` …), ``reply``
    what the primary answered (a list, one reply per call, for a pipelined batch), ``acked`` how many
    replicas confirmed it and ``asked`` how many WAIT asked for. ``again()`` sends the very same write
    once more, on the same link, then WAIT: it answers the ShortWait of that second send (a refusal
    comes back as its reply, an exception object, not raised).
    """

    transition: str
    command: str
    reply: Any
    acked: int
    asked: int
    resend: Callable[[], tuple[Any, int]] = field(repr=False)

    def again(self) -> ShortWait:
        reply, acked = self.resend()
        return ShortWait(self.transition, self.command, reply, acked, self.asked, self.resend)


def _text(key: Any) -> str:
    return key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else str(key)


def slot_of_key(key: Any) -> int:
    """The slot of one key (CRC16 of its hashtag, or of the whole key), as the server computes it."""
    raw = key if isinstance(key, bytes) else str(key).encode("utf-8", "surrogateescape")
    return key_slot(raw)


@dataclass
class ClusterConnector(Connector):
    """A traced connector on a cluster: one wire (4 or 6) for every queue it touches.

    ``client`` is the ``redis.RedisCluster`` under it (for looking under the
    hood, untraced: it follows redirections on its own).
    """

    client: RedisCluster  # type: ignore[assignment]
    #: ``(numreplicas, timeout_ms)``: WAIT after every write, on the link that wrote
    wait: tuple[int, int] | None = None
    #: what the caller of a write is told when its WAIT confirms fewer replicas than asked (``ShortWait``);
    #: None: the primary's answer, counted in ``wait_short``
    on_short_wait: Callable[[ShortWait], Any] | None = None

    on_cluster = True

    def _start(self) -> None:
        check_wait(self.wait)
        _check_cluster_parser(self.parser)
        # self.loaded holds (node, sha): a script cache is per node
        self._branded: set[str] = set()  # queues whose brand this connector has checked
        #: writes whose WAIT came back with fewer replicas than asked
        self.wait_short = 0

    # -- the brand -----------------------------------------------------------------
    def _check_brand(self) -> None:
        # a queue's brand is checked where the queue is first used; here only the module
        if self.wire == 6:
            missing = self._nodes_without_module()
            if missing:
                raise WireError(
                    "EMQWIRE a wire=6 connector needs the trafikey module on every node of the cluster "
                    f"(a replica may be promoted); it is missing on {', '.join(missing)}"
                )

    def _nodes_without_module(self) -> list[str]:
        out = []
        for node in self.client.get_nodes():
            mods = self.client.get_redis_connection(node).execute_command("MODULE", "LIST")
            if not lists_trafikey(mods):
                out.append(node.name)
        return sorted(out)

    def module_loaded(self) -> bool:
        """True when every node of the cluster has loaded the ``trafikey`` module."""
        return not self._nodes_without_module()

    def _ensure_brand(self, keys: Sequence[Any], slot: int) -> None:
        """Brand the queue of ``keys`` for this wire on first use (one ``SET NX GET``), or refuse it."""
        first = _text(keys[0])
        if not first.startswith("emq:{"):
            return
        queue = keyspace.queue_of(first)
        if queue in self._branded:
            return
        want = self.brand
        key = f"{keyspace.QUEUE_BRAND_PREFIX}{{{queue}}}"
        # SET NX GET answers the brand that was there (nil when this call wrote it)
        # no WAIT of its own: the transition that follows is a write to the same node, and its WAIT
        # (up to the replication offset of that write) covers every earlier write there, this one too
        had = self._route(["SET", key, want, "NX", "GET"], slot, None, write=False, raw=True)
        if had is not None and had != want:
            raise WireError(
                f"EMQWIRE queue {queue!r} is branded {had!r} ({key}) but a wire={self.wire} connector needs "
                f"{want!r}: on a cluster each queue keeps its executor"
            )
        self._branded.add(queue)

    # -- routing ----------------------------------------------------------------------
    def _slot(self, keys: Sequence[Any]) -> int:
        """The one slot of ``keys``, or ``CrossSlot`` naming each key's slot and node (nothing sent)."""
        slots = {slot_of_key(k) for k in keys}
        if len(slots) == 1:
            return slots.pop()
        parts = []
        for k in keys:
            s = slot_of_key(k)
            parts.append(f"{_text(k)} → slot {s} ({self.node_for_slot(s)})")
        raise CrossSlot(
            f"CROSSSLOT refused by the kit: the keys hash to {len(slots)} slots ({'; '.join(parts)}); "
            "one call must stay in one queue's {q} slot, and nothing was sent"
        )

    def node_for_slot(self, slot: int) -> str:
        """The primary this connector's slot map names for ``slot`` (no round trip)."""
        try:
            return self.client.nodes_manager.get_node_from_slot(slot).name
        except redis.exceptions.RedisClusterException:
            return "no node"

    def node_for(self, queue: str) -> str:
        """``host:port`` of the primary serving ``queue``'s slot, as this connector's slot map has it."""
        return self.node_for_slot(keyspace.slot(queue))

    def _keys(self, args: Sequence[Any]) -> list[Any] | None:
        name = _text(args[0]).upper()
        if name.startswith("EMQ.") and len(args) > 1:
            try:
                n = int(args[1])
            except (TypeError, ValueError):
                n = -1
            if 0 <= n <= len(args) - 2:
                return list(args[2 : 2 + n])
        if name in ("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO") and len(args) > 2:
            return list(args[3 : 3 + int(args[2])])
        try:
            return self.client.commands_parser.get_keys(self.client.get_default_node().redis_connection, *args)
        except redis.exceptions.RedisError:
            return None  # a command the parser does not know: the server answers for it

    def _is_write(self, args: Sequence[Any]) -> bool:
        info = self.client.commands_parser.commands.get(_text(args[0]).lower(), {})
        return "write" in info.get("flags", ())

    def _route(
        self, args: Sequence[Any], slot: int, entry: TraceEntry | None, write: bool, *, raw: bool = False
    ) -> Any:
        """Send to the slot's primary; follow MOVED and ASK (traced); WAIT after a write when asked.

        ``raw`` skips redis-py's reply conversion (SET with GET answers the old value, not a bool).
        """
        nm = self.client.nodes_manager
        node = nm.get_node_from_slot(slot)
        asking = False
        for _ in range(MAX_REDIRECTS + 1):
            if entry is not None:
                entry.node = node.name
            rc = self.client.get_redis_connection(node)
            pool = rc.connection_pool
            try:
                link = pool.get_connection()
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                # nothing was sent: the node is down. Ask the cluster again and go where it says
                if entry is not None:
                    entry.redirects.append(f"DOWN {node.name} ({type(exc).__name__}): slot map refreshed")
                self.refresh()
                fresh = nm.get_node_from_slot(slot)
                if fresh.name == node.name:
                    # the cluster still names the dead node (no promotion yet): nothing was sent
                    raise NotSent(f"{node.name} is down and still owns slot {slot}: nothing was sent ({exc})") from exc
                node, asking = fresh, False
                continue
            try:
                if asking:
                    link.send_command("ASKING")
                    rc.parse_response(link, "ASKING")
                link.send_command(*args)
                reply = rc.parse_response(link, "" if raw else _text(args[0]))
                if write and self.wait is not None:
                    acked = self._wait_on(rc, link, node.name)
                    if acked < self.wait[0] and self.on_short_wait is not None:
                        return self._short(entry, args, reply, acked,
                                           lambda rc=rc, link=link, at=node.name: self._resend(rc, link, at, args))
                return reply
            except redis.exceptions.MovedError as exc:
                # the node refused before running anything: the slot lives elsewhere now
                if entry is not None:
                    entry.redirects.append(f"MOVED {exc.slot_id} {exc.host}:{exc.port} (from {node.name})")
                nm.move_slot(exc)
                node, asking = nm.get_node_from_slot(slot), False
            except redis.exceptions.AskError as exc:
                # the slot is migrating and this key is already on the target: ask there, once
                if entry is not None:
                    entry.redirects.append(f"ASK {exc.slot_id} {exc.host}:{exc.port} (from {node.name})")
                target = self.client.get_node(host=exc.host, port=exc.port)
                node, asking = target or ClusterNode(exc.host, exc.port), True
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                # the outcome is unknown (the node may have run it): raise, never resend;
                # refresh the slot map so the next call finds a promoted replica
                link.disconnect()
                self.refresh()
                raise
            finally:
                pool.release(link)
        raise redis.exceptions.ClusterError(f"slot {slot} moved more than {MAX_REDIRECTS} times during one call")

    def _wait_on(self, rc: redis.Redis, link: Any, node: str) -> int:
        n, timeout_ms = self.wait  # type: ignore[misc]
        link.send_command("WAIT", n, timeout_ms)
        acked = int(rc.parse_response(link, "WAIT"))
        if acked < n:
            self.wait_short += 1
        self.trace.append(TraceEntry(["WAIT", n, timeout_ms], reply=acked, node=node))
        return acked

    def _resend(self, rc: redis.Redis, link: Any, node: str, args: Sequence[Any]) -> tuple[Any, int]:
        """The same write once more on the same link, then WAIT: (its reply or refusal, replicas confirmed)."""
        entry = TraceEntry(list(args), node=node)
        self.trace.append(entry)
        link.send_command(*args)
        try:
            entry.reply = rc.parse_response(link, _text(args[0]))
        except redis.exceptions.ResponseError as exc:
            entry.reply, entry.error = exc, True
        return entry.reply, self._wait_on(rc, link, node)

    def _short(self, entry: TraceEntry | None, args: Sequence[Any], reply: Any, acked: int,
               resend: Callable[[], tuple[Any, int]]) -> Any:
        """What ``on_short_wait`` makes of a write only the primary holds: the reply its caller is told."""
        command = (entry.script if entry is not None and entry.script else "") or _text(args[0]).upper()
        short = ShortWait(TRANSITIONS.get(command, "other"), command, reply, acked, self.wait[0],  # type: ignore[index]
                          resend)
        return self.on_short_wait(short)  # type: ignore[misc]

    def refresh(self) -> None:
        """Ask the cluster for its slot map again (after a lost link, a failover)."""
        try:
            self.client.nodes_manager.initialize()
        except redis.exceptions.RedisError:
            pass  # no node answers yet: the next call raises its own error

    def _send_routed(self, entry: TraceEntry, args: Sequence[Any], slot: int, write: bool) -> Any:
        self.trace.append(entry)
        try:
            entry.reply = self._route(args, slot, entry, write)
        except redis.exceptions.RedisError as exc:
            # a refusal, or a lost link whose outcome is unknown: both stay in the trace
            entry.reply, entry.error = exc, True
            raise
        return entry.reply

    # -- sending ----------------------------------------------------------------------
    def call(self, *args: Any) -> Any:
        """Send one command to the primary of its keys' slot (a keyless one as the cluster client routes it)."""
        keys = self._keys(args)
        if not keys:
            name = _text(args[0]).upper()
            entry = TraceEntry(list(args), node="all primaries" if name in _ALL_PRIMARIES else "cluster")
            opts = {"target_nodes": RedisCluster.PRIMARIES} if name in _ALL_PRIMARIES else {}
            return self.traced(entry, lambda: self.client.execute_command(*args, **opts))
        slot = self._slot(keys)
        if _text(args[0]).upper().startswith("EMQ."):
            self._ensure_brand(keys, slot)
        return self._send_routed(TraceEntry(list(args)), args, slot, self._is_write(args))

    # -- scripts: where the base's eval and eval_many send them ---------------------------
    def _script_place(self, sc: scripts.Script, keys: Sequence[str]) -> tuple[int, bool]:
        """(slot, write) of a script call: its keys choose the node; the queue is branded on first use."""
        if not keys:
            raise BadInput(f"{sc.name} needs its keys: on a cluster they choose the node")
        slot = self._slot(keys)
        self._ensure_brand(keys, slot)
        return slot, _writes(sc)

    def _load_once(self, sc: scripts.Script, where: tuple[int, bool]) -> None:
        node = self.node_for_slot(where[0])
        if (node, sc.sha) not in self.loaded:
            self._route(["SCRIPT", "LOAD", sc.source], where[0], None, write=False)
            self.loaded.add((node, sc.sha))

    def _reload(self, sc: scripts.Script, refused: TraceEntry) -> None:
        # a promoted replica, a restart, or a redirection to a node this connector never loaded on:
        # load where the refusal came from
        self._load_on(str(refused.node), sc)

    def _send_script(self, entry: TraceEntry, where: tuple[int, bool]) -> Any:
        return self._send_routed(entry, entry.args, *where)

    def _batches(
        self, sc: scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[tuple[Any, list[int]]]:
        """The calls grouped by slot: one pipeline to each slot's primary.

        Every call's keys must share one slot (``CrossSlot`` before anything is
        sent); each queue is branded on first use; a ``MOVED`` or ``NOSCRIPT``
        answer means that call did not run, so those calls go again once, where
        the refreshed slot map points. With ``wait``, one ``WAIT`` closes each
        slot's pipeline, on the link that wrote: it covers every write before it
        on that node.
        """
        if any(not keys for keys, _ in calls):
            raise BadInput(f"{sc.name} needs its keys: on a cluster they choose the node")
        slots = [self._slot(keys) for keys, _ in calls]  # every CrossSlot before anything is sent
        groups: dict[int, list[int]] = {}
        for i, slot in enumerate(slots):
            groups.setdefault(slot, []).append(i)
        return [((slot, _writes(sc)), todo) for slot, todo in groups.items()]

    def _pipeline(self, sc: scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]],
                  todo: list[int], where: tuple[int, bool], replies: list[Any], last: bool) -> list[int]:
        """Send the calls ``todo`` of one slot in one pipeline; answers those to send again (MOVED, NOSCRIPT)."""
        slot, write = where
        self._ensure_brand(calls[todo[0]][0], slot)
        self._load_once(sc, where)
        node = self.client.nodes_manager.get_node_from_slot(slot)
        rc = self.client.get_redis_connection(node)
        pipe = rc.pipeline(transaction=False)
        entries = []
        for i in todo:
            keys, argv = calls[i]
            args = ["EVALSHA", sc.sha, len(keys), *keys, *argv]
            entries.append(TraceEntry(args, script=sc.name, node=node.name))
            pipe.execute_command(*args)
        waiting = write and self.wait is not None
        if waiting:
            pipe.execute_command("WAIT", *self.wait)  # type: ignore[misc]
        self.trace.extend(entries)
        self.round_trips += 1
        try:
            answers = pipe.execute(raise_on_error=False)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            # the outcome of every call in the batch is unknown: raise, never resend
            self.refresh()
            raise
        if waiting:
            acked = answers.pop()
            short = isinstance(acked, int) and acked < self.wait[0]  # type: ignore[index]
            self.wait_short += short
            self.trace.append(TraceEntry(["WAIT", *self.wait], reply=acked, node=node.name))  # type: ignore[misc]
            if short and self.on_short_wait is not None:
                answers = list(self._short(entries[0], [], answers, acked, lambda: self._resend_batch(rc, entries)))
        again = []
        for i, entry, answer in zip(todo, entries, answers):
            entry.reply, entry.error = answer, isinstance(answer, Exception)
            replies[i] = answer
            if not last and isinstance(answer, redis.exceptions.MovedError):
                entry.redirects.append(f"MOVED {answer.slot_id} {answer.host}:{answer.port} (from {node.name})")
                again.append(i)
            elif not last and isinstance(answer, redis.exceptions.NoScriptError):
                again.append(i)
        if any(isinstance(replies[i], redis.exceptions.MovedError) for i in again):
            self.refresh()
        if any(isinstance(replies[i], redis.exceptions.NoScriptError) for i in again):
            self.loaded.discard((node.name, sc.sha))
        return again

    def _resend_batch(self, rc: redis.Redis, entries: list[TraceEntry]) -> tuple[Any, int]:
        """A pipelined batch sent once more, then WAIT: (its replies, refusals among them, replicas confirmed)."""
        pipe = rc.pipeline(transaction=False)
        for e in entries:
            pipe.execute_command(*e.args)
        pipe.execute_command("WAIT", *self.wait)  # type: ignore[misc]
        answers = pipe.execute(raise_on_error=False)
        acked = int(answers.pop())
        self.wait_short += acked < self.wait[0]  # type: ignore[index]
        return answers, acked

    def _load_on(self, name: str, sc: scripts.Script) -> None:
        self._send_to(name, "SCRIPT", "LOAD", sc.source)
        self.loaded.add((name, sc.sha))

    def _send_to(self, name: str, *args: Any) -> Any:
        """One traced command to the node named ``host:port`` itself (no slot routing)."""
        node = self.client.get_node(node_name=name)
        if node is None:
            raise redis.exceptions.ClusterError(f"node {name} is not in the slot map")
        entry = TraceEntry(list(args), node=name)
        return self.traced(entry, lambda: self.client.get_redis_connection(node).execute_command(*args))

    # -- per node ----------------------------------------------------------------------
    def run_id(self, queue: str) -> str:
        """The ``run_id`` of the primary serving ``queue`` now (another process after a failover).

        INFO names no key, so a stale slot map would ask the wrong node without a MOVED:
        a keyed read goes first (it follows any MOVED), then INFO goes to the node that answered it.
        """
        probe = TraceEntry(["EXISTS", keyspace.base(queue)])
        self._send_routed(probe, probe.args, keyspace.slot(queue), False)
        return str(self._send_to(str(probe.node), "INFO", "server")["run_id"])

    def fork(self, parser: str | None = None) -> ClusterConnector:
        """A new connector on the same cluster (its own client, slot map and trace), same wire and WAIT."""
        _check_cluster_parser(parser or "python")
        return connect_cluster(self.address, wire=self.wire, wait=self.wait, on_short_wait=self.on_short_wait,
                               script_set=self.script_set)


def _writes(sc: scripts.Script) -> bool:
    """False for a script declared read-only (no WAIT after it)."""
    return not sc.source.startswith("#!lua flags=no-writes")


def _check_cluster_parser(parser: object) -> None:
    """Only redis-py's own parser on a cluster: its client makes its links per node, with no parser choice."""
    if check_parser(parser) != "python":
        raise BadInput(f"a cluster connector parses with redis-py's own parser ('python'), got {parser!r}")


def check_wait(wait: object) -> tuple[int, int] | None:
    """``None``, or ``(numreplicas, timeout_ms)``: two integers >= 0 (a timeout of 0 waits for ever)."""
    if wait is None:
        return None
    ok = isinstance(wait, tuple) and len(wait) == 2
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in wait)  # type: ignore[union-attr]
    if not ok:
        raise BadInput(f"wait must be (numreplicas, timeout_ms), two integers >= 0, got {wait!r}")
    return wait  # type: ignore[return-value]


def make_cluster_client(address: dict[str, Any]) -> RedisCluster:
    """A redis-py cluster client that answers strings and never retries silently.

    ``address`` holds ``startup_nodes`` (``[(host, port), ...]``) and ``password``.
    """
    nodes = [ClusterNode(h, int(p)) for h, p in address["startup_nodes"]]
    return RedisCluster(
        startup_nodes=nodes,
        password=address.get("password"),
        username=address.get("username"),
        **client_options(),
        require_full_coverage=False,
        socket_connect_timeout=2,
        # a worker process names its links, so that a fault can find them in CLIENT LIST on every node
        client_name=address.get("client_name"),
    )


def connect_cluster(address: dict[str, Any], wire: int = 4, wait: tuple[int, int] | None = None,
                    on_short_wait: Callable[[ShortWait], Any] | None = None,
                    script_set: ScriptSet = KIT) -> ClusterConnector:
    """A fresh cluster connector (its own client and trace) on the cluster at ``address``."""
    check_wait(wait)  # before a link is opened
    return ClusterConnector(make_cluster_client(address), wire=wire, address=dict(address), wait=wait,
                            on_short_wait=on_short_wait, script_set=script_set)


def reconnect(address: dict[str, Any], wire: int = 4, wait: tuple[int, int] | None = None,
              on_short_wait: Callable[[ShortWait], Any] | None = None, script_set: ScriptSet = KIT) -> Connector:
    """A fresh connector from an ``address`` alone: a cluster's (``startup_nodes``) or a node's.

    What ``fork()`` does, for another process that was handed the address. It
    lives here, not in ``connector``, so that the dependency runs one way.
    ``wait=(numreplicas, timeout_ms)`` (a cluster's replicas) sends WAIT after every write;
    ``script_set`` runs another script in a transition's place (``transitions.ScriptSet``).
    """
    if "startup_nodes" in address:
        return connect_cluster(address, wire=wire, wait=wait, on_short_wait=on_short_wait, script_set=script_set)
    if wait is not None:
        raise BadInput("wait=(numreplicas, timeout_ms) needs a cluster address: a single node has no replica")
    return connect(address, wire=wire, script_set=script_set)
