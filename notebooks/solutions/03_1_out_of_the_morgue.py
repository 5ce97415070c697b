from echomq_teach import jobs


def out_of_the_morgue(conn, queue, job_id, old_token):
    # reprocess sends the dead job back to pending for a new life and leaves attempts as it is, so the next
    # claim's token is one no earlier claim had: the first life's late worker is fenced out
    jobs.reprocess(conn, queue, job_id)
