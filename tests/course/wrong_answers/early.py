"""Wrong answers to the repairs and predictions of notebooks 01–03, each with the finding that must name why.

Each is what a learner could plausibly write; tests/course/test_early_exercises.py runs them."""

from echomq_teach import jobs, keyspace, snapshots


# -- 01.2 · put c last ------------------------------------------------------------------------------------------
def c_enqueued_again(conn, queue):
    # "add c at the end": the urgent one is still there, at the head
    jobs.enqueue(conn, queue, "c")


def c_zrem_by_hand(conn, queue):
    # the id leaves pending by hand; its row stays behind, in no set
    conn.call("ZREM", keyspace.queue_key(queue, "pending"), "A-c-urgent")
    jobs.enqueue(conn, queue, "c")


def c_scored_last(conn, queue):
    # a higher score puts it last in ZPOPMIN's order, but a pending score is 0 for every job
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), "XX", 1, "A-c-urgent")


# -- 01.4 · whose token? ----------------------------------------------------------------------------------------
TOKEN_PER_QUEUE = {
    # the token taken for a counter of the queue's claims: 1, 2, 3, and z's row then says 3
    "the tokens the three claims answer, in order": [1, 2, 3],
    "z, completed with the token x's claim answered": "stale",
    "x, then completed with its own claim's token": "ok",
    "completed count at the end": 1,
}
TOKEN_NAMES_ITS_WORKER = {
    # the token taken for the worker's name: x's token cannot complete z
    "the tokens the three claims answer, in order": [1, 1, 1],
    "z, completed with the token x's claim answered": "stale",
    "x, then completed with its own claim's token": "ok",
    "completed count at the end": 1,
}


# -- 03.1 · who can still settle it? ------------------------------------------------------------------------------
def every_active_row(conn, queue, late):
    # "a worker holding an active job may finish it": the token left out of the fence
    s = snapshots.snapshot(conn, queue)
    return {i for i in late if s.rows[i].get("state") == "active"}


def lapsed_leases_only(conn, queue, late):
    # "a new life fences out the old one": true of a reprocess, not of a row deleted and made again
    s = snapshots.snapshot(conn, queue)
    return {i for i in late if i in s.active and s.relative("active", i) < 0}


# -- 03.2 · recovered by hand -------------------------------------------------------------------------------------
def state_only(conn, queue, crashed):
    # "the row says active while it sits in pending": true of one, and the row's attempts left unread
    for job_id in crashed:
        conn.call("HSET", keyspace.job_key(queue, job_id), "state", "pending")


def enqueued_afresh(conn, queue, crashed):
    # a new row under the same id: its attempts start again at 0, and a later claim hands out the old token again
    for job_id in crashed:
        payload = snapshots.snapshot(conn, queue).rows[job_id]["payload"]
        jobs.remove(conn, queue, job_id)
        jobs.enqueue(conn, queue, payload, job_id=job_id)


# -- 03.4 · predict the counted sweep ---------------------------------------------------------------------------
# buried when the count reaches max_stalled, not when it goes over
SWEEP_BURIED_AT_THE_CAP = {"where after each round": ["pending", "pending", "pending", "dead", "dead"],
                           "stalled count at the end": 2}
# the retry taken to start the count again
SWEEP_NEVER_BURIED = {"where after each round": ["pending"] * 5, "stalled count at the end": 2}


# -- 03.5 · the metronome stopped --------------------------------------------------------------------------------
def promote_only(conn, queue):
    # the due retry comes back; the lapsed leases wait in active for a recovery leg that never runs
    jobs.promote(conn, queue)


def everything_back(conn, queue):
    # every lapsed lease reaped and every parked retry moved, due or not
    for job_id in snapshots.snapshot(conn, queue).schedule:
        conn.call("ZADD", keyspace.queue_key(queue, "schedule"), 0, job_id)
    jobs.promote(conn, queue)
    jobs.reap(conn, queue)
