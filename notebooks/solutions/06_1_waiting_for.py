from echomq_teach import snapshots


def waiting_for(conn, queue):
    s = snapshots.snapshot(conn, queue)
    out = {}
    for job in s.active:
        # the active score is the lease deadline: ahead of the server's clock, the holder may still confirm
        out[job] = "confirm atomically" if s.relative("active", job) > 0 else "recover by timeout"
    for job, row in s.rows.items():
        if row.get("state") == "awaiting_children":
            out[job] = "compose by counting"
    return out
