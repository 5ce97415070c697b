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


# -- 01.4 · three completions -----------------------------------------------------------------------------------
def completion_is_idempotent():
    # "completing twice is harmless, so it answers ok": the second call finds no row to compare with
    return {"a token nobody was given": jobs.STALE, "the token the claim answered": jobs.OK,
            "the same completion again": jobs.OK, "completed count": 1}


def token_is_not_checked():
    # "the job is active, any completion goes through": the fence is forgotten, and counted twice
    return {"a token nobody was given": jobs.OK, "the token the claim answered": jobs.STALE,
            "the same completion again": jobs.STALE, "completed count": 2}


# -- 03.1 · out of the morgue ----------------------------------------------------------------------------------
def enqueued_again_same_id(conn, queue, job_id, old_token):
    # remove it and enqueue it afresh under its old id: attempts starts at 0 again
    payload = snapshots.snapshot(conn, queue).rows[job_id]["payload"]
    jobs.remove(conn, queue, job_id)
    jobs.enqueue(conn, queue, payload, job_id=job_id)


def moved_by_hand(conn, queue, job_id, old_token):
    # the id moved from dead to pending by hand: the row still says dead
    conn.call("ZREM", keyspace.queue_key(queue, "dead"), job_id)
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, job_id)


def a_new_job(conn, queue, job_id, old_token):
    # the same work as a new job: the dead one stays where it is
    jobs.enqueue(conn, queue, snapshots.snapshot(conn, queue).rows[job_id]["payload"])
