from echomq_teach import keyspace


def recovered_by_hand(conn, queue, job_id, old_token):
    # the hand-made recovery moved the id but left the row saying active, and the fence reads the row: the
    # crashed worker's old token would still pass. A reap writes state pending too: the row's state names
    # its set again, the late completion is refused, and the next claim raises the token.
    conn.call("HSET", keyspace.job_key(queue, job_id), "state", "pending")
