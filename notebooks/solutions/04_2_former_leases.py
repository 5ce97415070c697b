from echomq_teach import snapshots


def former_leases(s_conn, n_conn, queue):
    # a native lease carries the run_id of the server process that granted it
    run_id = n_conn.client.info("server")["run_id"]
    s = snapshots.snapshot(n_conn, queue)
    return sorted(i for i in s.active if s.rows[i].get("lease_epoch", run_id) != run_id)
