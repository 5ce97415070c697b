from echomq_teach import jobs


def five_second_lease(conn, queue, job_id):
    return jobs.claim(conn, queue, 5_000)
