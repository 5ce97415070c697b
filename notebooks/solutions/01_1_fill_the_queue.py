from echomq_teach import jobs


def fill_the_queue(conn, queue):
    for payload in ("a", "b", "c"):
        jobs.enqueue(conn, queue, payload)
