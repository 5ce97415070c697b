"""Plausible wrong answers to the exercises of notebooks 04–06 (05.2's Lua ones are in fan_in.py)."""

from echomq_teach import keyspace, snapshots


# -- 04.2 · leases a former server granted ------------------------------------------------------------------
def every_stamped_lease(s_conn, n_conn, queue):
    # lease_epoch taken for "from before a restart": every native claim stamps one
    s = snapshots.snapshot(n_conn, queue)
    return sorted(i for i in s.active if "lease_epoch" in s.rows[i])


def this_servers_leases(s_conn, n_conn, queue):
    # the comparison turned round: the leases this very server granted
    run_id = n_conn.client.info("server")["run_id"]
    s = snapshots.snapshot(n_conn, queue)
    return sorted(i for i in s.active if s.rows[i].get("lease_epoch") == run_id)


# -- 04.3 · which wire does each node take? ----------------------------------------------------------------
def wire_by_brand_alone(s_conn, n_conn, queue, nodes):
    # the brand read as the whole story: the module never asked about, an unbranded node taken for nobody's
    said = {keyspace.BRAND_WIRE4: "wire 4", keyspace.BRAND_WIRE6: "wire 6"}
    return [said.get(node.client().get(keyspace.VERSION_KEY), "neither") for node in nodes]


def wire_by_trying_connectors(s_conn, n_conn, queue, nodes):
    # the right answers, found by trying: the wire 4 connector brands the node that had no brand
    from echomq_teach import WireError

    answers = []
    for node in nodes:
        for wire in (4, 6):
            try:
                node.connector(wire=wire).close()
            except WireError:
                continue
            answers.append(f"wire {wire}")
            break
        else:
            answers.append("neither")
    return answers


def wire_by_module_alone(s_conn, n_conn, queue, nodes):
    # the module read as the whole story: a node with trafikey taken for a wire 6 node, whatever its brand
    def module(node):
        return any(m["name"] == "trafikey" for m in node.client().execute_command("MODULE", "LIST"))

    return ["wire 6" if module(node) else "wire 4" for node in nodes]


# -- 04.1 · where the two part ways --------------------------------------------------------------------------
def part_ways_alike():
    # "one transition, two executors" read as "no difference at all"
    return {
        "a raw call on a paused queue": ("empty", "empty"),
        "a ghost at the head, a real job behind it": ("empty", "empty"),
        "a lease of 'soon'": ("error", "error"),
        "after the lease of 'soon', where the job is": ("pending", "pending"),
    }


def part_ways_ghost_skipped():
    # the ghost taken for a job the claim steps over to reach the real one
    return {
        "a raw call on a paused queue": ("claimed", "empty"),
        "a ghost at the head, a real job behind it": ("claimed", "claimed"),
        "a lease of 'soon'": ("error", "error"),
        "after the lease of 'soon', where the job is": ("nowhere", "pending"),
    }


# -- 05.1 · what a refused land leaves -----------------------------------------------------------------------
def refused_lands_half_written():
    # the land taken for a host-side loop: the children before the taken id were written
    return {"two children share an id": "BadInput", "a child's id is already a job's": "DuplicateJob",
            "a policy list one short": "BadInput", "jobs in the queue after the three": 3}


def refused_lands_duplicates_allowed():
    # a child sharing an id taken for a harmless repeat
    return {"two children share an id": "landed", "a child's id is already a job's": "DuplicateJob",
            "a policy list one short": "BadInput", "jobs in the queue after the three": 3}


# -- 05.3 · why does this parent never release? ---------------------------------------------------------------
def blame_the_pending_child(conn, queue, parent_id):
    # names a child, but releases nothing
    s = snapshots.snapshot(conn, queue)
    return next(i for i in s.dead if s.rows[i].get("parent") == parent_id)


def force_the_parent(conn, queue, parent_id):
    # the parent pushed to pending by hand: the counter and :processed still say a child is missing
    from echomq_teach import jobs

    s = snapshots.snapshot(conn, queue)
    holder = next(i for i in s.dead if s.rows[i].get("parent") == parent_id)
    conn.call("ZADD", keyspace.queue_key(queue, "pending"), 0, parent_id)
    conn.call("HSET", keyspace.job_key(queue, parent_id), "state", "pending")
    assert jobs.row(conn, queue, parent_id)
    return holder


# -- 05.4 · predict the counter -------------------------------------------------------------------------------
def counter_counts_every_call():
    # every completion taken to count, the repeated and the late too
    return {"dependencies after each step": [2, 1, 0, -1, -2], "the parent's state at the end": "pending"}


def counter_death_fails_the_parent():
    # a death under ignore taken to count as nothing
    return {"dependencies after each step": [2, 2, 2, 1, 1], "the parent's state at the end": "awaiting_children"}


# -- 06.1 · what is each job waiting for? ---------------------------------------------------------------------
def every_active_job_waits_for_a_sweep(conn, queue):
    # active read as "stuck": the live lease too
    s = snapshots.snapshot(conn, queue)
    out = {j: "recover by timeout" for j in s.active}
    out.update({j: "compose by counting" for j, r in s.rows.items() if r.get("state") == "awaiting_children"})
    return out


def every_job_named(conn, queue):
    # the pending child named as well: it waits for nothing but a claim
    s = snapshots.snapshot(conn, queue)
    out = {j: "confirm atomically" if s.relative("active", j) > 0 else "recover by timeout" for j in s.active}
    out.update({j: "compose by counting" for j in s.rows if j not in s.active})
    return out
