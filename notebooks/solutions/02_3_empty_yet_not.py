from echomq_teach import jobs, keyspace, snapshots


def empty_yet_not(conn, queue, job_id):
    s = snapshots.snapshot(conn, queue)
    # cause one: ids in pending with no row. A claim pops such an id and answers empty, minting nothing (the ghost
    # guard); one sorting after the real job would stand in front of the next job the same way
    ghosts = {i for i in s.pending if i not in s.rows}
    if ghosts:
        conn.call("ZREM", keyspace.queue_key(queue, "pending"), *ghosts)
    # cause two: the queue is paused, so claim/3 answers empty before it sends anything
    if s.paused:
        jobs.resume(conn, queue)
    return ghosts, jobs.claim(conn, queue, 30_000)
