"""A local Valkey Cluster the kit starts: three primaries, one replica each (Valkey Cluster).

Six ``valkey-server`` processes on 127.0.0.1 in cluster mode, each a
``LocalNode`` (the same config, password file, death with the kernel and stop
by PID as a single node), sharing one random password (``requirepass`` and
``masterauth``). The kit builds the cluster with the server's own commands:
``CLUSTER SET-CONFIG-EPOCH``, ``ADDSLOTSRANGE``, ``MEET`` and ``REPLICATE``.

What a failover needs is here too: the primary that owns a queue's slot, its
replica, ``kill`` (SIGKILL by PID), a bounded wait for the promotion, and a
restart of the killed node as a replica of the new primary.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis

from .. import keyspace
from ..cluster_connector import ClusterConnector, connect_cluster
from ..errors import NodeError
from .host import free_port
from .local import LocalNode

SLOTS = 16384
READY_TIMEOUT_S = 30.0
#: how long a silent node takes to be judged failing; promotion follows in about 1-2 node timeouts
DEFAULT_NODE_TIMEOUT_MS = 2_000


@dataclass(frozen=True)
class View:
    """One node's view of itself (its ``myself`` line in CLUSTER NODES)."""

    id: str
    role: str  # "primary" or "replica"
    primary_id: str | None
    slots: tuple[tuple[int, int], ...]
    epoch: int

    def owns(self, slot: int) -> bool:
        return any(lo <= slot <= hi for lo, hi in self.slots)


def _parse_slots(fields: list[str]) -> tuple[tuple[int, int], ...]:
    out = []
    for f in fields:
        if f.startswith("["):
            continue  # a slot being migrated or imported
        lo, _, hi = f.partition("-")
        out.append((int(lo), int(hi or lo)))
    return tuple(out)


def _ranges(shards: int) -> list[tuple[int, int]]:
    """The slot ranges of ``shards`` primaries, split as evenly as 16384 allows."""
    cuts = [round(i * SLOTS / shards) for i in range(shards + 1)]
    return [(cuts[i], cuts[i + 1] - 1) for i in range(shards)]


def _free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        p = free_port()
        if p not in ports and p + 1 < 65536:
            ports.append(p)
    return ports


class LocalCluster:
    """``shards`` primaries with ``replicas`` replicas each, started, joined and ready on return.

    ``native=True`` loads the trafikey module on every node (a replica may be
    promoted). ``start_seconds`` is how long the start took, on this machine.
    """

    def __init__(
        self,
        shards: int = 3,
        replicas: int = 1,
        native: bool = False,
        node_timeout_ms: int = DEFAULT_NODE_TIMEOUT_MS,
    ) -> None:
        ok = isinstance(shards, int) and 1 <= shards <= 16 and isinstance(replicas, int) and 0 <= replicas <= 4
        if not ok:
            raise NodeError(f"a local cluster has 1..16 shards and 0..4 replicas each, got {shards} and {replicas}")
        t0 = time.monotonic()
        self.native = native
        self.shards, self.replicas = shards, replicas
        self.password = secrets.token_urlsafe(24)
        self.nodes: list[LocalNode] = []
        count = shards * (1 + replicas)
        ports = _free_ports(2 * count)
        try:
            for i in range(count):
                port, bus = ports[2 * i], ports[2 * i + 1]
                self.nodes.append(
                    LocalNode(
                        native=native,
                        password=self.password,
                        port=port,
                        brand=False,  # a cluster's brand is per queue, beside the queue (docs/cluster.md)
                        extra_config={
                            "cluster-enabled": "yes",
                            "cluster-config-file": "nodes.conf",
                            "cluster-port": str(bus),
                            "cluster-node-timeout": str(node_timeout_ms),
                            "masterauth": self.password,
                            # a replica may always stand in, however long its link was down
                            "cluster-replica-validity-factor": "0",
                            "cluster-allow-replica-migration": "no",
                            # the other shards keep serving while one shard fails over
                            "cluster-require-full-coverage": "no",
                            # a replica's first sync starts at once (the default waits 5 s for company)
                            "repl-diskless-sync-delay": "0",
                        },
                    )
                )
            self.bus_ports = {n.port: ports[2 * i + 1] for i, n in enumerate(self.nodes)}
            for n in self.nodes:
                n.start_again = "cluster = start_cluster()"  # what a stopped node's one-line message offers
            self._create()
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0

    # -- creation, with the server's own commands ------------------------------------------
    def _create(self) -> None:
        ids = [self._cmd(n, "CLUSTER", "MYID") for n in self.nodes]
        # distinct config epochs from the start: no collision to resolve, a clean first failover
        for i, n in enumerate(self.nodes):
            self._cmd(n, "CLUSTER", "SET-CONFIG-EPOCH", i + 1)
        primaries = self.nodes[: self.shards]
        for n, (lo, hi) in zip(primaries, _ranges(self.shards)):
            self._cmd(n, "CLUSTER", "ADDSLOTSRANGE", lo, hi)
        first = self.nodes[0]
        for n in self.nodes[1:]:
            self._cmd(first, "CLUSTER", "MEET", "127.0.0.1", n.port, self.bus_ports[n.port])
        self._until(lambda: all(self._known(n) == len(self.nodes) for n in self.nodes), "every node to meet the others")
        for j, n in enumerate(self.nodes[self.shards :]):
            self._cmd(n, "CLUSTER", "REPLICATE", ids[j % self.shards])
        self._until(self.healthy, "the cluster to be ready (slots served, replicas in sync)")

    def _cmd(self, node: LocalNode, *args: Any) -> Any:
        c = node.client()
        try:
            return c.execute_command(*args)
        finally:
            c.close()

    def _known(self, node: LocalNode) -> int:
        lines = str(self._cmd(node, "CLUSTER", "NODES")).strip().splitlines()
        return sum(1 for ln in lines if "handshake" not in ln.split()[2] and "noaddr" not in ln.split()[2])

    def _until(self, check: Any, what: str, timeout: float = READY_TIMEOUT_S) -> float:
        t0 = time.monotonic()
        while True:
            try:
                if check():
                    return time.monotonic() - t0
            except (redis.exceptions.RedisError, OSError):
                pass  # a node still starting or just killed: look again
            if time.monotonic() - t0 > timeout:
                raise NodeError(f"timed out after {timeout:.0f} s waiting for {what}; {self.describe()}")
            time.sleep(0.05)

    def healthy(self) -> bool:
        """True when every running node says the cluster is ok, all slots are served and every replica is in sync."""
        running = self.running_nodes()
        owned = 0
        for n in running:
            info = self._cmd(n, "CLUSTER INFO")
            if info.get("cluster_state") != "ok" or int(info.get("cluster_slots_assigned", 0)) != SLOTS:
                return False
            v = self.view(n)
            if v.role == "primary":
                owned += sum(hi - lo + 1 for lo, hi in v.slots)
            else:
                repl = self._cmd(n, "INFO", "replication")
                if repl.get("master_link_status") != "up":
                    return False
        return owned == SLOTS

    # -- who is who ----------------------------------------------------------------------------
    def view(self, node: LocalNode) -> View:
        """What ``node`` says of itself: id, role, its primary, its slots, its config epoch."""
        for line in str(self._cmd(node, "CLUSTER", "NODES")).strip().splitlines():
            f = line.split()
            if "myself" in f[2].split(","):
                role = "primary" if "master" in f[2] else "replica"
                return View(
                    id=f[0],
                    role=role,
                    primary_id=None if f[3] == "-" else f[3],
                    slots=_parse_slots(f[8:]),
                    epoch=int(f[6]),
                )
        raise NodeError(f"{node!r} did not list itself in CLUSTER NODES")

    def running_nodes(self) -> list[LocalNode]:
        return [n for n in self.nodes if n.running]

    def primaries(self) -> list[LocalNode]:
        """The running primaries that serve slots, in slot order."""
        views = [(n, self.view(n)) for n in self.running_nodes()]
        owners = [(v.slots[0][0], n) for n, v in views if v.role == "primary" and v.slots]
        return [n for _, n in sorted(owners, key=lambda t: t[0])]

    def primary_for_slot(self, slot: int) -> LocalNode:
        """The running primary that owns ``slot`` by its own account (the newest epoch if two claim it)."""
        claims = [(self.view(n), n) for n in self.running_nodes()]
        owners = [(v.epoch, n) for v, n in claims if v.role == "primary" and v.owns(slot)]
        if not owners:
            raise NodeError(f"no running primary owns slot {slot}; {self.describe()}")
        return max(owners, key=lambda t: t[0])[1]

    def primary_of(self, queue: str) -> LocalNode:
        """The primary that owns ``queue``'s slot (every key of a queue shares its ``{q}`` hashtag)."""
        return self.primary_for_slot(keyspace.slot(queue))

    def replicas_of(self, primary: LocalNode) -> list[LocalNode]:
        """The running replicas of ``primary``."""
        pid = self.view(primary).id
        return [n for n in self.running_nodes() if n is not primary and self.view(n).primary_id == pid]

    def replica_of(self, primary: LocalNode) -> LocalNode:
        """The (first) running replica of ``primary``."""
        reps = self.replicas_of(primary)
        if not reps:
            raise NodeError(f"{primary!r} has no running replica")
        return reps[0]

    def shard_index(self, node: LocalNode) -> int:
        """0, 1, 2 … : which shard ``node`` serves now (by its primary's first slot)."""
        v = self.view(node)
        if v.role == "primary":
            return self.primaries().index(node)
        primary = next(n for n in self.running_nodes() if self.view(n).id == v.primary_id)
        return self.primaries().index(primary)

    def queue_on(self, shard: int, prefix: str = "q") -> str:
        """The first name ``prefix-0``, ``prefix-1`` … whose slot shard ``shard`` serves (the slot decides)."""
        lo_hi = self.view(self.primaries()[shard]).slots
        for i in range(100_000):
            name = f"{prefix}-{i}"
            s = keyspace.slot(name)
            if any(lo <= s <= hi for lo, hi in lo_hi):
                return name
        raise NodeError(f"no name {prefix}-N falls on shard {shard}")  # pragma: no cover - 16384 slots

    def run_ids(self) -> dict[str, str]:
        """``host:port`` → the current run_id of every running node (each process has its own)."""
        return {f"127.0.0.1:{n.port}": self._cmd(n, "INFO", "server")["run_id"] for n in self.running_nodes()}

    def describe(self) -> str:
        """One line per node: address, role, slots, running or not."""
        out = []
        for n in self.nodes:
            if not n.running:
                out.append(f"127.0.0.1:{n.port} down")
                continue
            try:
                v = self.view(n)
                slots = ",".join(f"{lo}-{hi}" for lo, hi in v.slots) or "-"
                out.append(f"127.0.0.1:{n.port} {v.role} {slots}")
            except (redis.exceptions.RedisError, OSError, NodeError) as exc:
                out.append(f"127.0.0.1:{n.port} ? ({exc})")
        return "; ".join(out)

    # -- failover --------------------------------------------------------------------------------
    def kill(self, node: LocalNode) -> None:
        """SIGKILL ``node`` by its PID, as a crash would (no shutdown, nothing saved)."""
        node.kill()

    def kill_after(self, node: LocalNode, seconds: float) -> threading.Timer:
        """Kill ``node`` ``seconds`` from now, on a timer thread (mid-run); ``join()`` the timer to wait for it."""
        timer = threading.Timer(seconds, node.kill)
        timer.daemon = True
        timer.start()
        return timer

    def wait_promotion(self, replica: LocalNode, timeout: float = 30.0) -> float:
        """Wait (bounded) until ``replica`` is a primary with slots and the cluster is ok again; answers the seconds."""

        def promoted() -> bool:
            v = self.view(replica)
            return v.role == "primary" and bool(v.slots) and self._serves_all()

        return self._until(promoted, f"127.0.0.1:{replica.port} to be promoted", timeout)

    def _serves_all(self) -> bool:
        # every running node says ok, and the running primaries between them own every slot
        owned = 0
        for n in self.running_nodes():
            if self._cmd(n, "CLUSTER INFO").get("cluster_state") != "ok":
                return False
            v = self.view(n)
            if v.role == "primary":
                owned += sum(hi - lo + 1 for lo, hi in v.slots)
        return owned == SLOTS

    def restart_as_replica(self, node: LocalNode, timeout: float = 30.0) -> float:
        """Start a killed node again; it rejoins as a replica of the primary that replaced it and syncs.

        Refused while its slots have no other primary: a node without persistence
        would come back empty as their primary, and its replica would copy the
        empty data set.
        """
        if node.running:
            raise NodeError(f"127.0.0.1:{node.port} is running: kill it first")
        for lo, _hi in self._last_slots(node):
            self.primary_for_slot(lo)  # raises when no running primary took the slot over
        node.relaunch()

        def rejoined() -> bool:
            v = self.view(node)
            repl = self._cmd(node, "INFO", "replication")
            return v.role == "replica" and repl.get("master_link_status") == "up" and self._serves_all()

        return self._until(rejoined, f"127.0.0.1:{node.port} to rejoin as a replica", timeout)

    def _last_slots(self, node: LocalNode) -> tuple[tuple[int, int], ...]:
        """The slots ``node`` served when it went down, as the running nodes remember it."""
        for other in self.running_nodes():
            for line in str(self._cmd(other, "CLUSTER", "NODES")).strip().splitlines():
                f = line.split()
                if f[1].split("@")[0].endswith(f":{node.port}"):
                    return _parse_slots(f[8:])
        return ()

    # -- slot migration (resharding), with the server's own commands --------------------------------
    def begin_migration(self, slot: int, target: LocalNode) -> LocalNode:
        """Mark ``slot`` IMPORTING on ``target`` and MIGRATING on its owner; answers the owner (the source).

        While the slot migrates, the source answers ``ASK`` for a key it no longer holds.
        """
        source = self.primary_for_slot(slot)
        if source is target or self.view(target).role != "primary":
            raise NodeError(f"slot {slot} can only migrate to another primary, not 127.0.0.1:{target.port}")
        self._cmd(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", self.view(source).id)
        self._cmd(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", self.view(target).id)
        return source

    def migrate_keys(self, slot: int, source: LocalNode, target: LocalNode, limit: int | None = None) -> int:
        """MIGRATE up to ``limit`` keys (all by default) of ``slot`` from ``source`` to ``target``; answers how many."""
        keys = self._cmd(source, "CLUSTER", "GETKEYSINSLOT", slot, limit or 1_000_000)
        if keys:
            self._cmd(source, "MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "AUTH", self.password, "KEYS", *keys)
        return len(keys)

    def end_migration(self, slot: int, source: LocalNode, target: LocalNode) -> None:
        """Give ``slot`` to ``target`` on both ends, then tell the other primaries (gossip would, later)."""
        tid = self.view(target).id
        for n in [target, source] + [p for p in self.primaries() if p not in (target, source)]:
            self._cmd(n, "CLUSTER", "SETSLOT", slot, "NODE", tid)

    def move_slot(self, slot: int, target: LocalNode) -> LocalNode:
        """Move ``slot`` and every key in it to ``target`` (a resharding of one slot); answers the old owner."""
        source = self.begin_migration(slot, target)
        self.migrate_keys(slot, source, target)
        self.end_migration(slot, source, target)
        return source

    # -- connectors and stop -----------------------------------------------------------------
    @property
    def address(self) -> dict[str, Any]:
        """What a connector (or another process) needs: every node's address and the password."""
        return {"startup_nodes": [("127.0.0.1", n.port) for n in self.nodes], "password": self.password}

    @property
    def wire(self) -> int:
        return 6 if self.native else 4

    def connector(self, wire: int | None = None, wait: tuple[int, int] | None = None) -> ClusterConnector:
        """A traced cluster connector; ``wait=(numreplicas, timeout_ms)`` sends WAIT after every write."""
        return connect_cluster(self.address, wire=self.wire if wire is None else wire, wait=wait)

    def stop(self) -> None:
        """Stop every node (by its PID if it will not shut down) and delete the folders."""
        for n in self.nodes:
            try:
                n.stop()
            except Exception:  # noqa: BLE001 - stop the others regardless
                n.kill()  # it would not stop: SIGKILL it, as a crash would

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<LocalCluster {self.shards}x{1 + self.replicas}{' native' if self.native else ''} {self.describe()}>"


def start_cluster(shards: int = 3, replicas: int = 1, native: bool = False, **kwargs: Any) -> LocalCluster:
    """Start a local cluster: ``shards`` primaries with ``replicas`` replicas each, ready on return."""
    return LocalCluster(shards=shards, replicas=replicas, native=native, **kwargs)
