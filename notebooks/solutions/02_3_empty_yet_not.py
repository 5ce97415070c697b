from echomq_teach import jobs


def empty_yet_not(conn, queue, job_id):
    # cause one: the queue is paused, so claim/3 answers empty before it sends anything
    jobs.resume(conn, queue)
    # cause two: ghosts at the head; each claim pops one and answers empty, minting nothing
    while (claimed := jobs.claim(conn, queue, 30_000)) is None:
        pass
    return claimed
