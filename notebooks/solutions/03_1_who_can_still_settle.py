from echomq_teach import snapshots


def who_can_still_settle(conn, queue, late):
    # the fence reads the row and nothing else: the token must equal attempts, and the row must be active.
    # A reprocess keeps attempts, so an old token never matches a new life's claim; a row deleted and enqueued
    # again under the same id counts from 0, so the old worker's token 1 matches the new life's first claim.
    rows = snapshots.snapshot(conn, queue).rows
    return {
        job_id
        for job_id, token in late.items()
        if rows.get(job_id, {}).get("state") == "active" and rows[job_id].get("attempts") == str(token)
    }
