from echomq_teach import keyspace, snapshots


def recovered_by_hand(conn, queue, crashed):
    # the fence reads the row: its state must name the set the job is in, and its attempts must count every claim
    # the job has had, the crashed worker's among them, so that the next claim hands out a token nobody holds.
    # What a reap would have left: state pending, attempts as they were.
    s = snapshots.snapshot(conn, queue)
    for job_id, old_token in crashed.items():
        row = keyspace.job_key(queue, job_id)
        if s.where(job_id) != ["pending"]:
            conn.call("ZREM", keyspace.queue_key(queue, "active"), job_id)
            conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, job_id)
        if s.rows[job_id].get("state") != "pending":
            conn.call("HSET", row, "state", "pending")
        if int(s.rows[job_id]["attempts"]) < old_token:
            conn.call("HSET", row, "attempts", old_token)
