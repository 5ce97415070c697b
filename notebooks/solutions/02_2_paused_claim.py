from echomq_teach import jobs


def paused_claim(conn, queue, job_id):
    jobs.pause(conn, queue)
    return jobs.claim(conn, queue, 30_000)
