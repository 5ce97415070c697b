from echomq_teach import jobs, snapshots


def put_c_last(conn, queue):
    # pending's order is byte order of the ids, and "A-c-urgent" sorts before every "JOB…" id. An id cannot
    # be renamed in place: remove the job (its row goes with it), then enqueue c again with a minted id,
    # which sorts after a's and b's, minted earlier by this process.
    s = snapshots.snapshot(conn, queue)
    (custom,) = [i for i in s.pending if s.rows[i]["payload"] == "c"]
    jobs.remove(conn, queue, custom)
    jobs.enqueue(conn, queue, "c")
