"""The queue on a real Valkey Cluster: the kit's cluster, queues on shards, the trace, a pool across
shards, cross-slot refusals, the per-queue brand, and the hooks a failover run needs.

The session's cluster (conftest ``cluster``) is three primaries with one replica each, trafikey on
every node. Tests that kill a node restore it (as a replica) before they end.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import redis
from conftest import refuses_anonymous

from echomq_teach import jobs, keyspace, snapshots, stalled
from echomq_teach.cluster_connector import ClusterConnector
from echomq_teach.connector import Connector
from echomq_teach.consumer import Pools
from echomq_teach.errors import BadInput, CrossSlot, NodeError, WireError
from echomq_teach.nodes import valkey
from echomq_teach.nodes.cluster import SLOTS, LocalCluster
from echomq_teach.nodes.host import sweep_stale_dirs
from echomq_teach.nodes.process import pid_alive

LEASE = 30_000


def raw(node):
    """A plain client on one node (no cluster routing): what that node itself answers."""
    return node.client()


def shard_state(cluster):
    """Every running primary's whole data set, as a digest and a key count."""
    out = {}
    for n in cluster.primaries():
        c = raw(n)
        try:
            out[n.port] = (c.execute_command("DEBUG", "DIGEST"), c.dbsize())
        finally:
            c.close()
    return out


def crossslot_refusals(cluster):
    """How many CROSSSLOT errors each running node has answered since it started."""
    out = {}
    for n in cluster.running_nodes():
        c = raw(n)
        try:
            out[n.port] = c.info("errorstats").get("errorstat_CROSSSLOT", {}).get("count", 0)
        finally:
            c.close()
    return out


def upper(job):
    return job.payload.upper()


# -- the cluster the kit starts ------------------------------------------------------------------
def test_three_primaries_one_replica_each_on_loopback(cluster):
    print(f"\ncluster of {len(cluster.nodes)} nodes ready in {cluster.start_seconds:.2f} s")
    assert len(cluster.nodes) == 6 and len({n.pid for n in cluster.nodes}) == 6
    primaries = cluster.primaries()
    assert len(primaries) == 3
    for p in primaries:
        assert len(cluster.replicas_of(p)) == 1
    # the three primaries' own slot ranges cover every slot once
    owned = sorted(r for p in primaries for r in cluster.view(p).slots)
    assert sum(hi - lo + 1 for lo, hi in owned) == SLOTS and owned[0][0] == 0 and owned[-1][1] == SLOTS - 1
    for n in cluster.nodes:
        c = raw(n)
        try:
            assert c.info("server")["tcp_port"] == n.port
            assert c.config_get("bind")["bind"] == "127.0.0.1"
            assert c.info("cluster")["cluster_enabled"] == 1
            # Valkey 9 lists its Lua engine as a module beside ours
            assert sorted(m["name"] for m in c.module_list()) == ["lua", "trafikey"]
            assert c.info("server")["valkey_version"] == valkey.PINNED
        finally:
            c.close()
        # a random password, on every node (and masterauth, or no replica could sync)
        refuses_anonymous(n.port)
    # SET-CONFIG-EPOCH gave each node its own epoch before the meet: the primaries' differ
    # (a replica reports its primary's)
    assert len({cluster.view(p).epoch for p in primaries}) == 3


def test_the_nodes_die_with_the_kernel_that_started_them():
    code = (
        "from echomq_teach.nodes.cluster import LocalCluster\n"
        "c = LocalCluster(shards=3, replicas=0)\n"
        "print(*[n.pid for n in c.nodes], flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    kernel = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in kernel.stdout.readline().split()]
        assert len(pids) == 3 and all(pid_alive(p) for p in pids)
        kernel.kill()  # a hard death: no exit hook runs
        kernel.wait(timeout=10)
        deadline = time.monotonic() + 10  # the death signal is asynchronous: a bound, not a speed
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(pid_alive(p) for p in pids)
    finally:
        kernel.kill()
        kernel.wait(timeout=10)
        kernel.stdout.close()
    sweep_stale_dirs()  # what the next node start does with the folders left behind


def test_bad_shape_is_refused_before_any_process_starts():
    with pytest.raises(NodeError, match="1..16 shards"):
        LocalCluster(shards=0)
    with pytest.raises(NodeError, match="0..4 replicas"):
        LocalCluster(replicas=-1)


# -- queues on shards: the slot decides --------------------------------------------------------------
def test_the_slot_decides_the_shard(cluster):
    conn = cluster.connector()
    try:
        any_node = raw(cluster.nodes[0])
        for name in ["orders", "emails", "q-0", "q-1", "alice.orders"]:
            # CRC16 of the hashtag, mod 16384: the kit and the server agree, for every key of the queue
            assert keyspace.slot(name) == any_node.cluster("KEYSLOT", keyspace.queue_key(name, "pending"))
            assert keyspace.slot(keyspace.job_key(name, "J1", "dependencies")) == keyspace.slot(name)
            assert keyspace.slot(keyspace.brand_key(name)) == keyspace.slot(name)
            assert conn.node_for(name) == f"127.0.0.1:{cluster.primary_of(name).port}"
        any_node.close()
    finally:
        conn.close()


def test_queues_land_on_different_primaries_and_stay_there(cluster, request):
    names = [cluster.queue_on(s, f"spread{request.node.name[-3:]}") for s in range(3)]
    owners = [cluster.primary_of(q) for q in names]
    assert len({o.port for o in owners}) == 3
    conn = cluster.connector(wait=(1, 2000))
    try:
        for q, owner in zip(names, owners):
            job = jobs.enqueue(conn, q, f"on {owner.port}")
            assert conn.last(2)[0].node == f"127.0.0.1:{owner.port}"  # the EVALSHA; the WAIT follows
            assert conn.last()[0].line == "WAIT 1 2000" and conn.last()[0].reply == 1
            # the row is on its primary and that primary's replica, and nowhere else
            row = keyspace.job_key(q, job)
            holders = set()
            for n in cluster.nodes:
                c = raw(n)
                try:
                    c.execute_command("READONLY")  # a replica answers reads of its own slots
                    if c.exists(row):
                        holders.add(n.port)
                except redis.exceptions.ResponseError:
                    pass  # MOVED: not this node's slot
                finally:
                    c.close()
            assert holders == {owner.port, cluster.replica_of(owner).port}
    finally:
        conn.close()


def test_trace_shows_the_node_and_a_moved_redirection(cluster, queue):
    conn = cluster.connector()
    try:
        jobs.enqueue(conn, queue, "x")
        owner = cluster.primary_of(queue)
        wrong = next(p for p in cluster.primaries() if p is not owner)
        # a stale slot map, as after a resharding: the connector believes another primary owns the slot
        nm = conn.client.nodes_manager
        nm.slots_cache[keyspace.slot(queue)] = [nm.get_node("127.0.0.1", wrong.port)]
        got = jobs.claim(conn, queue, LEASE)
        assert got is not None
        first = conn.last(2)[0]  # the pause read went to the wrong node first
        assert first.redirects == [f"MOVED {keyspace.slot(queue)} 127.0.0.1:{owner.port} (from 127.0.0.1:{wrong.port})"]
        assert first.node == f"127.0.0.1:{owner.port}"
        assert "↪ MOVED" in str(first) and str(first).endswith(f"@ 127.0.0.1:{owner.port}")
        assert conn.last()[0].redirects == []  # the slot map was patched
    finally:
        conn.close()


@pytest.mark.parametrize("wire", [4, 6], ids=["scripts", "native"])
def test_a_slot_migration_asks_then_moves_and_the_brand_moves_with_the_queue(cluster, queue, wire):
    conn = cluster.connector(wire=wire)
    slot = keyspace.slot(queue)
    try:
        first = jobs.enqueue(conn, queue, "before")  # branded and written on the old owner
        source = cluster.primary_of(queue)
        target = next(p for p in cluster.primaries() if p is not source)
        cluster.begin_migration(slot, target)
        try:
            assert cluster.migrate_keys(slot, source, target) == 3  # pending, the row, the brand
            # a key already moved: the source answers ASK, and the target answers after ASKING
            assert jobs.row(conn, queue, first)["payload"] == "before"
            hop = conn.last()[0]
            assert hop.redirects == [f"ASK {slot} 127.0.0.1:{target.port} (from 127.0.0.1:{source.port})"]
            assert hop.node == f"127.0.0.1:{target.port}"
            # a transition that would create a key in the moving slot waits for the move to end:
            # TRYAGAIN, refused before it ran (the queue pauses while its slot moves)
            before = shard_state(cluster)
            with pytest.raises(redis.exceptions.TryAgainError):
                jobs.enqueue(conn, queue, "during")
            assert conn.last()[0].error and shard_state(cluster) == before
        finally:
            cluster.end_migration(slot, source, target)
        assert cluster.primary_of(queue) is target
        # the connector's map still names the source: MOVED, then the queue runs on its new shard,
        # natively too: the brand emq:version:{q} travelled with the queue's slot
        conn.clear_trace()
        second = jobs.enqueue(conn, queue, "after")
        assert [r for e in conn.trace for r in e.redirects] == [
            f"MOVED {slot} 127.0.0.1:{target.port} (from 127.0.0.1:{source.port})"
        ]
        got = [jobs.claim(conn, queue, LEASE) for _ in range(2)]
        assert [g.id for g in got] == [first, second]
        assert [jobs.complete(conn, queue, g.id, g.attempts) for g in got] == [jobs.OK, jobs.OK]
        assert conn.last()[0].node == f"127.0.0.1:{target.port}" and conn.last()[0].redirects == []
    finally:
        conn.close()
        if cluster.primary_of(queue) is not source:
            cluster.move_slot(slot, source)  # leave the session's cluster as it was


# -- cross-slot: refused by the kit, before anything is sent ------------------------------------------
def test_a_call_across_slots_is_refused_with_nothing_written(cluster, cluster_conn, request):
    a = cluster.queue_on(0, f"xa{request.node.name[-8:]}")
    b = cluster.queue_on(1, f"xb{request.node.name[-8:]}")
    near = cluster.queue_on(0, f"{a}n")  # the same shard, another slot
    assert cluster.primary_of(near) is cluster.primary_of(a) and keyspace.slot(near) != keyspace.slot(a)
    jobs.enqueue(cluster_conn, a, "keep")  # something to leave untouched
    before, refusals, n_trace = shard_state(cluster), crossslot_refusals(cluster), len(cluster_conn.trace)
    tries = {
        "script, two shards": lambda: cluster_conn.eval(
            "enqueue", [keyspace.queue_key(a, "pending"), keyspace.job_key(b, "J1")], ["J1", "p"]
        ),
        "script, one shard, two slots": lambda: cluster_conn.eval(
            "enqueue", [keyspace.queue_key(a, "pending"), keyspace.job_key(near, "J1")], ["J1", "p"]
        ),
        "native command": lambda: cluster_conn.call(
            "EMQ.CLAIM", 3, keyspace.queue_key(a, "pending"), keyspace.queue_key(b, "active"), keyspace.base(a), LEASE
        ),
        "plain command": lambda: cluster_conn.call("DEL", keyspace.queue_key(a, "pending"), keyspace.queue_key(b, "x")),
    }
    for what, attempt in tries.items():
        with pytest.raises(CrossSlot, match=r"^CROSSSLOT refused by the kit: the keys hash to 2 slots") as exc:
            attempt()
        assert "nothing was sent" in str(exc.value), what
        assert f"slot {keyspace.slot(a)} (127.0.0.1:{cluster.primary_of(a).port})" in str(exc.value)
    # nothing written on any shard, nothing sent (the trace), and no server ever refused a CROSSSLOT
    assert shard_state(cluster) == before
    assert len(cluster_conn.trace) == n_trace
    assert crossslot_refusals(cluster) == refusals
    # the refusal the kit spares the server is real: the same keys sent raw to one primary
    owner = cluster.primary_of(a)
    c = raw(owner)
    try:
        with pytest.raises(redis.exceptions.ClusterCrossSlotError, match="don't hash to the same slot"):
            c.execute_command("DEL", keyspace.queue_key(a, "pending"), keyspace.queue_key(near, "pending"))
    finally:
        c.close()
    assert crossslot_refusals(cluster)[owner.port] == refusals[owner.port] + 1
    assert shard_state(cluster) == before


# -- a pool across shards ----------------------------------------------------------------------------
@pytest.mark.parametrize("wire", [4, 6], ids=["scripts", "native"])
def test_a_pool_drains_queues_on_every_shard(cluster, request, wire):
    names = [cluster.queue_on(s, f"pool{wire}{request.node.name[-4:]}") for s in range(3)]
    conn = cluster.connector(wire=wire)
    n = 30
    try:
        ids = {q: {jobs.enqueue(conn, q, f"{q}-{i}") for i in range(n)} for q in names}
        pools = Pools(conn, names, upper, size=2, metronome_ms=20, idle_sleep_ms=2, record=True)
        try:
            reports = pools.run(timeout=60, until_idle=True)
            for q, pool in pools.pools.items():
                # every consumer of a queue talked to that queue's primary only
                nodes = {e.node for c in pool.consumers for e in c.conn.trace}
                assert nodes == {conn.node_for(q)}
        finally:
            pools.close()
        assert set(reports) == set(names)
        for q in names:
            assert reports[q].settled == n and reports[q].outcomes == {jobs.OK: n}
            assert reports[q].stopped_by == "idle"
            snap = snapshots.snapshot(conn, q)
            assert snap.ids() == set() and snap.completed == n
            settled = conn.client.xrange(keyspace.queue_key(q, "stream:completions"))
            assert {fields["id"] for _, fields in settled} == ids[q]
        assert Pools.total(reports).settled == 3 * n
    finally:
        conn.close()


def test_pools_refuse_bad_input_before_opening_a_link(cluster):
    conn = cluster.connector()
    try:
        for bad, words in [("q", "non-empty list"), ([], "non-empty list"), (["a", "a"], "twice"), (["a:b"], "queue")]:
            with pytest.raises(jobs.BadInput, match=words):
                Pools(conn, bad, upper)
        with pytest.raises(jobs.BadInput, match="size"):
            Pools(conn, ["a", "b"], upper, size=0)
    finally:
        conn.close()


# -- the brand on a cluster: per queue, in the queue's slot ------------------------------------------
def test_each_queue_carries_its_own_brand(cluster, request):
    s4 = cluster.queue_on(0, f"b4{request.node.name[-6:]}")
    s6 = cluster.queue_on(0, f"b6{request.node.name[-6:]}")
    c4, c6 = cluster.connector(wire=4), cluster.connector(wire=6)
    try:
        jobs.enqueue(c4, s4, "x")
        jobs.enqueue(c6, s6, "y")
        assert c4.client.get(keyspace.brand_key(s4)) == keyspace.BRAND_WIRE4
        assert c4.client.get(keyspace.brand_key(s6)) == keyspace.BRAND_WIRE6
        # one shard serves both executors, each on its own queues
        assert cluster.primary_of(s4) is cluster.primary_of(s6)
        # @drop clears the queue and leaves its brand, as it leaves a node's
        assert jobs.drop(c6, s6) == 2
        assert c6.client.get(keyspace.brand_key(s6)) == keyspace.BRAND_WIRE6
    finally:
        c4.close()
        c6.close()


def test_a_misbranded_queue_is_refused_host_side_and_by_the_module(cluster, request):
    q = cluster.queue_on(2, f"mis{request.node.name[-6:]}")
    c4, c6 = cluster.connector(wire=4), cluster.connector(wire=6)
    owner = cluster.primary_of(q)
    node = raw(owner)
    try:
        jobs.enqueue(c4, q, "scripted")  # the queue is now held at echomq:4.0.0, on its shard
        before = node.execute_command("DEBUG", "DIGEST")
        with pytest.raises(WireError, match=r"^EMQWIRE queue '.*' is branded 'echomq:4\.0\.0'.*needs 'echomq:6\.0\.0'"):
            jobs.claim(c6, q, LEASE)
        # the module checks it on its own node, whoever asks
        keys = [keyspace.queue_key(q, "pending"), keyspace.queue_key(q, "active"), keyspace.base(q)]
        with pytest.raises(redis.exceptions.ResponseError, match=r"^EMQWIRE queue is branded echomq:4\.0\.0; need"):
            node.execute_command("EMQ.CLAIM", 3, *keys, LEASE)
        # and a queue with no brand at all
        bare = cluster.queue_on(2, f"bare{request.node.name[-6:]}")
        node.zadd(keyspace.queue_key(bare, "pending"), {"J1": 0})
        bare_keys = [keyspace.queue_key(bare, "pending"), keyspace.queue_key(bare, "active"), keyspace.base(bare)]
        digest = node.execute_command("DEBUG", "DIGEST")
        with pytest.raises(redis.exceptions.ResponseError, match=r"^EMQWIRE queue has no emq:version:\{.*\} brand"):
            node.execute_command("EMQ.CLAIM", 3, *bare_keys, LEASE)
        assert node.execute_command("DEBUG", "DIGEST") == digest
        node.delete(keyspace.queue_key(bare, "pending"))
        assert node.execute_command("DEBUG", "DIGEST") == before
        assert snapshots.snapshot(c4, q).pending != []
    finally:
        node.close()
        c4.close()
        c6.close()


def test_the_node_wide_brand_key_is_not_readable_on_the_other_shards(cluster, queue):
    """Why the brand is per queue: ``{emq}:version`` lives in one slot, on one shard."""
    conn = cluster.connector()
    try:
        owner = cluster.primary_for_slot(keyspace.slot(keyspace.VERSION_KEY))
        conn.client.set(keyspace.VERSION_KEY, keyspace.BRAND_WIRE6)
        for p in cluster.primaries():
            c = raw(p)
            try:
                if p is owner:
                    assert c.get(keyspace.VERSION_KEY) == keyspace.BRAND_WIRE6
                    continue
                with pytest.raises(redis.exceptions.MovedError) as moved:
                    c.get(keyspace.VERSION_KEY)
                assert moved.value.slot_id == keyspace.slot(keyspace.VERSION_KEY) and moved.value.port == owner.port
                # inside the server, too: a script (as the module once did) run for a queue of
                # this shard cannot reach the key
                q = cluster.queue_on(cluster.primaries().index(p), "brandless")
                with pytest.raises(redis.exceptions.ResponseError, match="non local key"):
                    c.eval("return redis.call('GET', '{emq}:version')", 1, keyspace.queue_key(q, "x"))
            finally:
                c.close()
    finally:
        conn.client.delete(keyspace.VERSION_KEY)
        conn.close()


def test_a_native_claim_stamps_the_shard_primarys_run_id(cluster, request):
    conn = cluster.connector(wire=6)
    try:
        for s in range(3):
            q = cluster.queue_on(s, f"epoch{request.node.name[-4:]}")
            jobs.enqueue(conn, q, "x")
            got = jobs.claim(conn, q, LEASE)
            row = jobs.row(conn, q, got.id)
            assert row["lease_epoch"] == conn.run_id(q) == cluster.run_ids()[conn.node_for(q)]
    finally:
        conn.close()


def test_a_wire_6_connector_needs_the_module_on_every_node():
    small = LocalCluster(shards=1, replicas=0)  # no module
    try:
        c4 = small.connector(wire=4)
        assert c4.module_loaded() is False
        c4.close()
        with pytest.raises(WireError, match=r"^EMQWIRE .*trafikey module on every node.*missing on 127\.0\.0\.1:"):
            small.connector(wire=6)
    finally:
        small.stop()
    assert not any(n.running for n in small.nodes)


# -- hooks for a failover run ------------------------------------------------------------------------
def test_wait_counts_the_replicas_that_acknowledged_each_write(cluster, request):
    q = cluster.queue_on(1, f"wait{request.node.name[-4:]}")
    conn = cluster.connector(wire=6, wait=(1, 300))
    replica = cluster.replica_of(cluster.primary_of(q))
    try:
        jobs.enqueue(conn, q, "a")
        got = jobs.claim(conn, q, LEASE)
        waits = [e for e in conn.trace if e.line.startswith("WAIT")]
        # a WAIT after each traced write (@enqueue, EMQ.CLAIM), none after a read, each on the writing node
        assert [e.line.split()[0] for e in conn.trace] == ["EVALSHA", "WAIT", "EXISTS", "EMQ.CLAIM", "WAIT"]
        assert [w.reply for w in waits] == [1, 1] and conn.wait_short == 0
        assert {w.node for w in waits} == {conn.node_for(q)}
        cluster.kill(replica)
        try:
            assert jobs.complete(conn, q, got.id, got.attempts) == jobs.OK
            assert conn.last()[0].line == "WAIT 1 300" and conn.last()[0].reply == 0
            assert conn.wait_short == 1  # acknowledged by the primary alone: a failover now could lose it
        finally:
            cluster.restart_as_replica(replica)
        jobs.enqueue(conn, q, "b")
        assert conn.last()[0].reply == 1 and conn.wait_short == 1
        other = conn.fork()
        assert other.wait == (1, 300)
        other.close()
        with pytest.raises(jobs.BadInput, match="wait must be"):
            cluster.connector(wait=(1,))
    finally:
        conn.close()


def test_a_design_for_short_waits_decides_what_the_caller_is_told(cluster, request):
    from echomq_teach.cluster_connector import ShortWait, Unconfirmed
    from echomq_teach.lab.failover import hold_replication

    q = cluster.queue_on(1, f"short{request.node.name[-4:]}")
    seen: list[ShortWait] = []

    def design(short):
        seen.append(short)
        again = short.again()  # the same write once more, on the same link, then WAIT
        seen.append(again)
        raise Unconfirmed(f"{short.command}: {short.acked} of {short.asked}")

    conn = cluster.connector(wire=6, wait=(1, 100))
    conn.on_short_wait = design
    sure = cluster.connector(wire=6, wait=(1, 3_000))
    replica = cluster.replica_of(cluster.primary_of(q))
    try:
        jobs.enqueue(sure, q, "stored on both")
        jobs.enqueue(conn, q, "confirmed: the design is not asked")
        assert not seen
        hold_replication(replica, 3_000)
        with pytest.raises(Unconfirmed):
            jobs.enqueue(conn, q, "the primary's alone", job_id="JOBshortwait01")
        first, second = seen
        assert (first.transition, first.command, first.reply, first.acked, first.asked) == (
            "enqueue", "@enqueue", 1, 0, 1)
        assert isinstance(second.reply, redis.exceptions.ResponseError) and "EMQDUP" in str(second.reply)
        seen.clear()
        with pytest.raises(Unconfirmed):  # a recorder reads it as a lost link: an unknown outcome
            jobs.claim(conn, q, LEASE)
        assert [s.transition for s in seen] == ["claim", "claim"] and seen[0].command == "EMQ.CLAIM"
    finally:
        c = replica.client()
        c.execute_command("CLIENT", "UNPAUSE")
        c.close()
        jobs.drop(sure, q)
        conn.close()
        sure.close()


def test_kill_a_primary_mid_run_promote_its_replica_and_restart_it(cluster, request):
    tag = request.node.name[-4:]
    q = cluster.queue_on(2, f"fo{tag}")
    q_old = cluster.queue_on(2, f"foold{tag}")  # leases taken before the failover, never settled
    conn = cluster.connector(wire=6, wait=(1, 500))
    primary = cluster.primary_of(q)
    replica = cluster.replica_of(primary)
    run_ids = cluster.run_ids()
    n = 40
    try:
        for i in range(n):
            jobs.enqueue(conn, q, f"job{i}")
        for i in range(2):
            jobs.enqueue(conn, q_old, f"old{i}")
            assert jobs.claim(conn, q_old, 300) is not None  # a worker that then crashed
        assert conn.wait_short == 0  # everything so far is on the replica too

        def slow(job):
            time.sleep(0.02)
            return job.payload

        pools = Pools(conn, [q], slow, size=2, metronome_ms=50, idle_sleep_ms=20, lease_ms=1_000, lost_link="retry")
        out = {}
        runner = threading.Thread(target=lambda: out.update(pools.run(timeout=60, until_idle=True)), daemon=True)
        runner.start()
        cluster.kill_after(primary, 0.3).join()
        assert not primary.running
        # no other primary serves its slots yet: a restart now would come back empty as their primary
        with pytest.raises(NodeError, match="no running primary owns slot"):
            cluster.restart_as_replica(primary)
        seconds = cluster.wait_promotion(replica, timeout=30)
        print(f"\npromotion after the kill: {seconds:.2f} s")
        # the new primary has no replica: every WAIT now costs its whole timeout, until the killed
        # node comes back, as a replica of its replacement, with a new run_id
        cluster.restart_as_replica(primary)
        assert cluster.view(primary).primary_id == cluster.view(replica).id
        assert cluster.run_ids()[f"127.0.0.1:{primary.port}"] != run_ids[f"127.0.0.1:{primary.port}"]
        runner.join(70)
        pools.close()
        assert not runner.is_alive()
        report = out[q]
        assert cluster.primary_of(q) is replica
        assert report.lost_links >= 1  # the run rode out the failover instead of dying with the node
        assert report.stopped_by == "idle"
        # the promoted replica is another process: another run_id serves the queue now
        assert conn.run_id(q) == run_ids[f"127.0.0.1:{replica.port}"] != run_ids[f"127.0.0.1:{primary.port}"]
        snap = snapshots.snapshot(conn, q)
        assert snap.ids() == set()
        # every enqueue was on the replica before the kill (each WAIT answered 1), so no job is lost
        # from the sets; each is counted once on the new primary (a completion the old primary took
        # and never passed on is lost with it, and that job runs again)
        assert snap.completed == n
        # the lease_epoch rule: the leases granted by the dead primary come back uncounted ...
        rep = stalled.check(conn, q_old)
        assert len(rep.requeued) == 2 and rep.dead == []
        assert all("stalled" not in jobs.row(conn, q_old, j) for j in rep.requeued)
        # ... while a lease the new primary granted and lost counts one stall
        again = jobs.claim(conn, q_old, 1)
        time.sleep(0.01)
        assert stalled.check(conn, q_old).requeued == [again.id]
        assert jobs.row(conn, q_old, again.id)["stalled"] == "1"
    finally:
        conn.close()
        if not primary.running:
            try:
                cluster.wait_promotion(replica, timeout=30)
            finally:
                cluster.restart_as_replica(primary)


def test_a_cluster_connector_is_a_connector(cluster):
    conn = cluster.connector(wire=4)
    try:
        assert isinstance(conn, ClusterConnector) and conn.wire == 4 and not conn.native
        assert isinstance(conn, Connector) and conn.on_cluster
        other = conn.fork()
        assert isinstance(other, ClusterConnector) and other is not conn and other.client is not conn.client
        assert other.address == conn.address == cluster.address
        other.close()
        # one fork() for both kinds; a cluster client has no hiredis parser to choose
        same = conn.fork(parser="python")
        assert same.on_cluster and same.parser == "python"
        same.close()
        for parser, message in (("hiredis", "redis-py's own parser"), ("fast", "parser must be")):
            with pytest.raises(BadInput, match=message):
                conn.fork(parser=parser)
        assert conn.call("DBSIZE") == sum(v[1] for v in shard_state(cluster).values())
    finally:
        conn.close()
