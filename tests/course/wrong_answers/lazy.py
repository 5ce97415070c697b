"""Lazy routes: answers that pass a diagnose or repair exercise without its idea, as two learners who skipped the
idea found them on the course (attack reports A and B), and as we found more. Each must now fail with the finding
that says why; tests/course/test_copy_attempts.py submits them (with the checks' dealing seeded, so that a route
that guesses by position meets one arrangement every run)."""

from echomq_teach import jobs, keyspace, snapshots, stalled

FATES = ("buried", "put back counted", "put back uncounted", "left alone")


def _copy_queue(client, queue, to_client, to_queue):
    """Every key of ``queue`` DUMPed and RESTOREd as ``to_queue``'s (on ``to_client``'s node)."""
    src, dst = keyspace.base(queue), keyspace.base(to_queue)
    for key in client.keys(src + "*"):
        to_client.restore(dst + key[len(src):], 0, client.dump(key), replace=True)


def _drop(client, queue):
    keys = client.keys(keyspace.base(queue) + "*")
    if keys:
        client.delete(*keys)


# -- 01 ---------------------------------------------------------------------------------------------------------
def transitions_by_position(conn, queue, job_ids):
    # A: the ids came in the walk's order, which was also mint order
    return dict(zip(job_ids, ["enqueue", "claim", "retry at the cap", "retry", "promote", "reap"]))


def fake_a_completion(conn, queue):
    # A: the head (the custom id) claimed and completed, for work never done; c enqueued again
    got = jobs.claim(conn, queue, 30_000)
    jobs.complete(conn, queue, got.id, got.attempts, "x")
    jobs.enqueue(conn, queue, "c")


# -- 02 ---------------------------------------------------------------------------------------------------------
def resume_and_claim_until_something(conn, queue, job_id):
    # A: the finding "still paused" gave the resume; a claim loop ate the ghosts unseen
    jobs.resume(conn, queue)
    for _ in range(10):
        got = jobs.claim(conn, queue, 30_000)
        if got:
            return got
    return None


def every_other_id_named(conn, queue, job_id):
    # ours: the same loop, and "whatever else was in pending" named as the ghosts
    others = set(conn.call("ZRANGE", keyspace.queue_key(queue, "pending"), 0, -1)) - {job_id}
    return others, resume_and_claim_until_something(conn, queue, job_id)


# -- 03 ---------------------------------------------------------------------------------------------------------
def settle_by_position(conn, queue, late):
    # A: the same five stories in the same mint order every time, every token 1
    ids = sorted(late)
    return {ids[0], ids[2]}


def settle_tried_on_a_copy(conn, queue, late):
    # A: the queue DUMPed and RESTOREd under another name, each late completion tried there, the copy dropped
    client = conn.client
    _copy_queue(client, queue, client, "scratch-031")
    took = {j for j, token in late.items() if jobs.complete(conn, "scratch-031", j, token) == jobs.OK}
    _drop(client, "scratch-031")
    return took


def settle_tried_on_a_copy_counts_cleared(conn, queue, late):
    # ours: the same, and then CONFIG RESETSTAT, so that the node's command counts show no write at all
    took = settle_tried_on_a_copy(conn, queue, late)
    conn.client.config_resetstat()
    return took


def settle_tried_on_a_node_of_its_own(conn, queue, late):
    # ours: the same, on a node the function starts for the purpose (nothing written on the learner's node)
    from echomq_teach import start_node

    mine = start_node(provider="local")
    try:
        _copy_queue(conn.client, queue, mine.client(), queue)
        there = mine.connector()
        return {j for j, token in late.items() if jobs.complete(there, queue, j, token) == jobs.OK}
    finally:
        mine.stop()


def settle_tried_on(scratch):
    """ours: the same, on a node started before the check (a cell above): nothing is started inside."""

    def tried(conn, queue, late):
        _copy_queue(conn.client, queue, scratch.client(), queue)
        there = scratch.connector()
        took = {j for j, token in late.items() if jobs.complete(there, queue, j, token) == jobs.OK}
        _drop(scratch.client(), queue)
        return took

    return tried


def reaped_blind(conn, queue, crashed):
    # A: each job put where a reap finds it, and the reap left to write the row
    for job_id in crashed:
        conn.call("ZREM", keyspace.queue_key(queue, "pending"), job_id)
        conn.call("ZADD", keyspace.queue_key(queue, "active"), 0, job_id)
    jobs.reap(conn, queue)


def attempts_raised_past_any_token(conn, queue, crashed):
    # ours: every job back in pending, its attempts set far past any token, without reading what each had
    for job_id in crashed:
        conn.call("ZREM", keyspace.queue_key(queue, "active"), job_id)
        conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, job_id)
        conn.call("HSET", keyspace.job_key(queue, job_id), "state", "pending", "attempts", 99)


def one_blind_tick(conn, queue):
    # A: the two calls the exercise's text named, no job read
    jobs.promote(conn, queue)
    stalled.check(conn, queue, max_stalled=2)


def two_blind_ticks(conn, queue):
    # A: "running the tick twice also passes"
    one_blind_tick(conn, queue)
    one_blind_tick(conn, queue)


# -- 04 ---------------------------------------------------------------------------------------------------------
def fates_by_position(s_conn, n_conn, queue):
    # A: five jobs in active, the same stories in mint order every time (here dealt round, whatever their number)
    active = sorted(n_conn.call("ZRANGE", keyspace.queue_key(queue, "active"), 0, -1))
    return {j: ["buried", "put back counted", "put back uncounted", "left alone", "left alone"][k % 5]
            for k, j in enumerate(active)}


def fates_swept_on_a_copy(s_conn, n_conn, queue):
    # A: the queue copied under another name on the native node, the sweep run there and read
    client = n_conn.client
    _copy_queue(client, queue, client, "scratch-copy")
    before = snapshots.snapshot(n_conn, "scratch-copy")
    report = stalled.check(n_conn, "scratch-copy", max_stalled=1)
    after = snapshots.snapshot(n_conn, "scratch-copy")
    _drop(client, "scratch-copy")
    return {j: "buried" if j in report.dead else "left alone" if j not in report.requeued
            else "put back counted" if after.rows[j].get("stalled") != before.rows[j].get("stalled")
            else "put back uncounted" for j in before.active}


def wires_tried_then_put_back(s_conn, n_conn, queue, nodes):
    # A: each node's connectors tried, and the brand a wire 4 connector wrote put back as it was
    from echomq_teach import WireError

    out = []
    for node in nodes:
        raw = node.client()
        brand = raw.get(keyspace.VERSION_KEY)
        got = "neither"
        for wire in (6, 4):
            try:
                node.connector(wire=wire).close()
                got = f"wire {wire}"
                break
            except WireError:
                pass
        if brand is None:
            raw.delete(keyspace.VERSION_KEY)
        else:
            raw.set(keyspace.VERSION_KEY, brand)
        out.append(got)
    return out


def wire_4_where_the_module_is(s_conn, n_conn, queue, nodes):
    # ours: with four nodes, "wire 4 with the module, else neither" was right every time
    return ["wire 4" if any(m["name"] == "trafikey" for m in node.client().execute_command("MODULE", "LIST"))
            else "neither" for node in nodes]


# -- 05 ---------------------------------------------------------------------------------------------------------
def every_recovery_call(conn, queue, parents):
    # A: promote, reap and reprocess whatever is dead, then work off as many jobs as came back
    moved = jobs.promote(conn, queue) + jobs.reap(conn, queue)
    for dead in snapshots.snapshot(conn, queue).dead:
        jobs.reprocess(conn, queue, dead)
        moved.append(dead)
    s = snapshots.snapshot(conn, queue)
    for _ in moved:
        got = jobs.claim(conn, queue, 30_000)
        if got is not None:
            jobs.complete(conn, queue, got.id, got.attempts, "done")
    return {s.rows[m]["parent"]: m for m in moved if s.rows.get(m, {}).get("parent")}


# -- 08 ---------------------------------------------------------------------------------------------------------
def lost_by_position(conn, queue, floor_path, settled):
    # B: 20 settles, a slice of 10 folded, MAXLEN 5 kept: the lost were always positions 10 to 14
    return set(sorted(settled)[10:15])


# -- 10 ---------------------------------------------------------------------------------------------------------
def run_twice_by_position(conn, queue, held):
    # B: ids minted in order, and w0 always fetched the three oldest before the timeout
    return set(sorted(held)[:3])


def orphans_by_position(conn, queue):
    # B: the two lowest ids ever delivered
    return set(sorted(conn.client.hkeys(f"case:{{{queue}}}:deliveries"))[:2])


def orphans_of_the_named_process(conn, queue):
    # B: the list of the process the text named as killed
    return {m.split("|")[0] for m in conn.client.lrange(f"case:{{{queue}}}:working:host-a:1", 0, -1)}


def released_by_position(conn, queue, parents):
    # B: the roles of the five flows were fixed: the 1st and the 4th
    p = sorted(parents)
    return {p[0], p[3]}
