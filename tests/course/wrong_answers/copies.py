"""Copy attempts (issue 31, item 4): for each exercise that is not a build, the nearest thing a learner can
copy without the idea — the code of the cell printed above the exercise, fitted to the exercise's
function, or the kit's own call as it stands, or, for a prediction, the values the nearest run above it
showed. Each must fail with a finding that says why; tests/course/test_copy_attempts.py submits them."""

from echomq_teach import jobs, snapshots, stalled


# -- 01 ---------------------------------------------------------------------------------------------------------
def tour_table_by_state(conn, queue, job_ids):
    # 01.1: the tour's table, read backwards: each row's state to the first way in that lands there
    first_way = {"pending": "enqueue", "active": "claim", "scheduled": "retry", "dead": "retry at the cap"}
    s = snapshots.snapshot(conn, queue)
    return {i: first_way[s.state(i)] for i in job_ids}


def claim_the_urgent_one(conn, queue):
    # 01.2: the cell above claims the custom id first; claimed out of the way, and c enqueued again at the end
    jobs.claim(conn, queue, 30_000)
    jobs.enqueue(conn, queue, "c")


# 01.3: the cell above: the custom id "A-rush" was claimed first, the mints after it in the order they went in
CUSTOM_ID_FIRST_THEN_AS_ENQUEUED = ["custom id A-rush", "reaped back to pending, minted before all",
                                    "this process, first", "this process, second", "custom id zz-late",
                                    "another producer, clock 5 s behind, enqueued last"]
# 01.4: 03's completion cell: "a token nobody was given" is stale; x's token was given to x's worker, not z's
AS_03S_WRONG_TOKEN = {"the tokens the three claims answer, in order": [1, 1, 1],
                      "z, completed with the token x's claim answered": "stale",
                      "x, then completed with its own claim's token": "ok", "completed count at the end": 1}
# 01.4: 01's own cells: each claim's token is the claim's attempts, 1; each completion ok and counted: 0 -> 1
AS_01S_COMPLETE_CELL = {"the tokens the three claims answer, in order": [1, 1, 1],
                        "z, completed with the token x's claim answered": "ok",
                        "x, then completed with its own claim's token": "ok", "completed count at the end": 1}


# -- 03 ---------------------------------------------------------------------------------------------------------
def try_each_late_worker(conn, queue, late):
    # 03.1: the cell above sends the first life's late completion and prints what it answers: so, try each one
    return {i for i, token in late.items() if jobs.complete(conn, queue, i, token, "late") == jobs.OK}


def every_late_worker_refused(conn, queue, late):
    # 03.1: the lesson of the cell above, "the first life's late worker is refused", applied to every job
    return set()


def the_kits_reap(conn, queue, crashed):
    # 03.2: the kit's reap, as the cell above calls it
    jobs.reap(conn, queue)


def reap_claim_complete(conn, queue, crashed):
    # 03.2: the cells above: reap, then the rescuer claims and completes
    jobs.reap(conn, queue)
    for _ in crashed:
        rescuer = jobs.claim(conn, queue, 30_000)
        if rescuer is not None:
            jobs.complete(conn, queue, rescuer.id, rescuer.attempts)


# 03.4: the counted sweep above, every lapse counted and the job buried once the count passes the cap
SWEEP_AS_SHOWN_ABOVE = {"where after each round": ["pending", "pending", "pending", "dead", "dead"],
                        "stalled count at the end": 3}


def pump_and_reap(conn, queue):
    # 03.5: the Pump's promote and the reap the cell above ends with
    jobs.promote(conn, queue)
    jobs.reap(conn, queue)


def sweep_with_a_cap_of_one(conn, queue):
    # 03.5: the counted sweep as its cell above called it, max_stalled=1, after a promote
    jobs.promote(conn, queue)
    stalled.check(conn, queue, max_stalled=1)


# -- 04 ---------------------------------------------------------------------------------------------------------
def epoch_against_run_id(s_conn, n_conn, queue):
    # 04.2: the cell above compares lease_epoch with the run_id: another server's lease uncounted, the rest counted
    run_id = n_conn.client.info("server")["run_id"]
    s = snapshots.snapshot(n_conn, queue)
    return {i: "put back counted" if s.rows[i].get("lease_epoch") == run_id else "put back uncounted"
            for i in s.active}


# -- 05 ---------------------------------------------------------------------------------------------------------
# 05.1: the land above went through in one script: so do these three, three or four rows each
EVERY_LAND_LANDS = {"a dead job's id, with a policy list one short": "landed",
                    "a child's id is a completed job's": "landed", "a child's id is a waiting parent's": "landed",
                    "jobs in the queue after the three": 14}


def reprocess_the_dead_child(conn, queue, parents):
    # 05.3: the cell above, under wait: the dead child reprocessed, claimed and completed
    s = snapshots.snapshot(conn, queue)
    held = {}
    for child in s.dead:
        jobs.reprocess(conn, queue, child)
        c = jobs.claim(conn, queue, 30_000)
        jobs.complete(conn, queue, c.id, c.attempts, "done at last")
        if s.rows[child].get("parent"):
            held[s.rows[child]["parent"]] = child
    return held


# 05.4: "Never twice" above: a child whose lapsed lease came back late is stale and counts nothing, and the
# policies table; the lapse of step 1 taken for the reaped one of that cell
LAPSE_TAKEN_FOR_THE_REAP_ABOVE = {"dependencies after each step": [4, 4, 4, 3, 2, 1],
                                  "the parent's state at the end": "awaiting_children",
                                  "entries in the parent's :unsuccessful at the end": 1}


# -- 06 ---------------------------------------------------------------------------------------------------------
# 06.1: the failure fork's walk and the composer's counter, read off the cells above
TRACE_AS_THE_STEPPER_SHOWED = {"where a is after each step": ["schedule", "pending", "active", "nowhere", "nowhere"],
                               ":dependencies after each step": [2, 1, 0, 0, 0], "a's token when it completed": 2,
                               "the parent at the end": "pending"}


# -- 08 ---------------------------------------------------------------------------------------------------------
# 08.1: the kill below, scaled: a driver killed mid-fold leaves ten in both places, and the heir folds the rest
TEN_IN_BOTH_AS_BELOW = {"stream, when the second driver is killed": 15, "floor, when the second driver is killed": 30,
                        "floor, once the third driver is done": 35}


# -- 10 ---------------------------------------------------------------------------------------------------------
def delivered_twice(conn, queue, held):
    # 10.1: the model counts each hand-out in `deliveries`: so, the held jobs handed out twice
    counts = conn.client.hgetall(f"case:{{{queue}}}:deliveries")
    return {i for i in held if int(counts.get(i, 0)) >= 2}


def gone_from_unacked(conn, queue, held):
    # 10.1: the restore deletes what it puts back from `unacked`: so, held and no longer there
    return held - set(conn.client.hkeys(f"case:{{{queue}}}:unacked"))


def run_the_recovery(conn, queue):
    # 10.2: the model's recovery, printed above, run as it stands: what it brings back is what was stranded
    from echomq_teach.lab.models.sidekiq_orphans import SidekiqOrphans

    return set(SidekiqOrphans(queue).recover_orphans(conn.client, "a process of mine"))


def parents_on_the_wait_list(conn, queue, parents):
    # 10.3: the model's branch moves a parent to `wait`: so, every parent found there
    return set(conn.client.lrange(f"case:{{{queue}}}:wait", 0, -1)) & set(parents)
