from echomq_teach import flows, jobs, snapshots


def never_releases(conn, queue, parent_id):
    s = snapshots.snapshot(conn, queue)
    # the child that holds the parent: dead, and under "wait" its death did nothing to the counter
    (holder,) = [i for i in s.dead if s.rows[i].get("parent") == parent_id]
    jobs.reprocess(conn, queue, holder)
    c = jobs.claim(conn, queue, 30_000)
    jobs.complete(conn, queue, c.id, c.attempts, f"{c.payload} done at last")
    assert flows.dependencies(conn, queue, parent_id) == 0
    return holder
