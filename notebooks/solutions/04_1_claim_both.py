from echomq_teach import jobs


def claim_both(s_conn, n_conn, queue, job_id):
    return jobs.claim(s_conn, queue, 30_000), jobs.claim(n_conn, queue, 30_000)
