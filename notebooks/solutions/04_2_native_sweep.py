from echomq_teach import snapshots


def native_sweep(s_conn, n_conn, queue):
    # EMQ.STALLED.CHECK reads only the lapsed leases (active score behind the server's clock). A lapsed lease
    # stamped by another server process (lease_epoch is not this run_id) goes back uncounted; one of this
    # process counts a stall, and is buried when the count goes over max_stalled (1 here).
    run_id = n_conn.client.info("server")["run_id"]
    s = snapshots.snapshot(n_conn, queue)
    fates = {}
    for job_id in s.active:
        row = s.rows[job_id]
        if s.relative("active", job_id) >= 0:
            fates[job_id] = "left alone"
        elif row.get("lease_epoch") != run_id:
            fates[job_id] = "put back uncounted"
        elif int(row.get("stalled", 0)) + 1 > 1:
            fates[job_id] = "buried"
        else:
            fates[job_id] = "put back counted"
    return fates
