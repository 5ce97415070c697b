from echomq_teach import snapshots


def which_transition(conn, queue, job_ids):
    s = snapshots.snapshot(conn, queue)
    answer = {}
    for job_id in job_ids:
        row = s.rows[job_id]
        where = s.where(job_id)
        if where == ["active"]:
            answer[job_id] = "claim"
        elif where == ["schedule"]:
            answer[job_id] = "retry"
        elif where == ["dead"]:
            answer[job_id] = "retry at the cap"
        elif row.get("last_error"):
            answer[job_id] = "promote"  # claimed, failed, parked, brought back
        elif row["attempts"] != "0":
            answer[job_id] = "reap"  # claimed once, back in pending, no error recorded
        else:
            answer[job_id] = "enqueue"
    return answer
