from echomq_teach import flows, jobs, snapshots


def never_releases(conn, queue, parents):
    s = snapshots.snapshot(conn, queue)
    held = {}
    for parent in parents:
        # stuck: still waiting for its children (a dead parent waits for nothing), with one not completed yet
        if s.state(parent) != "awaiting_children" or flows.dependencies(conn, queue, parent) == 0:
            continue
        # the child that holds it: neither completed (its row would be gone) nor pending
        (child,) = [i for i, row in s.rows.items() if row.get("parent") == parent]
        where = s.where(child)
        if where == ["dead"]:  # died under "wait": its death did nothing to the counter
            jobs.reprocess(conn, queue, child)
        elif where == ["schedule"] and s.relative("schedule", child) < 0:  # a due retry nobody promoted
            jobs.promote(conn, queue)
        elif where == ["active"] and s.relative("active", child) < 0:  # a lapsed lease nobody swept
            jobs.reap(conn, queue)
        else:
            continue  # its lease still runs: its worker is on it
        held[parent] = child
    for _ in held:  # as a worker: each child brought back is claimed and completed, with its result
        c = jobs.claim(conn, queue, 30_000)
        jobs.complete(conn, queue, c.id, c.attempts, f"{c.payload} done at last")
    return held
