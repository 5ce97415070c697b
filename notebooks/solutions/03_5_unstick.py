from echomq_teach import jobs


def unstick(conn, queue, stuck):
    freed = {}
    for job_id in jobs.promote(conn, queue):  # due schedule members back to pending
        freed[job_id] = "promote"
    for job_id in jobs.reap(conn, queue):  # lapsed leases back to pending
        freed[job_id] = "reap"
    return freed
