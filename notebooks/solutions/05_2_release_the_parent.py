from echomq_teach import flows, jobs


def release_the_parent(conn, queue, parent_id):
    for _ in range(3):
        child = jobs.claim(conn, queue, 30_000)
        jobs.complete(conn, queue, child.id, child.attempts, f"{child.payload} done")
    parent = jobs.claim(conn, queue, 30_000)
    return flows.children_values(conn, queue, parent.id)
