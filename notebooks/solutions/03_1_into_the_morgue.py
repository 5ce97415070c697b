import time

from echomq_teach import jobs


def into_the_morgue(conn, queue, job_id):
    first = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, job_id, first.attempts, "first failure", delay_ms=1, max_attempts=2)
    time.sleep(0.01)  # let the run-at pass
    jobs.promote(conn, queue)
    second = jobs.claim(conn, queue, 30_000)
    jobs.retry(conn, queue, job_id, second.attempts, "second failure", delay_ms=1, max_attempts=2)
