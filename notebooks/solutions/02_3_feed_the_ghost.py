from echomq_teach import jobs, keyspace


def feed_the_ghost(conn, queue):
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, "JOBghost")
    return jobs.claim(conn, queue, 30_000)
