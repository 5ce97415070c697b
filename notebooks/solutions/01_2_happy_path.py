from echomq_teach import jobs


def happy_path(conn, queue, job_id):
    claimed = jobs.claim(conn, queue, 30_000)
    jobs.complete(conn, queue, claimed.id, claimed.attempts)
